#include "trainscope/report/memory_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "trainscope/units.h"

namespace trainscope::report {
namespace {

using Json = nlohmann::ordered_json;

std::string Gib(int64_t bytes) {
  return fmt::format("{:.2f}", static_cast<double>(bytes) / static_cast<double>(kBytesPerGiB));
}

Json ActivationsJson(const cost::RankMemory& stage) {
  Json out = Json::array();
  for (const cost::ActivationBreakdown& part : stage.activations) {
    out.push_back({{"kind", part.kind},
                   {"bytes_per_micro_batch", part.bytes_per_micro_batch},
                   {"num_layers", part.num_layers}});
  }
  return out;
}

Json TermsJson(const cost::RankMemory& stage);

Json StageJson(const cost::RankMemory& stage) {
  return Json{{"pp_rank", stage.pipeline_rank},
              {"num_ranks", stage.num_ranks},
              {"weights_bytes", stage.weights_bytes},
              {"grads_bytes", stage.grads_bytes},
              {"optimizer_bytes", stage.optimizer_bytes},
              {"activations_bytes", stage.activations_bytes},
              {"buffers_bytes", stage.buffers_bytes},
              {"peak_bytes", stage.peak_bytes},
              {"allocated_bytes", stage.allocated_bytes},
              {"reserved_bytes", stage.reserved_bytes},
              {"optimizer_step_bytes", stage.optimizer_step_bytes},
              {"host_optimizer_bytes", stage.host_optimizer_bytes},
              {"host_activation_bytes", stage.host_activation_bytes},
              {"in_flight_micro_batches", stage.in_flight_micro_batches},
              {"activations", ActivationsJson(stage)},
              {"nvidia_smi_bytes", stage.peak_bytes},
              {"terms", TermsJson(stage)}};
}

// The named terms of docs/memory.md, each with the figure it first appears in.
Json TermsJson(const cost::RankMemory& stage) {
  const auto term = [](int64_t bytes, const char* part_of, const char* figure) {
    return Json{{"bytes", bytes}, {"part_of", part_of}, {"figure", figure}};
  };
  return Json{
      {"logits_bytes", term(stage.logits_bytes, "activations", "allocated")},
      {"moe_permute_bytes", term(stage.moe_permute_bytes, "activations", "allocated")},
      {"cuda_graph_bytes", term(stage.cuda_graph_bytes, "buffers", "allocated")},
      {"cublas_workspace_bytes", term(stage.cublas_workspace_bytes, "buffers", "allocated")},
      {"fragmentation_bytes", term(stage.fragmentation_bytes, "buffers", "reserved")},
      {"cuda_context_bytes", term(stage.cuda_context_bytes, "buffers", "nvidia_smi")},
      {"nccl_bytes", term(stage.nccl_bytes, "buffers", "nvidia_smi")}};
}

int64_t MaxOver(const cost::MemoryEstimate& estimate, int64_t cost::RankMemory::*figure) {
  int64_t bytes = 0;
  for (const cost::RankMemory& stage : estimate.stages) bytes = std::max(bytes, stage.*figure);
  return bytes;
}

// The busiest rank's three figures and the named terms that make them up.
std::string FiguresText(const cost::RankMemory& s) {
  std::string out = fmt::format(
      "  allocated  {:>8} GiB  torch.cuda.max_memory_allocated (Megatron's \"max allocated\")\n"
      "             of which logits {}, MoE permutation maps {} (in activations); CUDA-graph "
      "static buffers {}, TE cuBLAS workspaces {} (in buffers)\n",
      Gib(s.allocated_bytes), Gib(s.logits_bytes), Gib(s.moe_permute_bytes),
      Gib(s.cuda_graph_bytes), Gib(s.cublas_workspace_bytes));
  out += fmt::format(
      "  reserved   {:>8} GiB  torch.cuda.max_memory_reserved: allocated + allocator reserve {}\n",
      Gib(s.reserved_bytes), Gib(s.fragmentation_bytes));
  out += fmt::format(
      "  nvidia-smi {:>8} GiB  reserved + CUDA context {} + NCCL buffers {} ({} communicators)\n",
      Gib(s.peak_bytes), Gib(s.cuda_context_bytes), Gib(s.nccl_bytes), s.num_communicators);
  return out;
}

}  // namespace

bool Fits(const MemoryReportInput& input) {
  return input.estimate.max_peak_bytes <= input.gpu.memory_bytes;
}

std::string RenderMemoryJson(const MemoryReportInput& input) {
  Json per_rank = Json::array();
  for (const cost::RankMemory& stage : input.estimate.stages) per_rank.push_back(StageJson(stage));
  const Json out{
      {"model", input.model.name},
      {"gpu", input.gpu.name},
      {"gpu_memory_bytes", input.gpu.memory_bytes},
      {"max_peak_bytes", input.estimate.max_peak_bytes},
      {"max_peak_pp_rank", input.estimate.max_peak_pipeline_rank},
      {"max_allocated_bytes", MaxOver(input.estimate, &cost::RankMemory::allocated_bytes)},
      {"max_reserved_bytes", MaxOver(input.estimate, &cost::RankMemory::reserved_bytes)},
      {"max_nvidia_smi_bytes", input.estimate.max_peak_bytes},
      {"fits", Fits(input)},
      {"host_bytes_per_node", input.estimate.max_host_bytes_per_node},
      {"per_rank", per_rank},
      {"megatron_estimate",
       {{"weights_and_optimizer_bytes", input.megatron.weights_and_optimizer_bytes},
        {"activations_bytes", input.megatron.activations_bytes},
        {"total_bytes", input.megatron.total_bytes},
        {"notes", input.megatron.notes}}}};
  return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string RenderMemoryText(const MemoryReportInput& input) {
  std::string out = fmt::format("{} on {} ({} GiB usable)\n\n", input.model.name, input.gpu.name,
                                Gib(input.gpu.memory_bytes));
  out +=
      fmt::format("  {:>7}{:>7}{:>10}{:>10}{:>11}{:>13}{:>10}{:>10}{:>10}\n", "pp_rank", "ranks",
                  "weights", "grads", "optimizer", "activations", "buffers", "peak", "in-flight");
  for (const cost::RankMemory& s : input.estimate.stages) {
    out += fmt::format("  {:>7}{:>7}{:>10}{:>10}{:>11}{:>13}{:>10}{:>10}{:>10}\n", s.pipeline_rank,
                       s.num_ranks, Gib(s.weights_bytes), Gib(s.grads_bytes),
                       Gib(s.optimizer_bytes), Gib(s.activations_bytes), Gib(s.buffers_bytes),
                       Gib(s.peak_bytes), s.in_flight_micro_batches);
  }
  out += fmt::format("  (GiB)\n\nbusiest rank: pipeline stage {}, peak {} GiB: {}\n",
                     input.estimate.max_peak_pipeline_rank, Gib(input.estimate.max_peak_bytes),
                     Fits(input) ? "fits" : "DOES NOT FIT");
  const cost::RankMemory& busiest =
      input.estimate.stages.at(static_cast<size_t>(input.estimate.max_peak_pipeline_rank));
  out += FiguresText(busiest);
  // One line per offloaded kind; the per-node figure (both kinds together) ends the last one.
  const std::string per_node =
      fmt::format(", {} GiB per node", Gib(input.estimate.max_host_bytes_per_node));
  const bool activations = busiest.host_activation_bytes > 0;
  if (busiest.host_optimizer_bytes > 0) {
    out += fmt::format("  CPU-offloaded optimizer: {} GiB pinned host memory per rank{}\n",
                       Gib(busiest.host_optimizer_bytes), activations ? "" : per_node);
  }
  if (activations) {
    out += fmt::format("  CPU-offloaded activations: {} GiB pinned host memory per rank{}{}\n",
                       Gib(busiest.host_activation_bytes), per_node,
                       busiest.host_optimizer_bytes > 0 ? " (optimizer included)" : "");
  }
  out += fmt::format(
      "\nMegatron's theoretical formula (theoretical_memory_usage.py): weights+optimizer {} GiB, "
      "activations {} GiB, total {} GiB\n",
      Gib(input.megatron.weights_and_optimizer_bytes), Gib(input.megatron.activations_bytes),
      Gib(input.megatron.total_bytes));
  for (const std::string& note : input.megatron.notes) out += "  note: " + note + "\n";
  return out;
}

}  // namespace trainscope::report
