// The `trainscope report` page: one self-contained HTML file (inline CSS, JavaScript and SVG; no
// network access) showing a simulated step: the layout, the step-time breakdown per stage, the
// pipeline timeline (zoomable), memory per stage against the GPU's capacity, communication
// volume per group and collective, and the validation verdict. The page embeds the `simulate
// --json` output verbatim (<script id="simulate-json">) and the report's own data (timeline
// segments, memory, traffic, verdict; <script id="report-json">) and renders from them. Pure:
// returns the bytes.
#ifndef TRAINSCOPE_REPORT_HTML_REPORT_H_
#define TRAINSCOPE_REPORT_HTML_REPORT_H_

#include <string>

#include "trainscope/config/validate.h"
#include "trainscope/study/study.h"

namespace trainscope::report {

// The report's own data as JSON text: "timeline" (per stage, merged compute segments by kind
// forward / backward / recompute / optimizer and merged communication intervals, seconds),
// "memory" (per stage categories and the GPU's bytes), "comm" (bytes and counts per group and
// collective over the simulated graphs) and "validation" (ok, errors, warnings).
// Precondition: `result` is study::RunStudy(study).
[[nodiscard]] std::string RenderHtmlReportData(const study::Study& study,
                                               const study::StudyResult& result,
                                               const config::ValidationResult& validation);

// The whole HTML page. Precondition: as above.
[[nodiscard]] std::string RenderHtmlReport(const study::Study& study,
                                           const study::StudyResult& result,
                                           const config::ValidationResult& validation);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_HTML_REPORT_H_
