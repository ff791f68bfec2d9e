// MoE op builders (megatron/core/transformer/moe/): the router with its top-k and load-balancing
// statistics, the alltoall, allgather and flex token dispatchers with their permutes around the
// grouped expert GEMMs and activation, and the shared expert with its optional gate.
#include <algorithm>
#include <cmath>
#include <string>

#include "trainscope/graph/elementwise_ops.h"
#include "trainscope/graph/layer_ops_internal.h"
#include "trainscope/units.h"

namespace trainscope::graph::internal {

using config::GroupKind;

namespace {

constexpr OpRole kExpertActivation{.kind = OpKind::kElementwise, .block = OpBlock::kMoeRouted};

// Bytes per router-prob element β_p (router.py:105-112).
int64_t ProbBytes(const LayerOpContext& c) { return config::BytesOf(c.training.moe.router_dtype); }

struct MoeSizes {
  int64_t tokens = 0;     // T = b·s_c/t, SP-sharded tokens entering the layer
  int64_t rows_sent = 0;  // (token, expert) rows one rank sends: T·k, or C·E when padded
  int64_t etp = 1;        // u
  int64_t ep = 1;         // e
  int64_t local_experts = 1;
};

// Capacity C = ceil(T·k/E·cf) (moe_utils.py:248-266); padded splits send C·E rows, unpadded at
// most min(T·k, C·E).
MoeSizes ComputeMoeSizes(const LayerOpContext& c) {
  const config::MoeConfig& moe = c.model.moe;
  MoeSizes sz;
  sz.tokens = c.TokensPerRank() / (c.SequenceParallel() ? Tp(c) : 1);
  sz.etp = c.training.parallel.ExpertTensor();
  sz.ep = c.training.parallel.expert;
  sz.local_experts = moe.num_experts / sz.ep;
  sz.rows_sent = sz.tokens * moe.top_k;
  if (c.training.moe.capacity_factor.has_value()) {
    const int64_t capacity = static_cast<int64_t>(
        std::ceil(static_cast<double>(sz.rows_sent) / static_cast<double>(moe.num_experts) *
                  *c.training.moe.capacity_factor));
    const int64_t padded = capacity * moe.num_experts;
    sz.rows_sent =
        c.training.moe.pad_expert_input_to_capacity ? padded : std::min(sz.rows_sent, padded);
  }
  return sz;
}

// Rows of the expert GEMMs: u·R for alltoall, u·T·k for allgather and flex (token_dispatcher.py).
int64_t ExpertRows(const LayerOpContext& c, const MoeSizes& sz) {
  if (c.training.moe.dispatcher == config::TokenDispatcher::kAllToAll) {
    return sz.etp * sz.rows_sent;
  }
  return sz.etp * sz.tokens * c.model.moe.top_k;
}

// Softmax and top-k over the T×E logits in the router dtype (topk_softmax_with_capacity): read the
// logits, write the dense probs and the bool routing map.
void RouterTopK(OpSink& sink, const LayerOpContext& c, const MoeSizes& sz) {
  const int64_t logits = sz.tokens * c.model.moe.num_experts;
  Kernel(sink, KernelRole(OpKind::kRouterTopK, OpBlock::kMoeRouter), "moe.router.topk",
         logits * kSoftmaxFlops, logits * (2 * ProbBytes(c) + kBoolBytes));
}

// Router GEMM, top-k and load-balancing statistics AR (router.py, moe_utils.py:278-281), forward.
void RouterForward(OpSink& sink, const LayerOpContext& c, const MoeSizes& sz) {
  const config::MoeConfig& moe = c.model.moe;
  sink.Gemm("moe.router", KernelRole(OpKind::kGemm, OpBlock::kMoeRouter), sz.tokens,
            moe.num_experts, c.model.hidden_size);
  RouterTopK(sink, c, sz);
  if (moe.aux_loss_coef <= 0.0) return;
  const int64_t counts_bytes = moe.num_experts * kInt64Bytes;
  const int64_t tp_cp = Tp(c) * Cp(c);
  switch (c.training.moe.load_balancing) {
    case config::LoadBalancing::kAuxLoss:  // moe_utils.py:278-281, over tp×cp
      sink.Comm("moe.router.aux_loss_ar", CommRole(OpBlock::kMoeRouter, CommPurpose::kAuxLoss),
                Collective::kAllReduce, GroupKind::kTpCp, tp_cp, counts_bytes);
      return;
    case config::LoadBalancing::kSeqAuxLoss:  // b·E counts
      sink.Comm("moe.router.aux_loss_ar", CommRole(OpBlock::kMoeRouter, CommPurpose::kAuxLoss),
                Collective::kAllReduce, GroupKind::kTpCp, tp_cp,
                c.training.batch.micro_batch_size * counts_bytes);
      return;
    case config::LoadBalancing::kGlobalAuxLoss:
      // router.py:515-523 reduces over tp×dp×cp.
      sink.Comm("moe.router.global_aux_loss_ar",
                CommRole(OpBlock::kMoeRouter, CommPurpose::kAuxLoss), Collective::kAllReduce,
                GroupKind::kTpDpCp, tp_cp * c.training.parallel.Data(), counts_bytes);
      return;
    case config::LoadBalancing::kSinkhorn:
    case config::LoadBalancing::kNone:
      return;
  }
}

// GPT-OSS's clamped SwiGLU without TE's op fuser (fused_bias_geglu.py
// weighted_bias_quick_geglu_impl): before the fused activation kernel, eager torch clamps the
// gate half and the linear half of the fc1 output and concatenates them. Per bf16 element of the
// fc1 output: forward two clamps (read and write, 4 B) and the cat (4 B) = 8 B in 3 kernels;
// backward the clamps' masked gradients (read the gradient and the input, write, 6 B) and the
// chunk's gradient concatenation (4 B) = 10 B in 3 kernels. A recompute of moe_act replays the
// forward.
//
// The forward then builds its linear offset as torch.tensor(glu_linear_offset, device=...), a
// blocking copy of a host scalar: PyTorch lowers it to memcpy_and_sync, a cudaMemcpyAsync and a
// cudaStreamSynchronize (pytorch/pytorch#120996: set_sync_debug_mode flags torch.tensor(3.14,
// device=dev) as synchronizing; #190217), so the host waits for the GPU once per expert
// activation forward and once per moe_act recompute. The clamp has no other user in the presets
// (GPT-OSS is the only model with swiglu_limit, and its experts are the only quick-GeGLU ones).
void ExpertClamp(OpSink& sink, const LayerOpContext& c, int64_t rows, int64_t ffn) {
  if (c.model.moe.activation_clamp <= 0 || c.training.moe.te_op_fuser) return;
  const int64_t elements = rows * 2 * ffn;
  EagerChain(sink, kExpertActivation, "moe.experts.activation_clamp",
             EagerChainCost{.flops = elements,
                            .forward_bytes = 8 * elements,
                            .forward_launches = 3,
                            .backward_bytes = 10 * elements,
                            .backward_launches = 3});
  if (sink.phase() != Phase::kBackward) {
    sink.HostSync("moe.experts.activation.linear_offset_h2d", OpBlock::kMoeRouted,
                  /*num_syncs=*/1, /*num_launches=*/1);
  }
}

// GPT-OSS's expert fc2 bias without TE's op fuser (experts.py TEGroupedMLP._apply_bias, the
// eager path): linear_fc2 skips its bias, then per local expert bias·prob (write the [rows_e, h]
// product, 2 B) and output + product (read both, write, 6 B), then the concatenation (4 B) =
// 12 B per bf16 element of the fc2 output in 2·E_l + 1 kernels; backward the bias gradient
// (grad·prob materialised, 4 B, and summed over rows, 2 B), the prob gradient (grad·bias, 4 B,
// summed over h, 2 B) and the split's gradient concatenation (4 B) = 16 B in 4·E_l + 1 kernels.
void ExpertFc2Bias(OpSink& sink, const LayerOpContext& c, const MoeSizes& sz, int64_t rows) {
  if (!c.model.moe.expert_bias || c.training.moe.te_op_fuser) return;
  const int64_t elements = rows * c.model.hidden_size;
  EagerChain(sink, kExpertActivation, "moe.experts.linear_fc2.bias",
             EagerChainCost{.flops = 2 * elements,
                            .forward_bytes = 12 * elements,
                            .forward_launches = 2 * sz.local_experts + 1,
                            .backward_bytes = 16 * elements,
                            .backward_launches = 4 * sz.local_experts + 1});
}

// Rows per expert must be a multiple of the quantization alignment for TE's FP8/FP4 grouped
// GEMMs (moe_utils.py get_align_size_for_quantization: 32 for MXFP8, 16 for the other FP8
// recipes, 128 for NVFP4, fp8_utils.py / fp4_utils.py).
int64_t QuantizationAlignRows(const config::PrecisionConfig& precision) {
  if (precision.fp4 != config::Fp4Format::kNone) return 128;
  return precision.fp8_recipe == config::Fp8Recipe::kMxfp8 ? 32 : 16;
}

// Whether TE's padding copies run around the grouped expert GEMMs: an FP8 or FP4 recipe on the
// unfused grouped path whose per-expert counts are not already aligned.
bool ExpertCountsNeedPadding(const LayerOpContext& c, const MoeSizes& sz) {
  const config::TrainingConfig& t = c.training;
  const config::PrecisionConfig& precision = t.precision;
  const bool quantized =
      precision.fp8 != config::Fp8Format::kNone || precision.fp4 != config::Fp4Format::kNone;
  if (!quantized || !t.moe.grouped_gemm || t.moe.te_op_fuser || t.moe.HybridEpRuns() ||
      t.moe.router_padding_for_quantization) {
    return false;
  }
  return !t.moe.pad_expert_input_to_capacity ||
         (sz.rows_sent / c.model.moe.num_experts) % QuantizationAlignRows(precision) != 0;
}

// TEGroupedMLP under --fp8-format or --fp4-format (experts.py forward, TE fp8_padding.py):
// Fp8Padding copies the permuted tokens and their probs into per-expert blocks padded to the
// alignment (tex.fused_multi_row_padding), and Fp8Unpadding copies the fc2 output back. Both are
// no-ops when every expert's count is already aligned: the router padded its map
// (--moe-router-padding-for-quantization), HybridEP padded inside its dispatch (pad_multiple,
// token_dispatcher.py _HybridEPManager), or drop-and-pad gives every expert an aligned capacity.
// Dropless counts are random, so they are taken as unaligned. TE's fused op path
// (--use-transformer-engine-op-fuser) is not modelled here. Per bf16 element of the R×h tokens
// (read 2 B, write 2 B):
//   padding:   forward 4 B + the fp32 probs 8 B per row, 2 launches; backward the same (the
//              gradients' unpadding);
//   unpadding: forward 4 B, 1 launch; backward 4 B (the gradient's padding), 1 launch.
void ExpertQuantizationPadding(OpSink& sink, const LayerOpContext& c, const MoeSizes& sz,
                               int64_t rows) {
  if (!ExpertCountsNeedPadding(c, sz)) return;
  const int64_t bytes = 4 * rows * c.model.hidden_size + 2 * kFp32Bytes * rows;
  EagerChain(sink, kExpertActivation, "moe.experts.quantization_padding",
             EagerChainCost{.forward_bytes = bytes,
                            .forward_launches = 2,
                            .backward_bytes = bytes,
                            .backward_launches = 2});
}

void ExpertQuantizationUnpadding(OpSink& sink, const LayerOpContext& c, const MoeSizes& sz,
                                 int64_t rows) {
  if (!ExpertCountsNeedPadding(c, sz)) return;
  const int64_t bytes = 4 * rows * c.model.hidden_size;
  EagerChain(sink, kExpertActivation, "moe.experts.quantization_unpadding",
             EagerChainCost{.forward_bytes = bytes,
                            .forward_launches = 1,
                            .backward_bytes = bytes,
                            .backward_launches = 1});
}

// Expert fc1 (h -> 2F_e/u), the prob-weighted SwiGLU and fc2 (F_e/u -> h) over `rows` rows as
// grouped GEMMs over the local experts; no communication inside (explicit_expert_comm, experts.py).
void ExpertsForward(OpSink& sink, const LayerOpContext& c, const MoeSizes& sz, int64_t rows) {
  const int64_t ffn = c.model.moe.expert_ffn_hidden_size / sz.etp;
  const OpRole gemm = KernelRole(OpKind::kGemm, OpBlock::kMoeRouted);
  ExpertQuantizationPadding(sink, c, sz, rows);
  sink.Gemm("moe.experts.linear_fc1", gemm, rows, 2 * ffn, c.model.hidden_size, sz.local_experts);
  ExpertClamp(sink, c, rows, ffn);
  SwiGlu(sink, kExpertActivation, "moe.experts.activation", rows, ffn, /*weighted=*/true);
  sink.Gemm("moe.experts.linear_fc2", gemm, rows, c.model.hidden_size, ffn, sz.local_experts);
  ExpertFc2Bias(sink, c, sz, rows);
  ExpertQuantizationUnpadding(sink, c, sz, rows);
}

void ExpertsBackward(OpSink& sink, const LayerOpContext& c, const MoeSizes& sz, int64_t rows) {
  const int64_t ffn = c.model.moe.expert_ffn_hidden_size / sz.etp;
  const int64_t h = c.model.hidden_size;
  const OpRole gemm = KernelRole(OpKind::kGemm, OpBlock::kMoeRouted);
  ExpertQuantizationUnpadding(sink, c, sz, rows);
  ExpertFc2Bias(sink, c, sz, rows);
  sink.Dgrad("moe.experts.linear_fc2", gemm, rows, h, ffn, sz.local_experts);
  sink.Wgrad("moe.experts.linear_fc2", gemm, rows, h, ffn, sz.local_experts);
  SwiGlu(sink, kExpertActivation, "moe.experts.activation", rows, ffn, /*weighted=*/true);
  ExpertClamp(sink, c, rows, ffn);
  sink.Dgrad("moe.experts.linear_fc1", gemm, rows, 2 * ffn, h, sz.local_experts);
  sink.Wgrad("moe.experts.linear_fc1", gemm, rows, 2 * ffn, h, sz.local_experts);
  ExpertQuantizationPadding(sink, c, sz, rows);
}

// The host reads the token counts per expert back before it can size the permutation or the
// all-to-all: one blocking round trip per forward dispatch (the backward reuses the host copies).
// alltoall: _maybe_dtoh_and_synchronize at its cuda_sync_point (token_dispatcher.py:921-958),
// skipped when padding every expert to capacity (drop_and_pad); allgather: tokens_per_expert
// .cpu() (:320). `extra_copies`: the non-blocking D2H copies issued besides the one waited on.
void DispatchHostSync(OpSink& sink, int64_t extra_copies) {
  sink.HostSync("moe.dispatch.token_counts_d2h", OpBlock::kMoeRouted, /*num_syncs=*/1,
                extra_copies);
}

// alltoall dispatcher forward (token_dispatcher.py:375-910). Balanced routing: each rank
// receives R = rows_sent rows.
void AllToAllForward(OpSink& sink, const LayerOpContext& c, const MoeSizes& sz) {
  const int64_t h = c.model.hidden_size, bp = ProbBytes(c), r = sz.rows_sent, u = sz.etp;
  const int64_t tp_ep = u * sz.ep;
  if (!c.training.moe.pad_expert_input_to_capacity) {  // :557-575
    sink.Comm("moe.dispatch.metadata_ag",
              CommRole(OpBlock::kMoeRouted, CommPurpose::kEpTokenCounts), Collective::kAllGather,
              GroupKind::kTpEp, tp_ep, tp_ep * c.model.moe.num_experts * kInt64Bytes);
  }
  PermuteRows(sink, c, OpKind::kPermute, "moe.permute", r);
  // Sync point "before_ep_alltoall" (the earliest one the dropless path sets, :594-596), after
  // D2H copies of tokens_per_expert, input_splits, output_splits, output_splits_tp and, with
  // several local experts and no permute fusion, num_global_tokens_per_local_expert (:929-948).
  if (!c.training.moe.pad_expert_input_to_capacity) {
    const bool per_expert_copy = sz.local_experts > 1 && !c.training.moe.permute_fusion;
    DispatchHostSync(sink, per_expert_copy ? 4 : 3);
  }
  sink.Comm("moe.dispatch.a2a_tokens", CommRole(OpBlock::kMoeRouted, CommPurpose::kEpDispatch),
            Collective::kAllToAll, GroupKind::kEp, sz.ep, r * h * kBf16Bytes);
  sink.Comm("moe.dispatch.a2a_probs", CommRole(OpBlock::kMoeRouted, CommPurpose::kEpDispatchProbs),
            Collective::kAllToAll, GroupKind::kEp, sz.ep, r * bp);
  sink.Comm("moe.dispatch.ag_tokens", CommRole(OpBlock::kMoeRouted, CommPurpose::kEpDispatch),
            Collective::kAllGather, GroupKind::kEtp, u, u * r * h * kBf16Bytes);
  sink.Comm("moe.dispatch.ag_probs", CommRole(OpBlock::kMoeRouted, CommPurpose::kEpDispatchProbs),
            Collective::kAllGather, GroupKind::kEtp, u, u * r * bp);
  if (sz.local_experts > 1)
    PermuteRows(sink, c, OpKind::kSortChunks, "moe.sort_chunks", u * r);  // by local expert
  ExpertsForward(sink, c, sz, u * r);
  if (sz.local_experts > 1) PermuteRows(sink, c, OpKind::kSortChunks, "moe.unsort_chunks", u * r);
  sink.Comm("moe.combine.rs_output", CommRole(OpBlock::kMoeRouted, CommPurpose::kEpCombine),
            Collective::kReduceScatter, GroupKind::kEtp, u,
            u * r * h * bp);  // in the probs dtype, :824-832
  sink.Comm("moe.combine.a2a_tokens", CommRole(OpBlock::kMoeRouted, CommPurpose::kEpCombine),
            Collective::kAllToAll, GroupKind::kEp, sz.ep, r * h * kBf16Bytes);
  Unpermute(sink, c, r, sz.tokens);
}

void AllToAllBackward(OpSink& sink, const LayerOpContext& c, const MoeSizes& sz) {
  const int64_t h = c.model.hidden_size, bp = ProbBytes(c), r = sz.rows_sent, u = sz.etp;
  Unpermute(sink, c, r, sz.tokens);
  sink.Comm("moe.combine.a2a_tokens.grad", CommRole(OpBlock::kMoeRouted, CommPurpose::kEpCombine),
            Collective::kAllToAll, GroupKind::kEp, sz.ep,
            r * h * kBf16Bytes);  // _AllToAll.backward, mappings.py:470-489
  sink.Comm("moe.combine.rs_output.grad", CommRole(OpBlock::kMoeRouted, CommPurpose::kEpCombine),
            Collective::kAllGather, GroupKind::kEtp, u, u * r * h * bp);
  if (sz.local_experts > 1) PermuteRows(sink, c, OpKind::kSortChunks, "moe.unsort_chunks", u * r);
  ExpertsBackward(sink, c, sz, u * r);
  if (sz.local_experts > 1) PermuteRows(sink, c, OpKind::kSortChunks, "moe.sort_chunks", u * r);
  sink.Comm("moe.dispatch.ag_tokens.grad", CommRole(OpBlock::kMoeRouted, CommPurpose::kEpDispatch),
            Collective::kReduceScatter, GroupKind::kEtp, u, u * r * h * kBf16Bytes);
  sink.Comm("moe.dispatch.ag_probs.grad",
            CommRole(OpBlock::kMoeRouted, CommPurpose::kEpDispatchProbs),
            Collective::kReduceScatter, GroupKind::kEtp, u, u * r * bp);
  sink.Comm("moe.dispatch.a2a_probs.grad",
            CommRole(OpBlock::kMoeRouted, CommPurpose::kEpDispatchProbs), Collective::kAllToAll,
            GroupKind::kEp, sz.ep, r * bp);
  sink.Comm("moe.dispatch.a2a_tokens.grad", CommRole(OpBlock::kMoeRouted, CommPurpose::kEpDispatch),
            Collective::kAllToAll, GroupKind::kEp, sz.ep, r * h * kBf16Bytes);
  PermuteRows(sink, c, OpKind::kPermute, "moe.permute", r);
}

// allgather dispatcher (token_dispatcher.py:233-372) over tp_ep, G = u·e.
void AllGatherForward(OpSink& sink, const LayerOpContext& c, const MoeSizes& sz) {
  const int64_t h = c.model.hidden_size, e = c.model.moe.num_experts, bp = ProbBytes(c);
  const int64_t g = sz.etp * sz.ep, t = sz.tokens;
  sink.Comm("moe.dispatch.ag_routing_map",
            CommRole(OpBlock::kMoeRouted, CommPurpose::kEpDispatchProbs), Collective::kAllGather,
            GroupKind::kTpEp, g, g * t * e * kBoolBytes);
  sink.Comm("moe.dispatch.ag_probs", CommRole(OpBlock::kMoeRouted, CommPurpose::kEpDispatchProbs),
            Collective::kAllGather, GroupKind::kTpEp, g, g * t * e * bp);
  sink.Comm("moe.dispatch.ag_tokens", CommRole(OpBlock::kMoeRouted, CommPurpose::kEpDispatch),
            Collective::kAllGather, GroupKind::kTpEp, g, g * t * h * kBf16Bytes);
  const int64_t rows = ExpertRows(c, sz);  // the local experts' rows out of the G·T gathered
  DispatchHostSync(sink, 0);
  PermuteRows(sink, c, OpKind::kPermute, "moe.permute", rows);
  ExpertsForward(sink, c, sz, rows);
  Unpermute(sink, c, rows, g * t);
  sink.Comm("moe.combine.rs_output", CommRole(OpBlock::kMoeRouted, CommPurpose::kEpCombine),
            Collective::kReduceScatter, GroupKind::kTpEp, g, g * t * h * bp);
}

void AllGatherBackward(OpSink& sink, const LayerOpContext& c, const MoeSizes& sz) {
  const int64_t h = c.model.hidden_size, e = c.model.moe.num_experts, bp = ProbBytes(c);
  const int64_t g = sz.etp * sz.ep, t = sz.tokens;
  sink.Comm("moe.combine.rs_output.grad", CommRole(OpBlock::kMoeRouted, CommPurpose::kEpCombine),
            Collective::kAllGather, GroupKind::kTpEp, g, g * t * h * bp);
  const int64_t rows = ExpertRows(c, sz);
  Unpermute(sink, c, rows, g * t);
  ExpertsBackward(sink, c, sz, rows);
  PermuteRows(sink, c, OpKind::kPermute, "moe.permute", rows);
  sink.Comm("moe.dispatch.ag_tokens.grad", CommRole(OpBlock::kMoeRouted, CommPurpose::kEpDispatch),
            Collective::kReduceScatter, GroupKind::kTpEp, g, g * t * h * kBf16Bytes);
  sink.Comm("moe.dispatch.ag_probs.grad",
            CommRole(OpBlock::kMoeRouted, CommPurpose::kEpDispatchProbs),
            Collective::kReduceScatter, GroupKind::kTpEp, g, g * t * e * bp);
}

// flex (fused_a2a): rows ≈ T·D·u with D = e·[1 − C(E−E_loc, k)/C(E, k)] distinct EP destinations.
int64_t FlexRows(const LayerOpContext& c, const MoeSizes& sz) {
  const int64_t experts = c.model.moe.num_experts;
  double miss = 1.0;  // C(E−E_loc, k)/C(E, k) = Π_{i<k} (E−E_loc−i)/(E−i)
  for (int64_t i = 0; i < c.model.moe.top_k; ++i) {
    miss *= static_cast<double>(std::max<int64_t>(0, experts - sz.local_experts - i)) /
            static_cast<double>(experts - i);
  }
  const double destinations = static_cast<double>(sz.ep) * (1.0 - miss);
  return std::llround(static_cast<double>(sz.tokens) * destinations * static_cast<double>(sz.etp));
}

// Dispatch rows carry h·2 bytes plus top-(u·k) fp32 probs and int64 indices (DeepEP casts the
// probs to fp32, :1313-1319); combine rows carry h·2 bytes.
void FlexComm(OpSink& sink, const LayerOpContext& c, const MoeSizes& sz, bool dispatch,
              CommPurpose purpose, const std::string& name) {
  const int64_t rows = FlexRows(c, sz), uk = sz.etp * c.model.moe.top_k;
  const int64_t row_bytes =
      c.model.hidden_size * kBf16Bytes + (dispatch ? uk * (kFp32Bytes + kInt64Bytes) : 0);
  sink.Comm(name, CommRole(OpBlock::kMoeRouted, purpose), Collective::kAllToAll, GroupKind::kTpEp,
            sz.etp * sz.ep, rows * row_bytes);
}

// --moe-permute-fusion-into-hybridep: HybridEP's dispatch writes each received token into its
// local experts' rows and its combine reads them back (fused_a2a.py hybrid_ep_dispatch /
// hybrid_ep_combine, fuse_permute_dispatch / fuse_unpermute_combine): no separate pass.
bool PermuteInsideDispatch(const LayerOpContext& c) {
  return c.training.moe.HybridEpRuns() && c.training.moe.permute_fusion_into_hybridep;
}

// The received deduplicated rows are expanded to one row per (token, local expert) and back.
void FlexForward(OpSink& sink, const LayerOpContext& c, const MoeSizes& sz) {
  const int64_t rows = ExpertRows(c, sz);
  const bool permute = !PermuteInsideDispatch(c);
  FlexComm(sink, c, sz, /*dispatch=*/true, CommPurpose::kEpFlexDispatch, "moe.dispatch.flex");
  // DeepEP's normal dispatch makes the CPU wait for the received-token counts before it can
  // allocate the receive buffers (csrc/deep_ep.cpp intranode_dispatch / internode_dispatch: the
  // host polls the host-mapped moe_recv_counter that the notify_dispatch kernel writes): one
  // round trip per forward dispatch; a captured CUDA graph path has none, nor HybridEP under a
  // rank budget, whose buffers have the budget's size (hybrid_ep_dispatch non_blocking).
  if (sz.etp * sz.ep > 1 && !c.training.moe.RankBudgetRuns()) {
    sink.HostSync("moe.dispatch.deepep_recv_counts", OpBlock::kMoeRouted, /*num_syncs=*/1,
                  /*num_launches=*/0);
  }
  if (permute) PermuteRows(sink, c, OpKind::kPermute, "moe.permute", rows);
  ExpertsForward(sink, c, sz, rows);
  if (permute) Unpermute(sink, c, rows, FlexRows(c, sz));
  FlexComm(sink, c, sz, /*dispatch=*/false, CommPurpose::kEpFlexCombine, "moe.combine.flex");
}

// Combine-backward is a dispatch of the combine's size; dispatch-backward a combine.
void FlexBackward(OpSink& sink, const LayerOpContext& c, const MoeSizes& sz) {
  const int64_t rows = ExpertRows(c, sz);
  const bool permute = !PermuteInsideDispatch(c);
  FlexComm(sink, c, sz, /*dispatch=*/false, CommPurpose::kEpFlexCombine, "moe.combine.flex.grad");
  if (permute) Unpermute(sink, c, rows, FlexRows(c, sz));
  ExpertsBackward(sink, c, sz, rows);
  if (permute) PermuteRows(sink, c, OpKind::kPermute, "moe.permute", rows);
  FlexComm(sink, c, sz, /*dispatch=*/false, CommPurpose::kEpFlexDispatch, "moe.dispatch.flex.grad");
}

// The routed part of a MoE layer: router, statistics, dispatcher, experts.
void RoutedForward(OpSink& sink, const LayerOpContext& c) {
  const MoeSizes sz = ComputeMoeSizes(c);
  RouterForward(sink, c, sz);
  switch (c.training.moe.dispatcher) {
    case config::TokenDispatcher::kAllToAll:
      AllToAllForward(sink, c, sz);
      return;
    case config::TokenDispatcher::kAllGather:
      AllGatherForward(sink, c, sz);
      return;
    case config::TokenDispatcher::kFlex:
      FlexForward(sink, c, sz);
      return;
  }
}

void RoutedBackward(OpSink& sink, const LayerOpContext& c) {
  const MoeSizes sz = ComputeMoeSizes(c);
  switch (c.training.moe.dispatcher) {
    case config::TokenDispatcher::kAllToAll:
      AllToAllBackward(sink, c, sz);
      break;
    case config::TokenDispatcher::kAllGather:
      AllGatherBackward(sink, c, sz);
      break;
    case config::TokenDispatcher::kFlex:
      FlexBackward(sink, c, sz);
      break;
  }
  const int64_t experts = c.model.moe.num_experts, h = c.model.hidden_size;
  RouterTopK(sink, c, sz);
  const OpRole router = KernelRole(OpKind::kGemm, OpBlock::kMoeRouter);
  sink.Dgrad("moe.router", router, sz.tokens, experts, h);
  sink.Wgrad("moe.router", router, sz.tokens, experts, h);
}

}  // namespace

void SharedExpertForward(OpSink& sink, const LayerOpContext& c) {
  if (!c.model.moe.HasSharedExpert()) return;
  MlpForward(sink, c, OpBlock::kMoeShared, "moe.shared_experts",
             c.model.moe.shared_expert_ffn_hidden_size);
  if (c.model.moe.shared_expert_gate) SharedExpertGate(sink, c);
}

void ExpertActivation(OpSink& sink, const LayerOpContext& c) {
  const MoeSizes sz = ComputeMoeSizes(c);
  const int64_t rows = ExpertRows(c, sz), ffn = c.model.moe.expert_ffn_hidden_size / sz.etp;
  ExpertClamp(sink, c, rows, ffn);
  SwiGlu(sink, kExpertActivation, "moe.experts.activation", rows, ffn, /*weighted=*/true);
}

// The whole MoE layer forward: routed path, then the shared expert (a TP MLP of width F_s).
void MoeForward(OpSink& sink, const LayerOpContext& c) {
  RoutedForward(sink, c);
  SharedExpertForward(sink, c);
}

void MoeBackward(OpSink& sink, const LayerOpContext& c) {
  if (c.model.moe.HasSharedExpert()) {
    if (c.model.moe.shared_expert_gate) SharedExpertGate(sink, c);
    MlpBackward(sink, c, OpBlock::kMoeShared, "moe.shared_experts",
                c.model.moe.shared_expert_ffn_hidden_size);
  }
  RoutedBackward(sink, c);
}

}  // namespace trainscope::graph::internal
