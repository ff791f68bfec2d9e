// Attention, context-parallel and Gated DeltaNet op builders: the QKV/projection linears, the
// core-attention kernel with its CP traffic per communication type, the input norm, QK-norm, RoPE
// and output gate around them, and the GDN input norm, in_proj, conv, gates, chunked delta-rule
// kernel, gated out-norm and out_proj (attention.py, TE context_parallel.py, gated_delta_net/).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "trainscope/graph/elementwise_ops.h"
#include "trainscope/graph/layer_ops_internal.h"
#include "trainscope/units.h"

namespace trainscope::graph::internal {

using config::CpCommType;
using config::GroupKind;

namespace {

int64_t QkvWidth(const config::AttentionConfig& a) {
  return a.QueryWidth() + 2 * a.KvWidth() + a.GateWidth();
}

// KV heads per rank g_l = max(1, g/t) (attention.py:353-367).
int64_t LocalKvHeads(const LayerOpContext& c) {
  return std::max<int64_t>(1, c.model.attention.num_kv_heads / Tp(c));
}

CpCommType CpTypeOfLayer(const LayerOpContext& c, int64_t layer) {
  const std::vector<CpCommType>& types = c.training.context.comm_types;
  if (types.empty()) return CpCommType::kP2p;
  if (types.size() > 1 && layer >= 0 && layer < static_cast<int64_t>(types.size())) {
    return types[static_cast<size_t>(layer)];
  }
  return types.front();
}

// p2p ring (TE): `steps` sends and receives of the given sizes to the ring neighbours.
void CpRing(OpSink& sink, const std::string& name, int64_t group_size,
            const std::vector<int64_t>& step_bytes) {
  const OpRole role = CommRole(OpBlock::kAttention, CommPurpose::kCpExchange);
  for (size_t i = 0; i < step_bytes.size(); ++i) {
    const std::string step = name + ".step" + std::to_string(i);
    sink.Comm(step + ".send", role, Collective::kSend, GroupKind::kCp, group_size, step_bytes[i]);
    sink.Comm(step + ".recv", role, Collective::kRecv, GroupKind::kCp, group_size, step_bytes[i]);
  }
}

// Role of the CP gathers / reduce-scatters and of the CP all-to-alls.
constexpr OpRole kCpGatherRole{.block = OpBlock::kAttention, .purpose = CommPurpose::kCpGather};
constexpr OpRole kCpA2aRole{.block = OpBlock::kAttention, .purpose = CommPurpose::kCpAllToAll};
constexpr OpRole kAttentionKernel{.kind = OpKind::kElementwise, .block = OpBlock::kAttention};

// Ring step sizes: forward c-1 steps of KV; backward KV, then 2·KV for steps 1..c-2, then KV
// (TE context_parallel.py:2459-2495).
std::vector<int64_t> RingSteps(int64_t ring_size, int64_t kv_bytes, bool backward) {
  if (ring_size <= 1) return {};
  if (!backward) return std::vector<int64_t>(static_cast<size_t>(ring_size - 1), kv_bytes);
  std::vector<int64_t> steps(static_cast<size_t>(ring_size), 2 * kv_bytes);
  steps.front() = kv_bytes;
  steps.back() = kv_bytes;
  return steps;
}

struct CpSizes {
  int64_t q_bytes = 0;   // s_c·b·n_l·d_h·2 (also O)
  int64_t kv_bytes = 0;  // one of K or V locally: s_c·b·g_l·d_h·2
};

// MLA (value head dim d_v ≠ d_h): K has d_h and V d_v per head, so one of K or V is taken at
// their mean width (d_h + d_v)/2, which keeps K + V = 2·kv_bytes exact; Q and O at d_h.
CpSizes AttentionCpSizes(const LayerOpContext& c) {
  const config::AttentionConfig& a = c.model.attention;
  const int64_t tokens = c.TokensPerRank();
  const int64_t kv_width = (a.head_dim + c.CoreValueHeadDim()) / 2;
  return CpSizes{.q_bytes = tokens * (a.num_heads / Tp(c)) * a.head_dim * kBf16Bytes,
                 .kv_bytes = tokens * LocalKvHeads(c) * kv_width * kBf16Bytes};
}

// q_layernorm / k_layernorm, RMSNorm over d_h (attention.py get_query_key_value_tensors), on the
// s_c·b gathered tokens over this rank's n/t query and g_l KV heads.
void QkNorm(OpSink& sink, const LayerOpContext& c) {
  const config::AttentionConfig& a = c.model.attention;
  if (!a.qk_norm) return;
  const int64_t tokens = c.TokensPerRank();
  const OpRole norm = KernelRole(OpKind::kNorm, OpBlock::kAttention);
  Elementwise(sink, norm, "attention.q_norm", tokens * (a.num_heads / Tp(c)) * a.head_dim,
              kRmsNorm);
  Elementwise(sink, norm, "attention.k_norm", tokens * LocalKvHeads(c) * a.head_dim, kRmsNorm);
}

}  // namespace

// RoPE on q and k (apply_rotary_pos_emb in attention.py forward): FLOPs over the rotated
// rotary_fraction·d_h, bytes over the whole head. TE's fused kernel, except under a YaRN
// concentration factor other than 1 (GPT-OSS), where Megatron falls back to the unfused torch
// RoPE (rope_utils.py apply_rotary_pos_emb: "mscale ... is not supported by TE's fused RoPE";
// _apply_rotary_pos_emb_bshd), once for q and once for k. Per bf16 element of the head:
// forward rotate_half's negation of one half (2 B) and concatenation (4 B), x·cos (4 B),
// rotate_half(x)·sin (4 B), the sum (6 B) and the concatenation with the pass-through part
// (4 B) = 24 B in 6 kernels, plus 6 small ones for cos·mscale and sin·mscale; backward grad·sin
// (4 B), its negation (2 B) and concatenation (4 B), grad·cos (4 B) and the sum of the two paths
// (6 B) = 20 B in 5 kernels.
// Under --framework torchtitan, its complex-number RoPE (TorchRope).
void Rope(OpSink& sink, const LayerOpContext& c) {
  const config::AttentionConfig& a = c.model.attention;
  const int64_t rotated = std::llround(a.rotary_fraction * static_cast<double>(a.head_dim));
  if (rotated <= 0) return;
  const int64_t vectors = c.TokensPerRank() * (a.num_heads / Tp(c) + LocalKvHeads(c));
  if (c.training.framework.TorchNative()) {
    TorchRope(sink, c, vectors * a.head_dim, vectors * rotated);
    return;
  }
  if (a.rope_concentration == 1.0) {
    Kernel(sink, kAttentionKernel, "attention.rope", vectors * rotated * kRope.flops,
           vectors * a.head_dim * kRope.bytes);
    return;
  }
  const int64_t elements = vectors * a.head_dim;
  constexpr int64_t kCalls = 2;  // q and k
  EagerChain(sink, kAttentionKernel, "attention.rope",
             EagerChainCost{.flops = vectors * rotated * kRope.flops,
                            .forward_bytes = 24 * elements,
                            .forward_launches = kCalls * 12,
                            .backward_bytes = 20 * elements,
                            .backward_launches = kCalls * 5});
}

namespace {

// Gated attention: core output × sigmoid(gate) over the q/t local query width.
void OutputGate(OpSink& sink, const LayerOpContext& c) {
  if (!c.model.attention.output_gate) return;
  Elementwise(sink, KernelRole(OpKind::kElementwise, OpBlock::kAttention, OpModule::kOutputGate),
              "attention.output_gate", c.TokensPerRank() * c.model.attention.QueryWidth() / Tp(c),
              kSigmoidGate);
}

}  // namespace

// CP traffic before the core-attention kernel (forward, or backward when `backward`).
void CpBeforeCore(OpSink& sink, const LayerOpContext& c, int64_t layer, bool backward) {
  const int64_t cp = Cp(c);
  if (cp <= 1) return;
  const CpSizes sz = AttentionCpSizes(c);
  const std::string base = "attention.cp";
  switch (CpTypeOfLayer(c, layer)) {
    case CpCommType::kP2p:  // :1685-1716 forward, :2459-2495 backward
      CpRing(sink, base + ".p2p", cp, RingSteps(cp, 2 * sz.kv_bytes, backward));
      return;
    case CpCommType::kAllGather:  // K and V gathered to the full s (:3215-3216, :3788-3789)
      sink.Comm(base + ".ag_k", kCpGatherRole, Collective::kAllGather, GroupKind::kCp, cp,
                cp * sz.kv_bytes);
      sink.Comm(base + ".ag_v", kCpGatherRole, Collective::kAllGather, GroupKind::kCp, cp,
                cp * sz.kv_bytes);
      return;
    case CpCommType::kA2a:
      if (backward) {  // dO (:4677)
        sink.Comm(base + ".a2a_do", kCpA2aRole, Collective::kAllToAll, GroupKind::kCp, cp,
                  sz.q_bytes);
        return;
      }
      sink.Comm(base + ".a2a_q", kCpA2aRole, Collective::kAllToAll, GroupKind::kCp, cp, sz.q_bytes);
      sink.Comm(base + ".a2a_k", kCpA2aRole, Collective::kAllToAll, GroupKind::kCp, cp,
                sz.kv_bytes);
      sink.Comm(base + ".a2a_v", kCpA2aRole, Collective::kAllToAll, GroupKind::kCp, cp,
                sz.kv_bytes);
      return;
    case CpCommType::kA2aP2p: {
      // Hierarchical [c1, c2]: a2a within c1 ranks, ring over c2 with KV' = 2·(s/c2)·b·(g_l/c1)·
      // d_h·2 = the local K+V (hierarchical a2a+p2p). Both reported on the CP group kind.
      const std::vector<int64_t>& h = c.training.context.hierarchical_sizes;
      const int64_t c1 = h.size() == 2 ? h[0] : cp;
      const int64_t c2 = h.size() == 2 ? h[1] : 1;
      if (backward) {
        sink.Comm(base + ".a2a_do", kCpA2aRole, Collective::kAllToAll, GroupKind::kCp, c1,
                  sz.q_bytes);
      } else {
        sink.Comm(base + ".a2a_q", kCpA2aRole, Collective::kAllToAll, GroupKind::kCp, c1,
                  sz.q_bytes);
        sink.Comm(base + ".a2a_k", kCpA2aRole, Collective::kAllToAll, GroupKind::kCp, c1,
                  sz.kv_bytes);
        sink.Comm(base + ".a2a_v", kCpA2aRole, Collective::kAllToAll, GroupKind::kCp, c1,
                  sz.kv_bytes);
      }
      CpRing(sink, base + ".p2p", c2, RingSteps(c2, 2 * sz.kv_bytes, backward));
      return;
    }
  }
}

// CP traffic after the core-attention kernel.
void CpAfterCore(OpSink& sink, const LayerOpContext& c, int64_t layer, bool backward) {
  const int64_t cp = Cp(c);
  if (cp <= 1) return;
  const CpSizes sz = AttentionCpSizes(c);
  const std::string base = "attention.cp";
  const CpCommType type = CpTypeOfLayer(c, layer);
  if (type == CpCommType::kAllGather && backward) {  // RS of dK, dV (:4107-4108)
    sink.Comm(base + ".rs_dk", kCpGatherRole, Collective::kReduceScatter, GroupKind::kCp, cp,
              cp * sz.kv_bytes);
    sink.Comm(base + ".rs_dv", kCpGatherRole, Collective::kReduceScatter, GroupKind::kCp, cp,
              cp * sz.kv_bytes);
  }
  if (type != CpCommType::kA2a && type != CpCommType::kA2aP2p) return;
  const std::vector<int64_t>& h = c.training.context.hierarchical_sizes;
  const int64_t group = (type == CpCommType::kA2aP2p && h.size() == 2) ? h[0] : cp;
  if (!backward) {  // O back to sequence sharding (:4485)
    sink.Comm(base + ".a2a_o", kCpA2aRole, Collective::kAllToAll, GroupKind::kCp, group,
              sz.q_bytes);
    return;
  }
  sink.Comm(base + ".a2a_dq", kCpA2aRole, Collective::kAllToAll, GroupKind::kCp, group,
            sz.q_bytes);  // :4837
  sink.Comm(base + ".a2a_dk", kCpA2aRole, Collective::kAllToAll, GroupKind::kCp, group,
            sz.kv_bytes);
  sink.Comm(base + ".a2a_dv", kCpA2aRole, Collective::kAllToAll, GroupKind::kCp, group,
            sz.kv_bytes);
}

// Causal core attention (TE): 2·b·(n/t)·d_h·s²/c = 2·b·(n/t)·d_h·s·s_c forward (QKᵀ and PV,
// each 2·s²·d_h per head, halved by the causal mask). With a value head dim d_v ≠ d_h (MLA:
// d_h = nope + rope, d_v = v_head_dim), QKᵀ costs s²·d_h and PV s²·d_v per head after the mask:
// b·(n/t)·(d_h + d_v)·s·s_c, which is the first form when d_v = d_h. THD counts Σ s_i² per packed
// sequence; without a length distribution a micro-batch is b sequences of length s, which equals
// BSHD. A sliding-window layer (window w < s) attends Σ_i min(i+1, w) = w·s − w(w−1)/2 query-key
// pairs instead of the causal s²/2, and the kernel skips the masked blocks, so the FLOPs scale
// by that ratio: 4·b·(n/t)·d_h·(w·s − w(w−1)/2)/c.
// Bytes: read Q, K, V, write O (local heads).
void CoreAttention(OpSink& sink, const LayerOpContext& c, int64_t multiplier) {
  const config::AttentionConfig& a = c.model.attention;
  const int64_t local_heads = a.num_heads / Tp(c);
  const int64_t s = c.training.batch.seq_length;
  const int64_t b = c.training.batch.micro_batch_size;
  // Under THD, MLA pads V to d_h for the kernel (LayerOpContext::CoreValueHeadDim).
  const int64_t qk_plus_v = a.head_dim + c.CoreValueHeadDim();
  // (query, key) pairs per head after the mask: s·s_c/2 causal, (w·s − w(w−1)/2)/c in a window.
  int64_t pairs = b * local_heads * s * (s / Cp(c)) / 2;
  const auto layer = static_cast<size_t>(sink.layer());
  const int64_t w = a.sliding_window;
  if (layer < c.model.layers.size() && c.model.layers[layer].sliding && w < s) {
    pairs = b * local_heads * (w * s - w * (w - 1) / 2) / Cp(c);
  }
  const int64_t flops = 2 * qk_plus_v * pairs;
  const CpSizes sz = AttentionCpSizes(c);
  const std::string name = multiplier == 1 ? "attention.core" : "attention.core.backward";
  if (sink.fp8().dot_product_attention) {
    // FP8 attention (TE fp8_dpa, fp8_mha off): the mixed Q, K, V buffer is quantized before
    // the forward kernel as one tensor, O and dO (one tensor each) before the backward one.
    if (multiplier == 1) {
      sink.AttentionFp8Cast("attention.dpa.fp8_cast_qkv", Fp8Operand::kInput,
                            (sz.q_bytes + 2 * sz.kv_bytes) / kBf16Bytes, 1);
    } else {
      sink.AttentionFp8Cast("attention.dpa.fp8_cast_o_do", Fp8Operand::kGradOutput,
                            sz.q_bytes / kBf16Bytes, 2);
    }
  }
  sink.Attention(name, KernelRole(OpKind::kAttentionCore, OpBlock::kAttention), multiplier * flops,
                 multiplier * (2 * sz.q_bytes + 2 * sz.kv_bytes), pairs, a.head_dim,
                 c.CoreValueHeadDim(),
                 c.training.framework.TorchNative() ? AttentionKernel::kTorchSdpaFlash
                                                    : AttentionKernel::kTeFused);
}

void AttentionForward(OpSink& sink, const LayerOpContext& c) {
  const config::AttentionConfig& a = c.model.attention;
  const int64_t h = c.model.hidden_size;
  HiddenNorm(sink, c, OpBlock::kAttention, "attention.input_norm");  // fused into linear_qkv
  ColumnForward(sink, c, OpBlock::kAttention, "attention.linear_qkv", QkvWidth(a) / Tp(c), h,
                c.ActivationBytes());
  if (Tp(c) > a.num_kv_heads) {  // g < t: last-dim AG of mixed_qkv (attention.py:340-380)
    sink.Comm("attention.qkv_gather", CommRole(OpBlock::kAttention, CommPurpose::kHeadGather),
              Collective::kAllGather, GroupKind::kTp, Tp(c),
              c.TokensPerRank() * QkvWidth(a) * kBf16Bytes);
  }
  QkNorm(sink, c);
  Rope(sink, c);
  if (c.training.framework.TorchNative()) RepeatKv(sink, c);
  CpBeforeCore(sink, c, sink.layer(), /*backward=*/false);
  CoreAttention(sink, c, 1);
  CpAfterCore(sink, c, sink.layer(), /*backward=*/false);
  OutputGate(sink, c);
  RowForward(sink, c, OpBlock::kAttention, "attention.linear_proj", h, a.QueryWidth() / Tp(c));
}

void AttentionBackward(OpSink& sink, const LayerOpContext& c) {
  const config::AttentionConfig& a = c.model.attention;
  const int64_t h = c.model.hidden_size;
  RowBackward(sink, c, OpBlock::kAttention, "attention.linear_proj", h, a.QueryWidth() / Tp(c));
  OutputGate(sink, c);
  CpBeforeCore(sink, c, sink.layer(), /*backward=*/true);
  CoreAttention(sink, c, 2);
  CpAfterCore(sink, c, sink.layer(), /*backward=*/true);
  if (c.training.framework.TorchNative()) RepeatKv(sink, c);
  Rope(sink, c);
  QkNorm(sink, c);
  if (Tp(c) > a.num_kv_heads) {  // g < t: RS of the same size in backward
    sink.Comm("attention.qkv_gather.rs_grad",
              CommRole(OpBlock::kAttention, CommPurpose::kHeadGather), Collective::kReduceScatter,
              GroupKind::kTp, Tp(c), c.TokensPerRank() * QkvWidth(a) * kBf16Bytes);
  }
  ColumnBackward(sink, c, OpBlock::kAttention, "attention.linear_qkv", QkvWidth(a) / Tp(c), h,
                 c.ActivationBytes());
  HiddenNorm(sink, c, OpBlock::kAttention, "attention.input_norm");
}

namespace {

// Head-parallel CP all-to-alls exist from core 0.18 (common.py:819-900).
bool GdnUsesCp(const LayerOpContext& c) {
  return Cp(c) > 1 && c.training.core_version >= config::CoreVersion::kV0_18;
}

// Chunked delta-rule kernel (FLA chunked steps, dense count), per token and value head:
// 6C·d_k + 4C·d_v + 6·d_k·d_v + (2/3)C², over s_c·b tokens and H_v/t heads per rank.
int64_t GdnKernelFlops(const LayerOpContext& c) {
  const config::GdnConfig& g = c.model.gdn;
  const int64_t chunk = g.chunk_size;
  const int64_t thrice_per_head = 18 * chunk * g.key_head_dim + 12 * chunk * g.value_head_dim +
                                  18 * g.key_head_dim * g.value_head_dim + 2 * chunk * chunk;
  return c.TokensPerRank() * (g.num_value_heads / Tp(c)) * thrice_per_head / 3;
}

// Megatron-Core's torch-native chunked delta rule (--deterministic-mode; gdn.py:69-72 and
// torch_chunk_gated_delta_rule, gdn.py:422-527): every tensor cast to fp32, a triangular solve
// as a Python loop over the C − 1 rows of each chunk, then a Python loop over the chunks. Per
// sequence of L = RoundUp(s, C) positions (the CP all-to-all gives each rank whole sequences of
// H_v/(t·c) heads) and value head, forward, counted op by op from that code:
//   FLOPs  = L·(6C·d_k + 4C·d_v + 6·d_k·d_v) + (L/C)·(C−1)C(2C−1)/3      (matmuls, row loop)
//   bytes  = L·(116·d_k + 106·d_v + 132·C + 32·d_k·d_v/C)                 (fp32 reads + writes)
//          + (L/C)·[18(C−1)C + 10(C−1)C(2C−1)/3]                         (the row loop)
//   launches = 41 + 6(C−1) before the chunk loop and 18 per chunk (one eager op each);
// backward doubles all three (autograd: one gradient kernel per tensor input).
struct TorchGdnCost {
  int64_t flops = 0;
  int64_t bytes = 0;
  int64_t num_launches = 0;
};

TorchGdnCost TorchGdnForwardCost(const LayerOpContext& c) {
  const config::GdnConfig& g = c.model.gdn;
  const int64_t chunk = g.chunk_size;
  const int64_t dk = g.key_head_dim;
  const int64_t dv = g.value_head_dim;
  const int64_t padded = RoundUp(c.training.batch.seq_length, chunk);  // L
  const int64_t chunks = padded / chunk;
  const int64_t sequences_heads =
      c.training.batch.micro_batch_size * g.num_value_heads / (Tp(c) * Cp(c));
  const int64_t row_loop_flops = (chunk - 1) * chunk * (2 * chunk - 1) / 3;
  const int64_t row_loop_bytes =
      18 * (chunk - 1) * chunk + 10 * (chunk - 1) * chunk * (2 * chunk - 1) / 3;
  const int64_t flops_per_sequence_head =
      padded * (6 * chunk * dk + 4 * chunk * dv + 6 * dk * dv) + chunks * row_loop_flops;
  const int64_t bytes_per_sequence_head = padded * (116 * dk + 106 * dv + 132 * chunk) +
                                          chunks * 32 * dk * dv + chunks * row_loop_bytes;
  return TorchGdnCost{.flops = sequences_heads * flops_per_sequence_head,
                      .bytes = sequences_heads * bytes_per_sequence_head,
                      .num_launches = 41 + 6 * (chunk - 1) + 18 * chunks};
}

void GdnCpA2a(OpSink& sink, const LayerOpContext& c, const std::string& name, int64_t width) {
  if (!GdnUsesCp(c)) return;
  sink.Comm(name, CommRole(OpBlock::kGdn, CommPurpose::kCpAllToAll), Collective::kAllToAll,
            GroupKind::kCp, Cp(c), c.TokensPerRank() * width / Tp(c) * kBf16Bytes);
}

// GDN work between in_proj and the out-norm; `multiplier` 2 for backward.
void GdnCore(OpSink& sink, const LayerOpContext& c, int64_t multiplier) {
  const config::GdnConfig& g = c.model.gdn;
  const int64_t tokens = c.TokensPerRank();
  const std::string suffix = multiplier == 1 ? "" : ".backward";
  const int64_t conv_channels = g.ConvChannels() / Tp(c);
  const OpRole elementwise = KernelRole(OpKind::kElementwise, OpBlock::kGdn);
  const int64_t conv_flops = multiplier * 2 * tokens * g.conv_kernel * conv_channels;
  const int64_t conv_bytes = multiplier * 2 * tokens * conv_channels * kBf16Bytes;
  if (!c.training.deterministic) {
    sink.Compute("gdn.conv1d" + suffix, elementwise, conv_flops, conv_bytes);
  } else {
    // torch-native path (gdn.py:217-229): a contiguous [b, d, s] copy of the input, F.conv1d,
    // then SiLU on the output slice: 3 launches and one more read + write of the input.
    sink.Compute("gdn.conv1d" + suffix, elementwise, conv_flops,
                 conv_bytes + multiplier * tokens * conv_channels * 2 * kBf16Bytes, multiplier * 3);
  }
  Elementwise(sink, elementwise, "gdn.gates", tokens * (g.num_value_heads / Tp(c)), kGdnGates);
  if (c.training.deterministic) {
    const TorchGdnCost cost = TorchGdnForwardCost(c);
    sink.Compute("gdn.torch_chunk" + suffix, KernelRole(OpKind::kGdnTorchKernel, OpBlock::kGdn),
                 multiplier * cost.flops, multiplier * cost.bytes, multiplier * cost.num_launches);
    return;
  }
  sink.Compute("gdn.kernel" + suffix, KernelRole(OpKind::kGdnKernel, OpBlock::kGdn),
               multiplier * GdnKernelFlops(c),
               multiplier * tokens * (g.InProjWidth() + g.ValueWidth()) / Tp(c) * kBf16Bytes);
}

// Gated RMSNorm over d_v on the local value heads (gdn.py:266-287).
void GdnOutNormKernel(OpSink& sink, const LayerOpContext& c) {
  Elementwise(sink, KernelRole(OpKind::kNorm, OpBlock::kGdn), "gdn.out_norm",
              c.TokensPerRank() * c.model.gdn.ValueWidth() / Tp(c), kGatedRmsNorm);
}

// The gathers in front of slime's duplicated GDN, forward only (their backward splits): the SP
// all-gather over TP (gather_from_sequence_parallel_region, tensor_parallel_output_grad=False)
// and the CP all-gather of the whole sequence (_AllGatherForDuplicatedComputation).
void DuplicatedGdnGathers(OpSink& sink, const LayerOpContext& c) {
  if (c.SequenceParallel()) {
    sink.Comm("gdn.sp.all_gather", CommRole(OpBlock::kGdn, CommPurpose::kSpGather),
              Collective::kAllGather, GroupKind::kTp, Tp(c), c.ActivationBytes());
  }
  sink.Comm("gdn.cp.all_gather", CommRole(OpBlock::kGdn, CommPurpose::kCpGather),
            Collective::kAllGather, GroupKind::kCp, Cp(c), Cp(c) * c.ActivationBytes());
}

// in_proj through out_proj on the context's split (the unsplit one for slime).
void GdnMixerForward(OpSink& sink, const LayerOpContext& c) {
  const config::GdnConfig& g = c.model.gdn;
  const int64_t h = c.model.hidden_size;
  ColumnForward(sink, c, OpBlock::kGdn, "gdn.in_proj", g.InProjWidth() / Tp(c), h,
                c.ActivationBytes());
  GdnCpA2a(sink, c, "gdn.cp.a2a_in", g.InProjWidth());  // sequence -> head (common.py:819-900)
  GdnCore(sink, c, 1);
  GdnOutNormKernel(sink, c);
  GdnCpA2a(sink, c, "gdn.cp.a2a_out", g.ValueWidth());  // head -> sequence
  RowForward(sink, c, OpBlock::kGdn, "gdn.out_proj", h, g.ValueWidth() / Tp(c));
}

void GdnMixerBackward(OpSink& sink, const LayerOpContext& c) {
  const config::GdnConfig& g = c.model.gdn;
  const int64_t h = c.model.hidden_size;
  RowBackward(sink, c, OpBlock::kGdn, "gdn.out_proj", h, g.ValueWidth() / Tp(c));
  GdnCpA2a(sink, c, "gdn.cp.a2a_out.grad", g.ValueWidth());
  GdnOutNormKernel(sink, c);
  GdnCore(sink, c, 2);
  GdnCpA2a(sink, c, "gdn.cp.a2a_in.grad", g.InProjWidth());
  ColumnBackward(sink, c, OpBlock::kGdn, "gdn.in_proj", g.InProjWidth() / Tp(c), h,
                 c.ActivationBytes());
}

}  // namespace

void GdnOutNorm(OpSink& sink, const LayerOpContext& c) {
  if (c.training.framework.DuplicatesGdn()) {
    const config::TrainingConfig whole = config::UnsplitGdnTraining(c.training);
    GdnOutNormKernel(sink, LayerOpContext{.model = c.model, .training = whole, .layout = c.layout});
    return;
  }
  GdnOutNormKernel(sink, c);
  GdnCpA2a(sink, c, "gdn.cp.a2a_out", c.model.gdn.ValueWidth());  // head -> sequence
}

void GdnForward(OpSink& sink, const LayerOpContext& c) {
  HiddenNorm(sink, c, OpBlock::kGdn, "gdn.input_norm");  // fused into in_proj (common.py:181-287)
  if (!c.training.framework.DuplicatesGdn()) {
    GdnMixerForward(sink, c);
    return;
  }
  // slime: every TP·CP rank computes the whole GDN over the whole sequence, so its GEMMs,
  // conv, gates, kernel and norm are t·c times a sharded rank's.
  DuplicatedGdnGathers(sink, c);
  const config::TrainingConfig whole = config::UnsplitGdnTraining(c.training);
  GdnMixerForward(sink, LayerOpContext{.model = c.model, .training = whole, .layout = c.layout});
}

void GdnBackward(OpSink& sink, const LayerOpContext& c) {
  if (!c.training.framework.DuplicatesGdn()) {
    GdnMixerBackward(sink, c);
  } else {
    const config::TrainingConfig whole = config::UnsplitGdnTraining(c.training);
    GdnMixerBackward(sink, LayerOpContext{.model = c.model, .training = whole, .layout = c.layout});
  }
  HiddenNorm(sink, c, OpBlock::kGdn, "gdn.input_norm");
}

}  // namespace trainscope::graph::internal
