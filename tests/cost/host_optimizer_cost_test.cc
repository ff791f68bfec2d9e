// The host-side ops of the CPU-offloaded optimizer, priced against hand-computed rates
// (cost/host_optimizer_cost.h): PCIe copies and the CPU step shared by a node's ranks.
#include "trainscope/cost/host_optimizer_cost.h"

#include <gtest/gtest.h>

namespace trainscope::cost {
namespace {

graph::Op HostOp(graph::OpKind kind, int64_t flops, int64_t bytes) {
  graph::Op op;
  op.role.kind = kind;
  op.flops = flops;
  op.bytes = bytes;
  return op;
}

config::ClusterSpec Cluster() {
  config::ClusterSpec cluster;
  cluster.gpus_per_node = 8;
  cluster.pcie_bytes_per_second = 25e9;
  cluster.cpu_optimizer_flops_per_second = 16e9;
  return cluster;
}

// 1e9 offloaded params: fp32 grads D2H 4e9 B / 25e9 B/s = 0.16 s; bf16 params H2D 2e9 B = 0.08 s.
TEST(HostOptimizerCostTest, TransfersMoveTheirBytesOverPcie) {
  EXPECT_DOUBLE_EQ(HostOptimizerSeconds(HostOp(graph::OpKind::kHostTransfer, 0, 4e9), Cluster()),
                   0.16);
  EXPECT_DOUBLE_EQ(HostOptimizerSeconds(HostOp(graph::OpKind::kHostTransfer, 0, 2e9), Cluster()),
                   0.08);
}

// Adam on 1e9 params = 14e9 FLOPs per rank; 8 ranks share 16e9 FLOP/s: 14e9·8/16e9 = 7 s.
TEST(HostOptimizerCostTest, CpuStepSharesTheNodeAmongItsRanks) {
  EXPECT_DOUBLE_EQ(
      HostOptimizerSeconds(HostOp(graph::OpKind::kCpuOptimizer, 14'000'000'000, 0), Cluster()),
      7.0);
}

// With the overlap the CPU step carries the D2H bytes and takes the longer of the two.
TEST(HostOptimizerCostTest, OverlappedStepTakesTheLongerOfCpuAndPcie) {
  config::ClusterSpec fast_cpu = Cluster();
  fast_cpu.cpu_optimizer_flops_per_second = 1e15;
  EXPECT_DOUBLE_EQ(
      HostOptimizerSeconds(HostOp(graph::OpKind::kCpuOptimizer, 14'000'000'000, 4e9), fast_cpu),
      0.16);
  EXPECT_DOUBLE_EQ(
      HostOptimizerSeconds(HostOp(graph::OpKind::kCpuOptimizer, 14'000'000'000, 4e9), Cluster()),
      7.0);
}

TEST(HostOptimizerCostTest, RecognisesOnlyHostOps) {
  EXPECT_TRUE(IsHostOptimizerOp(HostOp(graph::OpKind::kCpuOptimizer, 0, 0)));
  EXPECT_FALSE(IsHostOptimizerOp(HostOp(graph::OpKind::kOptimizer, 0, 0)));
}

}  // namespace
}  // namespace trainscope::cost
