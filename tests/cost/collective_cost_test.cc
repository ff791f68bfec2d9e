// Collective cost against closed forms worked by hand (an idealised cluster with no size ramp,
// so every term is a latency count or bytes / bandwidth) and against the measured NCCL busbw
// figures cited in docs/cost-model.md. nccl-tests conventions (doc/PERFORMANCE.md): algbw = size /
// time; busbw = algbw · 2(n−1)/n for all-reduce, · (n−1)/n for all-gather and reduce-scatter.
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

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;
constexpr int64_t kGiB = 1024 * kMiB;

constexpr Collective kAllCollectives[] = {Collective::kAllGather, Collective::kReduceScatter,
                                          Collective::kAllReduce, Collective::kAllToAll,
                                          Collective::kBroadcast, Collective::kSend};

config::ClusterSpec Preset(const char* name) {
  const std::optional<config::GpuSpec> gpu = config::FindGpu(name);
  EXPECT_TRUE(gpu.has_value());
  return config::DefaultCluster(gpu.value_or(config::GpuSpec{}));
}

// The preset cluster of `name` on `fabric` instead of its default fabric.
config::ClusterSpec Preset(const char* name, config::ScaleOutFabric fabric) {
  config::ClusterSpec cluster = Preset(name);
  cluster.scale_out_fabric = fabric;
  cluster.link = config::ScaleOutFabricLinks(cluster.link, fabric);
  return cluster;
}

// NVLink 100 GB/s, NIC 10 GB/s, both at full efficiency with no size ramp; 1 µs per NVLink
// step, 10 µs per NIC step; NVLS off unless a test turns it on. Nodes of 8 = domains of 8.
config::ClusterSpec IdealCluster() {
  config::ClusterSpec cluster;
  cluster.gpu = {.name = "ideal", .nvlink_bytes_per_second = 100e9};
  cluster.scale_out_bytes_per_second = 10e9;
  cluster.nvls = false;
  cluster.link = {.nvlink_bus_efficiency = 1,
                  .nvlink_latency_seconds = 1e-6,
                  .nvlink_half_bytes = 0,
                  .nvlink_ramp_exponent = 1,
                  .nvls_efficiency = 0.5,
                  .nvls_latency_seconds = 5e-6,
                  .nvls_min_ranks = 5,
                  .scale_out_bus_efficiency = 1,
                  .scale_out_half_bytes = 0,
                  .scale_out_ramp_exponent = 1,
                  .scale_out_latency_seconds = 10e-6};
  return cluster;
}

std::vector<int64_t> Ranks(int64_t first, int64_t count, int64_t stride = 1) {
  std::vector<int64_t> ranks(count);
  for (int64_t i = 0; i < count; ++i) ranks[i] = first + i * stride;
  return ranks;
}

double Seconds(Collective c, int64_t bytes, const std::vector<int64_t>& ranks,
               const config::ClusterSpec& cluster) {
  return CollectiveSeconds(c, bytes, PlaceGroup(ranks, cluster), cluster);
}

double BusBandwidth(int64_t size_bytes, double seconds, double factor) {
  return static_cast<double>(size_bytes) / seconds * factor;
}

TEST(CollectiveCostTest, PlaceGroupCountsDomainsNodesAndRanksPerDomain) {
  const config::ClusterSpec hgx = Preset("H100");
  // Domains of 8: {0, 1} in domain 0, {8, 9, 10} in domain 1, {16} in domain 2.
  EXPECT_EQ(PlaceGroup({0, 1, 8, 9, 10, 16}, hgx), (GroupPlacement{.num_ranks = 6,
                                                                   .num_domains = 3,
                                                                   .min_ranks_per_domain = 1,
                                                                   .max_ranks_per_domain = 3,
                                                                   .num_nodes = 3}));
  const config::ClusterSpec nvl72 = Preset("GB200");
  // A job's NVL72 domain holds 64 ranks (16 trays of 4): ranks 0-71 are one full domain of 64
  // and 8 ranks of the next, on 18 trays.
  EXPECT_EQ(PlaceGroup(Ranks(0, 72), nvl72), (GroupPlacement{.num_ranks = 72,
                                                             .num_domains = 2,
                                                             .min_ranks_per_domain = 8,
                                                             .max_ranks_per_domain = 64,
                                                             .num_nodes = 18}));
  EXPECT_EQ(PlaceGroup({63, 64}, nvl72).num_domains, 2);
  // With the whole rack (--nvlink-domain 72): one domain of 72.
  config::ClusterSpec rack = nvl72;
  rack.nvlink_domain_gpus = 72;
  EXPECT_EQ(PlaceGroup(Ranks(0, 72), rack).num_domains, 1);
  EXPECT_EQ(PlaceGroup({71, 72}, rack).num_domains, 2);
}

