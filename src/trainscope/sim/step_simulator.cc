#include "trainscope/sim/step_simulator.h"

#include <algorithm>
#include <array>
#include <utility>

#include "trainscope/config/rank_mapping.h"
#include "trainscope/error.h"
#include "trainscope/sim/periodic_extension.h"
#include "trainscope/sim/sim_graph.h"

namespace trainscope::sim {
namespace {

using config::GroupKind;
using graph::Collective;
using graph::Op;

// Exposed communication is charged to the first active class in this order.
// "offload": the host-link copies of --cpu-offloading (not collectives, exposed alike).
constexpr std::array<const char*, 6> kCommClasses = {"tp", "cp", "ep", "pp", "dp", "offload"};

bool IsHostCopy(const Op& op) { return op.role.kind == graph::OpKind::kActivationOffload; }

size_t CommClassIndex(const Op& op) {
  const std::string name = IsHostCopy(op) ? "offload" : CommClass(op);
  return static_cast<size_t>(std::find(kCommClasses.begin(), kCommClasses.end(), name) -
                             kCommClasses.begin());
}

Breakdown LaneBreakdown(const LaneTimeline& lane, double step_seconds) {
  Breakdown breakdown;
  struct Edge {
    double time_seconds;
    int delta;
    size_t comm_class;  // kCommClasses index, or kCommClasses.size() for compute
  };
  std::vector<Edge> edges;
  for (const Op& op : lane.graph.ops) {
    const OpTiming& timing = lane.timings[static_cast<size_t>(op.id)];
    const double seconds = timing.end_seconds - timing.start_seconds;
    if (seconds <= 0) continue;
    const size_t cls = op.IsComm() || IsHostCopy(op) ? CommClassIndex(op) : kCommClasses.size();
    if (!op.IsComm() && !IsHostCopy(op)) {
      // The op's host-bound part is launch overhead, the rest compute.
      const double launch = std::min(seconds, timing.host_overhead_seconds);
      const double device = seconds - launch;
      breakdown.launch_overhead_seconds += launch;
      breakdown.compute_seconds[OpFamily(op)] += device;
      breakdown.total_compute_seconds += device;
      if (op.phase == graph::Phase::kOptimizer) breakdown.optimizer_seconds += device;
      if (op.role.kind == graph::OpKind::kFp8Quantize ||
          op.role.kind == graph::OpKind::kFp8ScaleUpdate) {
        breakdown.fp8_overhead_seconds += seconds;
      }
      if (op.role.kind == graph::OpKind::kHostSync) breakdown.host_sync_seconds += seconds;
    }
    edges.push_back({timing.start_seconds, +1, cls});
    edges.push_back({timing.end_seconds, -1, cls});
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
    if (a.time_seconds != b.time_seconds) return a.time_seconds < b.time_seconds;
    return a.delta < b.delta;
  });
  std::array<int, kCommClasses.size() + 1> active{};
  double previous = 0;
  for (const Edge& edge : edges) {
    const double span = edge.time_seconds - previous;
    if (span > 0 && active[kCommClasses.size()] == 0) {
      for (size_t c = 0; c < kCommClasses.size(); ++c) {
        if (active[c] > 0) {
          breakdown.exposed_comm_seconds[kCommClasses[c]] += span;
          breakdown.total_exposed_comm_seconds += span;
          break;
        }
      }
    }
    active[edge.comm_class] += edge.delta;
    previous = edge.time_seconds;
  }
  breakdown.bubble_seconds =
      std::max(0.0, step_seconds - breakdown.total_compute_seconds -
                        breakdown.total_exposed_comm_seconds - breakdown.launch_overhead_seconds);
  return breakdown;
}

std::string CriticalCategory(const Op& op) {
  if (IsHostCopy(op)) return "comm:offload";
  return op.IsComm() ? "comm:" + CommClass(op) : "compute:" + OpFamily(op);
}

// Walks back from the last node to finish along the nodes that let each node start, charging
// each node's time up to the start of its successor on the path; gaps are idle time.
std::vector<CriticalPathShare> CriticalPath(const std::vector<LaneTimeline>& lanes,
                                            const internal::SimGraph& graph,
                                            const internal::EngineResult& result) {
  std::map<std::pair<int64_t, std::string>, double> shares;
  int32_t node = -1;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (node < 0 || result.end_seconds[n] > result.end_seconds[static_cast<size_t>(node)]) {
      node = static_cast<int32_t>(n);
    }
  }
  double until = node >= 0 ? result.end_seconds[static_cast<size_t>(node)] : 0;
  while (node >= 0) {
    const auto n = static_cast<size_t>(node);
    const internal::Node& sim_node = graph.nodes[n];
    const LaneTimeline& lane = lanes[static_cast<size_t>(sim_node.lane)];
    const Op& op = lane.graph.ops[static_cast<size_t>(sim_node.op)];
    const double start = result.start_seconds[n];
    const double busy = std::min(until, result.end_seconds[n]) - start;
    // A host-bound compute op: its host-bound part (the tail of its interval) is launch time.
    const double launch = std::min(std::max(busy, 0.0), result.host_overhead_seconds[n]);
    if (launch > 0) shares[{lane.pipeline_rank, "host:launch"}] += launch;
    if (busy - launch > 0) shares[{lane.pipeline_rank, CriticalCategory(op)}] += busy - launch;
    const int32_t trigger = result.trigger[n];
    const double trigger_end =
        trigger >= 0 ? std::min(start, result.end_seconds[static_cast<size_t>(trigger)]) : 0;
    if (start - trigger_end > 0) shares[{lane.pipeline_rank, "idle"}] += start - trigger_end;
    until = std::min(until, start);
    node = trigger;
  }
  std::vector<CriticalPathShare> path;
  for (const auto& [key, seconds] : shares) path.push_back({key.first, key.second, seconds});
  std::stable_sort(path.begin(), path.end(),
                   [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
  return path;
}

}  // namespace

std::string CommClass(const Op& op) {
  switch (op.group) {
    case GroupKind::kTp:
    case GroupKind::kTpCp:
      return "tp";
    case GroupKind::kCp:
      return "cp";
    case GroupKind::kEp:
    case GroupKind::kEtp:
    case GroupKind::kTpEp:
      return "ep";
    case GroupKind::kPp:
      return op.collective == Collective::kSend || op.collective == Collective::kRecv ? "pp" : "dp";
    default:
      return "dp";
  }
}

std::string OpFamily(const Op& op) { return std::string(graph::FamilyName(op.role.block)); }

namespace internal {

void SelectCriticalAndBusiestStages(StepSimulation& sim) {
  double latest = -1;
  double busiest = -1;
  for (size_t i = 0; i < sim.lanes.size(); ++i) {
    if (sim.lanes[i].end_seconds > latest) {
      latest = sim.lanes[i].end_seconds;
      sim.critical_pipeline_rank = sim.lanes[i].pipeline_rank;
    }
    const Breakdown& b = sim.stage_breakdowns[i];
    const double busy =
        b.total_compute_seconds + b.total_exposed_comm_seconds + b.launch_overhead_seconds;
    if (busy > busiest) {
      busiest = busy;
      sim.busiest_pipeline_rank = sim.lanes[i].pipeline_rank;
      sim.breakdown = b;
    }
  }
}

}  // namespace internal

namespace {

// Simulates every micro-batch of the step.
StepSimulation SimulateEveryMicroBatch(const config::ModelConfig& model,
                                       const config::TrainingConfig& training,
                                       const OpCostModel& costs, const SimulationOptions& options) {
  const config::RankMapping mapping(training.parallel);
  StepSimulation sim;
  for (const int64_t rank : mapping.GroupOf(GroupKind::kPp, options.representative_rank)) {
    LaneTimeline lane;
    lane.rank = rank;
    lane.graph = graph::BuildStepGraph(model, training, rank);
    lane.pipeline_rank = lane.graph.pipeline_rank;
    sim.lanes.push_back(std::move(lane));
  }
  const internal::SimGraph graph = internal::BuildSimGraph(sim.lanes, training, costs, options);
  const internal::EngineResult result = internal::RunEngine(graph, options);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const internal::Node& node = graph.nodes[n];
    LaneTimeline& lane = sim.lanes[static_cast<size_t>(node.lane)];
    if (lane.timings.empty()) lane.timings.resize(lane.graph.ops.size());
    lane.timings[static_cast<size_t>(node.op)] = {result.start_seconds[n], result.end_seconds[n],
                                                  node.stream, result.host_overhead_seconds[n]};
    lane.end_seconds = std::max(lane.end_seconds, result.end_seconds[n]);
    sim.step_seconds = std::max(sim.step_seconds, result.end_seconds[n]);
  }
  for (const LaneTimeline& lane : sim.lanes) {
    sim.stage_breakdowns.push_back(LaneBreakdown(lane, sim.step_seconds));
  }
  sim.critical_path = CriticalPath(sim.lanes, graph, result);
  internal::SelectCriticalAndBusiestStages(sim);
  sim.num_micro_batches = sim.lanes.front().graph.num_micro_batches;
  sim.simulated_micro_batches = sim.num_micro_batches;
  return sim;
}

}  // namespace

StepSimulation SimulateStep(const config::ModelConfig& model,
                            const config::TrainingConfig& training, const OpCostModel& costs,
                            const SimulationOptions& options) {
  TRAINSCOPE_CHECK(costs.compute_seconds && costs.comm_cost, "cost functions must be set");
  const internal::ExtensionPlan plan = internal::PlanExtension(training);
  if (!options.extend_periodically || !plan.Extends()) {
    return SimulateEveryMicroBatch(model, training, costs, options);
  }
  const StepSimulation first = SimulateEveryMicroBatch(
      model, internal::WithMicroBatches(training, plan.first), costs, options);
  StepSimulation second = SimulateEveryMicroBatch(
      model, internal::WithMicroBatches(training, plan.second), costs, options);
  return internal::ExtendPeriodically(first, std::move(second), plan);
}

}  // namespace trainscope::sim
