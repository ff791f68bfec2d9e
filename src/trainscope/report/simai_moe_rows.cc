// The SimAI rows of a MoE layer (docs/workload.md): router, dispatch, ETP
// gather, experts and combine, each forward collective mirrored by its backward in the ig column.
// Op names are those of graph/moe_ops.cc.
#include <optional>
#include <string>
#include <vector>

#include "trainscope/report/simai_blocks.h"

namespace trainscope::report {
namespace {

using config::GroupKind;
using graph::Op;

constexpr SimAiColumnKind kFpIg = SimAiColumnKind::kForwardOrInputGrad;

// A collective op called `name` (in `group`, when given) that a row mirrors in backward.
struct CommName {
  std::string name;
  std::optional<GroupKind> group;
};

// The row `row_name` whose fp column holds the first candidate present in `forward` and whose ig
// column holds that op's backward mirror, `<name>.grad` (layer_ops.cc naming).
SimAiRow MirroredRow(const std::string& row_name, const std::vector<CommName>& candidates,
                     OpPool& forward, OpPool& backward, const BlockContext& context) {
  SimAiRow row{.name = row_name};
  for (const CommName& candidate : candidates) {
    const Op* op = forward.TakeComm(candidate.name, candidate.group);
    if (op == nullptr) continue;
    SetComm(row.fp, op, kFpIg, context);
    SetComm(row.ig, backward.TakeComm(candidate.name + ".grad", candidate.group), kFpIg, context);
    break;
  }
  return row;
}

}  // namespace

void AppendMoeRows(OpPool& forward, OpPool& backward, const BlockContext& context,
                   std::vector<SimAiRow>& rows) {
  SimAiRow router{.name = "moe_router"};
  router.fp.compute_seconds = forward.TakeCompute("moe.input_norm") +
                              forward.TakeCompute("moe.router") +
                              forward.TakeCompute("moe.router.topk");
  SetComm(router.fp, forward.TakeComm("moe.dispatch.metadata_ag"), kFpIg, context);
  router.wg.compute_seconds =
      backward.TakeCompute("moe.router.topk.backward") + backward.TakeCompute("moe.router.dgrad") +
      backward.TakeCompute("moe.router.wgrad") + backward.TakeCompute("moe.input_norm.backward");
  rows.push_back(router);
  SimAiRow dispatch = MirroredRow("moe_dispatch",
                                  {{"moe.dispatch.a2a_tokens", GroupKind::kEp},
                                   {"moe.dispatch.ag_tokens", GroupKind::kTpEp},
                                   {"moe.dispatch.flex", GroupKind::kTpEp}},
                                  forward, backward, context);
  dispatch.fp.compute_seconds = forward.TakeCompute("moe.permute");
  dispatch.wg.compute_seconds = backward.TakeCompute("moe.permute.backward");
  rows.push_back(dispatch);
  if (forward.HasComm("moe.dispatch.ag_tokens", GroupKind::kEtp)) {
    rows.push_back(MirroredRow("moe_etp_gather", {{"moe.dispatch.ag_tokens", GroupKind::kEtp}},
                               forward, backward, context));
  }
  // The unpermute's backward precedes the combine-gradient all-to-all (alltoall, flex).
  const double unpermute_seconds = forward.TakeCompute("moe.unpermute");
  const double unpermute_backward_seconds = backward.TakeCompute("moe.unpermute.backward");
  SimAiRow experts = MirroredRow("moe_experts", {{"moe.combine.rs_output", GroupKind::kEtp}},
                                 forward, backward, context);
  experts.fp.compute_seconds = forward.TakeAllCompute();  // sort, fc1, activation, fc2, unsort
  experts.wg.compute_seconds = backward.TakeAllCompute();
  rows.push_back(experts);
  SimAiRow combine = MirroredRow("moe_combine",
                                 {{"moe.combine.a2a_tokens", GroupKind::kEp},
                                  {"moe.combine.rs_output", GroupKind::kTpEp},
                                  {"moe.combine.flex", GroupKind::kTpEp}},
                                 forward, backward, context);
  combine.fp.compute_seconds = unpermute_seconds;
  combine.ig.compute_seconds = unpermute_backward_seconds;
  rows.push_back(combine);
}

}  // namespace trainscope::report