// Unsorted ranks are placed as their sorted list; the order a group lists them in is irrelevant.
TEST(CollectiveCostTest, PlaceGroupIgnoresTheOrderOfRanks) {
  const config::ClusterSpec hgx = Preset("H100");
  EXPECT_EQ(PlaceGroup({16, 9, 0, 10, 1, 8}, hgx), PlaceGroup({0, 1, 8, 9, 10, 16}, hgx));
  const config::ClusterSpec nvl72 = Preset("GB200");
  // {3, 80, 4}: domains 0 (3, 4) and 1 (80); trays of 4: 0 (3), 1 (4), 20 (80).
  EXPECT_EQ(PlaceGroup({80, 3, 4}, nvl72), (GroupPlacement{.num_ranks = 3,
                                                           .num_domains = 2,
                                                           .min_ranks_per_domain = 1,
                                                           .max_ranks_per_domain = 2,
                                                           .num_nodes = 3}));
}

// The data-parallel group of 10^7 GPUs at TP 1 (the largest world the input contract allows):
// 10^7 / 8 domains and nodes of 8 ranks each. It is placed in one pass (it took seconds with a
// per-domain tree; a fuzz case timed out on it under the sanitizers).
TEST(CollectiveCostTest, PlaceGroupPlacesATenMillionRankGroup) {
  const int64_t num_ranks = 10'000'000;
  EXPECT_EQ(PlaceGroup(Ranks(0, num_ranks), Preset("H100")),
            (GroupPlacement{.num_ranks = num_ranks,
                            .num_domains = num_ranks / 8,
                            .min_ranks_per_domain = 8,
                            .max_ranks_per_domain = 8,
                            .num_nodes = num_ranks / 8}));
}

TEST(CollectiveCostTest, LinkClassFollowsTheDomains) {
  const config::ClusterSpec hgx = Preset("H100");
  EXPECT_EQ(LinkOf(PlaceGroup(Ranks(8, 8), hgx)), LinkClass::kNvlink);
  EXPECT_EQ(LinkOf(PlaceGroup({7, 8}, hgx)), LinkClass::kScaleOut);
  EXPECT_EQ(LinkOf(PlaceGroup(Ranks(0, 64), Preset("GB200"))), LinkClass::kNvlink);
}

TEST(CollectiveCostTest, RingInsideOneDomainFollowsTheBusFactors) {
  const config::ClusterSpec cluster = IdealCluster();
  const int64_t s = 1'000'000'000;
  const std::vector<int64_t> four = Ranks(0, 4);
  // (n−1)·α + (n−1)/n · S / B = 3 µs + 0.75 · 1e9 / 100e9.
  for (const Collective c :
       {Collective::kAllGather, Collective::kReduceScatter, Collective::kAllToAll}) {
    EXPECT_DOUBLE_EQ(Seconds(c, s, four, cluster), 3e-6 + 7.5e-3);
  }
  // 2(n−1)·α + 2(n−1)/n · S / B = 6 µs + 1.5 · 1e9 / 100e9.
  EXPECT_DOUBLE_EQ(Seconds(Collective::kAllReduce, s, four, cluster), 6e-6 + 15e-3);
  // Broadcast: (n−1)·α + S / B; send: α + S / B.
  EXPECT_DOUBLE_EQ(Seconds(Collective::kBroadcast, s, four, cluster), 3e-6 + 10e-3);
  EXPECT_DOUBLE_EQ(Seconds(Collective::kSend, s, {0, 1}, cluster), 1e-6 + 10e-3);
  EXPECT_DOUBLE_EQ(Seconds(Collective::kRecv, s, {0, 1}, cluster), 1e-6 + 10e-3);
}

