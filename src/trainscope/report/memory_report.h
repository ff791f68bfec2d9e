// Renders the per-rank memory estimate (cost/memory) beside Megatron's theoretical formula
// (cost/megatron_memory) against a GPU's memory: a readable table or JSON with the contract keys
// weights_bytes, grads_bytes, optimizer_bytes, activations_bytes, buffers_bytes, peak_bytes,
// max_peak_bytes, gpu_memory_bytes, fits. Pure: returns strings.
#ifndef TRAINSCOPE_REPORT_MEMORY_REPORT_H_
#define TRAINSCOPE_REPORT_MEMORY_REPORT_H_

#include <string>

#include "trainscope/config/hardware.h"
#include "trainscope/config/model_config.h"
#include "trainscope/cost/megatron_memory.h"
#include "trainscope/cost/memory.h"

namespace trainscope::report {

struct MemoryReportInput {
  const config::ModelConfig& model;
  const cost::MemoryEstimate& estimate;
  const cost::MegatronMemoryEstimate& megatron;
  const config::GpuSpec& gpu;
};

// True when the busiest rank's peak fits in the GPU's usable memory.
[[nodiscard]] bool Fits(const MemoryReportInput& input);

[[nodiscard]] std::string RenderMemoryText(const MemoryReportInput& input);
[[nodiscard]] std::string RenderMemoryJson(const MemoryReportInput& input);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_MEMORY_REPORT_H_
