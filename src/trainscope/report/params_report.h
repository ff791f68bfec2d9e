// Renders parameter counts (graph/param_count) as a readable table or as one JSON object with
// the contract keys total, text_total, non_embedding, embedding, lm_head, active, mtp, vision,
// and per_rank entries when a parallel layout is given. Pure: returns strings.
#ifndef TRAINSCOPE_REPORT_PARAMS_REPORT_H_
#define TRAINSCOPE_REPORT_PARAMS_REPORT_H_

#include <optional>
#include <string>
#include <vector>

#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"
#include "trainscope/graph/param_count.h"

namespace trainscope::report {

struct ParamsReportInput {
  const config::ModelConfig& model;
  const graph::ParamCounts& counts;
  // Per-stage counts and the configuration they belong to; empty without parallel flags.
  const std::vector<graph::StageParams>& stages;
  const config::TrainingConfig& training;
};

[[nodiscard]] std::string RenderParamsText(const ParamsReportInput& input);
[[nodiscard]] std::string RenderParamsJson(const ParamsReportInput& input);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_PARAMS_REPORT_H_
