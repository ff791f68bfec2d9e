// Exact parameter counts: the checkpoint totals with a per-component and per-layer-kind
// breakdown, and the parameters each rank holds under a Megatron-Core parallel layout (TP/ETP
// shards, EP expert slices, replicated norms and routers, padded vocab, the last stage's
// embedding copy). Pure functions over graph/weights.
#ifndef TRAINSCOPE_GRAPH_PARAM_COUNT_H_
#define TRAINSCOPE_GRAPH_PARAM_COUNT_H_

#include <array>
#include <cstdint>
#include <vector>

#include "trainscope/config/model_config.h"
#include "trainscope/config/pipeline_layout.h"
#include "trainscope/config/training_config.h"
#include "trainscope/graph/weights.h"

namespace trainscope::graph {

using ComponentCounts = std::array<int64_t, kNumComponents>;

struct LayerKindCount {
  config::LayerSpec kind;
  int64_t num_layers = 0;
  int64_t params_per_layer = 0;
  int64_t active_params_per_layer = 0;  // top-k routed experts instead of all E
};

struct ParamCounts {
  int64_t total = 0;          // text + MTP + vision: everything in the checkpoint
  int64_t text_total = 0;     // embedding + decoder + final norm + untied head
  int64_t non_embedding = 0;  // decoder layers + final norm
  int64_t embedding = 0;
  int64_t lm_head = 0;  // 0 when tied
  int64_t active = 0;   // text params one token touches (MTP and vision excluded)
  int64_t mtp = 0;
  int64_t vision = 0;
  ComponentCounts by_component{};           // indexed by Component; sums to total
  std::vector<LayerKindCount> layer_kinds;  // in order of first appearance
};

// Counts the unsharded checkpoint parameters (unpadded vocab). Throws InputError on overflow.
[[nodiscard]] ParamCounts CountParams(const config::ModelConfig& model);

// Parameters held by each rank of one pipeline stage; all ranks of a stage hold the same counts
// because Validate() requires every split to be even.
struct StageParams {
  int64_t pipeline_rank = 0;
  int64_t num_ranks = 0;           // ranks in this stage: W/p
  int64_t num_decoder_layers = 0;  // over all virtual chunks
  int64_t total = 0;
  int64_t dense = 0;       // non-expert parameters (gradients reduced over dp x cp)
  int64_t expert = 0;      // routed-expert parameters (gradients reduced over expert-DP)
  int64_t replicated = 0;  // dense parameters replicated across TP (norms, router, gates)
  ComponentCounts by_component{};
};

// Megatron's padded vocab: ceil(V / (divisor·t))·divisor·t (vocab_utils.py:58-59).
[[nodiscard]] int64_t PaddedVocabSize(int64_t vocab_size, int64_t tensor_parallel, int64_t divisor);

// Elements of `tensor` one rank holds. Experts: copies/e experts, split by ETP; others split by
// TP; vocab-split tensors use the padded vocab.
[[nodiscard]] int64_t ShardNumel(const WeightTensor& tensor, const config::ParallelSizes& sizes,
                                 int64_t padded_vocab);

// Per-stage parameters. Precondition: Validate() accepted the configuration.
[[nodiscard]] std::vector<StageParams> CountParamsPerStage(const config::ModelConfig& model,
                                                           const config::TrainingConfig& training,
                                                           const config::PipelineLayout& layout);

}  // namespace trainscope::graph

#endif  // TRAINSCOPE_GRAPH_PARAM_COUNT_H_
