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
#include "trainscope/report/simai_rows.h"

namespace trainscope::report {

// A rendered workload file and what it could not express.
struct ExportResult {
  std::string text;
  std::vector<std::string> diagnostics;
};

// Formats rows already built: integer nanoseconds (rounded) and bytes, Workload.cc key order.
[[nodiscard]] std::string FormatSimAiWorkload(const SimAiWorkload& workload);

// The SimAI workload of global rank `rank` (its pipeline stage only). Compute times come from a
// simple roofline over `roofline` (H100 by default) until trainscope's cost model provides them.
// Precondition: config::Validate() accepted the configuration and 0 <= rank < world size.
[[nodiscard]] ExportResult RenderSimAiWorkload(const config::ModelConfig& model,
                                               const config::TrainingConfig& training, int64_t rank,
                                               const RooflineSpec& roofline = RooflineSpec{});

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_SIMAI_WRITER_H_
