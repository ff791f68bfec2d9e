// The cost of the CPU-offloaded optimizer's host-side ops (Megatron-Core's HybridDeviceOptimizer,
// optimizer/cpu_offloading/hybrid_optimizer.py): pinned grad/param copies over the GPU's PCIe link
// and the CPU optimizer step on the node's CPUs. Pure functions of the op and the cluster.
#ifndef TRAINSCOPE_COST_HOST_OPTIMIZER_COST_H_
#define TRAINSCOPE_COST_HOST_OPTIMIZER_COST_H_

#include "trainscope/config/cluster.h"
#include "trainscope/graph/op.h"

namespace trainscope::cost {

// True for the ops HostOptimizerSeconds prices (OpKind kHostTransfer and kCpuOptimizer).
[[nodiscard]] bool IsHostOptimizerOp(const graph::Op& op);

// Seconds of a host-side optimizer op on `cluster`. A transfer moves op.bytes over the GPU's
// PCIe link: bytes / pcie_bytes_per_second. A CPU step runs op.flops on the node's CPU optimizer
// throughput, which the node's gpus_per_node ranks share because they all step at once:
// flops · gpus_per_node / cpu_optimizer_flops_per_second; it overlaps the op.bytes of PCIe
// traffic it carries (--overlap-cpu-optimizer-d2h-h2d), so it takes the larger of the two.
// Preconditions (checked): IsHostOptimizerOp(op), positive rates.
[[nodiscard]] double HostOptimizerSeconds(const graph::Op& op, const config::ClusterSpec& cluster);

}  // namespace trainscope::cost

#endif  // TRAINSCOPE_COST_HOST_OPTIMIZER_COST_H_