TEST(CollectiveCostTest, NvlsAllReduceIsUsedFromFiveRanksWhenFaster) {
  config::ClusterSpec cluster = IdealCluster();
  cluster.nvls = true;
  const int64_t s = 1'000'000'000;
  // 8 ranks: ring 14 µs + 1.75e9/100e9 = 17.514 ms; NVLS 5 µs + 1e9/(0.5 · 100e9) = 20.005 ms.
  EXPECT_DOUBLE_EQ(Seconds(Collective::kAllReduce, s, Ranks(0, 8), cluster), 14e-6 + 17.5e-3);
  // At full NVLS efficiency NVLS takes 5 µs + 10 ms and wins.
  cluster.link.nvls_efficiency = 1;
  EXPECT_DOUBLE_EQ(Seconds(Collective::kAllReduce, s, Ranks(0, 8), cluster), 5e-6 + 10e-3);
  // 4 ranks stay on Ring (NCCL's choice, stas00/ml-engineering network/README.md): 6 µs + 15 ms.
  EXPECT_DOUBLE_EQ(Seconds(Collective::kAllReduce, s, Ranks(0, 4), cluster), 6e-6 + 15e-3);
  // NVLS applies to all-reduce only.
  EXPECT_DOUBLE_EQ(Seconds(Collective::kAllGather, s, Ranks(0, 8), cluster), 7e-6 + 8.75e-3);
}

