// Activations of one model chunk per micro-batch: its decoder layers grouped by kind (with full
// recompute keeping only the checkpointed inputs), the embedding on the first chunk, and the LM
// head with its fp32 cross-entropy and the MTP layers on the last (docs/memory.md).
#include <algorithm>
#include <string>

#include "trainscope/cost/activation_memory.h"
#include "trainscope/units.h"

namespace trainscope::cost::internal {
namespace {

using config::LayerSpec;
using graph::LayerOpContext;

constexpr const char* kWhat = "activation memory";

int64_t Bytes(int64_t rows, int64_t width, int64_t element_bytes) {
  return CheckedMul(CheckedMul(rows, width, kWhat), element_bytes, kWhat);
}

int64_t SpTokens(const LayerOpContext& c) {
  return c.SequenceParallel() ? CeilDiv(c.TokensPerRank(), c.training.parallel.tensor)
                              : c.TokensPerRank();
}

// The embedding saves the int64 token ids for its backward scatter-add; its output is the first
// layer's input and is counted there.
int64_t EmbeddingBytes(const LayerOpContext& c) { return Bytes(c.TokensPerRank(), 1, kInt64Bytes); }

// The tensor the vocab-parallel cross-entropy saves for its backward, per logit [S, V/t]: the fp32
// softmax of the unfused and native fused paths (cross_entropy.py calculate_logits_max casts the
// logits, exp_ and div_ work in place; fused_cross_entropy.py the same), TE's fp32 gradient
// buffer, or, before TransformerEngine#3193, TE's gradient written over the bf16 logits.
int64_t SavedLossBytesPerLogit(const LayerOpContext& c) {
  const bool te_in_place =
      !c.training.framework.TorchNative() && c.training.cross_entropy.TeInPlace();
  return te_in_place ? kBf16Bytes : kFp32Bytes;
}

// The saved loss tensor [S, V/t] (above); part of LmHeadBytes.
int64_t SavedLossBytes(const LayerOpContext& c) {
  return Bytes(c.TokensPerRank(), c.PaddedVocab() / c.training.parallel.tensor,
               SavedLossBytesPerLogit(c));
}

// Final norm (input, rstd, output = the output layer's local input, saved sharded under SP and
// re-gathered, layers.py), the loss's saved tensor and the target mask and masked targets
// (cross_entropy.py:25-160).
int64_t LmHeadBytes(const LayerOpContext& c) {
  const int64_t sp = SpTokens(c), tokens = c.TokensPerRank();
  return Bytes(sp, 2 * c.model.hidden_size, kBf16Bytes) + Bytes(sp, 1, kFp32Bytes) +
         SavedLossBytes(c) + Bytes(tokens, 1, kBoolBytes + kInt64Bytes);
}

// The bf16 logits [S, V/t], alive next to their fp32 copy in forward and as the gradient cast
// back to bf16 in backward.
int64_t LmHeadTransientBytes(const LayerOpContext& c) {
  return Bytes(c.TokensPerRank(), c.PaddedVocab() / c.training.parallel.tensor, kBf16Bytes);
}

// One MTP layer (multi_token_prediction.py): token ids, enorm input and the two norms' rstd,
// the concatenated [S_sp, 2h] eh_proj input, one decoder layer of the MTP kind (selective
// recompute applies, full recompute does not), then its own final norm, LM head and loss.
int64_t MtpLayerBytes(const LayerOpContext& c, double load) {
  const int64_t sp = SpTokens(c), h = c.model.hidden_size;
  int64_t bytes = EmbeddingBytes(c) + Bytes(sp, 3 * h, kBf16Bytes) + Bytes(sp, 2, kFp32Bytes);
  bytes = CheckedAdd(bytes, LayerActivationBytes(c, c.model.MtpLayerSpec(), load), kWhat);
  return CheckedAdd(bytes, LmHeadBytes(c), kWhat);
}

std::string KindName(LayerSpec spec) {
  return config::ToString(spec.mixer) + "/" + config::ToString(spec.ffn);
}

void AddPart(ChunkActivations& out, const std::string& kind, int64_t bytes, int64_t count) {
  auto it = std::find_if(out.parts.begin(), out.parts.end(),
                         [&](const ActivationBreakdown& part) { return part.kind == kind; });
  if (it == out.parts.end()) {
    out.parts.push_back({kind, bytes, 0});
    it = out.parts.end() - 1;
  }
  it->num_layers += count;
  out.bytes_per_micro_batch =
      CheckedAdd(out.bytes_per_micro_batch, CheckedMul(bytes, count, kWhat), kWhat);
}

// Full recompute (recompute.py:150-180): uniform checkpoints groups of N layers (N =
// --recompute-num-layers, default 1), block the first N layers of the chunk one by one; which
// layers are rebuilt is RecomputeConfig::FullRecomputeLayer. Each checkpoint keeps its input;
// backward rebuilds one group's full activations at a time.
// Returns the working set of that rebuild and adds the kept inputs to `out`.
//
// Activation offloading (--cpu-offloading-num-layers N; Transformer Engine's
// get_cpu_offload_context, AsyncDoubleBufferGroupOffloadHandler): the saved activations of
// decoder layers 0..N−1 move to pinned host memory while the next layer computes and come back
// one layer ahead of their backward. They count as host bytes; on the GPU the kept layers
// N..L−1 stay, and at the backward of layer N the reload of layer N−1 joins it, so the working
// set grows by whatever b(N−1) + b(N) exceeds the kept layers' sum.
int64_t AddDecoderLayers(const LayerOpContext& c, const config::ModelChunk& chunk, double load,
                         ChunkActivations& out) {
  const config::RecomputeConfig& recompute = c.training.recompute;
  const bool uniform = recompute.granularity == config::RecomputeGranularity::kFull &&
                       recompute.method == config::RecomputeMethod::kUniform;
  const int64_t group = std::max<int64_t>(recompute.num_layers.value_or(1), 1);
  const int64_t offloaded = c.training.OffloadedLayers();
  int64_t last_offloaded_bytes = 0, first_kept_bytes = 0, kept_bytes = 0;
  int64_t largest_rebuilt = 0;
  int64_t num_recomputed = 0;
  for (int64_t i = 0; i < chunk.num_layers; ++i) {
    const int64_t layer = chunk.first_layer + i;
    const LayerSpec spec = c.model.layers[static_cast<size_t>(layer)];
    const bool rebuilt = recompute.FullRecomputeLayer(i);
    if (!rebuilt) {
      const int64_t bytes = LayerActivationBytes(c, spec, load);
      if (layer < offloaded) {
        out.host_bytes_per_micro_batch = CheckedAdd(out.host_bytes_per_micro_batch, bytes, kWhat);
        last_offloaded_bytes = bytes;
        continue;
      }
      if (layer == offloaded) first_kept_bytes = bytes;
      kept_bytes = CheckedAdd(kept_bytes, bytes, kWhat);
      AddPart(out, KindName(spec), bytes, 1);
      out.moe_permute_bytes_per_micro_batch += KeptPermuteMapBytes(c, spec, load);
      continue;
    }
    ++num_recomputed;
    largest_rebuilt = std::max(largest_rebuilt, LayerActivationBytesNoRecompute(c, spec, load));
  }
  if (last_offloaded_bytes > 0) {
    return std::max<int64_t>(0, last_offloaded_bytes + first_kept_bytes - kept_bytes);
  }
  if (num_recomputed == 0) return 0;
  const int64_t num_inputs = uniform ? CeilDiv(num_recomputed, group) : num_recomputed;
  AddPart(out, "layer_inputs (full recompute)", LayerInputBytes(c), num_inputs);
  return CheckedMul(largest_rebuilt, uniform ? std::min(group, num_recomputed) : 1, kWhat);
}

}  // namespace

ChunkActivations ChunkActivationBytes(const LayerOpContext& c, const config::ModelChunk& chunk,
                                      double moe_load_factor) {
  ChunkActivations out;
  if (chunk.has_embedding) AddPart(out, "embedding", EmbeddingBytes(c), 1);
  const int64_t rebuilt = AddDecoderLayers(c, chunk, moe_load_factor, out);
  int64_t transient = 0;
  for (int64_t i = 0; i < chunk.num_layers; ++i) {
    const LayerSpec spec = c.model.layers[static_cast<size_t>(chunk.first_layer + i)];
    transient = std::max(transient, LayerTransientBytes(c, spec, moe_load_factor));
  }
  if (chunk.num_mtp_layers > 0) {
    AddPart(out, "mtp", MtpLayerBytes(c, moe_load_factor), chunk.num_mtp_layers);
    transient =
        std::max(transient, LayerTransientBytes(c, c.model.MtpLayerSpec(), moe_load_factor));
    out.moe_permute_bytes_per_micro_batch +=
        CheckedMul(KeptPermuteMapBytes(c, c.model.MtpLayerSpec(), moe_load_factor),
                   chunk.num_mtp_layers, kWhat);
    out.logits_bytes_per_micro_batch += CheckedMul(SavedLossBytes(c), chunk.num_mtp_layers, kWhat);
  }
  if (chunk.has_lm_head) {
    AddPart(out, "lm_head_loss", LmHeadBytes(c), 1);
    out.logits_bytes_per_micro_batch += SavedLossBytes(c);
    if (LmHeadTransientBytes(c) >= transient) {
      transient = LmHeadTransientBytes(c);
      out.logits_working_set_bytes = transient;
    }
  }
  out.working_set_bytes = CheckedAdd(rebuilt, transient, kWhat);
  return out;
}

}  // namespace trainscope::cost::internal
