// Per-layer operation builders: decoder-layer assembly from the mixer and FFN blocks, activation
// recompute, the embedding, the LM head with its loss, and the MTP layers. Megatron-LM citations
// are at commit d98e8a64; the op catalogue with sizes and sources is docs/workload.md.
#include "trainscope/graph/layer_ops.h"

#include <algorithm>
#include <string>
#include <utility>

#include "trainscope/error.h"
#include "trainscope/graph/elementwise_ops.h"
#include "trainscope/graph/fp8_ops.h"
#include "trainscope/graph/layer_ops_internal.h"
#include "trainscope/graph/op_sink.h"
#include "trainscope/units.h"

namespace trainscope::graph {
namespace {

using config::GroupKind;
using config::LayerSpec;
using config::MixerKind;
using internal::AttentionBackward;
using internal::AttentionForward;
using internal::ColumnBackward;
using internal::ColumnForward;
using internal::CommRole;
using internal::CoreAttention;
using internal::CpAfterCore;
using internal::CpBeforeCore;
using internal::ExpertActivation;
using internal::GdnBackward;
using internal::GdnForward;
using internal::GdnOutNorm;
using internal::HiddenNorm;
using internal::KernelRole;
using internal::MlpBackward;
using internal::MlpForward;
using internal::MoeBackward;
using internal::MoeForward;
using internal::OpSink;
using internal::SharedExpertForward;
using internal::Tp;

void MixerForward(OpSink& sink, const LayerOpContext& c, LayerSpec spec) {
  if (spec.mixer == MixerKind::kGatedDeltaNet) {
    GdnForward(sink, c);
  } else if (spec.mixer == MixerKind::kMultiLatentAttention) {
    internal::MlaForward(sink, c);
  } else {
    AttentionForward(sink, c);
  }
}

// The dense MLP with its pre-MLP norm, fused into linear_fc1 (TELayerNormColumnParallelLinear).
void DenseMlpForward(OpSink& sink, const LayerOpContext& c) {
  HiddenNorm(sink, c, OpBlock::kMlp, "mlp.input_norm");
  MlpForward(sink, c, OpBlock::kMlp, "mlp", c.model.ffn_hidden_size);
}

// A MoE layer's pre_mlp_layernorm is a separate TENorm outside the MoELayer.
void FfnForward(OpSink& sink, const LayerOpContext& c, LayerSpec spec) {
  if (spec.ffn == config::FfnKind::kMoe) {
    HiddenNorm(sink, c, OpBlock::kMoeRouter, "moe.input_norm");
    MoeForward(sink, c);
  } else {
    DenseMlpForward(sink, c);
  }
}

// The blocks of the mixer's and the FFN's residual adds: the MoE layer's is on the token side
// (kMoeRouter, like its pre-MLP norm), outside the routed ops a load factor scales.
OpBlock MixerBlock(LayerSpec spec) {
  return spec.mixer == MixerKind::kGatedDeltaNet ? OpBlock::kGdn : OpBlock::kAttention;
}
OpBlock FfnBlock(LayerSpec spec) {
  return spec.ffn == config::FfnKind::kMoe ? OpBlock::kMoeRouter : OpBlock::kMlp;
}
std::string MixerResidualName(LayerSpec spec) {
  return spec.mixer == MixerKind::kGatedDeltaNet ? "gdn.residual_add" : "attention.residual_add";
}
std::string FfnResidualName(LayerSpec spec) {
  return spec.ffn == config::FfnKind::kMoe ? "moe.residual_add" : "mlp.residual_add";
}

// The quantization of the ops of `layer` (-1: outside the decoder layers): the run's FP8 or FP4
// recipe, except that MTP layers (layer >= NumLayers) run FP4 runs in BF16
// (multi_token_prediction.py: "currently ignoring FP4 in MTP layers"; under FP8 the MTP block,
// eh_proj included, runs in the global FP8 context).
Fp8Settings QuantizationAt(const LayerOpContext& c, int64_t layer) {
  const Fp8Settings settings = MakeFp8Settings(c.training);
  if (layer >= c.model.NumLayers() && settings.recipe == config::Fp8Recipe::kNvfp4) return {};
  return settings;
}

std::vector<Op> LayerForward(const LayerOpContext& c, LayerSpec spec, int64_t layer) {
  OpSink sink(Phase::kForward, layer, QuantizationAt(c, layer));
  MixerForward(sink, c, spec);
  internal::ResidualAdd(sink, c, MixerBlock(spec), MixerResidualName(spec));
  FfnForward(sink, c, spec);
  internal::ResidualAdd(sink, c, FfnBlock(spec), FfnResidualName(spec));
  return sink.Take();
}

std::vector<Op> LayerBackward(const LayerOpContext& c, LayerSpec spec, int64_t layer) {
  OpSink sink(Phase::kBackward, layer, QuantizationAt(c, layer));
  if (spec.ffn == config::FfnKind::kMoe) {
    MoeBackward(sink, c);
    HiddenNorm(sink, c, OpBlock::kMoeRouter, "moe.input_norm");
  } else {
    MlpBackward(sink, c, OpBlock::kMlp, "mlp", c.model.ffn_hidden_size);
    HiddenNorm(sink, c, OpBlock::kMlp, "mlp.input_norm");
  }
  internal::ResidualAdd(sink, c, FfnBlock(spec), FfnResidualName(spec));
  if (spec.mixer == MixerKind::kGatedDeltaNet) {
    GdnBackward(sink, c);
  } else if (spec.mixer == MixerKind::kMultiLatentAttention) {
    internal::MlaBackward(sink, c);
  } else {
    AttentionBackward(sink, c);
  }
  internal::ResidualAdd(sink, c, MixerBlock(spec), MixerResidualName(spec));
  return sink.Take();
}

// The forward ops replayed as `phase`, without the casts of cached FP8 weights: the replay
// reuses the first forward's FP8 weight (is_first_microbatch is False by then).
std::vector<Op> Rephase(const std::vector<Op>& ops, Phase phase) {
  std::vector<Op> out;
  for (const Op& op : ops) {
    if (op.role.operand == Fp8Operand::kCachedWeight) continue;
    out.push_back(op);
    out.back().phase = phase;
  }
  return out;
}

bool Recomputes(const LayerOpContext& c, const std::string& module) {
  const std::vector<std::string>& modules = c.training.recompute.modules;
  return std::find(modules.begin(), modules.end(), module) != modules.end();
}

// Selective recompute: the forward ops of each checkpointed module of this layer.
// "moe" checkpoints the whole MoELayer (moe_layer.py), so the shared expert is replayed too.
// "layernorm" checkpoints only norms that are separate modules (transformer_layer.py: not
// IdentityOp), i.e. a MoE layer's pre-MLP norm; the norms fused into linear_qkv, in_proj and
// linear_fc1 are replayed only with their module. "moe_act" replays the expert activation.
void SelectiveRecompute(OpSink& sink, const LayerOpContext& c, LayerSpec spec) {
  const bool attention = spec.mixer != MixerKind::kGatedDeltaNet;
  const bool moe = spec.ffn == config::FfnKind::kMoe;
  if (attention && Recomputes(c, "core_attn")) {  // attention.py:392-395, 446-490
    CpBeforeCore(sink, c, sink.layer(), /*backward=*/false);
    CoreAttention(sink, c, 1);
    CpAfterCore(sink, c, sink.layer(), /*backward=*/false);
  }
  if (!attention && Recomputes(c, "gdn_norm_out")) GdnOutNorm(sink, c);  // gdn.py:266-287
  if (spec.mixer == MixerKind::kMultiLatentAttention && Recomputes(c, "mla_up_proj")) {
    internal::MlaUpProjRecompute(sink, c);  // multi_latent_attention.py:983-988
  }
  if (!moe && Recomputes(c, "mlp")) DenseMlpForward(sink, c);
  if (moe && Recomputes(c, "layernorm")) HiddenNorm(sink, c, OpBlock::kMoeRouter, "moe.input_norm");
  if (moe && Recomputes(c, "moe")) {
    MoeForward(sink, c);
    return;
  }
  if (moe && Recomputes(c, "moe_act")) ExpertActivation(sink, c);  // experts.py
  if (moe && Recomputes(c, "shared_experts")) SharedExpertForward(sink, c);
}

// Word-embedding lookup and its TP reduction (layers.py); MTP reuses it with its own prefix and
// block.
void EmbeddingForwardInto(OpSink& sink, const LayerOpContext& c, OpBlock block,
                          const std::string& prefix) {
  const int64_t a = c.ActivationBytes();
  // Read the rows, write [s_c, b, h].
  sink.Compute(prefix + ".lookup", KernelRole(OpKind::kEmbedding, block), 0, 2 * a);
  if (c.SequenceParallel()) {  // reduce_scatter_embeddings (layers.py:367-380)
    sink.Comm(prefix + ".rs_output", CommRole(block, CommPurpose::kSpScatter),
              Collective::kReduceScatter, GroupKind::kTp, Tp(c), a);
  } else {  // layers.py:381-383
    sink.Comm(prefix + ".ar_output", CommRole(block, CommPurpose::kTpReduce),
              Collective::kAllReduce, GroupKind::kTp, Tp(c), a);
  }
}

void EmbeddingBackwardInto(OpSink& sink, const LayerOpContext& c, OpBlock block,
                           const std::string& prefix) {
  const int64_t a = c.ActivationBytes();
  if (c.SequenceParallel()) {
    sink.Comm(prefix + ".rs_output.grad", CommRole(block, CommPurpose::kSpGather),
              Collective::kAllGather, GroupKind::kTp, Tp(c), a);
  }
  // Scatter-add of the output grad into V/t rows.
  OpRole wgrad = KernelRole(OpKind::kEmbedding, block);
  wgrad.pass = OpPass::kWgrad;
  sink.Compute(prefix + ".wgrad", wgrad, 0, 2 * a);
}

enum class CrossEntropyKind { kTorchNative, kUnfused, kNativeFused, kTe };

CrossEntropyKind CrossEntropyKindOf(const LayerOpContext& c) {
  if (c.training.framework.TorchNative()) return CrossEntropyKind::kTorchNative;
  const config::CrossEntropyConfig& ce = c.training.cross_entropy;
  if (!ce.loss_fusion) return CrossEntropyKind::kUnfused;
  return ce.fusion_impl == config::CrossEntropyFusionImpl::kTe ? CrossEntropyKind::kTe
                                                               : CrossEntropyKind::kNativeFused;
}

// Per logit [s_c·b, V/t], the three Megatron paths (language_module.py
// compute_language_model_loss). Each saves a tensor of the logits' shape for the backward, fp32
// but for TE's in-place variant (cost/chunk_activation_memory.cc SavedLossBytesPerLogit).
// - Unfused (cross_entropy.py _VocabParallelCrossEntropy): the fp32 copy 2+4, the max 4, the
//   in-place subtract 4+4, exp 4+4, the sum 4 and the in-place divide into the softmax 4+4 = 38 B
//   in 6 kernels; backward the in-place multiply by the per-token gradient 4+4 and autograd's
//   cast back to the bf16 logits 4+2 = 14 B in 2 kernels.
// - Native fused (fused_cross_entropy.py, jit_fuser): the cast fused with the max 2+4, subtract,
//   exp and sum 4+4, the divide 4+4 = 22 B in 3 kernels; backward the target update, multiply and
//   bf16 cast fused, 4+2 = 6 B in 2 kernels (the indexed update and the pointwise pass).
// - TE (transformer_engine/pytorch/triton/cross_entropy.py cross_entropy_forward): the online
//   softmax pass reads the bf16 logits 2, the loss kernel reads them again and writes the fp32
//   gradient 2+4 = 8 B in 2 kernels; backward element_mul_kernel scales the gradient 4+4 and
//   autograd casts it to bf16 4+2 = 14 B in 2 kernels. Before TransformerEngine#3193 the loss
//   kernel wrote the gradient over the bf16 logits (2+2+2 = 6 B) and the backward scaled it in
//   place (2+2 = 4 B, one kernel, no cast), saving the bf16 buffer instead of an fp32 one.
// FLOPs (max, subtract, exp, sum, divide) are the same 5 per logit forward in each.
constexpr internal::EagerChainCost LossPerLogit(int64_t forward_bytes, int64_t forward_launches,
                                                int64_t backward_bytes, int64_t backward_launches) {
  return {.flops = 5,
          .forward_bytes = forward_bytes,
          .forward_launches = forward_launches,
          .backward_bytes = backward_bytes,
          .backward_launches = backward_launches};
}
constexpr internal::EagerChainCost kUnfusedLossPerLogit = LossPerLogit(38, 6, 14, 2);
constexpr internal::EagerChainCost kNativeFusedLossPerLogit = LossPerLogit(22, 3, 6, 2);
constexpr internal::EagerChainCost kTeLossPerLogit = LossPerLogit(8, 2, 14, 2);
constexpr internal::EagerChainCost kTeInPlaceLossPerLogit = LossPerLogit(6, 2, 4, 1);

// The loss kernels over `tokens` x `vocab` local logits: `name` forward, `name.backward` in the
// backward.
void CrossEntropy(OpSink& sink, const LayerOpContext& c, OpBlock block, const std::string& name,
                  int64_t tokens, int64_t vocab) {
  const OpRole role = KernelRole(OpKind::kLoss, block);
  const internal::EagerChainCost* per_logit = &kUnfusedLossPerLogit;
  switch (CrossEntropyKindOf(c)) {
    case CrossEntropyKind::kTorchNative:  // torchtitan: cross_entropy over an fp32 copy
      internal::TorchCrossEntropy(sink, role, name, tokens, vocab);
      return;
    case CrossEntropyKind::kUnfused:
      break;
    case CrossEntropyKind::kNativeFused:
      per_logit = &kNativeFusedLossPerLogit;
      break;
    case CrossEntropyKind::kTe:
      per_logit = c.training.cross_entropy.TeInPlace() ? &kTeInPlaceLossPerLogit : &kTeLossPerLogit;
      break;
  }
  internal::EagerChain(sink, role, name, internal::Times(*per_logit, tokens * vocab));
}

// Output layer (ColumnParallelLinear, gather_output=False) and the vocab-parallel cross-entropy
// with its TP reductions: unfused 3 AR of s_c·b·4 bytes (cross_entropy.py:130, 146, 150), native
// fused 2 AR (the max, then target logit and exp sum concatenated), TE one all-gather of the
// per-row (max, sum, target logit).
void LmHeadForwardInto(OpSink& sink, const LayerOpContext& c, OpBlock block,
                       const std::string& prefix) {
  const int64_t vocab = c.PaddedVocab() / Tp(c), tokens = c.TokensPerRank();
  if (c.SequenceParallel()) {
    sink.Comm(prefix + ".output_layer.ag_input",
              CommRole(block, CommPurpose::kSpGather, OpModule::kColumnLinear),
              Collective::kAllGather, GroupKind::kTp, Tp(c), c.ActivationBytes());
  }
  sink.set_high_precision_gemms(!sink.fp8().output_proj);
  sink.Gemm(prefix + ".output_layer", KernelRole(OpKind::kGemm, block, OpModule::kColumnLinear),
            tokens, vocab, c.model.hidden_size);
  sink.set_high_precision_gemms(false);
  CrossEntropy(sink, c, block, prefix + ".cross_entropy", tokens, vocab);
  // torchtitan's loss-parallel path reduces over the vocabulary shards like Megatron's unfused one.
  const CrossEntropyKind kind = CrossEntropyKindOf(c);
  if (kind == CrossEntropyKind::kTe) {  // the per-row (max, sum, target logit), gathered
    sink.Comm(prefix + ".cross_entropy.ag_stats", CommRole(block, CommPurpose::kLossReduce),
              Collective::kAllGather, GroupKind::kTp, Tp(c), Tp(c) * tokens * 3 * kFp32Bytes);
    return;
  }
  if (kind == CrossEntropyKind::kNativeFused) {  // the max, then (target logit, exp sum) as one
    sink.Comm(prefix + ".cross_entropy.ar_max", CommRole(block, CommPurpose::kLossReduce),
              Collective::kAllReduce, GroupKind::kTp, Tp(c), tokens * kFp32Bytes);
    sink.Comm(prefix + ".cross_entropy.ar_target_logit_exp_sum",
              CommRole(block, CommPurpose::kLossReduce), Collective::kAllReduce, GroupKind::kTp,
              Tp(c), 2 * tokens * kFp32Bytes);
    return;
  }
  // The order (max, target logit, exp sum) is part of the contract (report/simai_blocks.cc).
  for (const char* what : {"max", "target_logit", "exp_sum"}) {
    sink.Comm(prefix + ".cross_entropy.ar_" + what, CommRole(block, CommPurpose::kLossReduce),
              Collective::kAllReduce, GroupKind::kTp, Tp(c), tokens * kFp32Bytes);
  }
}

void LmHeadBackwardInto(OpSink& sink, const LayerOpContext& c, OpBlock block,
                        const std::string& prefix) {
  const int64_t vocab = c.PaddedVocab() / Tp(c), tokens = c.TokensPerRank();
  CrossEntropy(sink, c, block, prefix + ".cross_entropy", tokens, vocab);
  sink.set_high_precision_gemms(!sink.fp8().output_proj);
  ColumnBackward(sink, c, block, prefix + ".output_layer", vocab, c.model.hidden_size,
                 c.ActivationBytes());
  sink.set_high_precision_gemms(false);
}

// eh_proj (multi_token_prediction.py:1331-1359): column-parallel over the concatenated 2h input,
// then a last-dim AG of A; under SP a local split back to the sequence shard.
void EhProjForward(OpSink& sink, const LayerOpContext& c) {
  const int64_t h = c.model.hidden_size, a = c.ActivationBytes();
  ColumnForward(sink, c, OpBlock::kMtp, "mtp.eh_proj", h / Tp(c), 2 * h, 2 * a);
  sink.Comm("mtp.eh_proj.ag_output", CommRole(OpBlock::kMtp, CommPurpose::kTpGather),
            Collective::kAllGather, GroupKind::kTp, Tp(c), a);
}

void EhProjBackward(OpSink& sink, const LayerOpContext& c) {
  const int64_t h = c.model.hidden_size, a = c.ActivationBytes();
  if (c.SequenceParallel()) {  // gradient of the SP split
    sink.Comm("mtp.eh_proj.split.grad", CommRole(OpBlock::kMtp, CommPurpose::kSpGather),
              Collective::kAllGather, GroupKind::kTp, Tp(c), a);
  }
  ColumnBackward(sink, c, OpBlock::kMtp, "mtp.eh_proj", h / Tp(c), 2 * h, 2 * a);
}

}  // namespace

int64_t LayerOpContext::TokensPerRank() const {
  return training.batch.seq_length / training.parallel.context * training.batch.micro_batch_size;
}

int64_t LayerOpContext::CoreValueHeadDim() const {
  const config::AttentionConfig& a = model.attention;
  const bool padded =
      model.HasMla() && layout == config::SequenceLayout::kThd && a.ValueHeadDim() < a.head_dim;
  return padded ? a.head_dim : a.ValueHeadDim();
}

int64_t LayerOpContext::ActivationBytes() const {
  return TokensPerRank() * model.hidden_size * kBf16Bytes;
}

bool LayerOpContext::SequenceParallel() const {
  return training.sequence_parallel && training.parallel.tensor > 1;
}

int64_t LayerOpContext::PaddedVocab() const {
  return RoundUp(model.vocab_size,
                 training.make_vocab_size_divisible_by * training.parallel.tensor);
}

LayerOpContext MakeLayerOpContext(const config::ModelConfig& model,
                                  const config::TrainingConfig& training) {
  return LayerOpContext{
      .model = model, .training = training, .layout = training.ResolvedSequenceLayout(model)};
}

std::vector<Op> DecoderLayerForward(const LayerOpContext& context, int64_t layer) {
  TRAINSCOPE_CHECK(layer >= 0 && layer < context.model.NumLayers(), "layer out of range");
  return LayerForward(context, context.model.layers[static_cast<size_t>(layer)], layer);
}

std::vector<Op> DecoderLayerBackward(const LayerOpContext& context, int64_t layer) {
  TRAINSCOPE_CHECK(layer >= 0 && layer < context.model.NumLayers(), "layer out of range");
  return LayerBackward(context, context.model.layers[static_cast<size_t>(layer)], layer);
}

std::vector<Op> DecoderLayerRecompute(const LayerOpContext& context, int64_t layer,
                                      bool recompute_full_layer) {
  if (recompute_full_layer) {
    return Rephase(DecoderLayerForward(context, layer), Phase::kRecompute);
  }
  if (context.training.recompute.granularity != config::RecomputeGranularity::kSelective) {
    return {};
  }
  TRAINSCOPE_CHECK(layer >= 0 && layer < context.model.NumLayers(), "layer out of range");
  OpSink sink(Phase::kRecompute, layer, MakeFp8Settings(context.training));
  const LayerSpec spec = context.model.layers[static_cast<size_t>(layer)];
  // torchtitan's "selective" is its op-level policy, on its dense attention layers.
  if (context.training.framework.TorchNative() && spec.mixer == MixerKind::kAttention &&
      spec.ffn == config::FfnKind::kDense) {
    internal::TorchOpSacRecompute(sink, context);
  } else {
    SelectiveRecompute(sink, context, spec);
  }
  return sink.Take();
}

std::vector<Op> EmbeddingForward(const LayerOpContext& context) {
  OpSink sink(Phase::kForward, -1);
  const int64_t tokens =
      context.training.batch.micro_batch_size * context.training.batch.seq_length;
  // core/utils.py: TP rank 0 broadcasts tokens and position_ids (int64, full b×s) to its TP group.
  for (const char* what : {"tokens", "position_ids"}) {
    sink.Comm(std::string("input.broadcast_") + what,
              CommRole(OpBlock::kInput, CommPurpose::kBroadcast), Collective::kBroadcast,
              GroupKind::kTp, Tp(context), tokens * kInt64Bytes);
  }
  EmbeddingForwardInto(sink, context, OpBlock::kEmbedding, "embedding");
  return sink.Take();
}

std::vector<Op> EmbeddingBackward(const LayerOpContext& context) {
  OpSink sink(Phase::kBackward, -1);
  EmbeddingBackwardInto(sink, context, OpBlock::kEmbedding, "embedding");
  return sink.Take();
}

std::vector<Op> LmHeadAndLossForward(const LayerOpContext& context) {
  OpSink sink(Phase::kForward, -1, QuantizationAt(context, -1));
  const int64_t tokens =
      context.training.batch.micro_batch_size * context.training.batch.seq_length;
  // Same broadcast: labels (int64) and loss_mask (fp32) go to the last stage.
  const OpRole broadcast = CommRole(OpBlock::kInput, CommPurpose::kBroadcast);
  sink.Comm("input.broadcast_labels", broadcast, Collective::kBroadcast, GroupKind::kTp,
            Tp(context), tokens * kInt64Bytes);
  sink.Comm("input.broadcast_loss_mask", broadcast, Collective::kBroadcast, GroupKind::kTp,
            Tp(context), tokens * kFp32Bytes);
  // Decoder final_layernorm, before the AG.
  HiddenNorm(sink, context, OpBlock::kLmHead, "lm_head.final_norm");
  LmHeadForwardInto(sink, context, OpBlock::kLmHead, "lm_head");
  return sink.Take();
}

std::vector<Op> LmHeadAndLossBackward(const LayerOpContext& context) {
  OpSink sink(Phase::kBackward, -1, QuantizationAt(context, -1));
  LmHeadBackwardInto(sink, context, OpBlock::kLmHead, "lm_head");
  HiddenNorm(sink, context, OpBlock::kLmHead, "lm_head.final_norm");
  return sink.Take();
}

std::vector<Op> MtpForward(const LayerOpContext& context) {
  std::vector<Op> ops;
  const config::LayerSpec spec = context.model.MtpLayerSpec();
  for (int64_t i = 0; i < context.model.num_mtp_layers; ++i) {
    const int64_t layer = context.model.NumLayers() + i;
    OpSink head(Phase::kForward, layer, QuantizationAt(context, layer));
    EmbeddingForwardInto(head, context, OpBlock::kMtp, "mtp.embedding");
    // multi_token_prediction.py: enorm, hnorm, concat.
    HiddenNorm(head, context, OpBlock::kMtp, "mtp.enorm");
    HiddenNorm(head, context, OpBlock::kMtp, "mtp.hnorm");
    EhProjForward(head, context);
    head.Append(LayerForward(context, spec, layer));
    HiddenNorm(head, context, OpBlock::kMtp, "mtp.final_norm");
    LmHeadForwardInto(head, context, OpBlock::kMtp, "mtp.lm_head");
    const std::vector<Op> layer_ops = head.Take();
    ops.insert(ops.end(), layer_ops.begin(), layer_ops.end());
  }
  return ops;
}

std::vector<Op> MtpBackward(const LayerOpContext& context) {
  std::vector<Op> ops;
  const config::LayerSpec spec = context.model.MtpLayerSpec();
  for (int64_t i = context.model.num_mtp_layers - 1; i >= 0; --i) {
    const int64_t layer = context.model.NumLayers() + i;
    OpSink sink(Phase::kBackward, layer, QuantizationAt(context, layer));
    LmHeadBackwardInto(sink, context, OpBlock::kMtp, "mtp.lm_head");
    HiddenNorm(sink, context, OpBlock::kMtp, "mtp.final_norm");
    sink.Append(LayerBackward(context, spec, layer));
    EhProjBackward(sink, context);
    HiddenNorm(sink, context, OpBlock::kMtp, "mtp.hnorm");
    HiddenNorm(sink, context, OpBlock::kMtp, "mtp.enorm");
    EmbeddingBackwardInto(sink, context, OpBlock::kMtp, "mtp.embedding");
    const std::vector<Op> layer_ops = sink.Take();
    ops.insert(ops.end(), layer_ops.begin(), layer_ops.end());
  }
  return ops;
}

}  // namespace trainscope::graph
