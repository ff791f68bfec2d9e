// Renders the result of config::Validate(): for an invalid configuration the list of violated
// rules with their fixes, for a valid one a one-screen summary of the resolved parallel layout
// (sizes, batch, sequence layout, layers per pipeline rank and virtual chunk, expert placement).
// Pure functions; the returned strings are owned by the caller and nothing is printed.
#ifndef TRAINSCOPE_REPORT_VALIDATE_REPORT_H_
#define TRAINSCOPE_REPORT_VALIDATE_REPORT_H_

#include <string>

#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"
#include "trainscope/config/validate.h"

namespace trainscope::report {

// Text report. Invalid: "configuration is invalid: N problem(s)", one "  [rule] message" line
// plus an indented "fix:" line per error, then the warnings. Valid: "configuration is valid"
// followed by the summary and the warnings. `result` must be Validate(model, training). Ends with
// a newline. Throws InputError only if a configuration reported valid cannot be laid out.
[[nodiscard]] std::string RenderValidationText(const config::ModelConfig& model,
                                               const config::TrainingConfig& training,
                                               const config::ValidationResult& result);

// JSON report: {"valid", "errors": [{"rule", "flags", "message", "fix"}], "warnings": [...]} and,
// when valid, "layout" with the sizes, batch, sequence layout, per-stage chunks and experts per
// EP rank (0 for a dense model). Keys in a fixed order, two-space indent, trailing newline.
// Same preconditions and exceptions as RenderValidationText.
[[nodiscard]] std::string RenderValidationJson(const config::ModelConfig& model,
                                               const config::TrainingConfig& training,
                                               const config::ValidationResult& result);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_VALIDATE_REPORT_H_
