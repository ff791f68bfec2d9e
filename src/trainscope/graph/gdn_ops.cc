// Gated DeltaNet op builders (Megatron-Core ssm/gated_delta_net/, gdn.py): the input norm,
// in_proj, depthwise conv1d, gates, chunked delta-rule kernel (FLA or FlashQLA, or the torch-native
// path of --deterministic-mode), gated out-norm and out_proj, with the head-parallel CP
// all-to-alls of core >= 0.18, and slime's duplicated GDN (its sequence gathered over TP and CP,
// the whole block on every rank).
#include <algorithm>
#include <cmath>
#include <string>

#include "trainscope/graph/elementwise_ops.h"
#include "trainscope/graph/layer_ops_internal.h"
#include "trainscope/units.h"

namespace trainscope::graph::internal {

using config::GroupKind;

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

// slime's per-sample CP re-ordering around its duplicated GDN (hf_attention.py
// HuggingfaceAttention.forward, CP > 1 only). Every slice bound is an element of the GPU tensor
// cu_seqlens, so Python's slicing reads it back (Tensor.__index__ -> item()). Per sample,
// gathering (`gather`): the 2c slices of the two halves, two bounds each = 4c syncs, with the
// 2c bound additions and seqlen, //2, //c (3 kernels); scattering back: one slice of the output
// (2 syncs) and the same 3 kernels. The backward has none (the slices' sizes are known).
void DuplicatedGdnSampleSlices(OpSink& sink, const LayerOpContext& c, bool gather) {
  if (Cp(c) == 1) return;
  const double samples = c.training.batch.samples_per_micro_batch > 0
                             ? c.training.batch.samples_per_micro_batch
                             : static_cast<double>(c.training.batch.micro_batch_size);
  const int64_t syncs = gather ? 4 * Cp(c) : 2;
  const int64_t launches = gather ? 2 * Cp(c) + 3 : 3;
  sink.HostSync(gather ? "gdn.cp.sample_slices" : "gdn.cp.sample_slices_out", OpBlock::kGdn,
                std::llround(samples * static_cast<double>(syncs)),
                std::llround(samples * static_cast<double>(launches)));
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
  DuplicatedGdnSampleSlices(sink, c, /*gather=*/true);
  const config::TrainingConfig whole = config::UnsplitGdnTraining(c.training);
  GdnMixerForward(sink, LayerOpContext{.model = c.model, .training = whole, .layout = c.layout});
  DuplicatedGdnSampleSlices(sink, c, /*gather=*/false);
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
