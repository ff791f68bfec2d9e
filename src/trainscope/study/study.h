// The engine's one pure entry point. A Study is every resolved input of a run (no file paths:
// io/study_inputs reads and resolves files first); RunStudy computes what the `simulate`
// command reports (the simulated step, its metrics, per-rank memory and the optional
// sequence-packing what-if) with no I/O, and EstimateStudyMemory what `memory` and `validate`
// need. Both are re-entrant: they read only their arguments and share no state, so a planner or
// the Python module may call them from several threads at once. The result owns everything it
// holds.
#ifndef TRAINSCOPE_STUDY_STUDY_H_
#define TRAINSCOPE_STUDY_STUDY_H_

#include <optional>

#include "trainscope/config/cluster.h"
#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"
#include "trainscope/cost/compute_cost.h"
#include "trainscope/cost/dynamic_batching.h"
#include "trainscope/cost/memory.h"
#include "trainscope/cost/moe_routing.h"
#include "trainscope/cost/sequence_packing.h"
#include "trainscope/sim/comm_guard.h"
#include "trainscope/sim/op_costs.h"
#include "trainscope/sim/step_metrics.h"
#include "trainscope/sim/step_simulator.h"

namespace trainscope::study {

// slime's communication memory guard as the simulator charges it (sim/comm_guard.h).
struct CommGuardSetting {
  sim::CommGuardMode mode = sim::CommGuardMode::kOff;
  double seconds_per_call = sim::kDefaultCommGuardSeconds;
  friend bool operator==(const CommGuardSetting&, const CommGuardSetting&) = default;
};

// Everything one run needs, resolved. Plain value: copy it, change one field, study it again.
struct Study {
  config::ModelConfig model;
  config::TrainingConfig training;
  config::ClusterSpec cluster;      // GPU, nodes, links (with calibrated link constants)
  cost::ComputeEfficiency compute;  // kernel efficiencies (with calibration applied)
  cost::GdnBackend gdn_backend = cost::GdnBackend::kFla;
  CommGuardSetting comm_guard;
  double interference_fraction = 0.1;         // sim::SimulationOptions
  cost::FlexDispatchConstants flex_dispatch;  // the flex dispatcher's DeepEP kernels
  // Fixed memory overheads; moe_load_factor is ignored here and derived from routing_skew.
  cost::MemoryOverheads memory_overheads;
  std::optional<cost::RoutingSkew> routing_skew;                  // unset = balanced routing
  std::optional<cost::SequenceLengthHistogram> sequence_lengths;  // unset = no packing what-if
};

// The cost of BSHD padding against THD packing under the study's sequence-length distribution.
struct SequencePackingResult {
  double mean_length = 0;
  double bshd_useful_token_fraction = 0;  // real tokens / padded tokens
  double bshd_useful_tokens_per_s_per_gpu = 0;
  double thd_step_seconds = 0;  // the step re-simulated with packed attention cost
  double thd_useful_tokens_per_s_per_gpu = 0;
};

struct StudyResult {
  sim::StepSimulation simulation;
  sim::StepMetrics metrics;
  cost::MemoryEstimate memory;
  double moe_load_factor = 1;  // tokens on the busiest expert-parallel rank / mean
  std::optional<SequencePackingResult> sequence_packing;  // static batching only
  // slime's dynamic batching (study/dynamic_batches.h): the step simulated is its micro-batches
  // and metrics count its real sample tokens.
  std::optional<cost::DynamicBatchStep> dynamic_batching;
};

// Tokens on the busiest expert-parallel rank over the mean under the study's routing skew (1
// without skew or without MoE layers).
[[nodiscard]] double MoeLoadFactor(const Study& study);

// The memory overheads with the routing load factor filled in.
[[nodiscard]] cost::MemoryOverheads MemoryOverheads(const Study& study);

// The hardware cost options the simulator binds (cluster, efficiencies, GDN backend, guard).
[[nodiscard]] sim::HardwareCostOptions CostOptions(const Study& study);

// Per-rank memory of the study's configuration (under dynamic batching, of its largest
// micro-batch). Precondition: Validate() accepted it. Throws InputError as PlanDynamicBatches.
[[nodiscard]] cost::MemoryEstimate EstimateStudyMemory(const Study& study);

// Simulates the step and derives everything `simulate` reports. Preconditions: Validate()
// accepted the configuration and the cluster's GPU has a BF16 peak (> 0). Throws nothing for
// valid input but InputError when dynamic batching cannot deal the step (PlanDynamicBatches).
[[nodiscard]] StudyResult RunStudy(const Study& study);

}  // namespace trainscope::study

#endif  // TRAINSCOPE_STUDY_STUDY_H_
