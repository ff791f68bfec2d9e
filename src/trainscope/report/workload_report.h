// Renders a rank's step graph: every op as JSON (--format json), or a summary with one entry
// per distinct (phase, collective, group, message_bytes) and the step totals (--summary).
// Pure: returns strings; ops are written in id order, summary entries in a fixed key order.
#ifndef TRAINSCOPE_REPORT_WORKLOAD_REPORT_H_
#define TRAINSCOPE_REPORT_WORKLOAD_REPORT_H_

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "trainscope/graph/step_graph.h"

namespace trainscope::report {

// Step totals of one rank.
struct WorkloadTotals {
  long double megatron_model_flops_per_step = 0;  // whole model, Megatron's convention
  long double op_flops = 0;  // sum over this rank's compute ops (exact below 2^64)
  int64_t compute_bytes = 0;
  int64_t num_compute_ops = 0;
  int64_t num_comm_ops = 0;
  std::map<std::string, int64_t> comm_bytes_by_group;  // group name -> message bytes
};

// Key of a summary entry: (phase, collective, group, group_size, message_bytes).
using CollectiveKey = std::tuple<graph::Phase, graph::Collective, std::string, int64_t, int64_t>;

[[nodiscard]] WorkloadTotals SumWorkload(const graph::StepGraph& graph,
                                         long double megatron_model_flops_per_step);
// Counts of each distinct collective of the graph.
[[nodiscard]] std::map<CollectiveKey, int64_t> CountCollectives(const graph::StepGraph& graph);

[[nodiscard]] std::string RenderWorkloadJson(const graph::StepGraph& graph,
                                             long double megatron_model_flops_per_step);
[[nodiscard]] std::string RenderWorkloadSummaryJson(const graph::StepGraph& graph,
                                                    long double megatron_model_flops_per_step);
[[nodiscard]] std::string RenderWorkloadSummaryText(const graph::StepGraph& graph,
                                                    long double megatron_model_flops_per_step);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_WORKLOAD_REPORT_H_
