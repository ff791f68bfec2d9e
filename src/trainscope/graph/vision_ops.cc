// The Qwen3.5 vision tower (the Qwen3-VL design without deepstack; transformers
// Qwen3_5VisionModel): Conv3d patch embedding [Hv, 3·2·16·16] as a GEMM, learned position
// embedding, `depth` pre-LayerNorm ViT blocks (fused qkv, bidirectional attention within each
// image, proj, GELU MLP of width Iv) and the patch merger (LayerNorm, m² patches concatenated,
// fc1 m²Hv → m²Hv, GELU, fc2 m²Hv → H). Megatron-Bridge runs it on the first pipeline stage
// before the word embedding; it is split over TP like the text layers (column-parallel qkv and
// fc1, row-parallel proj and fc2 with a TP all-reduce of their output), without sequence
// parallelism. Each sample is taken as one image of vision_tokens_per_sample · m² patches.
#include <string>
#include <vector>

#include "trainscope/graph/elementwise_ops.h"
#include "trainscope/graph/layer_ops.h"
#include "trainscope/graph/op_sink.h"
#include "trainscope/units.h"

namespace trainscope::graph {
namespace {

using internal::CommRole;
using internal::Elementwise;
using internal::ElementwiseCost;
using internal::KernelRole;
using internal::OpSink;
using internal::Tp;

using internal::kGelu;       // elementwise_ops.h
using internal::kLayerNorm;  // elementwise_ops.h

struct VisionDims {
  int64_t patches = 0;        // P = b · N · m², per micro-batch
  int64_t image_patches = 0;  // N · m², one image
  int64_t images = 0;         // b
  int64_t hidden = 0;         // Hv
  int64_t ffn = 0;            // Iv
  int64_t heads = 0;
  int64_t merge = 0;         // m²
  int64_t patch_inputs = 0;  // in_channels · temporal_patch · patch²
  int64_t tp = 1;
};

VisionDims Dims(const LayerOpContext& c) {
  const config::VisionConfig& v = c.model.vision;
  VisionDims d;
  d.merge = v.spatial_merge_size * v.spatial_merge_size;
  d.images = c.training.batch.micro_batch_size;
  d.image_patches = c.training.batch.vision_tokens_per_sample * d.merge;
  d.patches = d.images * d.image_patches;
  d.hidden = v.hidden_size;
  d.ffn = v.intermediate_size;
  d.heads = v.num_heads;
  d.patch_inputs = v.in_channels * v.temporal_patch_size * v.patch_size * v.patch_size;
  d.tp = Tp(c);
  return d;
}

bool Present(const LayerOpContext& c) {
  return c.model.vision.Present() && c.training.batch.vision_tokens_per_sample > 0;
}

OpRole Role(OpKind kind, OpModule module = OpModule::kNone) {
  return KernelRole(kind, OpBlock::kVision, module);
}

// TP all-reduce of a row-parallel output (forward) or a column-parallel input gradient
// (backward) of `rows` × `width` bf16.
void TpReduce(OpSink& sink, const std::string& name, const VisionDims& d, int64_t rows,
              int64_t width) {
  sink.Comm(name, CommRole(OpBlock::kVision, CommPurpose::kTpReduce), Collective::kAllReduce,
            config::GroupKind::kTp, d.tp, rows * width * kBf16Bytes);
}

// Bidirectional attention within each image: QKᵀ and PV are 2·N_p²·d_h FLOPs each per head,
// no causal halving: 4·b·(heads/t)·d_h·N_p² forward, twice that backward. Bytes: Q, K, V, O.
void VisionAttention(OpSink& sink, const VisionDims& d, int64_t multiplier,
                     const std::string& name) {
  const int64_t head_dim = d.hidden / d.heads;
  const int64_t local_heads = d.heads / d.tp;
  const int64_t pairs = d.images * local_heads * d.image_patches * d.image_patches;
  const int64_t flops = 4 * head_dim * pairs;
  const int64_t bytes = 4 * d.patches * local_heads * head_dim * kBf16Bytes;
  sink.Attention(name, Role(OpKind::kAttentionCore), multiplier * flops, multiplier * bytes, pairs,
                 head_dim, head_dim);
}

void BlockForward(OpSink& sink, const VisionDims& d, const std::string& p) {
  const OpRole column = Role(OpKind::kGemm, OpModule::kColumnLinear);
  const OpRole row = Role(OpKind::kGemm, OpModule::kRowLinear);
  Elementwise(sink, Role(OpKind::kNorm), p + ".norm1", d.patches * d.hidden, kLayerNorm);
  sink.Gemm(p + ".attn.qkv", column, d.patches, 3 * d.hidden / d.tp, d.hidden);
  VisionAttention(sink, d, 1, p + ".attn.core");
  sink.Gemm(p + ".attn.proj", row, d.patches, d.hidden, d.hidden / d.tp);
  TpReduce(sink, p + ".attn.proj.ar_output", d, d.patches, d.hidden);
  Elementwise(sink, Role(OpKind::kNorm), p + ".norm2", d.patches * d.hidden, kLayerNorm);
  sink.Gemm(p + ".mlp.fc1", column, d.patches, d.ffn / d.tp, d.hidden);
  Elementwise(sink, Role(OpKind::kElementwise), p + ".mlp.gelu", d.patches * d.ffn / d.tp, kGelu);
  sink.Gemm(p + ".mlp.fc2", row, d.patches, d.hidden, d.ffn / d.tp);
  TpReduce(sink, p + ".mlp.fc2.ar_output", d, d.patches, d.hidden);
}

void BlockBackward(OpSink& sink, const VisionDims& d, const std::string& p) {
  const OpRole column = Role(OpKind::kGemm, OpModule::kColumnLinear);
  const OpRole row = Role(OpKind::kGemm, OpModule::kRowLinear);
  sink.Dgrad(p + ".mlp.fc2", row, d.patches, d.hidden, d.ffn / d.tp);
  sink.Wgrad(p + ".mlp.fc2", row, d.patches, d.hidden, d.ffn / d.tp);
  Elementwise(sink, Role(OpKind::kElementwise), p + ".mlp.gelu", d.patches * d.ffn / d.tp, kGelu);
  sink.Dgrad(p + ".mlp.fc1", column, d.patches, d.ffn / d.tp, d.hidden);
  sink.Wgrad(p + ".mlp.fc1", column, d.patches, d.ffn / d.tp, d.hidden);
  TpReduce(sink, p + ".mlp.fc1.ar_grad", d, d.patches, d.hidden);
  Elementwise(sink, Role(OpKind::kNorm), p + ".norm2", d.patches * d.hidden, kLayerNorm);
  sink.Dgrad(p + ".attn.proj", row, d.patches, d.hidden, d.hidden / d.tp);
  sink.Wgrad(p + ".attn.proj", row, d.patches, d.hidden, d.hidden / d.tp);
  VisionAttention(sink, d, 2, p + ".attn.core.backward");
  sink.Dgrad(p + ".attn.qkv", column, d.patches, 3 * d.hidden / d.tp, d.hidden);
  sink.Wgrad(p + ".attn.qkv", column, d.patches, 3 * d.hidden / d.tp, d.hidden);
  TpReduce(sink, p + ".attn.qkv.ar_grad", d, d.patches, d.hidden);
  Elementwise(sink, Role(OpKind::kNorm), p + ".norm1", d.patches * d.hidden, kLayerNorm);
}

}  // namespace

std::vector<Op> VisionForward(const LayerOpContext& context) {
  if (!Present(context)) return {};
  const VisionDims d = Dims(context);
  const int64_t out = context.model.hidden_size, merged = d.patches / d.merge;
  OpSink sink(Phase::kForward, -1);
  // Patch embedding: Conv3d with stride = kernel is a GEMM [P × C·T·p²]·[C·T·p² × Hv],
  // replicated over TP; then the (interpolated) position embedding added.
  sink.Gemm("vision.patch_embed", Role(OpKind::kGemm), d.patches, d.hidden, d.patch_inputs);
  Elementwise(sink, Role(OpKind::kElementwise), "vision.pos_embed", d.patches * d.hidden,
              ElementwiseCost{.flops = 1, .bytes = 3 * kBf16Bytes});
  for (int64_t i = 0; i < context.model.vision.depth; ++i) {
    BlockForward(sink, d, "vision.blocks." + std::to_string(i));
  }
  Elementwise(sink, Role(OpKind::kNorm), "vision.merger.norm", d.patches * d.hidden, kLayerNorm);
  sink.Gemm("vision.merger.fc1", Role(OpKind::kGemm, OpModule::kColumnLinear), merged,
            d.merge * d.hidden / d.tp, d.merge * d.hidden);
  Elementwise(sink, Role(OpKind::kElementwise), "vision.merger.gelu",
              merged * d.merge * d.hidden / d.tp, kGelu);
  sink.Gemm("vision.merger.fc2", Role(OpKind::kGemm, OpModule::kRowLinear), merged, out,
            d.merge * d.hidden / d.tp);
  TpReduce(sink, "vision.merger.fc2.ar_output", d, merged, out);
  return sink.Take();
}

std::vector<Op> VisionBackward(const LayerOpContext& context) {
  if (!Present(context)) return {};
  const VisionDims d = Dims(context);
  const int64_t out = context.model.hidden_size, merged = d.patches / d.merge;
  OpSink sink(Phase::kBackward, -1);
  const OpRole column = Role(OpKind::kGemm, OpModule::kColumnLinear);
  const OpRole row = Role(OpKind::kGemm, OpModule::kRowLinear);
  sink.Dgrad("vision.merger.fc2", row, merged, out, d.merge * d.hidden / d.tp);
  sink.Wgrad("vision.merger.fc2", row, merged, out, d.merge * d.hidden / d.tp);
  Elementwise(sink, Role(OpKind::kElementwise), "vision.merger.gelu",
              merged * d.merge * d.hidden / d.tp, kGelu);
  sink.Dgrad("vision.merger.fc1", column, merged, d.merge * d.hidden / d.tp, d.merge * d.hidden);
  sink.Wgrad("vision.merger.fc1", column, merged, d.merge * d.hidden / d.tp, d.merge * d.hidden);
  TpReduce(sink, "vision.merger.fc1.ar_grad", d, merged, d.merge * d.hidden);
  Elementwise(sink, Role(OpKind::kNorm), "vision.merger.norm", d.patches * d.hidden, kLayerNorm);
  for (int64_t i = context.model.vision.depth - 1; i >= 0; --i) {
    BlockBackward(sink, d, "vision.blocks." + std::to_string(i));
  }
  // The patch embedding needs only its weight gradient (the pixels take none).
  sink.Wgrad("vision.patch_embed", Role(OpKind::kGemm), d.patches, d.hidden, d.patch_inputs);
  return sink.Take();
}

}  // namespace trainscope::graph