TEST(CollectiveCostTest, HierarchicalAllReducePipelinesNvlinkAndNicPhases) {
  const config::ClusterSpec cluster = IdealCluster();
  // 4 domains x 8 ranks, S = 1e9. NVLink RS + AG: 2·7 µs, 1.75e9 / 100e9 = 17.5 ms. Shard per
  // NIC 1.25e8. Ring: 2·3 steps · 10 µs, 1.5 · 1.25e8 / 10e9 = 18.75 ms. Tree: 2·2 steps,
  // 2 · 1.25e8 / 10e9 = 25 ms. Ring wins: 14 µs + 60 µs + max(17.5, 18.75) ms.
  EXPECT_DOUBLE_EQ(Seconds(Collective::kAllReduce, 1'000'000'000, Ranks(0, 32), cluster),
                   14e-6 + 60e-6 + 18.75e-3);
}

TEST(CollectiveCostTest, TreeAllReduceWinsForSmallMessagesOnManyDomains) {
  const config::ClusterSpec cluster = IdealCluster();
  // 64 domains, one rank each, 1000 bytes. Ring: 126 steps · 10 µs = 1.26 ms. Tree:
  // 2·log2(64) = 12 steps · 10 µs + 2 · 1000 / 10e9 = 120.2 µs.
  EXPECT_DOUBLE_EQ(Seconds(Collective::kAllReduce, 1000, Ranks(0, 64, 8), cluster), 120e-6 + 2e-7);
}

TEST(CollectiveCostTest, AllGatherAndBroadcastAcrossDomainsUseOneRingPerNic) {
  const config::ClusterSpec cluster = IdealCluster();
  const int64_t s = 1'000'000'000;
  // AG/RS, 4 x 8: 7 µs + 3 · 10 µs + max(7/8 · 1e9 / 100e9, 3/4 · 1.25e8 / 10e9) =
  // 37 µs + max(8.75, 9.375) ms.
  EXPECT_DOUBLE_EQ(Seconds(Collective::kAllGather, s, Ranks(0, 32), cluster), 37e-6 + 9.375e-3);
  EXPECT_DOUBLE_EQ(Seconds(Collective::kReduceScatter, s, Ranks(0, 32), cluster), 37e-6 + 9.375e-3);
  // Broadcast: 2·7 µs + 3 · 10 µs + max(2 · 7/8 · 1e9 / 100e9, 1.25e8 / 10e9) = 44 µs + 17.5 ms.
  EXPECT_DOUBLE_EQ(Seconds(Collective::kBroadcast, s, Ranks(0, 32), cluster), 44e-6 + 17.5e-3);
  // Uneven: {0, 1, 2, 3} and {8}. The lone rank's NIC carries half the output; the full domain
  // runs a 4-rank NVLink ring: 3 µs + 10 µs + max(0.75e9 / 100e9, 0.5 · 1e9 / 10e9).
  EXPECT_DOUBLE_EQ(Seconds(Collective::kAllGather, s, {0, 1, 2, 3, 8}, cluster), 13e-6 + 50e-3);
}

TEST(CollectiveCostTest, AllToAllAcrossDomainsTakesTheSlowerOfNicAndNvlink) {
  const config::ClusterSpec cluster = IdealCluster();
  // 32 ranks, 4 x 8, S = 1e9: 24/32 of it to remote peers through the NIC (24 · 10 µs +
  // 0.75e9 / 10e9 = 75.24 ms); 7/32 to same-domain peers over NVLink (7 µs + 2.1875 ms).
  EXPECT_DOUBLE_EQ(Seconds(Collective::kAllToAll, 1'000'000'000, Ranks(0, 32), cluster),
                   240e-6 + 75e-3);
  // With a NIC 100x faster the NVLink part dominates: 7 µs + 0.21875e9 / 100e9.
  config::ClusterSpec fast_nic = cluster;
  fast_nic.scale_out_bytes_per_second = 1e12;
  fast_nic.link.scale_out_latency_seconds = 0;
  EXPECT_DOUBLE_EQ(Seconds(Collective::kAllToAll, 1'000'000'000, Ranks(0, 32), fast_nic),
                   7e-6 + 2.1875e-3);
}

TEST(CollectiveCostTest, SendAcrossDomainsUsesOneNic) {
  // α + S / NIC = 10 µs + 1e9 / 10e9.
  EXPECT_DOUBLE_EQ(Seconds(Collective::kSend, 1'000'000'000, {0, 8}, IdealCluster()), 10e-6 + 0.1);
}

TEST(CollectiveCostTest, BusBandwidthIsHalfThePeakAtTheHalfSize) {
  config::ClusterSpec cluster = IdealCluster();
  cluster.link.nvlink_latency_seconds = 0;
  cluster.link.nvlink_half_bytes = 1e6;
  cluster.link.nvlink_ramp_exponent = 0.5;
  // busbw(S) = peak / (1 + (h/S)^p): at S = h, 1 + 1 = 2 whatever p is. Two-rank all-gather of
  // 1e6 bytes: 0.5e6 / 100e9 · 2 = 10 µs.
  EXPECT_DOUBLE_EQ(Seconds(Collective::kAllGather, 1'000'000, {0, 1}, cluster), 10e-6);
  // At S = 100 h: 1 + (1/100)^0.5 = 1.1.
  EXPECT_DOUBLE_EQ(Seconds(Collective::kAllGather, 100'000'000, {0, 1}, cluster),
                   0.5e8 / 100e9 * 1.1);
}

TEST(CollectiveCostTest, SingleRankGroupAndEmptyMessageCostNothing) {
  const config::ClusterSpec cluster = Preset("H100");
  EXPECT_EQ(Seconds(Collective::kAllReduce, kMiB, {3}, cluster), 0.0);
  EXPECT_EQ(Seconds(Collective::kAllGather, 0, Ranks(0, 32), cluster), 0.0);
  EXPECT_GT(Seconds(Collective::kSend, kMiB, {0, 1}, cluster), 0.0);
}

TEST(CollectiveCostTest, GroupAcrossDomainsWithoutScaleOutFigureIsAnInputError) {
  // H20's scale-out NIC is deployment-specific (no published figure), so the preset has none.
  const config::ClusterSpec cluster = Preset("H20");
  EXPECT_THAT(
      [&] {
        (void)Seconds(Collective::kAllReduce, kMiB, {0, 8}, cluster);
      },
      testing::ThrowsMessage<InputError>(testing::HasSubstr("scale_out_bytes_per_second")));
}

TEST(CollectiveCostTest, SharedLinkStretchesTheOverlappedPart) {
  // Alone 10 ms. Shared with one other transfer for its whole run: 20 ms.
  EXPECT_DOUBLE_EQ(SharedLinkSeconds(10e-3, 1.0, 2), 20e-3);
  // Shared for the first 4 ms: 2 ms of work done, 8 ms left alone: 12 ms.
  EXPECT_DOUBLE_EQ(SharedLinkSeconds(10e-3, 4e-3, 2), 12e-3);
  // Three sharers for 6 ms: 2 ms done, 8 ms left: 14 ms. No sharing: unchanged.
  EXPECT_DOUBLE_EQ(SharedLinkSeconds(10e-3, 6e-3, 3), 14e-3);
  EXPECT_DOUBLE_EQ(SharedLinkSeconds(10e-3, 5e-3, 1), 10e-3);
}

// Measured figures, stas00/ml-engineering network/README.md: nccl-tests on 8 x H200 at 16 GiB,
// all-gather 361.4, reduce-scatter 362.9, all-reduce with NVLS off 367.2, with NVLS 482.3 (torch
// sweep) GB/s.
TEST(CollectiveCostTest, ReproducesH200BusBandwidthAt16GiB) {
  config::ClusterSpec cluster = Preset("H200");
  const int64_t s = 16 * kGiB;
  const std::vector<int64_t> eight = Ranks(0, 8);
  EXPECT_NEAR(BusBandwidth(s, Seconds(Collective::kAllGather, s, eight, cluster), 7.0 / 8), 361.4e9,
              0.02 * 361.4e9);
  EXPECT_NEAR(BusBandwidth(s, Seconds(Collective::kReduceScatter, s, eight, cluster), 7.0 / 8),
              362.9e9, 0.02 * 362.9e9);
  EXPECT_NEAR(BusBandwidth(s, Seconds(Collective::kAllReduce, s, eight, cluster), 1.75), 482.3e9,
              0.02 * 482.3e9);
  cluster.nvls = false;
  EXPECT_NEAR(BusBandwidth(s, Seconds(Collective::kAllReduce, s, eight, cluster), 1.75), 367.2e9,
              0.02 * 367.2e9);
}

// stas00/ml-engineering network/README.md, 8 x H200 all-reduce sweep (torch all_reduce_bench.py,
// NCCL 2.27.7, NVLS on): busbw in GB/s from 32 KiB to 16 GiB. Every point within 10 %.
TEST(CollectiveCostTest, ReproducesH200AllReduceSweep) {
  const config::ClusterSpec cluster = Preset("H200");
  const struct {
    int64_t bytes;
    double busbw_gb_per_second;
  } kSweep[] = {{32 * kKiB, 1.44},   {64 * kKiB, 2.93},   {128 * kKiB, 5.73},  {256 * kKiB, 11.7},
                {512 * kKiB, 23.9},  {1 * kMiB, 39.9},    {2 * kMiB, 64.5},    {4 * kMiB, 107.2},
                {8 * kMiB, 155.5},   {16 * kMiB, 219.9},  {32 * kMiB, 275.8},  {64 * kMiB, 346.5},
                {128 * kMiB, 401.9}, {256 * kMiB, 436.2}, {512 * kMiB, 450.3}, {1 * kGiB, 463.6},
                {4 * kGiB, 473.1},   {16 * kGiB, 482.3}};
  for (const auto& point : kSweep) {
    SCOPED_TRACE(point.bytes);
    const double seconds = Seconds(Collective::kAllReduce, point.bytes, Ranks(0, 8), cluster);
    EXPECT_NEAR(BusBandwidth(point.bytes, seconds, 1.75) / 1e9, point.busbw_gb_per_second,
                0.10 * point.busbw_gb_per_second);
  }
}

// stas00/ml-engineering network/README.md, NVLS gain by GPU count at 8 GiB: 4 GPUs Ring 363.3; NVLS
// 414.2, 435.6, 460.0, 473.1 GB/s for 5..8 GPUs. Within 6 %.
TEST(CollectiveCostTest, ReproducesNvlsGainByGpuCount) {
  const config::ClusterSpec cluster = Preset("H200");
  const double measured[] = {363.3, 414.2, 435.6, 460.0, 473.1};
  for (int64_t n = 4; n <= 8; ++n) {
    SCOPED_TRACE(n);
    const double seconds = Seconds(Collective::kAllReduce, 8 * kGiB, Ranks(0, n), cluster);
    const double factor = 2.0 * static_cast<double>(n - 1) / static_cast<double>(n);
    EXPECT_NEAR(BusBandwidth(8 * kGiB, seconds, factor) / 1e9, measured[n - 4],
                0.06 * measured[n - 4]);
  }
}

// torch all_reduce_bench.py: 4 x 8 B200 on EFA v4, all-reduce busbw 64.4 (16 MiB), 156.7 (64 MiB),
// 229.1 (256 MiB), 362.0 (1 GiB), 381.8 (16 GiB) GB/s; bus factor 2 · 31/32. Within 8.5 %.
TEST(CollectiveCostTest, ReproducesFourNodeB200AllReduceSweep) {
  const config::ClusterSpec cluster = Preset("B200", config::ScaleOutFabric::kEfa);
  const struct {
    int64_t bytes;
    double busbw_gb_per_second;
  } kSweep[] = {{16 * kMiB, 64.4},
                {64 * kMiB, 156.7},
                {256 * kMiB, 229.1},
                {1 * kGiB, 362.0},
                {16 * kGiB, 381.8}};
  for (const auto& point : kSweep) {
    SCOPED_TRACE(point.bytes);
    const double seconds = Seconds(Collective::kAllReduce, point.bytes, Ranks(0, 32), cluster);
    EXPECT_NEAR(BusBandwidth(point.bytes, seconds, 2.0 * 31 / 32) / 1e9, point.busbw_gb_per_second,
                0.085 * point.busbw_gb_per_second);
  }
}

// NVIDIA/nccl-tests #232: 2 ranks (one H100 per node, ConnectX-7 over the NCCL IB-verbs
// transport), all-reduce out-of-place busbw 18.53 (2 MiB), 27.16 (4 MiB), 36.24 (8 MiB), 39.90
// (16 MiB), 41.31 (32 MiB) GB/s; bus factor 2 · 1/2. The run's level is its own (a 4-NIC setup
// left unresolved in the thread), so the NIC rate is set to give the fitted plateau, 54.6 GB/s,
// at the InfiniBand efficiency: the test checks the shape of the ramp, within 8 %.
TEST(CollectiveCostTest, InfiniBandRampReproducesConnectX7Sweep) {
  config::ClusterSpec cluster = Preset("H100", config::ScaleOutFabric::kInfiniBand);
  cluster.gpus_per_node = 1;
  cluster.nvlink_domain_gpus = 1;
  cluster.scale_out_bytes_per_second = 54.6e9 / cluster.link.scale_out_bus_efficiency;
  const struct {
    int64_t bytes;
    double busbw_gb_per_second;
  } kSweep[] = {{2 * kMiB, 18.53},
                {4 * kMiB, 27.16},
                {8 * kMiB, 36.24},
                {16 * kMiB, 39.90},
                {32 * kMiB, 41.31}};
  for (const auto& point : kSweep) {
    SCOPED_TRACE(point.bytes);
    const double seconds = Seconds(Collective::kAllReduce, point.bytes, {0, 1}, cluster);
    EXPECT_NEAR(BusBandwidth(point.bytes, seconds, 1.0) / 1e9, point.busbw_gb_per_second,
                0.08 * point.busbw_gb_per_second);
  }
}

// InfiniBand level: 4 x 8 H100 on NDR (one 400 Gb/s CX-7 per GPU), all-reduce at 8 GiB, about
// 380 GB/s busbw (NVIDIA/nccl #1649: multi-node all-reduce without SHARP; NVIDIA/nccl-tests
// #290: 46-48 GB/s per NDR NIC, x 8 NICs = 368-384). Within 3 %.
TEST(CollectiveCostTest, InfiniBandReproducesFourNodeH100AllReduceBusBandwidth) {
  const config::ClusterSpec cluster = Preset("H100");
  ASSERT_EQ(cluster.scale_out_fabric, config::ScaleOutFabric::kInfiniBand);
  const double seconds = Seconds(Collective::kAllReduce, 8 * kGiB, Ranks(0, 32), cluster);
  EXPECT_NEAR(BusBandwidth(8 * kGiB, seconds, 2.0 * 31 / 32) / 1e9, 380, 0.03 * 380);
}

// InfiniBand hop latency: NVIDIA/nccl #1244, 2 x 8 H20 with 16 CX-7 on NDR, NVLSTree all-reduce
// of 4-64 bytes in 46.25-47.60 us. Within 5 % of 46.3 us.
TEST(CollectiveCostTest, InfiniBandReproducesTwoNodeSmallMessageLatency) {
  const config::ClusterSpec cluster = Preset("H20", config::ScaleOutFabric::kInfiniBand);
  config::ClusterSpec with_nic = cluster;
  with_nic.scale_out_bytes_per_second = 50e9;  // H20 has no NIC figure; 400 Gb/s NDR
  const double seconds = Seconds(Collective::kAllReduce, 8, Ranks(0, 16), with_nic);
  EXPECT_NEAR(seconds * 1e6, 46.3, 0.05 * 46.3);
}

// RoCE level: 4 x 8 H100 with 8 x 400G RoCE, about 320 GB/s all-reduce busbw at 4-8 GiB
// (NVIDIA/nccl #1221, NVLS on or off beyond 2 nodes). Within 3 %.
TEST(CollectiveCostTest, RoceReproducesFourNodeH100AllReduceBusBandwidth) {
  const config::ClusterSpec cluster = Preset("H100", config::ScaleOutFabric::kRoce);
  const double seconds = Seconds(Collective::kAllReduce, 8 * kGiB, Ranks(0, 32), cluster);
  EXPECT_NEAR(BusBandwidth(8 * kGiB, seconds, 2.0 * 31 / 32) / 1e9, 320, 0.03 * 320);
}

// The same 4 x 8 B200 all-reduce is never slower on InfiniBand than on EFA: the same NIC rate,
// a faster ramp and a shorter hop.
TEST(CollectiveCostTest, InfiniBandIsNeverSlowerThanEfaAtSmallAndMidSizes) {
  const config::ClusterSpec ib = Preset("B200", config::ScaleOutFabric::kInfiniBand);
  const config::ClusterSpec efa = Preset("B200", config::ScaleOutFabric::kEfa);
  for (const int64_t bytes : {kKiB, kMiB, 16 * kMiB, 256 * kMiB}) {
    EXPECT_LT(Seconds(Collective::kAllReduce, bytes, Ranks(0, 32), ib),
              Seconds(Collective::kAllReduce, bytes, Ranks(0, 32), efa))
        << bytes;
  }
}

// Groups of every shape the simulator meets: one domain, even and uneven spans, one rank per
// domain, and an NVL72 domain.
std::vector<std::vector<int64_t>> Shapes() {
  return {Ranks(0, 8), Ranks(0, 32), {0, 1, 2, 3, 8}, Ranks(0, 64, 8), {0, 8}};
}

TEST(CollectiveCostTest, DoublingNvlinkBandwidthNeverSlowsACollective) {
  for (const char* gpu : {"H100", "B200", "GB200"}) {
    const config::ClusterSpec slow = Preset(gpu);
    config::ClusterSpec fast = slow;
    fast.gpu.nvlink_bytes_per_second *= 2;
    for (const std::vector<int64_t>& ranks : Shapes()) {
      for (const Collective c : kAllCollectives) {
        for (const int64_t bytes : {kKiB, kMiB, 64 * kMiB, 4 * kGiB}) {
          EXPECT_LE(Seconds(c, bytes, ranks, fast), Seconds(c, bytes, ranks, slow))
              << gpu << " " << graph::ToString(c) << " " << bytes;
        }
      }
    }
  }
}

TEST(CollectiveCostTest, MoreBytesAreNeverFaster) {
  for (const char* gpu : {"H200", "B200", "GB200"}) {
    const config::ClusterSpec cluster = Preset(gpu);
    for (const std::vector<int64_t>& ranks : Shapes()) {
      for (const Collective c : kAllCollectives) {
        double previous = 0;
        for (int64_t bytes = 1; bytes <= 64 * kGiB; bytes *= 4) {
          const double seconds = Seconds(c, bytes, ranks, cluster);
          EXPECT_GE(seconds, previous) << gpu << " " << graph::ToString(c) << " " << bytes;
          previous = seconds;
        }
      }
    }
  }
}

}  // namespace
}  // namespace trainscope::cost
