#include "trainscope/cost/host_optimizer_cost.h"

#include <algorithm>

#include "trainscope/error.h"

namespace trainscope::cost {

bool IsHostOptimizerOp(const graph::Op& op) {
  return op.role.kind == graph::OpKind::kHostTransfer ||
         op.role.kind == graph::OpKind::kCpuOptimizer;
}

double HostOptimizerSeconds(const graph::Op& op, const config::ClusterSpec& cluster) {
  TRAINSCOPE_CHECK(IsHostOptimizerOp(op), "HostOptimizerSeconds called on " + op.name);
  TRAINSCOPE_CHECK(cluster.pcie_bytes_per_second > 0 && cluster.cpu_optimizer_flops_per_second > 0,
                   "host optimizer rates must be positive");
  const double transfer_seconds = static_cast<double>(op.bytes) / cluster.pcie_bytes_per_second;
  if (op.role.kind == graph::OpKind::kHostTransfer) return transfer_seconds;
  const double cpu_seconds = static_cast<double>(op.flops) *
                             static_cast<double>(cluster.gpus_per_node) /
                             cluster.cpu_optimizer_flops_per_second;
  return std::max(cpu_seconds, transfer_seconds);
}

}  // namespace trainscope::cost
