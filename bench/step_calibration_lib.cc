#include "step_calibration_lib.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "trainscope/error.h"
#include "trainscope/io/calibration_csv.h"
#include "trainscope/io/cluster_file.h"
#include "trainscope/sim/op_costs.h"
#include "trainscope/sim/step_metrics.h"
#include "trainscope/sim/step_simulator.h"

namespace trainscope::bench {
namespace {

// Configurations that simulate identically share one simulation.
std::string ConfigKey(const CalibrationCase& c) {
  const config::TrainingConfig& t = c.training;
  const config::ParallelSizes& p = t.parallel;
  return fmt::format(
      "{}|{}|{} {} {} {} {} {} {}|{} {} {}|{}{}|{} {}|{}", c.preset, c.gpu, p.world_size, p.tensor,
      p.pipeline, p.virtual_stages, p.context, p.expert, p.ExpertTensor(), t.batch.micro_batch_size,
      t.batch.global_batch_size.value_or(0), t.batch.seq_length, static_cast<int>(t.precision.fp8),
      static_cast<int>(t.precision.fp8_recipe), static_cast<int>(t.recompute.granularity),
      t.recompute.modules.size(), t.data_parallel.megatron_fsdp);
}

}  // namespace

CaseSet LoadCases(const std::string& csv_path) {
  CaseSet set;
  for (const io::CalibrationRow& row : io::LoadCalibrationCsv(csv_path)) {
    if (!row.tokens_per_second_per_gpu) continue;
    CaseOrSkip built = BuildCase(row);
    if (built.calibration_case) {
      set.cases.push_back(std::move(*built.calibration_case));
    } else if (PresetFor(row.model)) {
      set.skipped.push_back(
          fmt::format("line {} ({}, {}): {}", row.line, row.model, row.gpu, built.skip_reason));
    }
  }
  return set;
}

namespace {

// Step seconds of `training` with `num_micro_batches` micro-batches per rank.
double StepSeconds(const CalibrationCase& c, config::TrainingConfig training,
                   int64_t num_micro_batches, const sim::HardwareCostOptions& options,
                   const sim::SimulationOptions& sim_options) {
  training.batch.global_batch_size =
      num_micro_batches * training.batch.micro_batch_size * training.parallel.Data();
  return sim::SimulateStep(c.model, training, sim::BindHardwareCosts(training, options),
                           sim_options)
      .step_seconds;
}

}  // namespace

std::vector<RowResult> Evaluate(const std::vector<CalibrationCase>& cases,
                                const Efficiencies& efficiencies, bool extrapolate) {
  std::map<std::string, std::pair<double, double>> simulated;  // key -> (tokens/s, TFLOP/s)
  std::vector<RowResult> results;
  for (const CalibrationCase& c : cases) {
    const std::string key = ConfigKey(c);
    auto it = simulated.find(key);
    if (it == simulated.end()) {
      sim::HardwareCostOptions options;
      options.cluster = io::ResolveCluster(io::ClusterInputs{.gpu = c.gpu});
      options.cluster.link = efficiencies.links;
      options.compute = efficiencies.compute;
      const sim::SimulationOptions sim_options{.interference_fraction =
                                                   efficiencies.interference_fraction};
      const config::TrainingConfig& t = c.training;
      const int64_t m = t.NumMicroBatches();
      const int64_t few = 2 * t.parallel.pipeline;
      double step_seconds = 0;
      if (extrapolate && m > 2 * few) {
        const double t1 = StepSeconds(c, t, few, options, sim_options);
        const double t2 = StepSeconds(c, t, 2 * few, options, sim_options);
        step_seconds = t1 + static_cast<double>(m - few) * (t2 - t1) / static_cast<double>(few);
      } else {
        step_seconds = StepSeconds(c, t, m, options, sim_options);
      }
      const sim::StepMetrics metrics = sim::ComputeStepMetrics(
          c.model, c.training, step_seconds, options.cluster.gpu.bf16_flops_per_second);
      it = simulated
               .emplace(key, std::pair{metrics.tokens_per_second_per_gpu,
                                       metrics.model_flops_per_second_per_gpu / 1e12})
               .first;
    }
    const double measured = *c.row.tokens_per_second_per_gpu;
    results.push_back({&c, it->second.first, it->second.second, it->second.first / measured - 1});
  }
  return results;
}

double MeanAbsoluteError(const std::vector<RowResult>& results,
                         const std::vector<std::string>& families) {
  double sum = 0;
  int64_t count = 0;
  for (const RowResult& r : results) {
    const std::string& family = r.calibration_case->source_family;
    if (!families.empty() &&
        std::find(families.begin(), families.end(), family) == families.end()) {
      continue;
    }
    sum += std::abs(r.error_fraction);
    ++count;
  }
  return count == 0 ? 0 : sum / static_cast<double>(count);
}

}  // namespace trainscope::bench
