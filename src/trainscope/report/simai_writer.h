// The SimAI workload text (parsed by SimAI's Workload.cc): the header line, the row count and
// one TAB-separated row of 12 integer fields per SimAiRow, with the data-parallel rows first and
// the micro-batch rows unrolled `ga` times. Pure: returns the text and the diagnostics; the
// caller writes the file and prints the diagnostics.
#ifndef TRAINSCOPE_REPORT_SIMAI_WRITER_H_
#define TRAINSCOPE_REPORT_SIMAI_WRITER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"
#include "trainscope/graph/step_graph.h"
#include "trainscope/report/simai_rows.h"

namespace trainscope::report {

// A rendered workload file and what it could not express.
struct ExportResult {
  std::string text;
  std::vector<std::string> diagnostics;
};

// Formats rows already built: integer nanoseconds (rounded) and bytes, Workload.cc key order.
[[nodiscard]] std::string FormatSimAiWorkload(const SimAiWorkload& workload);

// The SimAI workload of the rank whose step graph is `graph` (graph::BuildStepGraph of `model`
// and `training`; its pipeline stage only). Compute times come from `compute_seconds`, the
// simulator's cost model for the chosen GPU, cluster and calibration
// (sim::BindHardwareCosts(...).compute_seconds). Precondition: config::Validate() accepted the
// configuration.
[[nodiscard]] ExportResult RenderSimAiWorkload(const config::ModelConfig& model,
                                               const config::TrainingConfig& training,
                                               const graph::StepGraph& graph,
                                               const ComputeTime& compute_seconds);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_SIMAI_WRITER_H_
