// trainscope_fit_calibration: fits the hardware-efficiency defaults of the step-time model to the
// published runs of data/calibration/calibration_runs.csv (hardware parameters
// only, never per model or per row). Coordinate descent on a multiplicative grid minimises the
// mean absolute percentage error of tokens/s/GPU over the fit sources (Megatron-Bridge and NeMo
// performance summaries, forced-balance, Megatron-Core schedules); the other sources
// (torchtitan, Automodel: different frameworks) are held out and reported. Writes the fitted
// values as a calibration file (io/calibration_file.h) to the path given, default stdout.
//
// Usage: trainscope_fit_calibration [OUTPUT_JSON]   (scripts/fit_calibration runs it)
#include <fmt/format.h>

#include <array>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "step_calibration_lib.h"
#include "trainscope/io/atomic_write.h"

namespace trainscope {
namespace {

// Bounds: efficiencies are fractions of a peak; flash attention stays within 0.3-0.8 of the
// BF16 peak (the best published kernel, FlashAttention-3 forward, reaches about 0.75 on H100).
struct Parameter {
  const char* name;
  std::function<double&(bench::Efficiencies&)> field;
  double low;
  double high;
};

std::vector<Parameter> Parameters() {
  using E = bench::Efficiencies;
  return {
      {"bf16_gemm_efficiency", [](E& e) -> double& { return e.compute.bf16_gemm_efficiency; }, 0.3,
       1.0},
      {"fp8_gemm_efficiency", [](E& e) -> double& { return e.compute.fp8_gemm_efficiency; }, 0.2,
       1.0},
      {"attention_forward_efficiency",
       [](E& e) -> double& { return e.compute.attention_forward_efficiency; }, 0.3, 0.8},
      {"attention_backward_efficiency",
       [](E& e) -> double& { return e.compute.attention_backward_efficiency; }, 0.3, 0.8},
      {"memory_efficiency", [](E& e) -> double& { return e.compute.memory_efficiency; }, 0.3, 1.0},
      // Per GPU type, relative to H100 (the reference the fractions above describe).
      {"gpu_throughput_scale.B200",
       [](E& e) -> double& { return e.compute.gpu_throughput_scale.at("B200"); }, 0.5, 2.0},
      {"gpu_throughput_scale.GB200",
       [](E& e) -> double& { return e.compute.gpu_throughput_scale.at("GB200"); }, 0.5, 2.0},
      {"gpu_throughput_scale.GB300",
       [](E& e) -> double& { return e.compute.gpu_throughput_scale.at("GB300"); }, 0.5, 2.0},
  };
}

int Run(int argc, char** argv) {
  const bench::CaseSet set = bench::LoadCases(TRAINSCOPE_CALIBRATION_CSV);
  std::vector<bench::CalibrationCase> fit_cases;
  for (const bench::CalibrationCase& c : set.cases) {
    if (c.source_family == "megatron-bridge" || c.source_family == "nemo") fit_cases.push_back(c);
  }
  bench::Efficiencies best;
  best.compute.gpu_throughput_scale = {{"B200", 1.0}, {"GB200", 1.0}, {"GB300", 1.0}};
  auto objective = [&](const bench::Efficiencies& e) {
    return bench::MeanAbsoluteError(bench::Evaluate(fit_cases, e, /*extrapolate=*/true));
  };
  double best_error = objective(best);
  std::cerr << fmt::format("start: MAPE {:.2f}% over {} fit rows\n", 100 * best_error,
                           fit_cases.size());
  const std::vector<Parameter> parameters = Parameters();
  for (const double step : {1.16, 1.08, 1.04, 1.02}) {
    bool improved = true;
    while (improved) {
      improved = false;
      for (const Parameter& p : parameters) {
        for (const double factor : {step, 1 / step}) {
          bench::Efficiencies trial = best;
          double& value = p.field(trial);
          value = std::clamp(value * factor, p.low, p.high);
          if (value == p.field(best)) continue;
          const double error = objective(trial);
          if (error < best_error - 1e-4) {  // at least 0.01 percentage points
            best = trial;
            best_error = error;
            improved = true;
            std::cerr << fmt::format("  {} = {:.4f}: MAPE {:.2f}%\n", p.name, value,
                                     100 * best_error);
          }
        }
      }
    }
  }
  const std::vector<bench::RowResult> all = bench::Evaluate(set.cases, best, true);
  std::cerr << fmt::format("fit rows MAPE {:.2f}%; held-out (torchtitan, automodel) {:.2f}%\n",
                           100 * best_error,
                           100 * bench::MeanAbsoluteError(all, {"torchtitan", "automodel"}));
  std::string json = "{\n";
  for (const Parameter& p : parameters) {
    if (std::string_view(p.name).starts_with("gpu_throughput_scale.")) continue;
    json += fmt::format("  \"{}\": {:.4f},\n", p.name, p.field(best));
  }
  json += "  \"gpu_throughput_scale\": {";
  std::string separator;
  for (const auto& [gpu, scale] : best.compute.gpu_throughput_scale) {
    json += fmt::format("{}\"{}\": {:.4f}", separator, gpu, scale);
    separator = ", ";
  }
  json += "}\n}\n";
  if (argc > 1) {
    io::WriteFileAtomically(argv[1], json);
  } else {
    std::cout << json;
  }
  return 0;
}

}  // namespace
}  // namespace trainscope

int main(int argc, char** argv) {
  try {
    return trainscope::Run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
