// Renders a simulated step: throughput (step time, tokens/s/GPU, model TFLOP/s/GPU, MFU), where
// the time went (compute by op family, exposed communication by group, pipeline bubble,
// optimizer), the critical path, per-stage figures, the memory summary and the cluster it ran
// on. A readable table, or JSON with the contract keys step_time_s, tokens_per_s_per_gpu,
// model_tflops_per_gpu, mfu and breakdown (docs/cli.md). Pure: returns strings.
#ifndef TRAINSCOPE_REPORT_SIMULATE_REPORT_H_
#define TRAINSCOPE_REPORT_SIMULATE_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"
#include "trainscope/cost/memory.h"
#include "trainscope/sim/step_metrics.h"
#include "trainscope/sim/step_simulator.h"

namespace trainscope::report {

struct ClusterSummary {
  std::string gpu;
  double peak_flops_per_second = 0;  // the MFU denominator (dense BF16 peak)
  int64_t gpus_per_node = 0;
  int64_t nvlink_domain_gpus = 0;
  double scale_out_bytes_per_second = 0;
  int64_t gpu_memory_bytes = 0;
};

// The cost of BSHD padding versus THD packing under a sequence-length distribution.
struct SequenceLengthSummary {
  double mean_length = 0;
  double bshd_useful_token_fraction = 0;  // real tokens / padded tokens
  double bshd_useful_tokens_per_s_per_gpu = 0;
  double thd_step_seconds = 0;  // the step re-simulated with packed attention cost
  double thd_useful_tokens_per_s_per_gpu = 0;
};

struct SimulateReportInput {
  const config::ModelConfig& model;
  const config::TrainingConfig& training;
  const sim::StepSimulation& simulation;
  const sim::StepMetrics& metrics;
  const cost::MemoryEstimate& memory;
  ClusterSummary cluster;
  double moe_load_factor = 1;
  std::string gdn_backend;  // empty for models without Gated DeltaNet
  std::optional<SequenceLengthSummary> sequence_lengths;
};

[[nodiscard]] std::string RenderSimulateText(const SimulateReportInput& input);
[[nodiscard]] std::string RenderSimulateJson(const SimulateReportInput& input);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_SIMULATE_REPORT_H_
