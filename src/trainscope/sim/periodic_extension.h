// Internal to sim/: a step with many micro-batches is simulated at two smaller counts and
// extended exactly along its periodic steady state, so simulation time and memory do not grow
// with the micro-batch count. After warm-up, a pipeline schedule repeats with period G
// micro-batches (G = p for 1F1B, the micro-batch group size — default p — for the interleaved
// schedule, Megatron-Core schedules.py), so every additive result (step time, each stage's end,
// compute by family, exposed communication by class, bubble, critical-path shares) grows by the
// same amount per period: x(m) = x(m2) + k·(x(m2) − x(m1)) with m1 = G + r, m2 = 2G + r,
// r = m mod G and k = (m − m2)/G. m1 ≥ G ≥ p puts both counts past the warm-up (p − 1 passes),
// so the difference is one steady-state period; tests compare against full simulations.
#ifndef TRAINSCOPE_SIM_PERIODIC_EXTENSION_H_
#define TRAINSCOPE_SIM_PERIODIC_EXTENSION_H_

#include <cstdint>

#include "trainscope/config/training_config.h"
#include "trainscope/sim/step_simulator.h"

namespace trainscope::sim::internal {

struct ExtensionPlan {
  int64_t num_micro_batches = 0;  // m
  int64_t period = 1;             // G
  int64_t first = 0;              // m1 = G + r
  int64_t second = 0;             // m2 = 2G + r
  // Whether extending saves real work: at least two periods beyond m2 (otherwise every
  // micro-batch is simulated, and the timeline shows them all).
  [[nodiscard]] bool Extends() const { return num_micro_batches > second + 2 * period; }
};

// The plan for `training` (Validate() accepted it).
[[nodiscard]] ExtensionPlan PlanExtension(const config::TrainingConfig& training);

// `training` with `num_micro_batches` micro-batches per rank (the global batch changed).
[[nodiscard]] config::TrainingConfig WithMicroBatches(config::TrainingConfig training,
                                                      int64_t num_micro_batches);

// The step of plan.num_micro_batches from the simulations at plan.first (`first`) and
// plan.second (`second`) micro-batches. The lanes (graphs and timings) are `second`'s: the
// timeline shows the simulated micro-batches only.
[[nodiscard]] StepSimulation ExtendPeriodically(const StepSimulation& first, StepSimulation second,
                                                const ExtensionPlan& plan);

// Sets the critical stage (the first whose last op ends the step), the busiest stage (the first
// with the most compute plus exposed communication) and its breakdown from the lanes' end times
// and stage breakdowns. Defined in step_simulator.cc; shared by both paths.
void SelectCriticalAndBusiestStages(StepSimulation& sim);

}  // namespace trainscope::sim::internal

#endif  // TRAINSCOPE_SIM_PERIODIC_EXTENSION_H_
