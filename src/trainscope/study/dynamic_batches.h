// slime's dynamic batching applied to a study: the step's sample lengths (drawn from the study's
// sequence-length histogram, else every sample --seq-length tokens), slime's packing and dealing
// (cost/dynamic_batching.h), and the training configurations the simulator and the memory
// estimate run with. Pure; the result owns everything it holds. docs/rl.md ("Dynamic batching").
#ifndef TRAINSCOPE_STUDY_DYNAMIC_BATCHES_H_
#define TRAINSCOPE_STUDY_DYNAMIC_BATCHES_H_

#include <optional>

#include "trainscope/config/training_config.h"
#include "trainscope/cost/dynamic_batching.h"
#include "trainscope/study/study.h"

namespace trainscope::study {

struct DynamicBatches {
  cost::DynamicBatchStep step;
  // The step the simulator runs: m = K/d micro-batches of one sequence of
  // step.simulated_bin_tokens each (micro-batch size 1, static batching).
  config::TrainingConfig simulated;
  // The configuration memory is estimated with: the same, with the largest bin's tokens.
  config::TrainingConfig memory;
};

// Nothing when the study's training uses static batching. Throws InputError naming
// --global-batch-size when the step's samples cannot make a multiple of d·G micro-batches
// (slime's build_dp_schedule asserts then), and InputError naming --max-tokens-per-gpu when the
// largest micro-batch breaks a rule of Validate() (e.g. T10, too many FLOPs for one op).
// Precondition: Validate() accepted the training.
[[nodiscard]] std::optional<DynamicBatches> PlanDynamicBatches(const Study& study);

// The training configuration the step is simulated with: PlanDynamicBatches(study)->simulated
// under dynamic batching, else study.training. Throws as PlanDynamicBatches.
[[nodiscard]] config::TrainingConfig SimulatedTraining(const Study& study);

}  // namespace trainscope::study

#endif  // TRAINSCOPE_STUDY_DYNAMIC_BATCHES_H_
