// Internal to cost/memory: the activation bytes one rank saves for backward per micro-batch, per
// block, as Megatron-Core with Transformer Engine and flash attention stores them (no s² score
// matrix), after selective or full recompute; and the transient working set of the largest
// block. Formulas and sources: docs/memory.md, "Activations".
#ifndef TRAINSCOPE_COST_ACTIVATION_MEMORY_H_
#define TRAINSCOPE_COST_ACTIVATION_MEMORY_H_

#include <cstdint>
#include <vector>

#include "trainscope/config/model_config.h"
#include "trainscope/config/pipeline_layout.h"
#include "trainscope/cost/memory.h"
#include "trainscope/graph/layer_ops.h"

namespace trainscope::cost::internal {

// `moe_load_factor` (>= 1, 1 = balanced routing) is the busiest expert-parallel rank's tokens
// over the mean; it scales the routed-expert rows of MoE layers.

// Saved bytes of one decoder layer of kind `spec` for one micro-batch, with the selective
// recompute modules of the context's training config dropped (full recompute not applied).
[[nodiscard]] int64_t LayerActivationBytes(const graph::LayerOpContext& c, config::LayerSpec spec,
                                           double moe_load_factor);
// The same layer without any recompute (what a fully recomputed layer rebuilds in backward).
[[nodiscard]] int64_t LayerActivationBytesNoRecompute(const graph::LayerOpContext& c,
                                                      config::LayerSpec spec,
                                                      double moe_load_factor);
// Transient buffers of one layer's forward or backward that are freed before the next layer.
[[nodiscard]] int64_t LayerTransientBytes(const graph::LayerOpContext& c, config::LayerSpec spec,
                                          double moe_load_factor);
// The part of LayerActivationBytes that is the MoE dispatcher's permutation map (0 for dense
// layers and when selective recompute drops `moe`); docs/memory.md, "Named terms".
[[nodiscard]] int64_t KeptPermuteMapBytes(const graph::LayerOpContext& c, config::LayerSpec spec,
                                          double moe_load_factor);
// The checkpointed input of a fully recomputed layer: s_c·b·h·2/t under SP (or with
// distribute_saved_activations), else s_c·b·h·2.
[[nodiscard]] int64_t LayerInputBytes(const graph::LayerOpContext& c);

// Activations of one model chunk for one micro-batch.
struct ChunkActivations {
  std::vector<ActivationBreakdown> parts;  // one micro-batch; num_layers in this chunk
  int64_t bytes_per_micro_batch = 0;       // Σ parts: bytes × num_layers
  int64_t working_set_bytes = 0;           // held once while the chunk runs
  // Named parts of the above (docs/memory.md, "Named terms"): the MoE permutation maps and the
  // fp32 cross-entropy logits of one micro-batch, and the bf16 logits when the LM head's
  // transient is the chunk's largest (part of working_set_bytes).
  int64_t moe_permute_bytes_per_micro_batch = 0;
  int64_t logits_bytes_per_micro_batch = 0;
  int64_t logits_working_set_bytes = 0;
  // Saved activations of the offloaded decoder layers (--cpu-offloading-num-layers), in pinned
  // host memory instead of bytes_per_micro_batch.
  int64_t host_bytes_per_micro_batch = 0;
};

[[nodiscard]] ChunkActivations ChunkActivationBytes(const graph::LayerOpContext& c,
                                                    const config::ModelChunk& chunk,
                                                    double moe_load_factor);

}  // namespace trainscope::cost::internal

#endif  // TRAINSCOPE_COST_ACTIVATION_MEMORY_H_
