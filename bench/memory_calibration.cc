// trainscope_memory_calibration: compares trainscope's per-rank peak memory estimate
// (study::EstimateStudyMemory, as `memory` runs it) and Megatron's theoretical formula
// (cost::MegatronTheoreticalMemory) with the measured peaks of
// data/calibration/calibration_runs.csv. Prints one line per comparable row and the mean absolute
// errors; asserts nothing. Assumptions: docs/memory.md, "Calibration".
//
// Usage: trainscope_memory_calibration [CSV]   (default: the project's calibration_runs.csv)
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "calibration_rows.h"
#include "trainscope/config/cluster.h"
#include "trainscope/config/hardware.h"
#include "trainscope/config/validate.h"
#include "trainscope/cost/megatron_memory.h"
#include "trainscope/cost/memory.h"
#include "trainscope/error.h"
#include "trainscope/io/calibration_csv.h"
#include "trainscope/io/hf_config_loader.h"
#include "trainscope/io/presets.h"
#include "trainscope/study/study.h"
#include "trainscope/units.h"

namespace trainscope {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitInputError = 1;
constexpr int kExitUsageError = 2;

struct Assumed {
  config::TrainingConfig training;
  std::vector<std::string> notes;  // what was assumed for this row
};

bool IsTorchtitan(const io::CalibrationRow& row) {
  return row.source.find("torchtitan") != std::string::npos;
}

// Precision as the row's framework runs it (the gradient-reduction dtype is set with the layout,
// bench/calibration_rows.cc BaseTraining). Megatron-Bridge's FP8-CS is
// `bf16_with_fp8_current_scaling_mixed` (training/mixed_precision.py): fp8 hybrid, tensorwise
// recipe, fp8_param_gather. torchao float8 (torchtitan) casts to FP8 inside the matmul and saves
// the bf16 inputs for backward, so it is costed as bf16.
void SetPrecision(const io::CalibrationRow& row, Assumed& assumed) {
  config::PrecisionConfig& precision = assumed.training.precision;
  const bool bridge = row.source.find("Megatron-Bridge") != std::string::npos;
  const std::string label = bench::Lower(row.precision);
  if (label.find("fp8") == std::string::npos) return;
  if (bridge && label.find("fp8-cs") != std::string::npos) {
    precision.fp8 = config::Fp8Format::kHybrid;
    precision.fp8_recipe = config::Fp8Recipe::kTensorwise;
    precision.fp8_param_gather = true;
    assumed.notes.push_back("FP8-CS: tensorwise, fp8 param gather");
  } else {
    assumed.notes.push_back("torchao float8 as bf16");
  }
}

// The row's layout (bench/calibration_rows.h, shared with the step-time bench) with the
// precision its framework runs.
Assumed BuildTraining(const config::ModelConfig& model, const io::CalibrationRow& row) {
  Assumed assumed;
  assumed.training = bench::BaseTraining(model, row, assumed.notes);
  SetPrecision(row, assumed);
  return assumed;
}

// The row's GPU (its compute capability selects the CUDA-context and cuBLAS-workspace
// defaults); Hopper when the gpu column names no preset.
config::ClusterSpec ClusterOf(const io::CalibrationRow& row) {
  config::ClusterSpec cluster;
  const std::optional<std::string> preset = bench::GpuPresetFor(row.gpu);
  const std::optional<config::GpuSpec> gpu = config::FindGpu(preset.value_or("H100"));
  if (gpu) cluster.gpu = *gpu;
  return cluster;
}

std::string Layout(const config::TrainingConfig& t) {
  std::string layout =
      fmt::format("W{} TP{} PP{}", t.parallel.world_size, t.parallel.tensor, t.parallel.pipeline);
  if (t.parallel.virtual_stages > 1) layout += fmt::format(" VP{}", t.parallel.virtual_stages);
  if (t.parallel.context > 1) layout += fmt::format(" CP{}", t.parallel.context);
  if (t.parallel.expert > 1) layout += fmt::format(" EP{}", t.parallel.expert);
  return layout + fmt::format(" mbs{} s{}", t.batch.micro_batch_size, t.batch.seq_length);
}

using bench::MemoryFigure;

// The highest figure over the pipeline stages.
int64_t ComparedBytes(const cost::MemoryEstimate& estimate, MemoryFigure figure) {
  int64_t bytes = 0;
  for (const cost::RankMemory& rank : estimate.stages) {
    switch (figure) {
      case MemoryFigure::kAllocated:
        bytes = std::max(bytes, rank.allocated_bytes);
        break;
      case MemoryFigure::kReserved:
        bytes = std::max(bytes, rank.reserved_bytes);
        break;
      case MemoryFigure::kNvidiaSmi:
        bytes = std::max(bytes, rank.peak_bytes);
        break;
    }
  }
  return bytes;
}

double Gib(double bytes) { return bytes / static_cast<double>(kBytesPerGiB); }
double ErrorPercent(double predicted, double measured) {
  return 100 * (predicted - measured) / measured;
}

struct ErrorSums {
  double ours_percent = 0;
  double megatron_percent = 0;
  int64_t count = 0;
};

void Accumulate(double ours_error_percent, double megatron_error_percent, ErrorSums& sums) {
  sums.ours_percent += std::abs(ours_error_percent);
  sums.megatron_percent += std::abs(megatron_error_percent);
  ++sums.count;
}

void PrintMean(std::string_view label, const ErrorSums& sums) {
  if (sums.count == 0) return;
  const double n = static_cast<double>(sums.count);
  std::cout << fmt::format("{:<34} {:>3} rows   ours {:6.1f}%   Megatron formula {:6.1f}%\n", label,
                           sums.count, sums.ours_percent / n, sums.megatron_percent / n);
}

int Run(const std::string& csv_path) {
  const std::vector<io::CalibrationRow> rows = io::LoadCalibrationCsv(csv_path);
  std::vector<std::string> skipped;
  ErrorSums all;
  ErrorSums megatron_runs;
  std::cout << fmt::format("{:<5} {:<15} {:<34} {:>8} {:>8} {:>7} {:>8} {:>7}  {}\n", "line",
                           "model", "layout", "measured", "ours", "err%", "Megatron", "err%",
                           "source / assumptions");
  std::cout << "(GiB; each row is compared with the same figure it reports: allocated = "
               "torch.cuda.max_memory_allocated, reserved = torch.cuda.max_memory_reserved, "
               "nvidia-smi = device memory; the figure comes from the row's notes, else its "
               "framework: torchtitan reserved, Megatron allocated)\n";
  for (const io::CalibrationRow& row : rows) {
    if (!row.peak_memory_bytes) continue;
    const std::optional<std::string> preset = bench::PresetFor(row.model);
    if (!preset || !row.num_gpus || !row.seq_len) {
      skipped.push_back(fmt::format("line {} {}", row.line, row.model));
      continue;
    }
    const config::ModelConfig model = io::LoadPreset(*preset);
    const Assumed assumed = BuildTraining(model, row);
    const config::ValidationResult validation = config::Validate(model, assumed.training);
    if (!validation.ok()) {
      skipped.push_back(fmt::format("line {} {} (invalid: {} {})", row.line, row.model,
                                    validation.errors.front().rule,
                                    validation.errors.front().message));
      continue;
    }
    const double measured = *row.peak_memory_bytes;
    const bool torchtitan = IsTorchtitan(row);
    const MemoryFigure figure = bench::MemoryFigureOf(row);
    const double ours = static_cast<double>(
        ComparedBytes(study::EstimateStudyMemory(study::Study{
                          .model = model, .training = assumed.training, .cluster = ClusterOf(row)}),
                      figure));
    const double megatron =
        static_cast<double>(cost::MegatronTheoreticalMemory(model, assumed.training).total_bytes);
    const double ours_error = ErrorPercent(ours, measured);
    const double megatron_error = ErrorPercent(megatron, measured);
    std::string remarks =
        fmt::format("{}, {}", torchtitan ? "torchtitan" : "megatron", bench::ToString(figure));
    for (const std::string& note : assumed.notes) remarks += "; " + note;
    std::cout << fmt::format(
        "{:<5} {:<15} {:<34} {:>8.1f} {:>8.1f} {:>+7.1f} {:>8.1f} {:>+7.1f}  {}\n", row.line,
        *preset, Layout(assumed.training), Gib(measured), Gib(ours), ours_error, Gib(megatron),
        megatron_error, remarks);
    Accumulate(ours_error, megatron_error, all);
    if (!torchtitan) Accumulate(ours_error, megatron_error, megatron_runs);
  }
  std::cout << "\nMean absolute error (|predicted - measured| / measured):\n";
  PrintMean("all compared rows", all);
  PrintMean("Megatron(-Bridge) rows only", megatron_runs);
  std::cout << fmt::format(
      "\n{} rows have a peak memory figure: {} compared, {} skipped (no trainscope preset, "
      "missing size or invalid layout):\n",
      all.count + static_cast<int64_t>(skipped.size()), all.count, skipped.size());
  for (const std::string& line : skipped) std::cout << "  " << line << "\n";
  return kExitOk;
}

}  // namespace
}  // namespace trainscope

int main(int argc, char** argv) {
  if (argc > 2) {
    std::cerr << "error: expected at most one argument (got " << argc - 1 << ")\n\n"
              << "usage: trainscope_memory_calibration [CALIBRATION_CSV]\n";
    return trainscope::kExitUsageError;
  }
  try {
    return trainscope::Run(argc == 2 ? argv[1] : TRAINSCOPE_CALIBRATION_CSV);
  } catch (const trainscope::InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return trainscope::kExitInputError;
  }
}
