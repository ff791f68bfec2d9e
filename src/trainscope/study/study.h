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
  double seconds_per_call = sim::kDefaultCommGuardSeconds;  // the available_memory() check
  sim::CommGuardClearCost clear;  // clear_memory() when less than the threshold is free
  friend bool operator==(const CommGuardSetting&, const CommGuardSetting&) = default;
};

// What slime's guard costs in one step, per GPU of the busiest stage (the one with the highest
// memory peak, whose free memory decides how often the guard clears).
struct CommGuardReport {
  sim::CommGuardMode mode = sim::CommGuardMode::kOff;
  int64_t guarded_calls = 0;      // per step, on the first rank of the first stage
  double free_bytes_at_peak = 0;  // capacity − peak (negative: does not fit)
  double floor_bytes = 0;         // what stays allocated between passes
  double clear_fraction = 0;      // share of guarded calls that run clear_memory()
  double clears = 0;              // guarded_calls × clear_fraction
  double check_seconds = 0;       // per guarded call
  double clear_seconds = 0;       // per clear: gc.collect + empty_cache
  double seconds_per_call = 0;    // check + clear_fraction × clear: what each guarded op pays
  double seconds = 0;             // guarded_calls × seconds_per_call
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
  std::optional<CommGuardReport> comm_guard;  // set when the guard is on
  // HybridEP's rank budget overflowed (moe_load_factor > --moe-expert-rank-capacity-factor):
  // Megatron-Core's overflow runner runs the forward-backward again without the budget
  // (megatron/training/training.py), here the whole step without it; its seconds are in
  // metrics.step_seconds besides simulation.step_seconds.
  std::optional<double> overflow_rerun_seconds;
};

// The guard's cost per step under the study's memory (unset when the guard is off).
[[nodiscard]] std::optional<CommGuardReport> EstimateCommGuard(const Study& study);

// Tokens on the busiest expert-parallel rank over the mean under the study's routing skew (1
// without skew or without MoE layers).
[[nodiscard]] double MoeLoadFactor(const Study& study);

// The routed-expert load the step's ops carry: MoeLoadFactor, capped by HybridEP's rank budget
// (--moe-expert-rank-capacity-factor), over which tokens are dropped.
[[nodiscard]] double SimulatedMoeLoadFactor(const Study& study);

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
