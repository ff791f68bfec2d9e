#include "trainscope/sim/periodic_extension.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

namespace trainscope::sim::internal {
namespace {

// x2 + k·(x2 − x1).
double Extend(double x1, double x2, double k) { return x2 + k * (x2 - x1); }

std::map<std::string, double> ExtendMap(const std::map<std::string, double>& first,
                                        const std::map<std::string, double>& second, double k) {
  std::map<std::string, double> out;
  for (const auto& [key, value] : second) {
    const auto it = first.find(key);
    out[key] = Extend(it == first.end() ? 0 : it->second, value, k);
  }
  for (const auto& [key, value] : first) {
    if (!second.contains(key)) out[key] = Extend(value, 0, k);
  }
  return out;
}

Breakdown ExtendBreakdown(const Breakdown& first, const Breakdown& second, double k) {
  return Breakdown{
      .compute_seconds = ExtendMap(first.compute_seconds, second.compute_seconds, k),
      .exposed_comm_seconds = ExtendMap(first.exposed_comm_seconds, second.exposed_comm_seconds, k),
      // Idle time is never negative; rounding in the extension must not make it so.
      .bubble_seconds = std::max(0.0, Extend(first.bubble_seconds, second.bubble_seconds, k)),
      .optimizer_seconds = Extend(first.optimizer_seconds, second.optimizer_seconds, k),
      .total_compute_seconds = Extend(first.total_compute_seconds, second.total_compute_seconds, k),
      .total_exposed_comm_seconds =
          Extend(first.total_exposed_comm_seconds, second.total_exposed_comm_seconds, k),
      .launch_overhead_seconds =
          Extend(first.launch_overhead_seconds, second.launch_overhead_seconds, k),
      .fp8_overhead_seconds = Extend(first.fp8_overhead_seconds, second.fp8_overhead_seconds, k),
      .host_sync_seconds = Extend(first.host_sync_seconds, second.host_sync_seconds, k)};
}

std::vector<CriticalPathShare> ExtendCriticalPath(const std::vector<CriticalPathShare>& first,
                                                  const std::vector<CriticalPathShare>& second,
                                                  double k) {
  std::map<std::pair<int64_t, std::string>, std::pair<double, double>> shares;
  for (const CriticalPathShare& s : first) shares[{s.pipeline_rank, s.category}].first = s.seconds;
  for (const CriticalPathShare& s : second) {
    shares[{s.pipeline_rank, s.category}].second = s.seconds;
  }
  std::vector<CriticalPathShare> path;
  for (const auto& [key, values] : shares) {
    const double seconds = Extend(values.first, values.second, k);
    if (seconds > 0) path.push_back({key.first, key.second, seconds});
  }
  std::stable_sort(path.begin(), path.end(),
                   [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
  return path;
}

int64_t Period(const config::TrainingConfig& training) {
  const config::ParallelSizes& p = training.parallel;
  return p.virtual_stages > 1 ? training.MicroBatchGroupSize() : p.pipeline;
}

}  // namespace

ExtensionPlan PlanExtension(const config::TrainingConfig& training) {
  ExtensionPlan plan;
  plan.num_micro_batches = training.NumMicroBatches();
  plan.period = Period(training);
  const int64_t r = plan.num_micro_batches % plan.period;
  plan.first = plan.period + r;
  plan.second = 2 * plan.period + r;
  return plan;
}

config::TrainingConfig WithMicroBatches(config::TrainingConfig training,
                                        int64_t num_micro_batches) {
  training.batch.global_batch_size =
      num_micro_batches * training.batch.micro_batch_size * training.parallel.Data();
  return training;
}

StepSimulation ExtendPeriodically(const StepSimulation& first, StepSimulation second,
                                  const ExtensionPlan& plan) {
  const double k =
      static_cast<double>(plan.num_micro_batches - plan.second) / static_cast<double>(plan.period);
  StepSimulation out = std::move(second);
  out.num_micro_batches = plan.num_micro_batches;
  out.step_seconds = Extend(first.step_seconds, out.step_seconds, k);
  for (size_t i = 0; i < out.lanes.size(); ++i) {
    out.lanes[i].end_seconds = Extend(first.lanes[i].end_seconds, out.lanes[i].end_seconds, k);
    out.stage_breakdowns[i] =
        ExtendBreakdown(first.stage_breakdowns[i], out.stage_breakdowns[i], k);
  }
  out.critical_path = ExtendCriticalPath(first.critical_path, out.critical_path, k);
  SelectCriticalAndBusiestStages(out);
  return out;
}

}  // namespace trainscope::sim::internal
