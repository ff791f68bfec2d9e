// Saved activations per block (docs/memory.md, "Activations"). S = s/c·b rows of the TP-gathered
// sequence on one CP rank; S_sp = S/t under sequence parallelism (else S) rows of the
// sequence-sharded tensors (norm inputs and outputs, which TE saves as the local shard and
// re-gathers in backward, TE layernorm_linear.py ln_out_needs_gather); head-split tensors have
// width /t.
#include "trainscope/cost/activation_memory.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "trainscope/error.h"
#include "trainscope/units.h"

namespace trainscope::cost::internal {
namespace {

using config::FfnKind;
using config::LayerSpec;
using config::MixerKind;
using graph::LayerOpContext;

constexpr const char* kWhat = "activation memory";

struct Dims {
  int64_t tokens = 0;     // S
  int64_t sp_tokens = 0;  // S_sp
  int64_t t = 1;
  int64_t h = 0;
};

Dims MakeDims(const LayerOpContext& c) {
  const int64_t tokens = c.TokensPerRank();
  const int64_t t = c.training.parallel.tensor;
  return {tokens, c.SequenceParallel() ? CeilDiv(tokens, t) : tokens, t, c.model.hidden_size};
}

int64_t Bytes(int64_t rows, int64_t width, int64_t element_bytes) {
  return CheckedMul(CheckedMul(rows, width, kWhat), element_bytes, kWhat);
}

// True when selective recompute checkpoints `module` (--recompute-modules).
bool Drops(const LayerOpContext& c, bool selective, const char* module) {
  if (!selective) return false;
  if (c.training.recompute.granularity != config::RecomputeGranularity::kSelective) return false;
  const std::vector<std::string>& modules = c.training.recompute.modules;
  return std::find(modules.begin(), modules.end(), module) != modules.end();
}

// Bytes per element of the router logits and probs (router.py:105-112).
int64_t RouterBytes(const LayerOpContext& c) {
  return config::BytesOf(c.training.moe.router_dtype);
}

// A GEMM input that a TE linear saves for its wgrad: bf16, or with FP8 the quantized copy
// (TE linear.py and layernorm_linear.py save the quantized inputmat / ln_out): 1 byte per
// element, plus for MXFP8 an E8M0 scale per 32 elements and for blockwise an fp32 scale per
// 1x128 block, both 1/32 byte per element. NVFP4 (--fp4-format) saves half a byte per element
// plus one E4M3 scale byte per 16 (the column-wise copy its wgrad reads). torchao's row-wise
// recipe saves the bf16 input and casts it again in the backward (float8_linear.py,
// matmul_with_hp_or_float8_args saves input_hp).
int64_t GemmInputBytes(const LayerOpContext& c, int64_t rows, int64_t width) {
  const config::PrecisionConfig& precision = c.training.precision;
  const int64_t elements = CheckedMul(rows, width, kWhat);
  if (precision.fp4 != config::Fp4Format::kNone) {
    return CeilDiv(elements, 2) + CeilDiv(elements, 16);
  }
  if (precision.fp8 == config::Fp8Format::kNone ||
      precision.fp8_recipe == config::Fp8Recipe::kRowwise) {
    return CheckedMul(elements, kBf16Bytes, kWhat);
  }
  const bool scaled_blocks = precision.fp8_recipe == config::Fp8Recipe::kMxfp8 ||
                             precision.fp8_recipe == config::Fp8Recipe::kBlockwise;
  return elements + (scaled_blocks ? CeilDiv(elements, 32) : 0);
}

// The linears save a quantized copy of their inputs beside the bf16 tensor other ops keep: an
// FP8 or an FP4 run of Transformer Engine's linears (torchao's row-wise recipe saves the bf16
// input itself, which those ops already hold).
bool SavesQuantizedInputs(const LayerOpContext& c) {
  const config::PrecisionConfig& precision = c.training.precision;
  return (precision.fp8 != config::Fp8Format::kNone &&
          precision.fp8_recipe != config::Fp8Recipe::kRowwise) ||
         precision.fp4 != config::Fp4Format::kNone;
}

// A norm fused into a TE LayerNormColumnParallelLinear: its input x and fp32 rsigma (norm
// backward) and its output, the linear's input (wgrad), all sequence-sharded.
int64_t FusedNormBytes(const LayerOpContext& c, const Dims& d) {
  return Bytes(d.sp_tokens, d.h, kBf16Bytes) + Bytes(d.sp_tokens, 1, kFp32Bytes) +
         GemmInputBytes(c, d.sp_tokens, d.h);
}

// Attention with flash attention: qk-norm inputs and rstd, the post-RoPE q, k, v and the gate,
// the core output O (linear_proj's input, or kept for the gate), the softmax LSE (fp32), and
// with the output gate the gated product that linear_proj saves. With FP8 linear_proj saves its
// own quantized copy of its input next to flash attention's bf16 O.
int64_t AttentionBytes(const LayerOpContext& c, const Dims& d, bool selective) {
  const config::AttentionConfig& a = c.model.attention;
  const int64_t heads = a.num_heads / d.t;
  const int64_t kv_heads = std::max<int64_t>(a.num_kv_heads / d.t, 1);  // g < t: one group
  const int64_t q = heads * a.head_dim, kv = kv_heads * a.head_dim;
  int64_t bytes = FusedNormBytes(c, d);
  if (a.qk_norm) {
    bytes += Bytes(d.tokens, q + kv, kBf16Bytes) + Bytes(d.tokens, heads + kv_heads, kFp32Bytes);
  }
  bytes += Bytes(d.tokens, q + 2 * kv + (a.output_gate ? q : 0), kBf16Bytes);
  bytes += Bytes(d.tokens, q, kBf16Bytes);
  if (a.output_gate || SavesQuantizedInputs(c)) bytes += GemmInputBytes(c, d.tokens, q);
  if (!Drops(c, selective, "core_attn")) bytes += Bytes(d.tokens, heads, kFp32Bytes);
  return bytes;
}

// Multi-latent attention (multi_latent_attention.py, TE spec): the input norm as a fused norm
// (its output is the one input both replicated down projections save); per latent (q when
// q_lora_rank > 0, and kv) the norm input, its fp32 rsigma and its output, which the column-
// parallel up projection saves sequence-sharded; flash attention's q and k (n/t heads of
// nope + rope) and v (v_head_dim); the core output O (linear_proj's input, plus its quantized
// copy with FP8) and the fp32 LSE. The gathered k_pos_emb is not saved (RoPE's backward needs
// only the angles). The selective mla_up_proj recompute (CheckpointWithoutOutput around the up
// projections and RoPE, multi_latent_attention.py:983-988, 455-458) keeps only its inputs — the
// latents and the gathered k_pos_emb — and frees q, k, v once core attention has run.
int64_t MlaBytes(const LayerOpContext& c, const Dims& d, bool selective) {
  const config::MlaConfig& mla = c.model.mla;
  const int64_t heads = c.model.attention.num_heads / d.t;
  const bool up_proj_recomputed = Drops(c, selective, "mla_up_proj");
  int64_t bytes = FusedNormBytes(c, d);
  for (const int64_t latent : {mla.q_lora_rank, mla.kv_lora_rank}) {
    if (latent == 0) continue;
    bytes += Bytes(d.sp_tokens, latent, kBf16Bytes);
    if (!up_proj_recomputed) {
      bytes += Bytes(d.sp_tokens, 1, kFp32Bytes) + GemmInputBytes(c, d.sp_tokens, latent);
    }
  }
  const int64_t o = heads * mla.v_head_dim;
  // Under THD the kernel runs on V padded to nope + rope: it saves the padded V and its padded
  // output, and linear_proj saves the trimmed copy.
  const int64_t kernel_v = heads * c.CoreValueHeadDim();
  if (up_proj_recomputed) {
    bytes += Bytes(d.tokens, mla.qk_rope_head_dim, kBf16Bytes);
  } else {
    bytes += Bytes(d.tokens, 2 * heads * mla.QkHeadDim() + kernel_v, kBf16Bytes);
  }
  bytes += Bytes(d.tokens, o, kBf16Bytes);
  if (kernel_v != o) bytes += Bytes(d.tokens, kernel_v, kBf16Bytes);
  if (SavesQuantizedInputs(c)) bytes += GemmInputBytes(c, d.tokens, o);
  if (!Drops(c, selective, "core_attn")) bytes += Bytes(d.tokens, heads, kFp32Bytes);
  return bytes;
}

int64_t DeterministicGdnExtraBytes(const LayerOpContext& c, const Dims& d);

// Gated DeltaNet (Megatron-LM ssm/gated_delta_net): in_proj output (the conv input and the z, beta,
// alpha views), conv output (kernel q, k, v), q/k L2-norm rstd, decay g (fp32) and beta, the FLA
// kernel's WY matrix A [S, H_v, chunk] in bf16, the kernel output o and out_norm rstd, and the
// out_norm output that out_proj saves (dropped with its rstd by gdn_norm_out, gdn.py:266-287).
int64_t GdnMixerBytes(const LayerOpContext& c, const Dims& d, bool selective) {
  const config::GdnConfig& g = c.model.gdn;
  const int64_t v_heads = g.num_value_heads / d.t, k_heads = g.num_key_heads / d.t;
  const int64_t vd = g.ValueWidth() / d.t;
  int64_t bytes = Bytes(d.tokens, g.InProjWidth() / d.t, kBf16Bytes);
  if (c.training.deterministic) bytes += DeterministicGdnExtraBytes(c, d);
  bytes += Bytes(d.tokens, g.ConvChannels() / d.t, kBf16Bytes);
  bytes += Bytes(d.tokens, 2 * k_heads, kFp32Bytes);
  bytes += Bytes(d.tokens, v_heads, kFp32Bytes + kBf16Bytes);
  bytes += Bytes(d.tokens, v_heads * g.chunk_size, kBf16Bytes);
  bytes += Bytes(d.tokens, vd, kBf16Bytes);
  if (!Drops(c, selective, "gdn_norm_out")) {
    bytes += GemmInputBytes(c, d.tokens, vd) + Bytes(d.tokens, v_heads, kFp32Bytes);
  }
  return bytes;
}

// What --deterministic-mode changes in one GDN layer's saved tensors (gdn.py:69-72, 217-229,
// torch_chunk_gated_delta_rule gdn.py:422-527). Autograd of the torch-native chunked delta rule
// keeps, per sequence and local value head (b sequences of L = RoundUp(s, C) positions,
// H_v/(t·c) heads after the CP all-to-all), in fp32 (4 bytes):
//   per position: 7·d_k (q·scale, k, k·β, k·β·e^g, k_cumdecay, q·e^g of each chunk, the
//     k·e^(g_last−g) of the state update) + 3·d_v (v, v·β, v_new) + 6·C (e^(g_i−g_j) and its
//     tril decay mask, k·βkᵀ, the solved attn, each chunk's qkᵀ·decay and its masked copy)
//     + 4 (β, e^g, and the two per-chunk gate exponentials);
//   per chunk: the two clones of each row step i = 1..C−1 of the triangular loop that the
//     product keeps, Σ(i + i²) = (C−1)C/2 + (C−1)C(2C−1)/6, and the recurrent state d_k·d_v
//     that three products of the chunk save.
// The conv path saves the contiguous [b, d, s] copy that F.conv1d keeps (2 bytes · S · conv/t)
// and SiLU's input, the conv output of s + K − 1 positions per sequence. The FLA kernel's WY
// matrix A (2·S·H_v/t·C) is not saved, nor is the bf16 v (the fp32 copy replaces it).
int64_t DeterministicGdnExtraBytes(const LayerOpContext& c, const Dims& d) {
  const config::GdnConfig& g = c.model.gdn;
  const int64_t chunk = g.chunk_size, dk = g.key_head_dim, dv = g.value_head_dim;
  const int64_t b = c.training.batch.micro_batch_size;
  const int64_t s = c.training.batch.seq_length;
  const int64_t cp = c.training.parallel.context;
  const int64_t sequence_heads = b * g.num_value_heads / (d.t * cp);
  const int64_t chunks = RoundUp(s, chunk) / chunk;
  const int64_t floats_per_chunk = chunk * (7 * dk + 3 * dv + 6 * chunk + 4) +
                                   (chunk - 1) * chunk / 2 +
                                   (chunk - 1) * chunk * (2 * chunk - 1) / 6 + dk * dv;
  const int64_t torch_bytes =
      Bytes(CheckedMul(sequence_heads, chunks, kWhat), floats_per_chunk, kFp32Bytes);
  const int64_t conv_width = g.ConvChannels() / (d.t * cp);
  const int64_t conv_bytes = Bytes(b * s, conv_width, kBf16Bytes) +
                             Bytes(b * (s + g.conv_kernel - 1), conv_width, kBf16Bytes);
  const int64_t fla_bytes = Bytes(d.tokens, g.num_value_heads / d.t * chunk, kBf16Bytes) +
                            Bytes(d.tokens, g.ValueWidth() / d.t, kBf16Bytes);
  return torch_bytes + conv_bytes - fla_bytes;
}

int64_t GdnBytes(const LayerOpContext& c, const Dims& d, bool selective) {
  if (!c.training.framework.DuplicatesGdn()) {
    return FusedNormBytes(c, d) + GdnMixerBytes(c, d, selective);
  }
  // slime's HuggingfaceAttention: the input norm (input and rstd) on the rank's tokens, the
  // gathered whole sequence that the plain nn.Linear in_proj saves, and the whole GDN's tensors
  // on every TP·CP rank.
  const config::TrainingConfig whole = config::UnsplitGdnTraining(c.training);
  const LayerOpContext unsplit{.model = c.model, .training = whole, .layout = c.layout};
  const Dims u = MakeDims(unsplit);
  return Bytes(d.sp_tokens, d.h, kBf16Bytes) + Bytes(d.sp_tokens, 1, kFp32Bytes) +
         Bytes(u.tokens, d.h, kBf16Bytes) + GdnMixerBytes(unsplit, u, selective);
}

// SwiGLU MLP after its (fused) pre-MLP norm: fc1 output 2F/t (SwiGLU input, bf16) and the
// activation output F/t (fc2's GEMM input). A GeLU MLP (fc1_factor 1) saves F/t and F/t.
int64_t SwiGluBytes(const LayerOpContext& c, const Dims& d, int64_t ffn_hidden,
                    int64_t fc1_factor = 2) {
  return Bytes(d.tokens, fc1_factor * (ffn_hidden / d.t), kBf16Bytes) +
         GemmInputBytes(c, d.tokens, ffn_hidden / d.t);
}

// Dense MLP; selective `mlp` checkpoints the whole MLP and keeps only its input.
int64_t DenseMlpBytes(const LayerOpContext& c, const Dims& d, bool selective) {
  if (Drops(c, selective, "mlp")) return Bytes(d.sp_tokens, d.h, kBf16Bytes);
  return FusedNormBytes(c, d) +
         SwiGluBytes(c, d, c.model.ffn_hidden_size, c.model.mlp.Fc1WidthFactor());
}

// Expert GEMM rows on the busiest rank: u·ceil(T·k·λ) when dropless (λ = busiest-rank tokens
// over the mean, 1 for balanced routing), capped or padded to the capacity C = ceil(T·k/E·cf)
// per expert (moe_utils.py:248-266).
// ceil(rows·factor), checked.
int64_t ScaledRows(int64_t rows, double factor) {
  const double scaled = std::ceil(static_cast<double>(rows) * factor);
  if (!(scaled < 0x1p62)) {
    throw InputError(std::string(kWhat) + ": absurd size, the count overflows 64 bits");
  }
  return static_cast<int64_t>(scaled);
}

int64_t ExpertRows(const LayerOpContext& c, int64_t tokens, double load_factor) {
  const config::MoeConfig& moe = c.model.moe;
  const int64_t mean_pairs = CheckedMul(tokens, moe.top_k, kWhat);
  int64_t pairs = mean_pairs;
  if (load_factor != 1.0) {
    const double busiest = std::ceil(static_cast<double>(mean_pairs) * load_factor);
    if (!(busiest < 0x1p62)) {
      throw InputError(std::string(kWhat) + ": absurd size, the count overflows 64 bits");
    }
    pairs = static_cast<int64_t>(busiest);
  }
  if (const auto& cf = c.training.moe.capacity_factor) {
    const double per_expert =
        static_cast<double>(mean_pairs) / static_cast<double>(moe.num_experts);
    const int64_t capacity = static_cast<int64_t>(std::ceil(per_expert * *cf));
    const int64_t padded = CheckedMul(capacity, moe.num_experts, kWhat);
    pairs = c.training.moe.pad_expert_input_to_capacity ? padded : std::min(pairs, padded);
  }
  // HybridEP's rank budget: static buffers of ceil(T·k·f) rows (token_dispatcher.py
  // setup_metadata, num_permuted_tokens); a busiest rank over it overflows and the eager rerun
  // holds its own rows, so the larger of the two.
  if (c.training.moe.RankBudgetRuns()) {
    pairs = std::max(pairs, ScaledRows(mean_pairs, *c.training.moe.rank_capacity_factor));
  }
  return CheckedMul(c.training.parallel.ExpertTensor(), pairs, kWhat);
}

// --moe-paged-stash: what the fused expert MLP saves for backward (its grouped tensors, which
// carry grouped_tensor_scale_inv: the probs, the fc1 input, the fc1 output and the fc2 input, in
// any precision) lives in the page pool, sized |f| x the balanced rows (f > 0) or the busiest
// rank's (f < 0) instead of the budget's (paged_stash.py on_save_for_backward,
// allocate_stash_buffers); unset when nothing is stashed (no budget, or an overflowing step whose
// rerun runs without the stash).
std::optional<int64_t> StashedExpertRows(const LayerOpContext& c, int64_t tokens, double load) {
  const config::MoeRunConfig& run = c.training.moe;
  if (!run.paged_stash || !run.RankBudgetRuns()) return std::nullopt;
  if (load > *run.rank_capacity_factor) return std::nullopt;
  const int64_t mean_pairs = CheckedMul(tokens, c.model.moe.top_k, kWhat);
  const double factor = run.paged_stash_buffer_factor;
  const int64_t pairs = ScaledRows(mean_pairs, factor > 0 ? factor : -factor * load);
  return CheckedMul(c.training.parallel.ExpertTensor(), pairs, kWhat);
}

// The token dispatcher's permutation map that one MoE layer saves for backward
// (NVIDIA/Megatron-LM d98e8a64 token_dispatcher.py, moe_utils.py permute/unpermute; TE
// d0067d0d transformer_engine/pytorch/permutation.py and triton/permutation.py):
//  - alltoall, --moe-permute-fusion: TE's row_id_map, int32 [T, 2E + 1] (make_row_id_map),
//    saved by the permute and reused by the unpermute;
//  - alltoall, unfused, dropless or capacity without padding: the argsort indices of the
//    [E, T] routing map, int64 [E·T], which the probs gather `[flat_sorted]` keeps through its
//    view, plus sorted_indices, int64 per permuted row (kept by index_select and scatter_add_);
//  - alltoall, unfused, padded to capacity: sorted_indices and the probs indices, int64 [E·C]
//    each;
//  - allgather (no probs in the permute): fused TE's row_id_map over the gathered T_g = u·e·T
//    tokens and E/e local experts, unfused sorted_indices per permuted row; both plus the bool
//    mask the local probs' masked_select keeps, [T_g, E/e].
// The flex dispatcher (DeepEP / HybridEP) is not modelled (0).
int64_t PermuteMapBytes(const LayerOpContext& c, const Dims& d, double load) {
  const config::MoeRunConfig& run = c.training.moe;
  const int64_t experts = c.model.moe.num_experts;
  const int64_t u = c.training.parallel.ExpertTensor();
  if (run.dispatcher == config::TokenDispatcher::kAllToAll) {
    const int64_t tokens = d.sp_tokens;
    if (run.permute_fusion) return Bytes(tokens, 2 * experts + 1, kInt32Bytes);
    const int64_t own_rows = ExpertRows(c, tokens, 1.0) / u;  // this rank's tokens, sent
    if (run.capacity_factor && run.pad_expert_input_to_capacity) {
      return Bytes(own_rows, 2, kInt64Bytes);
    }
    return Bytes(CheckedMul(tokens, experts, kWhat), 1, kInt64Bytes) +
           Bytes(own_rows, 1, kInt64Bytes);
  }
  if (run.dispatcher == config::TokenDispatcher::kAllGather) {
    const int64_t gathered = CheckedMul(u * c.training.parallel.expert, d.sp_tokens, kWhat);
    const int64_t local_experts = experts / c.training.parallel.expert;
    const int64_t mask = Bytes(gathered, local_experts, kBoolBytes);
    if (run.permute_fusion) return mask + Bytes(gathered, 2 * local_experts + 1, kInt32Bytes);
    return mask + Bytes(ExpertRows(c, d.sp_tokens, load), 1, kInt64Bytes);
  }
  return 0;
}

// Router, routed experts and shared expert of one MoE layer (the pre-MLP norm is separate).
// With FP8 the expert fc1 saves the quantized permuted tokens and the shared expert's fc1 its
// own quantized copy of the MoE input.
int64_t MoeBlockBytes(const LayerOpContext& c, const Dims& d, bool selective, double load) {
  const config::MoeConfig& moe = c.model.moe;
  const int64_t u = c.training.parallel.ExpertTensor();
  const int64_t rows = ExpertRows(c, d.sp_tokens, load);
  // Router logits and probs in the router dtype plus the bool routing map (router.py).
  int64_t bytes = Bytes(d.sp_tokens, moe.num_experts, 2 * RouterBytes(c) + kBoolBytes);
  // Permuted probs, expert fc1 input and output (experts.py TEGroupedMLP), in the paged stash's
  // rows when it keeps them.
  const int64_t saved_rows = StashedExpertRows(c, d.sp_tokens, load).value_or(rows);
  bytes += Bytes(saved_rows, 1, RouterBytes(c)) + GemmInputBytes(c, saved_rows, d.h);
  bytes += Bytes(saved_rows, 2 * (moe.expert_ffn_hidden_size / u), kBf16Bytes);
  bytes += PermuteMapBytes(c, d, load);
  if (!Drops(c, selective, "moe_act")) {
    bytes += GemmInputBytes(c, saved_rows, moe.expert_ffn_hidden_size / u);
  }
  if (moe.HasSharedExpert() && !Drops(c, selective, "shared_experts")) {
    bytes += SwiGluBytes(c, d, moe.shared_expert_ffn_hidden_size);
    if (SavesQuantizedInputs(c)) bytes += GemmInputBytes(c, d.sp_tokens, d.h);
    if (moe.shared_expert_gate) bytes += Bytes(d.sp_tokens, d.h + 1, kBf16Bytes);
  }
  return bytes;
}

// MoE layer: the separate pre-MLP TENorm (input, rstd, output = MoE input), then the block.
// `layernorm` discards the norm output and rstd; `moe` checkpoints the whole MoE layer.
int64_t MoeBytes(const LayerOpContext& c, const Dims& d, bool selective, double load) {
  const int64_t input = Bytes(d.sp_tokens, d.h, kBf16Bytes);
  int64_t bytes = input;
  if (!Drops(c, selective, "layernorm")) bytes += input + Bytes(d.sp_tokens, 1, kFp32Bytes);
  if (!Drops(c, selective, "moe")) bytes += MoeBlockBytes(c, d, selective, load);
  return bytes;
}

int64_t LayerBytes(const LayerOpContext& c, LayerSpec spec, bool selective, double load) {
  const Dims d = MakeDims(c);
  int64_t mixer = 0;
  if (spec.mixer == MixerKind::kGatedDeltaNet) {
    mixer = GdnBytes(c, d, selective);
  } else if (spec.mixer == MixerKind::kMultiLatentAttention) {
    mixer = MlaBytes(c, d, selective);
  } else {
    mixer = AttentionBytes(c, d, selective);
  }
  const int64_t ffn =
      spec.ffn == FfnKind::kMoe ? MoeBytes(c, d, selective, load) : DenseMlpBytes(c, d, selective);
  return CheckedAdd(mixer, ffn, kWhat);
}

}  // namespace

int64_t LayerActivationBytes(const LayerOpContext& c, LayerSpec spec, double moe_load_factor) {
  return LayerBytes(c, spec, /*selective=*/true, moe_load_factor);
}

int64_t LayerActivationBytesNoRecompute(const LayerOpContext& c, LayerSpec spec,
                                        double moe_load_factor) {
  return LayerBytes(c, spec, /*selective=*/false, moe_load_factor);
}

int64_t KeptPermuteMapBytes(const LayerOpContext& c, LayerSpec spec, double moe_load_factor) {
  if (spec.ffn != FfnKind::kMoe || Drops(c, /*selective=*/true, "moe")) return 0;
  return PermuteMapBytes(c, MakeDims(c), moe_load_factor);
}

int64_t LayerInputBytes(const LayerOpContext& c) {
  const Dims d = MakeDims(c);
  // tensor_parallel.checkpoint splits the saved input over TP with distribute_saved_activations
  // (only allowed without SP, arguments.py).
  const bool distributed =
      c.training.recompute.distribute_saved_activations && !c.SequenceParallel();
  return Bytes(distributed ? CeilDiv(d.tokens, d.t) : d.sp_tokens, d.h, kBf16Bytes);
}

int64_t LayerTransientBytes(const LayerOpContext& c, LayerSpec spec, double moe_load_factor) {
  const Dims d = MakeDims(c);
  const int64_t gathered = c.SequenceParallel() ? Bytes(d.tokens, d.h, kBf16Bytes) : 0;
  int64_t mixer = 0;
  if (spec.mixer == MixerKind::kGatedDeltaNet) {
    // FLA chunk states h [chunks, H_v, d_k, d_v] in bf16, rebuilt in backward.
    const config::GdnConfig& g = c.model.gdn;
    const int64_t state = g.num_value_heads / d.t * g.key_head_dim * g.value_head_dim;
    mixer = Bytes(CeilDiv(d.tokens, g.chunk_size), state, kBf16Bytes);
  } else if (spec.mixer == MixerKind::kMultiLatentAttention) {
    // dq, dk (nope + rope) and dv (v_head_dim, padded under THD) over the n/t local heads.
    const config::MlaConfig& mla = c.model.mla;
    const int64_t width =
        c.model.attention.num_heads / d.t * (2 * mla.QkHeadDim() + c.CoreValueHeadDim());
    mixer = Bytes(d.tokens, width, kBf16Bytes);
  } else {
    // dq, dk, dv and the gate gradient in backward.
    const config::AttentionConfig& a = c.model.attention;
    const int64_t width = a.QueryWidth() * (a.output_gate ? 2 : 1) / d.t +
                          2 * std::max<int64_t>(a.num_kv_heads / d.t, 1) * a.head_dim;
    mixer = Bytes(d.tokens, width, kBf16Bytes);
  }
  int64_t ffn = 0;
  if (spec.ffn == FfnKind::kMoe) {
    // Dispatcher buffers: the permuted send buffer, the expert output (RS input with ETP) and
    // the combine receive buffer (alltoall / flex), or the tp_ep-gathered hidden states and the
    // RS input in the probs dtype (allgather).
    const config::ParallelSizes& sizes = c.training.parallel;
    const int64_t rows = ExpertRows(c, d.sp_tokens, moe_load_factor);
    ffn = Bytes(rows, d.h, kBf16Bytes);
    if (c.training.moe.dispatcher == config::TokenDispatcher::kAllGather) {
      const int64_t gathered_rows =
          CheckedMul(sizes.ExpertTensor() * sizes.expert, d.sp_tokens, kWhat);
      ffn += Bytes(gathered_rows, d.h, kBf16Bytes + RouterBytes(c));
    } else {
      ffn += Bytes(CheckedMul(d.sp_tokens, c.model.moe.top_k, kWhat), d.h, 2 * kBf16Bytes);
    }
  } else {
    ffn = Bytes(d.tokens, c.model.mlp.Fc1WidthFactor() * (c.model.ffn_hidden_size / d.t),
                kBf16Bytes);  // d(fc1 output)
  }
  return CheckedAdd(gathered, std::max(mixer, ffn), kWhat);
}

}  // namespace trainscope::cost::internal
