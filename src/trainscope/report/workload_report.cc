#include "trainscope/report/workload_report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "trainscope/report/format.h"

namespace trainscope::report {
namespace {

using graph::Op;
using Json = nlohmann::ordered_json;

// JSON string literal of a name (names are ASCII identifiers, but escape defensively).
std::string Quoted(const std::string& text) {
  return Json(text).dump(-1, ' ', false, Json::error_handler_t::replace);
}

void AppendOp(const Op& op, fmt::memory_buffer& out) {
  fmt::format_to(std::back_inserter(out),
                 R"(    {{"id": {}, "phase": "{}", "micro_batch": {}, "model_chunk": {}, )"
                 R"("layer": {}, "name": {}, )",
                 op.id, graph::ToString(op.phase), op.micro_batch, op.model_chunk, op.layer,
                 Quoted(op.name));
  if (op.IsComm()) {
    fmt::format_to(std::back_inserter(out),
                   R"("collective": "{}", "group": "{}", "group_size": {}, "message_bytes": {}, )"
                   R"("peer": {}, )",
                   graph::ToString(op.collective), config::ToString(op.group), op.group_size,
                   op.message_bytes, op.peer);
  } else {
    fmt::format_to(std::back_inserter(out), R"("flops": {}, "bytes": {}, )", op.flops, op.bytes);
    if (op.gemm.m > 0) {
      fmt::format_to(std::back_inserter(out), R"("gemm": {{"m": {}, "n": {}, "k": {}}}, )",
                     op.gemm.m, op.gemm.n, op.gemm.k);
    }
  }
  fmt::format_to(std::back_inserter(out), R"("deps": [{}]}})", fmt::join(op.deps, ", "));
}

// FLOP counts as JSON: an exact integer when it fits in int64, else a double.
Json FlopsJson(long double flops) {
  constexpr long double kInt64Limit = 9223372036854775807.0L;
  if (flops < kInt64Limit) return Json(static_cast<int64_t>(flops));
  return Json(static_cast<double>(flops));
}

// The same for text: thousands separators below 2^63, scientific notation above.
std::string FlopsText(long double flops) {
  constexpr long double kInt64Limit = 9223372036854775807.0L;
  if (flops < kInt64Limit) return WithThousands(static_cast<int64_t>(flops));
  return fmt::format("{:.6e}", static_cast<double>(flops));
}

Json TotalsJson(const WorkloadTotals& totals) {
  Json bytes_by_group = Json::object();
  for (const auto& [group, bytes] : totals.comm_bytes_by_group) bytes_by_group[group] = bytes;
  return Json{{"megatron_model_flops_per_step", FlopsJson(totals.megatron_model_flops_per_step)},
              {"op_flops", FlopsJson(totals.op_flops)},
              {"compute_bytes", totals.compute_bytes},
              {"num_compute_ops", totals.num_compute_ops},
              {"num_comm_ops", totals.num_comm_ops},
              {"comm_bytes_by_group", bytes_by_group}};
}

}  // namespace

WorkloadTotals SumWorkload(const graph::StepGraph& graph,
                           long double megatron_model_flops_per_step) {
  WorkloadTotals totals;
  totals.megatron_model_flops_per_step = megatron_model_flops_per_step;
  for (const Op& op : graph.ops) {
    if (op.IsComm()) {
      ++totals.num_comm_ops;
      totals.comm_bytes_by_group[config::ToString(op.group)] += op.message_bytes;
    } else {
      ++totals.num_compute_ops;
      totals.op_flops += op.flops;
      totals.compute_bytes += op.bytes;
    }
  }
  return totals;
}

std::map<CollectiveKey, int64_t> CountCollectives(const graph::StepGraph& graph) {
  std::map<CollectiveKey, int64_t> counts;
  for (const Op& op : graph.ops) {
    if (!op.IsComm()) continue;
    ++counts[{op.phase, op.collective, config::ToString(op.group), op.group_size,
              op.message_bytes}];
  }
  return counts;
}

std::string RenderWorkloadJson(const graph::StepGraph& graph,
                               long double megatron_model_flops_per_step) {
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out),
                 "{{\n  \"rank\": {},\n  \"pipeline_rank\": {},\n  \"num_micro_batches\": {},\n"
                 "  \"totals\": {},\n  \"ops\": [\n",
                 graph.rank, graph.pipeline_rank, graph.num_micro_batches,
                 TotalsJson(SumWorkload(graph, megatron_model_flops_per_step))
                     .dump(-1, ' ', false, Json::error_handler_t::replace));
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    AppendOp(graph.ops[i], out);
    fmt::format_to(std::back_inserter(out), "{}\n", i + 1 < graph.ops.size() ? "," : "");
  }
  fmt::format_to(std::back_inserter(out), "  ]\n}}\n");
  return fmt::to_string(out);
}

std::string RenderWorkloadSummaryJson(const graph::StepGraph& graph,
                                      long double megatron_model_flops_per_step) {
  Json entries = Json::array();
  for (const auto& [key, count] : CountCollectives(graph)) {
    const auto& [phase, collective, group, group_size, message_bytes] = key;
    entries.push_back({{"phase", graph::ToString(phase)},
                       {"collective", graph::ToString(collective)},
                       {"group", group},
                       {"group_size", group_size},
                       {"message_bytes", message_bytes},
                       {"count", count}});
  }
  const Json out{{"rank", graph.rank},
                 {"pipeline_rank", graph.pipeline_rank},
                 {"num_micro_batches", graph.num_micro_batches},
                 {"num_ops", static_cast<int64_t>(graph.ops.size())},
                 {"collectives", entries},
                 {"totals", TotalsJson(SumWorkload(graph, megatron_model_flops_per_step))}};
  return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string RenderWorkloadSummaryText(const graph::StepGraph& graph,
                                      long double megatron_model_flops_per_step) {
  const WorkloadTotals totals = SumWorkload(graph, megatron_model_flops_per_step);
  std::string out = fmt::format(
      "rank {} (pipeline stage {}), {} micro-batches, {} ops ({} compute, {} communication)\n"
      "megatron model FLOPs per step (all ranks) {}\nop FLOPs on this rank {}\n\n",
      graph.rank, graph.pipeline_rank, graph.num_micro_batches, graph.ops.size(),
      totals.num_compute_ops, totals.num_comm_ops, FlopsText(totals.megatron_model_flops_per_step),
      FlopsText(totals.op_flops));
  out += fmt::format("  {:<10}{:<16}{:<10}{:>6}{:>18}{:>8}\n", "phase", "collective", "group",
                     "size", "message_bytes", "count");
  for (const auto& [key, count] : CountCollectives(graph)) {
    const auto& [phase, collective, group, group_size, message_bytes] = key;
    out += fmt::format("  {:<10}{:<16}{:<10}{:>6}{:>18}{:>8}\n", graph::ToString(phase),
                       graph::ToString(collective), group, group_size, WithThousands(message_bytes),
                       count);
  }
  out += "\nbytes per group\n";
  for (const auto& [group, bytes] : totals.comm_bytes_by_group) {
    out += fmt::format("  {:<10}{:>22}\n", group, WithThousands(bytes));
  }
  return out;
}

}  // namespace trainscope::report
