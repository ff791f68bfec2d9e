// Turning a published training run (one row of data/calibration/calibration_runs.csv) into the
// trainscope model, training configuration and GPU it describes, with every assumption the row
// forces recorded. Shared by the calibration benches (step time and memory); not part of the
// library because the assumptions are about how those publications ran, not about Megatron.
#ifndef TRAINSCOPE_BENCH_CALIBRATION_ROWS_H_
#define TRAINSCOPE_BENCH_CALIBRATION_ROWS_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/config/cluster.h"
#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"
#include "trainscope/io/calibration_csv.h"

namespace trainscope::bench {

struct CalibrationCase {
  io::CalibrationRow row;
  std::string preset;  // built-in model name
  std::string gpu;     // GPU preset name
  config::ModelConfig model;
  config::TrainingConfig training;
  std::vector<std::string> assumptions;  // what was assumed for this row
  std::string source_family;             // "megatron-bridge", "nemo", "torchtitan", ...
  // The source's FLOPs per token over Megatron's (num_floating_point_operations, no recompute):
  // 4/3 for Narayanan et al. 2021, whose formula counts the recomputed forward pass. Used only to
  // turn a TFLOP/s-only row into tokens/s.
  double source_flops_factor = 1.0;
  // The scale-out fabric the row names ("RoCE", "EFA" in the notes); nothing = the GPU's default.
  std::optional<config::ScaleOutFabric> scale_out_fabric;
};

// The case a row describes, or the reason it cannot be expressed (no preset for the model or
// GPU, FP4, missing layout columns, a layout Megatron would reject).
struct CaseOrSkip {
  std::optional<CalibrationCase> calibration_case;
  std::string skip_reason;
};

[[nodiscard]] CaseOrSkip BuildCase(const io::CalibrationRow& row);

// The layout, batch, recompute and data-parallel scheme a row states, shared by both benches:
// everything but precision and overlap settings. Appends what it assumed to `assumptions`.
// Rows without a global batch size (and no "LBS<n>" note) get b·d.
[[nodiscard]] config::TrainingConfig BaseTraining(const config::ModelConfig& model,
                                                  const io::CalibrationRow& row,
                                                  std::vector<std::string>& assumptions);

[[nodiscard]] std::string Lower(std::string_view text);

// NVIDIA-NeMo/Automodel's AutoPipeline split of `num_layers` decoder layers over `num_stages`
// stages (nemo_automodel/components/distributed/pipelining/functional.py
// generate_hf_model_fqn_per_model_part at 8d9bfb90e): num_layers / num_stages layers each, one
// more on each of the first num_layers % num_stages stages, the embedding with stage 0 and the
// final norm, LM head and loss with the last. As a --pipeline-model-parallel-layout string; its
// interleaved schedule puts stage s on PP rank s % p, as Megatron's layout does.
[[nodiscard]] std::string AutomodelPipelineLayout(int64_t num_layers, int64_t num_stages);

// Which figure a row's peak_mem_gib is: max allocated (torch.cuda.max_memory_allocated,
// Megatron's report_memory), max reserved (torch.cuda.max_memory_reserved, torchtitan's
// `memory:`) or device memory (nvidia-smi).
enum class MemoryFigure { kAllocated, kReserved, kNvidiaSmi };

// The figure of a row, from its notes first ("peak 59.0 GiB allocated / 69.3 GiB reserved":
// the first number, allocated; "nvidia-smi" or "observed GPU memory": device memory;
// "reserved" alone: reserved), then from its source (torchtitan logs max reserved, Megatron's
// report_memory max allocated).
[[nodiscard]] MemoryFigure MemoryFigureOf(const io::CalibrationRow& row);
[[nodiscard]] std::string_view ToString(MemoryFigure figure);

// The preset for a published model name ("Llama3.1-405B (SFT)" -> "Llama-3.1-405B"), or nothing.
[[nodiscard]] std::optional<std::string> PresetFor(const std::string& csv_model);
// The GPU preset for the gpu column ("H100 (96GB HBM2e ...)" -> "H100-96GB"), or nothing.
[[nodiscard]] std::optional<std::string> GpuPresetFor(const std::string& csv_gpu);

}  // namespace trainscope::bench

#endif  // TRAINSCOPE_BENCH_CALIBRATION_ROWS_H_
