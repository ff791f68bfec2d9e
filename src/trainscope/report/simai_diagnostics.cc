// Diagnostics of the SimAI export: what SimAI's Workload.cc parser says the format
// cannot express, stated for the configuration at hand.
#include <fmt/format.h>

#include <algorithm>

#include "trainscope/report/simai_blocks.h"

namespace trainscope::report {
namespace {

bool HasRowWithComm(const std::vector<SimAiRow>& rows, std::string_view name,
                    std::string_view token) {
  return std::any_of(rows.begin(), rows.end(), [&](const SimAiRow& row) {
    return row.name == name &&
           (row.fp.comm == token || row.ig.comm == token || row.wg.comm == token);
  });
}

bool HasRowNamed(const std::vector<SimAiRow>& rows, std::string_view prefix) {
  return std::any_of(rows.begin(), rows.end(),
                     [&](const SimAiRow& row) { return row.name.starts_with(prefix); });
}

void AppendDropped(const ExportNotes& notes, std::string_view per, std::vector<std::string>& out) {
  for (const auto& [name, comm] : notes.dropped) {
    out.push_back(fmt::format(
        "not written ({} {}x per {}): {} over {} ({} ranks, {} bytes); SimAI has no such "
        "collective or group",
        name, comm.count, per, graph::ToString(comm.collective), config::ToString(comm.group),
        comm.group_size, comm.message_bytes));
  }
}

void AppendMoeGroupNotes(const config::ParallelSizes& sizes, const SimAiWorkload& workload,
                         const ExportNotes& notes, std::vector<std::string>& out) {
  const int64_t etp = sizes.ExpertTensor();
  const std::vector<SimAiRow>& rows = workload.micro_batch_rows;
  if (etp != sizes.tensor && HasRowNamed(rows, "moe_etp_gather")) {
    out.push_back(fmt::format(
        "expert tensor parallel size {} differs from TP {}: SimAI runs the unsuffixed ETP "
        "collectives of moe_etp_gather and moe_experts on the TP group of {} ranks",
        etp, sizes.tensor, sizes.tensor));
  }
  if (etp > 1 && HasRowWithComm(rows, "moe_router", "ALLGATHER_EP")) {
    out.push_back(fmt::format(
        "moe_router: Megatron gathers the token counts over tp x ep = {} ranks; SimAI's _EP "
        "group has {} ranks",
        etp * sizes.expert, sizes.expert));
  }
  // Other TP×EP collectives (allgather and flex dispatchers) land on the same _EP group.
  if (etp > 1) {
    for (const auto& [name, comm] : notes.tp_ep_on_ep) {
      out.push_back(fmt::format(
          "{} ({}x per micro-batch): Megatron runs this {} over tp x ep = {} ranks; SimAI's _EP "
          "group, where it is written, has {} ranks",
          name, comm.count, graph::ToString(comm.collective), comm.group_size, sizes.expert));
    }
  }
  const bool expert_dp_rows =
      std::any_of(workload.step_rows.begin(), workload.step_rows.end(),
                  [](const SimAiRow& row) { return row.wg.comm.ends_with("_DP_EP"); });
  const int64_t simai_expert_dp = sizes.world_size / (sizes.tensor * sizes.pipeline * sizes.expert);
  if (expert_dp_rows && simai_expert_dp != sizes.ExpertData()) {
    out.push_back(fmt::format(
        "expert gradient rows use _DP_EP, a group of {} ranks in SimAI (all_gpus/(tp·pp·ep)); "
        "Megatron's expert-DP group has {} ranks",
        simai_expert_dp, sizes.ExpertData()));
  }
}

}  // namespace

std::vector<std::string> SimAiDiagnostics(const config::TrainingConfig& training,
                                          const SimAiWorkload& workload, int64_t pipeline_rank,
                                          const ExportNotes& micro_batch_notes,
                                          const ExportNotes& step_notes,
                                          const StageFeatures& features) {
  const config::ParallelSizes& sizes = training.parallel;
  std::vector<std::string> out;
  if (sizes.pipeline > 1) {
    out.push_back(fmt::format(
        "pipeline parallelism: this file holds only pipeline stage {} of {} (its own layers); "
        "SimAI cannot simulate PP send/recv, so pp:, vpp: and pp_comm: ({} bytes) only feed its "
        "closed-form bubble and PP-exposure terms",
        pipeline_rank, sizes.pipeline, workload.header.pp_comm_bytes));
  }
  if (features.has_gdn) {
    out.push_back(
        "Gated DeltaNet layers are written as TP blocks like attention (gdn_in, gdn_regather, "
        "gdn_out, or one gdn row without SP): they have the same TP collectives");
  }
  AppendMoeGroupNotes(sizes, workload, micro_batch_notes, out);
  if (sizes.context > 1) {
    out.push_back(fmt::format(
        "context parallelism (cp = {}): CP traffic is not written (SimAI has no CP group); "
        "activation sizes are those of one CP rank (s/cp tokens)",
        sizes.context));
  }
  if (features.has_mtp) {
    out.push_back("MTP layers on this stage are not written (their compute and collectives)");
  }
  if (features.has_vision) {
    out.push_back(
        "the vision tower on this stage is not written (SimAI has no rows for it; its compute "
        "and TP all-reduces are left out)");
  }
  AppendDropped(micro_batch_notes, "micro-batch", out);
  AppendDropped(step_notes, "step", out);
  return out;
}

}  // namespace trainscope::report
