// The SimAI rows of a MoE layer (docs/workload.md): router, aux loss, dispatch and its
// routing probabilities, ETP gather (tokens and probabilities), experts and combine, each forward
// collective mirrored by its backward in the ig column. Ops are selected by the roles
// graph/moe_ops.cc sets.
#include <optional>
#include <string>
#include <vector>

#include "trainscope/report/simai_blocks.h"

namespace trainscope::report {
namespace {

using config::GroupKind;
using graph::CommPurpose;
using graph::Op;
using graph::OpBlock;
using graph::OpKind;
using graph::OpPass;

constexpr SimAiColumnKind kFpIg = SimAiColumnKind::kForwardOrInputGrad;

// A collective with `purpose` in `group` that a row mirrors in backward.
OpQuery Exchange(CommPurpose purpose, GroupKind group) {
  return OpQuery{.purpose = purpose, .group = group};
}

// The row `row_name` whose fp column holds the first candidate present in `forward` and whose ig
// column holds that op's backward mirror: the backward op of the same purpose and group.
SimAiRow MirroredRow(const std::string& row_name, const std::vector<OpQuery>& candidates,
                     OpPool& forward, OpPool& backward, const BlockContext& context) {
  SimAiRow row{.name = row_name};
  for (const OpQuery& candidate : candidates) {
    const Op* op = forward.TakeComm(candidate);
    if (op == nullptr) continue;
    SetComm(row.fp, op, kFpIg, context);
    SetComm(row.ig, backward.TakeComm(candidate), kFpIg, context);
    break;
  }
  return row;
}

// One row `row_name` per forward routing-probability collective (probs, routing map) over
// `group`, its ig column holding the backward mirror: the backward op of the same purpose, group
// and size (the routing map has none).
void AppendProbsRows(const std::string& row_name, GroupKind group, OpPool& forward,
                     OpPool& backward, const BlockContext& context, std::vector<SimAiRow>& rows) {
  const OpQuery query = Exchange(CommPurpose::kEpDispatchProbs, group);
  while (const Op* op = forward.TakeComm(query)) {
    SimAiRow row{.name = row_name};
    SetComm(row.fp, op, kFpIg, context);
    OpQuery mirror = query;
    mirror.message_bytes = op->message_bytes;
    SetComm(row.ig, backward.TakeComm(mirror), kFpIg, context);
    rows.push_back(row);
  }
}

OpQuery RouterGemm(OpPass pass) {
  return OpQuery{.kind = OpKind::kGemm, .block = OpBlock::kMoeRouter, .pass = pass};
}

}  // namespace

void AppendMoeRows(OpPool& forward, OpPool& backward, const BlockContext& context,
                   std::vector<SimAiRow>& rows) {
  constexpr OpQuery kNorm{.kind = OpKind::kNorm};
  constexpr OpQuery kTopK{.kind = OpKind::kRouterTopK};
  SimAiRow router{.name = "moe_router"};
  router.fp.compute_seconds = forward.TakeCompute(kNorm) +
                              forward.TakeCompute(RouterGemm(OpPass::kForward)) +
                              forward.TakeCompute(kTopK);
  SetComm(router.fp, forward.TakeComm({.purpose = CommPurpose::kEpTokenCounts}), kFpIg, context);
  router.wg.compute_seconds =
      backward.TakeCompute(kTopK) + backward.TakeCompute(RouterGemm(OpPass::kDgrad)) +
      backward.TakeCompute(RouterGemm(OpPass::kWgrad)) + backward.TakeCompute(kNorm);
  rows.push_back(router);
  // The load-balancing statistics all-reduce (tp×cp; SimAI's TP group when cp = 1).
  SimAiRow aux_loss{.name = "moe_aux_loss"};
  SetComm(aux_loss.fp, forward.TakeComm({.purpose = CommPurpose::kAuxLoss}), kFpIg, context);
  if (aux_loss.fp.comm != "NONE") rows.push_back(aux_loss);
  SimAiRow dispatch = MirroredRow("moe_dispatch",
                                  {Exchange(CommPurpose::kEpDispatch, GroupKind::kEp),
                                   Exchange(CommPurpose::kEpDispatch, GroupKind::kTpEp),
                                   Exchange(CommPurpose::kEpFlexDispatch, GroupKind::kTpEp)},
                                  forward, backward, context);
  dispatch.fp.compute_seconds = forward.TakeCompute({.kind = OpKind::kPermute});
  dispatch.wg.compute_seconds = backward.TakeCompute({.kind = OpKind::kPermute});
  rows.push_back(dispatch);
  AppendProbsRows("moe_dispatch_probs", GroupKind::kEp, forward, backward, context, rows);
  AppendProbsRows("moe_dispatch_probs", GroupKind::kTpEp, forward, backward, context, rows);
  const OpQuery etp_gather = Exchange(CommPurpose::kEpDispatch, GroupKind::kEtp);
  if (forward.HasComm(etp_gather)) {
    rows.push_back(MirroredRow("moe_etp_gather", {etp_gather}, forward, backward, context));
  }
  AppendProbsRows("moe_etp_gather_probs", GroupKind::kEtp, forward, backward, context, rows);
  // The unpermute's backward precedes the combine-gradient all-to-all (alltoall, flex).
  const double unpermute_seconds = forward.TakeCompute({.kind = OpKind::kUnpermute});
  const double unpermute_backward_seconds = backward.TakeCompute({.kind = OpKind::kUnpermute});
  SimAiRow experts =
      MirroredRow("moe_experts", {Exchange(CommPurpose::kEpCombine, GroupKind::kEtp)}, forward,
                  backward, context);
  experts.fp.compute_seconds = forward.TakeAllCompute();  // sort, fc1, activation, fc2, unsort
  experts.wg.compute_seconds = backward.TakeAllCompute();
  rows.push_back(experts);
  SimAiRow combine = MirroredRow("moe_combine",
                                 {Exchange(CommPurpose::kEpCombine, GroupKind::kEp),
                                  Exchange(CommPurpose::kEpCombine, GroupKind::kTpEp),
                                  Exchange(CommPurpose::kEpFlexCombine, GroupKind::kTpEp)},
                                 forward, backward, context);
  combine.fp.compute_seconds = unpermute_seconds;
  combine.ig.compute_seconds = unpermute_backward_seconds;
  rows.push_back(combine);
}

}  // namespace trainscope::report
