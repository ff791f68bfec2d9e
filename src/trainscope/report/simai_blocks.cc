// SimAI row patterns, Workload.cc tokens and the rows of docs/workload.md. Op names
// are those of graph/layer_ops.cc.
#include "trainscope/report/simai_blocks.h"

#include <algorithm>
#include <utility>

#include "trainscope/error.h"

namespace trainscope::report {
namespace {

using config::GroupKind;
using graph::Collective;
using graph::Op;

constexpr SimAiColumnKind kFpIg = SimAiColumnKind::kForwardOrInputGrad;

std::optional<std::string> BaseToken(Collective collective) {
  switch (collective) {
    case Collective::kAllGather:
      return "ALLGATHER";
    case Collective::kReduceScatter:
      return "REDUCESCATTER";
    case Collective::kAllReduce:
      return "ALLREDUCE";
    case Collective::kAllToAll:
      return "ALLTOALL";
    default:
      return std::nullopt;
  }
}

// "attention.qkv_gather" -> "attn_qkv_gather".
std::string MiddleRowName(const TpBlockNames& names) {
  const size_t dot = names.middle_comm.rfind('.');
  return names.row_prefix + "_" + names.middle_comm.substr(dot + 1);
}

// With SP: *_in (fp AG; bwd dgrad, RS, wgrad), *_regather (bwd compute, AG), an optional middle
// row (fp column GEMM, AG; bwd compute, RS), *_out (fp GEMMs, RS; bwd AG, then dgrad + wgrad).
void SequenceParallelBlock(OpPool& forward, OpPool& backward, const TpBlockNames& names,
                           const BlockContext& context, std::vector<SimAiRow>& rows) {
  const std::string& c = names.column_linear;
  const std::string& r = names.row_linear;
  SimAiRow in{.name = names.row_prefix + "_in"};
  SimAiRow regather{.name = names.row_prefix + "_regather"};
  SimAiRow out{.name = names.row_prefix + "_out"};
  in.fp.compute_seconds = forward.TakeCompute(names.input_norm);
  SetComm(in.fp, forward.TakeComm(c + ".ag_input"), kFpIg, context);
  in.ig.compute_seconds = backward.TakeCompute(c + ".dgrad");
  SetComm(in.ig, backward.TakeComm(c + ".rs_dgrad"), kFpIg, context);
  in.wg.compute_seconds =
      backward.TakeCompute(c + ".wgrad") + backward.TakeCompute(names.input_norm + ".backward");
  SetComm(regather.ig, backward.TakeComm(c + ".ag_input_wgrad"), kFpIg, context);
  SetComm(out.fp, forward.TakeComm(r + ".rs_output"), kFpIg, context);
  SetComm(out.ig, backward.TakeComm(r + ".ag_grad_output"), kFpIg, context);
  out.wg.compute_seconds = backward.TakeCompute(r + ".dgrad") + backward.TakeCompute(r + ".wgrad");
  rows.push_back(in);
  const Op* middle = names.middle_comm.empty() ? nullptr : forward.TakeComm(names.middle_comm);
  if (middle != nullptr) {
    SimAiRow gather{.name = MiddleRowName(names)};
    gather.fp.compute_seconds = forward.TakeCompute(c);
    SetComm(gather.fp, middle, kFpIg, context);
    gather.ig.compute_seconds = backward.TakeAllCompute();
    SetComm(gather.ig, backward.TakeComm(names.middle_comm + ".rs_grad"), kFpIg, context);
    rows.push_back(regather);
    rows.push_back(gather);
  } else {
    regather.ig.compute_seconds = backward.TakeAllCompute();
    rows.push_back(regather);
  }
  out.fp.compute_seconds = forward.TakeAllCompute();
  rows.push_back(out);
}

// Without SP: one row (fp AR of the output; bwd everything up to the column dgrad, AR, then the
// column wgrad); a middle collective splits off the column linear into a row of its own.
void AllReduceBlock(OpPool& forward, OpPool& backward, const TpBlockNames& names,
                    const BlockContext& context, std::vector<SimAiRow>& rows) {
  const std::string& c = names.column_linear;
  SimAiRow main{.name = names.row_prefix};
  const double norm_backward_seconds = backward.TakeCompute(names.input_norm + ".backward");
  const Op* middle = names.middle_comm.empty() ? nullptr : forward.TakeComm(names.middle_comm);
  if (middle != nullptr) {
    SimAiRow gather{.name = MiddleRowName(names)};
    gather.fp.compute_seconds = forward.TakeCompute(c);
    SetComm(gather.fp, middle, kFpIg, context);
    gather.ig.compute_seconds = backward.TakeCompute(c + ".dgrad");
    SetComm(gather.ig, backward.TakeComm(c + ".ar_dgrad"), kFpIg, context);
    gather.wg.compute_seconds = backward.TakeCompute(c + ".wgrad") + norm_backward_seconds;
    SetComm(main.ig, backward.TakeComm(names.middle_comm + ".rs_grad"), kFpIg, context);
    rows.push_back(gather);
  } else {
    main.wg.compute_seconds = backward.TakeCompute(c + ".wgrad") + norm_backward_seconds;
    SetComm(main.ig, backward.TakeComm(c + ".ar_dgrad"), kFpIg, context);
  }
  SetComm(main.fp, forward.TakeComm(names.row_linear + ".ar_output"), kFpIg, context);
  main.fp.compute_seconds = forward.TakeAllCompute();
  main.ig.compute_seconds = backward.TakeAllCompute();
  rows.push_back(main);
}

}  // namespace

void ExportNotes::Drop(const Op& op) {
  DroppedComm& entry = dropped[op.name];
  entry.collective = op.collective;
  entry.group = op.group;
  entry.group_size = op.group_size;
  entry.message_bytes = op.message_bytes;
  ++entry.count;
}

std::optional<std::string> SimAiToken(const Op& op, SimAiColumnKind kind, int64_t tensor_parallel) {
  const std::optional<std::string> base = BaseToken(op.collective);
  if (!base) return std::nullopt;
  if (kind == SimAiColumnKind::kWeightGrad) {
    if (op.group == GroupKind::kDp || op.group == GroupKind::kDpCp) return *base;
    if (op.group == GroupKind::kExpertDp) return *base + "_DP_EP";
    return std::nullopt;
  }
  switch (op.group) {
    case GroupKind::kTp:
    case GroupKind::kEtp:  // lands in the TP group; right only when ETP = TP (diagnosed)
      return *base;
    case GroupKind::kTpCp:
      if (op.group_size == tensor_parallel) return *base;
      return std::nullopt;
    case GroupKind::kEp:
    case GroupKind::kTpEp:  // lands in the EP group; right only when ETP = 1 (diagnosed)
      return *base + "_EP";
    default:
      return std::nullopt;
  }
}

OpPool::OpPool(std::vector<Op> ops, const RooflineSpec& roofline)
    : ops_(std::move(ops)), used_(ops_.size(), false), roofline_(roofline) {}

const Op* OpPool::TakeComm(std::string_view name, std::optional<GroupKind> group) {
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (used_[i] || !ops_[i].IsComm() || ops_[i].name != name) continue;
    if (group && ops_[i].group != *group) continue;
    used_[i] = true;
    return &ops_[i];
  }
  return nullptr;
}

