// Renders the planner's result (plan/planner.h): the text table of the top K with the Pareto
// front, rejection counts and search time; the JSON contract of `trainscope plan --json`; the
// CSV of every enumerated layout; the --explain section (why one candidate beats the next, term
// by term) and the --compare section (where the user's layout ranks and what switching gains).
// Pure: strings out; the caller owns the inputs, which must outlive the call.
#ifndef TRAINSCOPE_REPORT_PLAN_REPORT_H_
#define TRAINSCOPE_REPORT_PLAN_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/plan/planner.h"
#include "trainscope/study/study.h"

namespace trainscope::report {

// The user's current layout (--compare), simulated with the plan's study inputs, or why not.
struct ComparedLayout {
  std::string flags;                         // the layout's canonical flags
  std::optional<plan::Candidate> candidate;  // unset when the layout is invalid
  std::string invalid_reason;                // "[C4] ..." when invalid
  int64_t rank = 0;                          // its place among the simulated layouts
};

struct PlanReportInput {
  const study::Study& base;  // model, cluster, world size and batch of the search
  const plan::PlanResult& result;
  plan::Objective objective = plan::Objective::kThroughput;
  int64_t top_k = 10;
  double search_seconds = 0;  // measured by the caller
  std::optional<int64_t> explain_rank;
  std::optional<ComparedLayout> compare;
};

// The largest terms of a breakdown, largest first (ties by name): "compute:moe", "comm:ep",
// "bubble", ...
struct Term {
  std::string name;
  double seconds = 0;
};
[[nodiscard]] std::vector<Term> LargestTerms(const sim::Breakdown& breakdown, size_t count);

[[nodiscard]] std::string RenderPlanText(const PlanReportInput& input);

// {"candidates":[{"rank","flags","tokens_per_s_per_gpu","step_time_s","mfu","peak_bytes",
// "fits","breakdown"}...],"pareto":[...],"rejected":{...},"evaluated":n,"search_seconds":x},
// plus "explain" and "compare" when requested.
[[nodiscard]] std::string RenderPlanJson(const PlanReportInput& input);

// One row per enumerated layout: flags, status, and the simulated figures where simulated.
[[nodiscard]] std::string RenderPlanCsv(const plan::PlanResult& result);

// Why candidate `rank` beats `rank + 1`. Precondition: both exist in result.ranking.
[[nodiscard]] std::string RenderExplainText(const plan::PlanResult& result, int64_t rank);

// Where the compared layout ranks and what switching to #1 gains, term by term.
[[nodiscard]] std::string RenderCompareText(const plan::PlanResult& result,
                                            const ComparedLayout& compare);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_PLAN_REPORT_H_
