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
using graph::CommPurpose;
using graph::Op;
using graph::OpKind;
using graph::OpModule;
using graph::OpPass;

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

constexpr OpQuery kPreNorm{.kind = OpKind::kNorm, .module = OpModule::kPreNorm};

OpQuery Linear(OpModule module, OpPass pass) {
  return OpQuery{.kind = OpKind::kGemm, .module = module, .pass = pass};
}
OpQuery LinearComm(OpModule module, CommPurpose purpose) {
  return OpQuery{.module = module, .purpose = purpose};
}
constexpr OpModule kColumn = OpModule::kColumnLinear;
constexpr OpModule kRow = OpModule::kRowLinear;
constexpr OpQuery kHeadGather{.purpose = CommPurpose::kHeadGather};

// The row of the head gather between the column and row linear: "attn" -> "attn_qkv_gather".
std::string MiddleRowName(const TpBlockSpec& spec) { return spec.row_prefix + "_qkv_gather"; }

// With SP: *_in (fp AG; bwd dgrad, RS, wgrad), *_regather (bwd compute, AG), an optional middle
// row (fp column GEMM, AG; bwd compute, RS), *_out (fp GEMMs, RS; bwd AG, then dgrad + wgrad).
void SequenceParallelBlock(OpPool& forward, OpPool& backward, const TpBlockSpec& spec,
                           const BlockContext& context, std::vector<SimAiRow>& rows) {
  SimAiRow in{.name = spec.row_prefix + "_in"};
  SimAiRow regather{.name = spec.row_prefix + "_regather"};
  SimAiRow out{.name = spec.row_prefix + "_out"};
  in.fp.compute_seconds = forward.TakeCompute(kPreNorm);
  SetComm(in.fp, forward.TakeComm(LinearComm(kColumn, CommPurpose::kSpGather)), kFpIg, context);
  in.ig.compute_seconds = backward.TakeCompute(Linear(kColumn, OpPass::kDgrad));
  SetComm(in.ig, backward.TakeComm(LinearComm(kColumn, CommPurpose::kSpScatter)), kFpIg, context);
  in.wg.compute_seconds =
      backward.TakeCompute(Linear(kColumn, OpPass::kWgrad)) + backward.TakeCompute(kPreNorm);
  SetComm(regather.ig, backward.TakeComm(LinearComm(kColumn, CommPurpose::kSpGather)), kFpIg,
          context);
  SetComm(out.fp, forward.TakeComm(LinearComm(kRow, CommPurpose::kSpScatter)), kFpIg, context);
  SetComm(out.ig, backward.TakeComm(LinearComm(kRow, CommPurpose::kSpGather)), kFpIg, context);
  out.wg.compute_seconds = backward.TakeCompute(Linear(kRow, OpPass::kDgrad)) +
                           backward.TakeCompute(Linear(kRow, OpPass::kWgrad));
  rows.push_back(in);
  const Op* middle = forward.TakeComm(kHeadGather);
  if (middle != nullptr) {
    SimAiRow gather{.name = MiddleRowName(spec)};
    gather.fp.compute_seconds = forward.TakeCompute(Linear(kColumn, OpPass::kForward));
    SetComm(gather.fp, middle, kFpIg, context);
    gather.ig.compute_seconds = backward.TakeAllCompute();
    SetComm(gather.ig, backward.TakeComm(kHeadGather), kFpIg, context);
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
void AllReduceBlock(OpPool& forward, OpPool& backward, const TpBlockSpec& spec,
                    const BlockContext& context, std::vector<SimAiRow>& rows) {
  SimAiRow main{.name = spec.row_prefix};
  const double norm_backward_seconds = backward.TakeCompute(kPreNorm);
  const Op* middle = forward.TakeComm(kHeadGather);
  const OpQuery column_reduce = LinearComm(kColumn, CommPurpose::kTpReduce);
  if (middle != nullptr) {
    SimAiRow gather{.name = MiddleRowName(spec)};
    gather.fp.compute_seconds = forward.TakeCompute(Linear(kColumn, OpPass::kForward));
    SetComm(gather.fp, middle, kFpIg, context);
    gather.ig.compute_seconds = backward.TakeCompute(Linear(kColumn, OpPass::kDgrad));
    SetComm(gather.ig, backward.TakeComm(column_reduce), kFpIg, context);
    gather.wg.compute_seconds =
        backward.TakeCompute(Linear(kColumn, OpPass::kWgrad)) + norm_backward_seconds;
    SetComm(main.ig, backward.TakeComm(kHeadGather), kFpIg, context);
    rows.push_back(gather);
  } else {
    main.wg.compute_seconds =
        backward.TakeCompute(Linear(kColumn, OpPass::kWgrad)) + norm_backward_seconds;
    SetComm(main.ig, backward.TakeComm(column_reduce), kFpIg, context);
  }
  SetComm(main.fp, forward.TakeComm(LinearComm(kRow, CommPurpose::kTpReduce)), kFpIg, context);
  main.fp.compute_seconds = forward.TakeAllCompute();
  main.ig.compute_seconds = backward.TakeAllCompute();
  rows.push_back(main);
}

}  // namespace

namespace {

void CountComm(const Op& op, std::map<std::string, DroppedComm>& by_name) {
  DroppedComm& entry = by_name[op.name];
  entry.collective = op.collective;
  entry.group = op.group;
  entry.group_size = op.group_size;
  entry.message_bytes = op.message_bytes;
  ++entry.count;
}

}  // namespace

void ExportNotes::Drop(const Op& op) { CountComm(op, dropped); }

void ExportNotes::WroteTpEpOnEp(const Op& op) { CountComm(op, tp_ep_on_ep); }

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

bool OpQuery::Matches(const Op& op) const {
  const graph::OpRole& role = op.role;
  return (!kind || role.kind == *kind) && (!block || role.block == *block) &&
         (!module || role.module == *module) && (!pass || role.pass == *pass) &&
         (!purpose || role.purpose == *purpose) && (!group || op.group == *group) &&
         (!message_bytes || op.message_bytes == *message_bytes);
}

OpPool::OpPool(std::vector<Op> ops, const ComputeTime& compute_seconds)
    : ops_(std::move(ops)), used_(ops_.size(), false), compute_seconds_(compute_seconds) {}

const Op* OpPool::TakeComm(const OpQuery& query) {
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (used_[i] || !ops_[i].IsComm() || !query.Matches(ops_[i])) continue;
    used_[i] = true;
    return &ops_[i];
  }
  return nullptr;
}

