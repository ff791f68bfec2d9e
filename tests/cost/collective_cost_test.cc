// Collective cost against the ring formulas and the nccl-tests bus-bandwidth definitions of
// reference/hardware.md §2 (busbw = algbw · 2(n−1)/n for all-reduce, · (n−1)/n for all-gather,
// reduce-scatter and all-to-all, · 1 for send/recv), and against measured busbw figures of §2.
#include "trainscope/cost/collective_cost.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <optional>
#include <vector>

#include "trainscope/error.h"

namespace trainscope::cost {
namespace {

using graph::Collective;

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double kMiB = 1024.0 * 1024;
constexpr double kKiB = 1024.0;

config::GpuSpec Gpu(const char* name) {
  const std::optional<config::GpuSpec> gpu = config::FindGpu(name);
  EXPECT_TRUE(gpu.has_value());
  return *gpu;
}

std::vector<int64_t> Ranks(int64_t first, int64_t count) {
  std::vector<int64_t> ranks(count);
  std::iota(ranks.begin(), ranks.end(), first);
  return ranks;
}

// nccl-tests: algbw = size / time; busbw = algbw · factor (hardware.md §2).
double BusBandwidth(double size_bytes, double seconds, double factor) {
  return size_bytes / seconds * factor;
}

TEST(CollectiveCostTest, RingAllReduceTakesTwoNMinusOneOverNTimesSizeOverBandwidth) {
  const LinkSpec link{.bandwidth_bytes_per_second = 100e9, .latency_seconds = 0};
  EXPECT_DOUBLE_EQ(CollectiveSeconds(Collective::kAllReduce, 8, int64_t{1} << 30, link),
                   2.0 * 7 / 8 * kGiB / 100e9);
}

TEST(CollectiveCostTest, GatherScatterAndAllToAllTakeNMinusOneOverNTimesSizeOverBandwidth) {
  const LinkSpec link{.bandwidth_bytes_per_second = 100e9, .latency_seconds = 0};
  for (const Collective c :
       {Collective::kAllGather, Collective::kReduceScatter, Collective::kAllToAll}) {
    EXPECT_DOUBLE_EQ(CollectiveSeconds(c, 4, int64_t{1} << 30, link), 3.0 / 4 * kGiB / 100e9);
  }
}

TEST(CollectiveCostTest, EveryRingStepPaysTheLatency) {
  const LinkSpec link{.bandwidth_bytes_per_second = 100e9, .latency_seconds = 1e-6};
  // 2(n−1) steps for all-reduce, n−1 for all-gather, 1 for send.
  EXPECT_DOUBLE_EQ(CollectiveSeconds(Collective::kAllReduce, 4, 1000, link),
                   6 * 1e-6 + 2.0 * 3 / 4 * 1000 / 100e9);
  EXPECT_DOUBLE_EQ(CollectiveSeconds(Collective::kAllGather, 4, 1000, link),
                   3 * 1e-6 + 3.0 / 4 * 1000 / 100e9);
  EXPECT_DOUBLE_EQ(CollectiveSeconds(Collective::kSend, 2, 1000, link), 1e-6 + 1000 / 100e9);
}

TEST(CollectiveCostTest, SendAndBroadcastMoveTheWholeTensor) {
  const LinkSpec link{.bandwidth_bytes_per_second = 50e9, .latency_seconds = 0};
  EXPECT_DOUBLE_EQ(CollectiveSeconds(Collective::kRecv, 2, int64_t{1} << 30, link), kGiB / 50e9);
  EXPECT_DOUBLE_EQ(CollectiveSeconds(Collective::kBroadcast, 8, int64_t{1} << 30, link),
                   kGiB / 50e9);
}

TEST(CollectiveCostTest, SingleRankGroupAndEmptyMessageCostNothing) {
  const LinkSpec link{.bandwidth_bytes_per_second = 50e9, .latency_seconds = 1e-5};
  EXPECT_EQ(CollectiveSeconds(Collective::kAllReduce, 1, 1 << 20, link), 0.0);
  EXPECT_EQ(CollectiveSeconds(Collective::kAllGather, 8, 0, link), 0.0);
}

TEST(CollectiveCostTest, GroupInsideOneNodeUsesNvlink) {
  const LinkEfficiency eff;
  const LinkSpec link = GroupLink(Ranks(8, 8), /*gpus_per_nvlink_domain=*/8, Gpu("H100"), eff);
  EXPECT_DOUBLE_EQ(link.bandwidth_bytes_per_second, 450e9 * eff.nvlink_bus_efficiency);
  EXPECT_DOUBLE_EQ(link.latency_seconds, eff.nvlink_latency_seconds);
}

TEST(CollectiveCostTest, GroupWithOneRankPerNodeUsesTheNic) {
  const LinkEfficiency eff;
  // Ranks 0, 8, 16, 24: a DP group with TP = 8, one rank on each of four nodes.
  const LinkSpec link = GroupLink({0, 8, 16, 24}, 8, Gpu("H100"), eff);
  EXPECT_DOUBLE_EQ(link.bandwidth_bytes_per_second, 50e9 * eff.scale_out_bus_efficiency);
  EXPECT_DOUBLE_EQ(link.latency_seconds, eff.scale_out_latency_seconds);
}

TEST(CollectiveCostTest, GroupWithSeveralRanksPerNodeSharesTheirNics) {
  const LinkEfficiency eff;
  // 16 ranks on 4 nodes, 4 per node: NIC busbw · (n−1)/(k−1) = · 15/3 (hardware.md §2.2).
  const LinkSpec link =
      GroupLink({0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27}, 8, Gpu("H100"), eff);
  EXPECT_DOUBLE_EQ(link.bandwidth_bytes_per_second,
                   50e9 * eff.scale_out_bus_efficiency * 15.0 / 3.0);
}

TEST(CollectiveCostTest, Nvl72DomainKeepsSeventyTwoGpusOnNvlink) {
  const LinkEfficiency eff;
  const LinkSpec link = GroupLink(Ranks(0, 72), /*gpus_per_nvlink_domain=*/72, Gpu("GB200"), eff);
  EXPECT_DOUBLE_EQ(link.bandwidth_bytes_per_second, 900e9 * eff.nvlink_bus_efficiency);
}

TEST(CollectiveCostTest, GroupAcrossNodesWithoutScaleOutFigureIsAnInputError) {
  // H20's scale-out NIC is deployment-specific (hardware.md §1), so the preset has none.
  EXPECT_THAT(
      [] {
        (void)GroupLink({0, 8}, 8, Gpu("H20"));
      },
      testing::ThrowsMessage<InputError>(testing::HasSubstr("scale_out_bytes_per_second")));
}

// Measured figures, hardware.md §2. Stated tolerance: 2 % of the measured busbw.
constexpr double kMeasuredTolerance = 0.02;

TEST(CollectiveCostTest, ReproducesH200NvlinkRingBusBandwidthAt16GiB) {
  // 8 x H200 nccl-tests at 16 GiB: all-gather 361.4, reduce-scatter 362.9, all-reduce (NVLS off)
  // 367.2 GB/s (§2.1). H200 and H100 share NVLink4 at 450 GB/s.
  const LinkSpec link = GroupLink(Ranks(0, 8), 8, Gpu("H200"));
  const double size_bytes = 16 * kGiB;
  const int64_t size = int64_t{16} << 30;
  const double ag = CollectiveSeconds(Collective::kAllGather, 8, size, link);
  const double rs = CollectiveSeconds(Collective::kReduceScatter, 8, size, link);
  const double ar = CollectiveSeconds(Collective::kAllReduce, 8, size, link);
  EXPECT_NEAR(BusBandwidth(size_bytes, ag, 7.0 / 8), 361.4e9, kMeasuredTolerance * 361.4e9);
  EXPECT_NEAR(BusBandwidth(size_bytes, rs, 7.0 / 8), 362.9e9, kMeasuredTolerance * 362.9e9);
  EXPECT_NEAR(BusBandwidth(size_bytes, ar, 2.0 * 7 / 8), 367.2e9, kMeasuredTolerance * 367.2e9);
}

TEST(CollectiveCostTest, ReproducesH200SmallMessageAllReduce) {
  // 8 x H200 all-reduce at 32 KiB: busbw 1.44 GB/s (§2.1), latency-dominated.
  const LinkSpec link = GroupLink(Ranks(0, 8), 8, Gpu("H200"));
  const double seconds = CollectiveSeconds(Collective::kAllReduce, 8, 32 * 1024, link);
  EXPECT_NEAR(BusBandwidth(32 * kKiB, seconds, 2.0 * 7 / 8), 1.44e9, kMeasuredTolerance * 1.44e9);
}

TEST(CollectiveCostTest, ReproducesFourNodeB200AllReduce) {
  // 4 x 8 B200 on EFA v4, all-reduce: 381.8 GB/s at 16 GiB and 64.4 GB/s at 16 MiB (§2.2).
  const LinkSpec link = GroupLink(Ranks(0, 32), 8, Gpu("B200"));
  const double large = CollectiveSeconds(Collective::kAllReduce, 32, int64_t{16} << 30, link);
  const double small = CollectiveSeconds(Collective::kAllReduce, 32, int64_t{16} << 20, link);
  EXPECT_NEAR(BusBandwidth(16 * kGiB, large, 2.0 * 31 / 32), 381.8e9, kMeasuredTolerance * 381.8e9);
  EXPECT_NEAR(BusBandwidth(16 * kMiB, small, 2.0 * 31 / 32), 64.4e9, kMeasuredTolerance * 64.4e9);
}

TEST(CollectiveCostTest, DoublingBandwidthNeverSlowsACollective) {
  const LinkSpec slow{.bandwidth_bytes_per_second = 50e9, .latency_seconds = 5e-6};
  const LinkSpec fast{.bandwidth_bytes_per_second = 100e9, .latency_seconds = 5e-6};
  for (const int64_t bytes : {int64_t{0}, int64_t{1024}, int64_t{1} << 30}) {
    EXPECT_LE(CollectiveSeconds(Collective::kAllReduce, 16, bytes, fast),
              CollectiveSeconds(Collective::kAllReduce, 16, bytes, slow));
  }
}

}  // namespace
}  // namespace trainscope::cost
