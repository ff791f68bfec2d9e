#include "step_calibration_lib.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <mutex>
#include <thread>

#include "trainscope/config/validate.h"
#include "trainscope/error.h"
#include "trainscope/io/calibration_csv.h"
#include "trainscope/io/calibration_file.h"
#include "trainscope/io/cluster_file.h"
#include "trainscope/sim/op_costs.h"
#include "trainscope/sim/step_metrics.h"
#include "trainscope/sim/step_simulator.h"
#include "trainscope/study/study.h"

namespace trainscope::bench {
namespace {

// Configurations that simulate identically share one simulation: the same model, GPU, fabric
// and every training setting (TrainingConfig's equality covers them all, recipe settings and
// framework profile included).
bool SameSimulation(const CalibrationCase& a, const CalibrationCase& b) {
  return a.preset == b.preset && a.gpu == b.gpu && a.scale_out_fabric == b.scale_out_fabric &&
         a.training == b.training;
}

}  // namespace

CaseSet LoadCases(const std::string& csv_path, bool with_tflops_rows) {
  CaseSet set;
  for (const io::CalibrationRow& row : io::LoadCalibrationCsv(csv_path)) {
    if (!row.tokens_per_second_per_gpu && !(with_tflops_rows && row.flops_per_second_per_gpu)) {
      continue;
    }
    CaseOrSkip built = BuildCase(row);
    if (built.calibration_case) {
      CalibrationCase& c = *built.calibration_case;
      if (!c.row.tokens_per_second_per_gpu) {
        // Only TFLOP/s published (Megatron-LM's MoE recipes): tokens/s through Megatron's FLOPs
        // per token for this layout (num_floating_point_operations).
        const sim::StepMetrics unit = sim::ComputeStepMetrics(c.model, c.training, 1.0, 1.0);
        c.row.tokens_per_second_per_gpu =
            *c.row.flops_per_second_per_gpu * unit.tokens_per_second_per_gpu /
            (unit.model_flops_per_second_per_gpu * c.source_flops_factor);
        c.assumptions.push_back("tokens/s from TFLOP/s by Megatron's FLOPs per token");
      }
      set.cases.push_back(std::move(c));
    } else if (PresetFor(row.model)) {
      set.skipped.push_back(
          fmt::format("line {} ({}, {}): {}", row.line, row.model, row.gpu, built.skip_reason));
    }
  }
  return set;
}

namespace {

// Step seconds of the case's study with `num_micro_batches` micro-batches per rank.
double StepSeconds(study::Study study, int64_t num_micro_batches) {
  config::TrainingConfig& training = study.training;
  training.batch.global_batch_size =
      num_micro_batches * training.batch.micro_batch_size * training.parallel.Data();
  return study::RunStudy(study).simulation.step_seconds;
}

}  // namespace

study::Study StudyOf(const CalibrationCase& c, const Efficiencies& efficiencies) {
  study::Study study{.model = c.model, .training = c.training};
  std::optional<std::string> fabric;
  if (c.scale_out_fabric) fabric = config::ToString(*c.scale_out_fabric);
  study.cluster = io::ResolveCluster(io::ClusterInputs{.gpu = c.gpu, .scale_out_fabric = fabric});
  study.cluster.link = io::ApplyCalibration(
      io::CalibrationOverrides{.links = efficiencies.link_overrides}, study.cluster.link);
  study.compute = efficiencies.compute;
  study.interference_fraction = efficiencies.interference_fraction;
  return study;
}

std::vector<RowResult> Evaluate(const std::vector<CalibrationCase>& cases,
                                const Efficiencies& efficiencies, bool extrapolate) {
  // One simulation per distinct configuration, spread over the hardware threads; each result
  // depends only on its case, so the output does not depend on the thread count.
  std::vector<const CalibrationCase*> unique;
  std::vector<size_t> slot(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto same = std::find_if(unique.begin(), unique.end(), [&](const CalibrationCase* u) {
      return SameSimulation(*u, cases[i]);
    });
    slot[i] = static_cast<size_t>(same - unique.begin());
    if (same == unique.end()) unique.push_back(&cases[i]);
  }
  std::vector<std::pair<double, double>> simulated(unique.size());  // (tokens/s, TFLOP/s)
  const auto simulate = [&](const CalibrationCase& c) {
    const study::Study study = StudyOf(c, efficiencies);
    const config::TrainingConfig& t = c.training;
    const int64_t m = t.NumMicroBatches();
    const int64_t few = 2 * t.parallel.pipeline;
    double step_seconds = 0;
    if (extrapolate && m > 2 * few) {
      const double t1 = StepSeconds(study, few);
      const double t2 = StepSeconds(study, 2 * few);
      step_seconds = t1 + static_cast<double>(m - few) * (t2 - t1) / static_cast<double>(few);
    } else {
      step_seconds = StepSeconds(study, m);
    }
    const sim::StepMetrics metrics = sim::ComputeStepMetrics(
        c.model, c.training, step_seconds, study.cluster.gpu.bf16_flops_per_second);
    return std::pair{metrics.tokens_per_second_per_gpu,
                     metrics.model_flops_per_second_per_gpu / 1e12};
  };
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  const auto worker = [&] {
    for (size_t k = next++; k < unique.size(); k = next++) {
      try {
        simulated[k] = simulate(*unique[k]);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  const size_t num_threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1,
                                                std::max<size_t>(unique.size(), 1));
  std::vector<std::thread> threads;
  for (size_t i = 1; i < num_threads; ++i) threads.emplace_back(worker);
  worker();
  for (std::thread& thread : threads) thread.join();
  if (failure) std::rethrow_exception(failure);
  std::vector<RowResult> results;
  results.reserve(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& [tokens, tflops] = simulated[slot[i]];
    const double measured = *cases[i].row.tokens_per_second_per_gpu;
    results.push_back({&cases[i], tokens, tflops, tokens / measured - 1});
  }
  return results;
}

std::string DispatcherOf(const CalibrationCase& c) {
  if (!c.model.HasMoe()) return "dense";
  return config::ToString(c.training.moe.dispatcher);
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