bool OpPool::HasComm(const OpQuery& query) const {
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (!used_[i] && ops_[i].IsComm() && query.Matches(ops_[i])) return true;
  }
  return false;
}

double OpPool::TakeCompute(const OpQuery& query) {
  double seconds = 0;
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (used_[i] || ops_[i].IsComm() || !query.Matches(ops_[i])) continue;
    used_[i] = true;
    seconds += compute_seconds_(ops_[i]);
  }
  return seconds;
}

double OpPool::TakeAllCompute() {
  double seconds = 0;
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (used_[i] || ops_[i].IsComm()) continue;
    used_[i] = true;
    seconds += compute_seconds_(ops_[i]);
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
  // The token-count gather has its own moe_router diagnostic.
  if (op->group == GroupKind::kTpEp && op->role.purpose != CommPurpose::kEpTokenCounts) {
    context.notes->WroteTpEpOnEp(*op);
  }
}

void AppendTpBlockRows(OpPool& forward, OpPool& backward, const TpBlockSpec& spec,
                       const BlockContext& context, std::vector<SimAiRow>& rows) {
  // The gate runs after the row linear's collective: its own row, so the bottom-up backward walk
  // runs its backward before the block's.
  SimAiRow gate{.name = spec.row_prefix + "_gate"};
  if (spec.separate_output_gate) {
    const OpQuery output_gate{.module = OpModule::kOutputGate};
    gate.fp.compute_seconds = forward.TakeCompute(output_gate);
    gate.ig.compute_seconds = backward.TakeCompute(output_gate);
  }
  if (context.sequence_parallel) {
    SequenceParallelBlock(forward, backward, spec, context, rows);
  } else {
    AllReduceBlock(forward, backward, spec, context, rows);
  }
  if (gate.fp.compute_seconds > 0 || gate.ig.compute_seconds > 0) rows.push_back(gate);
}

