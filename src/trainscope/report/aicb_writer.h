// AICB's native workload CSV (aicb generate_megatron_workload.py): one row per collective and
// point-to-point transfer of one rank's training step, in the step graph's issue order, with
// AICB's CommType / CommGroup spellings and stage strings. Sizes follow the whole-buffer
// convention; Megatron-Core's collectives are written as is, not AICB's recipe (docs/workload.md).
// Pure: returns the text and diagnostics.
#ifndef TRAINSCOPE_REPORT_AICB_WRITER_H_
#define TRAINSCOPE_REPORT_AICB_WRITER_H_

#include <cstdint>

#include "trainscope/config/training_config.h"
#include "trainscope/graph/step_graph.h"
#include "trainscope/report/simai_writer.h"

namespace trainscope::report {

// Formats the communication ops of `graph` as AICB CSV rows; `diagnostics` receives one line per
// group AICB has no CommGroup for. `tensor_parallel` (t) identifies tp×cp groups that are TP.
[[nodiscard]] ExportResult FormatAicbCsv(const graph::StepGraph& graph, int64_t tensor_parallel);

// The AICB CSV of the rank whose step graph is `graph` (graph::BuildStepGraph under
// `training`). Precondition: config::Validate() accepted the configuration.
[[nodiscard]] ExportResult RenderAicbCsv(const graph::StepGraph& graph,
                                         const config::TrainingConfig& training);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_AICB_WRITER_H_
