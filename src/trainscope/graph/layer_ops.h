// Per-layer operation builders: the compute kernels and collectives one rank issues for one
// micro-batch in a decoder layer (attention / gated attention / Gated DeltaNet mixer, dense MLP or
// MoE), the embedding, the LM head with its loss, and the MTP layers, following
// Megatron-LM and TE as docs/workload.md cites them. Pure functions; every returned Op has
// id 0, micro_batch -1 and no deps (the schedule fills them). A LayerOpContext borrows the model
// and training configurations, which must outlive it.
#ifndef TRAINSCOPE_GRAPH_LAYER_OPS_H_
#define TRAINSCOPE_GRAPH_LAYER_OPS_H_

#include <cstdint>
#include <vector>

#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"
#include "trainscope/graph/op.h"

namespace trainscope::graph {

// Everything the builders need, computed once per configuration. Borrows `model` and
// `training`; both must outlive the context.
struct LayerOpContext {
  const config::ModelConfig& model;
  const config::TrainingConfig& training;
  config::SequenceLayout layout = config::SequenceLayout::kBshd;  // resolved: kThd or kBshd

  // s_c·b: tokens of one micro-batch on one CP rank (the TP-gathered GEMM rows).
  [[nodiscard]] int64_t TokensPerRank() const;
  // A = s_c·b·h·2 bytes: the full (TP-gathered) bf16 activation of one micro-batch.
  [[nodiscard]] int64_t ActivationBytes() const;
  // True when sequence parallelism is active (SP requested and t > 1).
  [[nodiscard]] bool SequenceParallel() const;
  // Megatron's padded vocabulary ceil(V0/(div·t))·div·t (vocab_utils.py:58-59).
  [[nodiscard]] int64_t PaddedVocab() const;
  // The value head width the core-attention kernel runs with: attention.ValueHeadDim(), except
  // that MLA under THD pads V to the q/k head dim before the kernel and trims the output after
  // (multi_latent_attention.py:85-108, _prepare_mla_core_attention_value).
  [[nodiscard]] int64_t CoreValueHeadDim() const;
};

// Builds a context with the sequence layout resolved by TrainingConfig::ResolvedSequenceLayout.
// Precondition: Validate() accepted the configuration.
[[nodiscard]] LayerOpContext MakeLayerOpContext(const config::ModelConfig& model,
                                                const config::TrainingConfig& training);
// The context refers to both configurations, so temporaries would dangle.
LayerOpContext MakeLayerOpContext(const config::ModelConfig&, config::TrainingConfig&&) = delete;
LayerOpContext MakeLayerOpContext(config::ModelConfig&&, const config::TrainingConfig&) = delete;

// Ops of decoder layer `layer` (global index, 0 <= layer < L) for one micro-batch, in forward
// order, all with phase kForward and layer == `layer`.
[[nodiscard]] std::vector<Op> DecoderLayerForward(const LayerOpContext& context, int64_t layer);
// The same layer's backward pass in execution order (reverse of forward within the layer),
// including the backward collectives (SP re-gathers, dgrad RS/AR, MoE backward all-to-alls, CP
// backward traffic). Phase kBackward.
[[nodiscard]] std::vector<Op> DecoderLayerBackward(const LayerOpContext& context, int64_t layer);
// Ops replayed during backward by activation recompute for this layer, phase kRecompute. With
// `recompute_full_layer` (the caller decides from --recompute-method/num-layers) every forward
// op of the layer; otherwise, under selective granularity, the forward ops of the checkpointed
// modules in training.recompute.modules (recompute_modules). Empty when nothing is recomputed.
[[nodiscard]] std::vector<Op> DecoderLayerRecompute(const LayerOpContext& context, int64_t layer,
                                                    bool recompute_full_layer);

// Input broadcast of tokens and position ids and the word embedding (layers.py); layer -1.
[[nodiscard]] std::vector<Op> EmbeddingForward(const LayerOpContext& context);
[[nodiscard]] std::vector<Op> EmbeddingBackward(const LayerOpContext& context);
// The vision tower of one micro-batch (first pipeline stage, before the embedding): patch
// embedding, `depth` ViT blocks and the patch merger over b · vision_tokens_per_sample · m²
// patches; layer -1. Empty for text-only runs. Backward in reverse order.
[[nodiscard]] std::vector<Op> VisionForward(const LayerOpContext& context);
[[nodiscard]] std::vector<Op> VisionBackward(const LayerOpContext& context);
// Labels / loss-mask broadcast, output layer and vocab-parallel cross-entropy; layer -1.
[[nodiscard]] std::vector<Op> LmHeadAndLossForward(const LayerOpContext& context);
[[nodiscard]] std::vector<Op> LmHeadAndLossBackward(const LayerOpContext& context);
// Every MTP layer: embedding, eh_proj, one decoder layer (layer index L + i), LM
// head and loss. Empty when the model has no MTP layers.
[[nodiscard]] std::vector<Op> MtpForward(const LayerOpContext& context);
[[nodiscard]] std::vector<Op> MtpBackward(const LayerOpContext& context);

}  // namespace trainscope::graph

#endif  // TRAINSCOPE_GRAPH_LAYER_OPS_H_