void AppendEmbeddingRow(OpPool& forward, OpPool& backward, const BlockContext& context,
                        std::vector<SimAiRow>& rows) {
  SimAiRow row{.name = "embedding"};
  row.fp.compute_seconds = forward.TakeAllCompute();
  const Op* output = forward.TakeComm({.purpose = CommPurpose::kSpScatter});
  SetComm(row.fp,
          output != nullptr ? output : forward.TakeComm({.purpose = CommPurpose::kTpReduce}), kFpIg,
          context);
  SetComm(row.ig, backward.TakeComm({.purpose = CommPurpose::kSpGather}), kFpIg, context);
  row.wg.compute_seconds = backward.TakeAllCompute();
  rows.push_back(row);
}

void AppendLmHeadRows(OpPool& forward, OpPool& backward, const BlockContext& context,
                      std::vector<SimAiRow>& rows) {
  // The final norm runs before the AG; its backward after the output layer's wgrad.
  const double norm_backward_seconds = backward.TakeCompute(kPreNorm);
  if (context.sequence_parallel) {
    SimAiRow in{.name = "lm_head_in"};
    SimAiRow regather{.name = "lm_head_regather"};
    in.fp.compute_seconds = forward.TakeCompute(kPreNorm);
    SetComm(in.fp, forward.TakeComm(LinearComm(kColumn, CommPurpose::kSpGather)), kFpIg, context);
    in.ig.compute_seconds = backward.TakeCompute(Linear(kColumn, OpPass::kDgrad));
    SetComm(in.ig, backward.TakeComm(LinearComm(kColumn, CommPurpose::kSpScatter)), kFpIg, context);
    in.wg.compute_seconds =
        backward.TakeCompute(Linear(kColumn, OpPass::kWgrad)) + norm_backward_seconds;
    regather.ig.compute_seconds = backward.TakeAllCompute();
    SetComm(regather.ig, backward.TakeComm(LinearComm(kColumn, CommPurpose::kSpGather)), kFpIg,
            context);
    rows.push_back(in);
    rows.push_back(regather);
  } else {
    SimAiRow head{.name = "lm_head"};
    head.wg.compute_seconds =
        backward.TakeCompute(Linear(kColumn, OpPass::kWgrad)) + norm_backward_seconds;
    head.ig.compute_seconds = backward.TakeAllCompute();
    SetComm(head.ig, backward.TakeComm(LinearComm(kColumn, CommPurpose::kTpReduce)), kFpIg,
            context);
    rows.push_back(head);
  }
  // Output GEMM and loss compute run before the first cross-entropy all-reduce. The graph emits
  // the loss all-reduces in this order (graph/layer_ops.cc LmHeadForwardInto).
  const double loss_seconds = forward.TakeAllCompute();
  const size_t first = rows.size();
  for (const char* what : {"max", "target_logit", "exp_sum"}) {
    const Op* op = forward.TakeComm({.purpose = CommPurpose::kLossReduce});
    if (op == nullptr) continue;
    SimAiRow row{.name = std::string("cross_entropy_") + what};
    SetComm(row.fp, op, kFpIg, context);
    rows.push_back(row);
  }
  if (rows.size() == first) rows.push_back(SimAiRow{.name = "cross_entropy"});
  rows[first].fp.compute_seconds = loss_seconds;
}

}  // namespace trainscope::report