bool OpPool::HasComm(std::string_view name, GroupKind group) const {
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (!used_[i] && ops_[i].IsComm() && ops_[i].name == name && ops_[i].group == group) {
      return true;
    }
  }
  return false;
}

double OpPool::TakeCompute(std::string_view name) {
  double seconds = 0;
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (used_[i] || ops_[i].IsComm() || ops_[i].name != name) continue;
    used_[i] = true;
    seconds += RooflineSeconds(ops_[i], roofline_);
  }
  return seconds;
}

double OpPool::TakeAllCompute() {
  double seconds = 0;
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (used_[i] || ops_[i].IsComm()) continue;
    used_[i] = true;
    seconds += RooflineSeconds(ops_[i], roofline_);
  }
  return seconds;
}

void OpPool::DropRest(ExportNotes& notes) {
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (used_[i]) continue;
    TRAINSCOPE_CHECK(ops_[i].IsComm(), "compute op left out of the SimAI rows: " + ops_[i].name);
    used_[i] = true;
    notes.Drop(ops_[i]);
  }
}

void SetComm(SimAiColumn& column, const Op* op, SimAiColumnKind kind, const BlockContext& context) {
  if (op == nullptr) return;
  TRAINSCOPE_CHECK(column.comm == "NONE", "two collectives in one SimAI column");
  const std::optional<std::string> token = SimAiToken(*op, kind, context.tensor_parallel);
  if (!token) {
    context.notes->Drop(*op);
    return;
  }
  column.comm = *token;
  column.comm_bytes = op->message_bytes;
}

