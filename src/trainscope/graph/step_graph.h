// The operation graph of one training step for one rank: every micro-batch's forward and
// backward ops in Megatron's pipeline schedule order (1F1B or interleaved), pipeline sends and
// receives with peer ranks, recompute replays, the once-per-step gradient synchronisation and
// the optimizer, with dependencies between ops. Ranks of the same pipeline stage do identical
// work, so the graph of any rank is built from its stage alone.
#ifndef TRAINSCOPE_GRAPH_STEP_GRAPH_H_
#define TRAINSCOPE_GRAPH_STEP_GRAPH_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"
#include "trainscope/graph/op.h"

namespace trainscope::graph {

// One forward or backward pass of one (micro-batch, model chunk) of a rank's schedule.
struct PassId {
  bool forward = true;
  int64_t micro_batch = 0;
  int64_t model_chunk = 0;
  friend bool operator==(const PassId&, const PassId&) = default;
};

struct StepGraph {
  int64_t rank = 0;
  int64_t pipeline_rank = 0;
  int64_t num_micro_batches = 0;
  std::vector<Op> ops;  // issue order; ops[i].id == i; deps refer to earlier ids
  // With --overlap-moe-expert-parallel-comm: the (earlier, later) passes in issue order that
  // Megatron-Core's combined 1F1B runs as one step, a forward with a backward of another
  // micro-batch or chunk (schedules.py, combined_1f1b.py). Empty otherwise.
  std::vector<std::pair<PassId, PassId>> combined_passes;
};

// Builds the step graph of global rank `rank`. Precondition: Validate() accepted the
// configuration and 0 <= rank < world size.
[[nodiscard]] StepGraph BuildStepGraph(const config::ModelConfig& model,
                                       const config::TrainingConfig& training, int64_t rank);

// Megatron's num_floating_point_operations for one step (megatron/training/
// training.py): whole model, all ranks, forward + backward, active experts only, GDN per its hybrid
// formula, MTP and LM head included. Computed exactly in 128-bit integers like Megatron's Python
// ints and returned as a long double, which holds every integer below 2^64 exactly: large
// clusters exceed int64 (e.g. Qwen3.5-397B-A17B, GBS 65536, 4096 tokens: ~2.8e19).
[[nodiscard]] long double MegatronModelFlopsPerStep(const config::ModelConfig& model,
                                                    const config::TrainingConfig& training);

}  // namespace trainscope::graph

#endif  // TRAINSCOPE_GRAPH_STEP_GRAPH_H_
