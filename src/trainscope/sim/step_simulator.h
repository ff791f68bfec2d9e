// Discrete-event simulation of one training step over all pipeline stages. Ranks of one pipeline
// stage do identical work, so the simulator runs one representative rank per stage (a "lane":
// the pipeline group of a chosen rank) with four streams each: compute, model-parallel
// communication (TP, CP, EP), data-parallel communication and pipeline sends / receives. Every
// op of the step graph is placed on a stream, starts when its stream is free and its
// dependencies are met, and takes the time the cost model gives it; the pipeline bubble,
// exposed communication and the critical path come out of the simulated timeline. Overlap
// features rewrite dependencies as Megatron-Core schedules them (docs/simulate.md).
#ifndef TRAINSCOPE_SIM_STEP_SIMULATOR_H_
#define TRAINSCOPE_SIM_STEP_SIMULATOR_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"
#include "trainscope/cost/collective_cost.h"
#include "trainscope/graph/step_graph.h"

namespace trainscope::sim {

// The links a collective uses, for contention between concurrent collectives of one rank.
using LinkClass = cost::LinkClass;

struct CommCost {
  double seconds = 0;
  LinkClass link = LinkClass::kNvlink;
  // Host time spent before the call is issued that also holds the compute stream (slime's comm
  // guard: its check, and its clear_memory(), which synchronizes the device). Charged after the
  // compute op the call depends on, so whatever the host issues next waits for it.
  double host_seconds = 0;
};

// Per-op costs, supplied by the caller (sim/op_costs.h binds the hardware cost models; tests
// bind simple closed forms). Both functions must be deterministic and return >= 0.
struct OpCostModel {
  std::function<double(const graph::Op&)> compute_seconds;
  // Cost of a communication op issued by global rank `rank`.
  std::function<CommCost(const graph::Op&, int64_t rank)> comm_cost;
  // Host seconds to launch a compute op's kernels (cost/launch_overhead.h); unset = none. The op
  // cannot finish before its launches are issued, so it takes max(device seconds, host seconds).
  std::function<double(const graph::Op&)> host_seconds;
};

// kHostCopy: the copy stream of --cpu-offloading's activation D2H copies and H2D reloads.
enum class Stream {
  kCompute,
  kModelParallelComm,
  kDataParallelComm,
  kPipelineSend,
  kPipelineRecv,
  kHostCopy
};
inline constexpr int kNumStreams = 6;

struct SimulationOptions {
  // Fractional slowdown of a compute kernel that starts while communication of its rank is in
  // flight (SM and HBM contention with NCCL kernels). 0 = no interference.
  double interference_fraction = 0.1;
  // The same slowdown beside the flex dispatcher's DeepEP kernels, which hold a fixed share of
  // the SMs (cost::FlexComputeSlowdown: 24 of 132 SMs give 0.22).
  double flex_interference_fraction = 24.0 / 108.0;
  // Tokens on the busiest expert-parallel rank / mean (cost/moe_routing.h): scales the MoE
  // dispatch, combine, permutation and expert ops, which wait for the busiest rank. 1 = balanced.
  double moe_load_factor = 1.0;
  // Global rank whose pipeline group is simulated.
  int64_t representative_rank = 0;
  // Simulate a step with many micro-batches at two smaller counts and extend it along the
  // schedule's periodic steady state (sim/periodic_extension.h); false simulates every
  // micro-batch.
  bool extend_periodically = true;
};

// One simulated op.
struct OpTiming {
  double start_seconds = 0;
  double end_seconds = 0;
  Stream stream = Stream::kCompute;
  // Compute ops: the part of [start, end) the GPU waits for the host to issue the op's launches
  // (host seconds beyond the device time).
  double host_overhead_seconds = 0;
};

// One pipeline stage: its representative rank, graph and the timing of every op (index = op id).
struct LaneTimeline {
  int64_t rank = 0;
  int64_t pipeline_rank = 0;
  graph::StepGraph graph;
  std::vector<OpTiming> timings;
  double end_seconds = 0;  // when this stage's last op finishes
};

// Where one stage's time went, partitioning [0, step end): compute (by op family, the first
// component of the op name: "attention", "moe", "mlp", "gdn", "optimizer", ...), launch / host
// overhead (compute ops waiting for the host to issue their kernels), communication no compute
// overlaps (by group class: tp, cp, ep, pp, dp) and idle time (pipeline bubble, waiting for
// peers, the wait for slower stages at the end of the step).
struct Breakdown {
  std::map<std::string, double> compute_seconds;
  std::map<std::string, double> exposed_comm_seconds;
  double bubble_seconds = 0;
  double optimizer_seconds = 0;  // compute of the optimizer phase (also under "optimizer")
  double total_compute_seconds = 0;
  double total_exposed_comm_seconds = 0;
  double launch_overhead_seconds = 0;
  // The FP8 overhead ops (OpKind::kFp8Quantize, kFp8ScaleUpdate: casts, amax passes, column-wise
  // copies, scale swizzles and updates), device and host-bound parts together; already counted
  // in compute (their families) and launch overhead above, not an extra term of the partition.
  double fp8_overhead_seconds = 0;
  // Host-sync ops (OpKind::kHostSync: blocking device-to-host reads, their small kernels
  // between), all host-bound; already counted in launch overhead above.
  double host_sync_seconds = 0;
};

// Time on the critical path, summed by stage and category ("compute:attention", "comm:ep",
// "host:launch", "idle").
struct CriticalPathShare {
  int64_t pipeline_rank = 0;
  std::string category;
  double seconds = 0;
};

struct StepSimulation {
  double step_seconds = 0;
  int64_t num_micro_batches = 0;  // per rank, of the step
  // Micro-batches the lanes' graphs and timings hold: num_micro_batches, or fewer when the
  // step was extended periodically (the timeline then shows these only).
  int64_t simulated_micro_batches = 0;
  std::vector<LaneTimeline> lanes;     // pipeline rank order
  Breakdown breakdown;                 // of the busiest stage (busiest_pipeline_rank)
  int64_t critical_pipeline_rank = 0;  // the stage whose last op ends the step
  // The stage with the most busy time (compute + launch overhead + exposed communication): the
  // one to rebalance.
  int64_t busiest_pipeline_rank = 0;
  std::vector<Breakdown> stage_breakdowns;       // pipeline rank order
  std::vector<CriticalPathShare> critical_path;  // largest first
};

// Simulates one step. Preconditions: Validate() accepted the configuration; the cost functions
// are set. A schedule that deadlocks is a bug, caught by an internal check.
[[nodiscard]] StepSimulation SimulateStep(const config::ModelConfig& model,
                                          const config::TrainingConfig& training,
                                          const OpCostModel& costs,
                                          const SimulationOptions& options = {});

// The group class of a communication op as reported: "tp", "cp", "ep", "pp" or "dp".
[[nodiscard]] std::string CommClass(const graph::Op& op);
// The op family of an op: graph::FamilyName of its block ("attention", "moe", "mlp", ...).
[[nodiscard]] std::string OpFamily(const graph::Op& op);

}  // namespace trainscope::sim

#endif  // TRAINSCOPE_SIM_STEP_SIMULATOR_H_
