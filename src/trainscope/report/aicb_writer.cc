// AICB native CSV (aicb generate_megatron_workload.py). Stage strings use AICB's module names
// where AICB has the module (MegatronEmbedding, MegatronColumnLinear, MegatronRowLinear, MoE.*)
// and new ones where it does not (GatedDeltaNet, SharedExpertMLP, ...).
#include "trainscope/report/aicb_writer.h"

#include <fmt/format.h>

#include <array>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

namespace trainscope::report {
namespace {

using config::GroupKind;
using graph::Collective;
using graph::CommPurpose;
using graph::Op;
using graph::OpBlock;
using graph::Phase;

constexpr std::string_view kAicbHeader =
    "comm_type,comm_group,comm_group_size,msg_size,stage,dst,src,additional,_elapsed_time,algbw,"
    "busbw,count\n";

// AICB's CommType spelling: trainscope's collective names, except AICB's isend / irecv.
std::string CommType(Collective collective) {
  if (collective == Collective::kSend) return "isend";
  if (collective == Collective::kRecv) return "irecv";
  if (collective == Collective::kNone) return "computation";
  return graph::ToString(collective);
}

// AICB's CommGroup for `op`, or nothing when AICB has none (CP, TP×CP with CP > 1, ETP ≠ TP).
std::optional<std::string_view> CommGroup(const Op& op, int64_t tensor_parallel) {
  switch (op.group) {
    case GroupKind::kTp:
      return "tp_group";
    case GroupKind::kDp:
    case GroupKind::kDpCp:
      return "dp_group";
    case GroupKind::kPp:
      return "pp_group";
    // AICB's replayer (workload_applyer.py _generate_dp_tp_pp_ep_groups) builds ep_group from
    // the 'ep' ranks and ep_tp_group from the 'tp-ep' ranks of Megatron's expert decomposition.
    case GroupKind::kEp:
      return "ep_group";
    case GroupKind::kTpEp:
      return "ep_tp_group";
    case GroupKind::kEtp:
      // AICB has no expert-TP group. TP is the innermost axis of both Megatron rank orders
      // (tp-cp-dp-pp and etp-ep-dp-pp), so with ETP = TP the expert-TP group is the TP group.
      if (op.group_size == tensor_parallel) return "tp_group";
      return std::nullopt;
    case GroupKind::kExpertDp:
      return "ep_dp_group";
    case GroupKind::kEmbedding:
      return "embedding_group";
    case GroupKind::kTpCp:
      if (op.group_size == tensor_parallel) return "tp_group";
      return std::nullopt;
    case GroupKind::kCp:
    case GroupKind::kTpDpCp:
    case GroupKind::kModelParallel:
    case GroupKind::kWorld:
      return std::nullopt;
  }
  return std::nullopt;
}

// The module part of the stage string, from the op's role.
std::string_view Module(const Op& op) {
  const graph::OpRole& role = op.role;
  const bool column = role.module == graph::OpModule::kColumnLinear;
  const bool row = role.module == graph::OpModule::kRowLinear;
  switch (role.block) {
    case OpBlock::kInput:
      return "MegatronInput";
    case OpBlock::kEmbedding:
      return "MegatronEmbedding";
    case OpBlock::kAttention:
      return column ? "MegatronColumnLinear" : row ? "MegatronRowLinear" : "MegatronAttention";
    case OpBlock::kGdn:
      return "GatedDeltaNet";
    case OpBlock::kMlp:
      return column ? "MegatronColumnLinear" : row ? "MegatronRowLinear" : "Unknown";
    case OpBlock::kMoeShared:
      return "SharedExpertMLP";
    case OpBlock::kMoeRouter:
      return "MoE.router";
    case OpBlock::kMoeRouted:
      return role.purpose == CommPurpose::kEpCombine || role.purpose == CommPurpose::kEpFlexCombine
                 ? "MoE.combine"
                 : "MoE.dispatch";
    case OpBlock::kLmHead:
      return column                                     ? "MegatronColumnLinear"
             : role.purpose == CommPurpose::kLossReduce ? "MegatronCrossEntropy"
                                                        : "Unknown";
    case OpBlock::kMtp:
      return "MultiTokenPrediction";
    case OpBlock::kVision:
      return "VisionModel";
    case OpBlock::kPipeline:
      return "PipelineP2P";
    case OpBlock::kFsdp:
      return "MegatronFSDP";
    default:
      return "Unknown";
  }
}

std::string Stage(const Op& op) {
  if (op.phase == Phase::kGradSync || op.phase == Phase::kOptimizer) return "step";
  const std::string_view direction = op.phase == Phase::kForward    ? "forward"
                                     : op.phase == Phase::kBackward ? "backward"
                                                                    : "recompute";
  return fmt::format("{}.{}", direction, Module(op));
}

// PP direction (AICB's `additional`): forward sends go to the next stage, backward to the previous.
std::string_view Direction(const Op& op) {
  const bool forward = op.phase == Phase::kForward;
  if (op.collective == Collective::kSend) return forward ? "send_next" : "send_prev";
  if (op.collective == Collective::kRecv) return forward ? "recv_prev" : "recv_next";
  return "";
}

std::string Peer(const Op& op, Collective which) {
  return op.collective == which ? fmt::format("{}", op.peer) : "None";
}

}  // namespace

ExportResult FormatAicbCsv(const graph::StepGraph& graph, int64_t tensor_parallel) {
  ExportResult result;
  result.text = std::string(kAicbHeader);
  std::map<std::string, int64_t> unlabelled;  // group name -> ops, for the diagnostics
  for (const Op& op : graph.ops) {
    if (!op.IsComm()) continue;
    const std::optional<std::string_view> group = CommGroup(op, tensor_parallel);
    if (!group) ++unlabelled[config::ToString(op.group)];
    result.text += fmt::format(
        "CommType.{},CommGroup.{},{},{},{},{},{},{},None,None,None,1\n", CommType(op.collective),
        group ? *group : config::ToString(op.group) + "_group", op.group_size, op.message_bytes,
        Stage(op), Peer(op, Collective::kSend), Peer(op, Collective::kRecv), Direction(op));
  }
  for (const auto& [group, count] : unlabelled) {
    result.diagnostics.push_back(
        fmt::format("AICB has no CommGroup for the {} group: its {} collectives are labelled "
                    "CommGroup.{}_group, which AICB's replay does not know",
                    group, count, group));
  }
  return result;
}

ExportResult RenderAicbCsv(const graph::StepGraph& graph, const config::TrainingConfig& training) {
  return FormatAicbCsv(graph, training.parallel.tensor);
}

}  // namespace trainscope::report