void AppendTpBlockRows(OpPool& forward, OpPool& backward, const TpBlockNames& names,
                       const BlockContext& context, std::vector<SimAiRow>& rows) {
  // The gate runs after the row linear's collective: its own row, so the bottom-up backward walk
  // runs its backward before the block's.
  SimAiRow gate{.name = names.row_prefix + "_gate"};
  gate.fp.compute_seconds = forward.TakeCompute(names.output_gate);
  gate.ig.compute_seconds = backward.TakeCompute(names.output_gate + ".backward");
  if (context.sequence_parallel) {
    SequenceParallelBlock(forward, backward, names, context, rows);
  } else {
    AllReduceBlock(forward, backward, names, context, rows);
  }
  if (gate.fp.compute_seconds > 0 || gate.ig.compute_seconds > 0) rows.push_back(gate);
}

void AppendEmbeddingRow(OpPool& forward, OpPool& backward, const BlockContext& context,
                        std::vector<SimAiRow>& rows) {
  SimAiRow row{.name = "embedding"};
  row.fp.compute_seconds = forward.TakeAllCompute();
  const Op* output = forward.TakeComm("embedding.rs_output");
  SetComm(row.fp, output != nullptr ? output : forward.TakeComm("embedding.ar_output"), kFpIg,
          context);
  SetComm(row.ig, backward.TakeComm("embedding.rs_output.grad"), kFpIg, context);
  row.wg.compute_seconds = backward.TakeAllCompute();
  rows.push_back(row);
}

void AppendLmHeadRows(OpPool& forward, OpPool& backward, const BlockContext& context,
                      std::vector<SimAiRow>& rows) {
  const std::string c = "lm_head.output_layer";
  // The final norm runs before the AG; its backward after the output layer's wgrad.
  const double norm_backward_seconds = backward.TakeCompute("lm_head.final_norm.backward");
  if (context.sequence_parallel) {
    SimAiRow in{.name = "lm_head_in"};
    SimAiRow regather{.name = "lm_head_regather"};
    in.fp.compute_seconds = forward.TakeCompute("lm_head.final_norm");
    SetComm(in.fp, forward.TakeComm(c + ".ag_input"), kFpIg, context);
    in.ig.compute_seconds = backward.TakeCompute(c + ".dgrad");
    SetComm(in.ig, backward.TakeComm(c + ".rs_dgrad"), kFpIg, context);
    in.wg.compute_seconds = backward.TakeCompute(c + ".wgrad") + norm_backward_seconds;
    regather.ig.compute_seconds = backward.TakeAllCompute();
    SetComm(regather.ig, backward.TakeComm(c + ".ag_input_wgrad"), kFpIg, context);
    rows.push_back(in);
    rows.push_back(regather);
  } else {
    SimAiRow head{.name = "lm_head"};
    head.wg.compute_seconds = backward.TakeCompute(c + ".wgrad") + norm_backward_seconds;
    head.ig.compute_seconds = backward.TakeAllCompute();
    SetComm(head.ig, backward.TakeComm(c + ".ar_dgrad"), kFpIg, context);
    rows.push_back(head);
  }
  // Output GEMM and loss compute run before the first cross-entropy all-reduce.
  const double loss_seconds = forward.TakeAllCompute();
  const size_t first = rows.size();
  for (const char* what : {"max", "target_logit", "exp_sum"}) {
    const Op* op = forward.TakeComm(std::string("lm_head.cross_entropy.ar_") + what);
    if (op == nullptr) continue;
    SimAiRow row{.name = std::string("cross_entropy_") + what};
    SetComm(row.fp, op, kFpIg, context);
    rows.push_back(row);
  }
  if (rows.size() == first) rows.push_back(SimAiRow{.name = "cross_entropy"});
  rows[first].fp.compute_seconds = loss_seconds;
}

}  // namespace trainscope::report
