// The flex dispatcher's hierarchical cost against hand-computed hit probabilities and leg bytes,
// and against the published DeepEP normal-kernel bandwidth table.
#include "trainscope/cost/flex_dispatch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "trainscope/config/hardware.h"
#include "trainscope/error.h"

namespace trainscope::cost {
namespace {

TEST(FlexDispatchTest, HitProbabilityIsOneMinusTheBinomialRatio) {
  // E = 8, k = 2, a rank with 2 experts: 1 − C(6, 2)/C(8, 2) = 1 − 15/28 = 13/28.
  EXPECT_DOUBLE_EQ(HitProbability(2, 8, 2), 13.0 / 28);
  // A domain with 4 of the 8: 1 − C(4, 2)/C(8, 2) = 1 − 6/28 = 22/28.
  EXPECT_DOUBLE_EQ(HitProbability(4, 8, 2), 22.0 / 28);
  // Every expert, or more picks than experts outside the set: always hit.
  EXPECT_DOUBLE_EQ(HitProbability(8, 8, 2), 1.0);
  EXPECT_DOUBLE_EQ(HitProbability(7, 8, 2), 1.0);
  EXPECT_DOUBLE_EQ(HitProbability(0, 8, 2), 0.0);
}

TEST(FlexDispatchTest, OneDomainHasOnlyTheNvlinkLeg) {
  // 4 ranks in one domain, E = 8, k = 2: each rank is hit with 13/28 and receives that share of
  // the tokens of its 3 peers: NVLink 3 · 13/28 · T·b, no RDMA.
  const FlexExchange x{
      .token_bytes = 1000, .num_experts = 8, .top_k = 2, .rank_domain = {0, 0, 0, 0}};
  const FlexLegBytes legs = FlexExchangeBytes(x);
  EXPECT_DOUBLE_EQ(legs.rdma_bytes, 0);
  EXPECT_DOUBLE_EQ(legs.nvlink_bytes, 1000 * 3 * 13.0 / 28);
}

TEST(FlexDispatchTest, TwoDomainsSendOneRowPerRemoteDomain) {
  // 2 domains of 2 ranks, E = 8, k = 2: the remote domain (4 experts) is hit with 22/28, so one
  // RDMA row per token with that probability; each rank forwards to its 1 neighbour the rows of
  // the n/g = 2 ranks on its rail that hit the neighbour (13/28): 2 · 13/28.
  const FlexExchange x{
      .token_bytes = 1000, .num_experts = 8, .top_k = 2, .rank_domain = {0, 0, 1, 1}};
  const FlexLegBytes legs = FlexExchangeBytes(x);
  EXPECT_DOUBLE_EQ(legs.rdma_bytes, 1000 * 22.0 / 28);
  EXPECT_DOUBLE_EQ(legs.nvlink_bytes, 1000 * 2 * 13.0 / 28);
}

TEST(FlexDispatchTest, SkewLoadsTheHottestDomainsNic) {
  // 2 ranks in 2 domains, E = 2, k = 1, shares 3/4 and 1/4: every token of rank 1 goes to
  // domain 0 with probability 3/4, so domain 0's NIC receives 3/4 · T·b (balanced: 1/2).
  const FlexExchange x{.token_bytes = 1000,
                       .num_experts = 2,
                       .top_k = 1,
                       .rank_domain = {0, 1},
                       .expert_shares = {0.75, 0.25}};
  EXPECT_DOUBLE_EQ(FlexExchangeBytes(x).rdma_bytes, 750);
  FlexExchange balanced = x;
  balanced.expert_shares.clear();
  EXPECT_DOUBLE_EQ(FlexExchangeBytes(balanced).rdma_bytes, 500);
}

TEST(FlexDispatchTest, LegsArePipelinedNotAdded) {
  // Two domains as above on an idealised cluster: NVLink 100 B/s, NIC 10 B/s, both at
  // efficiency 1/2, latencies 1 s and 2 s. RDMA 22/28 · 1000 / 5 = 157.14 s, NVLink
  // 2 · 13/28 · 1000 / 50 = 18.57 s: time = 1 + 2 + max = 160.14 s.
  config::ClusterSpec cluster;
  cluster.gpu.nvlink_bytes_per_second = 100;
  cluster.scale_out_bytes_per_second = 10;
  cluster.link.nvlink_latency_seconds = 1;
  cluster.link.scale_out_latency_seconds = 2;
  const FlexDispatchConstants constants{.nvlink_efficiency = 0.5, .rdma_efficiency = 0.5};
  const FlexExchange x{
      .token_bytes = 1000, .num_experts = 8, .top_k = 2, .rank_domain = {0, 0, 1, 1}};
  EXPECT_NEAR(FlexExchangeSeconds(x, cluster, constants), 3 + 1000 * 22.0 / 28 / 5, 1e-9);
  cluster.scale_out_bytes_per_second = 0;
  EXPECT_THAT([&] { (void)FlexExchangeSeconds(x, cluster, constants); },
              testing::ThrowsMessage<InputError>(testing::HasSubstr("scale_out_bytes_per_second")));
}

TEST(FlexDispatchTest, KernelsHoldTheirSmsFromCompute) {
  // 24 of 132 SMs: compute runs at 108/132 of its rate, 24/108 slower.
  EXPECT_DOUBLE_EQ(FlexComputeSlowdown(FlexDispatchConstants{.sm_fraction = 24.0 / 132}),
                   24.0 / 108);
}

// DeepSeek-V3 (n_group 8, topk_group 4): on 8 nodes one group is one node, so a token reaches
// at most 4 nodes (arXiv:2412.19437 §2.1.2, "at most M = 4 nodes"); on 16 nodes a group spans 2
// nodes, so 8; on 4 nodes two groups share a node and the limit maps onto no node count.
TEST(FlexDispatchTest, GroupLimitedRoutingCapsTheDomainsATokenReaches) {
  EXPECT_EQ(GroupLimitedDomains(8, 4, 8), 4);
  EXPECT_EQ(GroupLimitedDomains(8, 4, 16), 8);
  EXPECT_EQ(GroupLimitedDomains(8, 4, 4), 0);
  EXPECT_EQ(GroupLimitedDomains(0, 0, 8), 0);  // no groups (Kimi-K2's n_group 1)
}

// DeepEP's bandwidth accounting (deepseek-ai/DeepEP tests/test_internode.py and
// test_intranode.py): internode "RDMA" GB/s = (token, node) pairs including the local node ·
// hidden bytes / kernel time; intranode "NVL" GB/s = received rows · hidden bytes / time.
// Routing: 4096 tokens, top-8 of 256 experts, node-limited to min(nodes, 4) nodes.
struct DeepEpCase {
  int64_t nodes;
  bool fp8;  // dispatch FP8 (7168 · (1 + 4/128) bytes per row), combine BF16 (7168 · 2)
  double published_gb_per_second;
};

double DeepEpReportedGbPerSecond(const DeepEpCase& c) {
  const int64_t ranks = 8 * c.nodes, experts = 256, top_k = 8, tokens = 4096;
  const int64_t limit = std::min<int64_t>(c.nodes, 4);
  const double row_bytes = c.fp8 ? 7168 * (1 + 4.0 / 128) : 7168 * 2.0;
  FlexExchange x{.token_bytes = tokens * row_bytes,
                 .num_experts = experts,
                 .top_k = top_k,
                 .max_domains_per_token = limit};
  for (int64_t r = 0; r < ranks; ++r) x.rank_domain.push_back(r / 8);
  const config::ClusterSpec cluster = config::DefaultCluster(*config::FindGpu("H800"));
  const double seconds = FlexExchangeSeconds(x, cluster);
  // Independently: the chance that one of the token's `limit` nodes (of 256/N experts each)
  // receives at least one of its 8 experts, times the chance the node is among them.
  const double per_node = static_cast<double>(experts / c.nodes);
  const double pool = per_node * static_cast<double>(limit);
  if (c.nodes == 1) {
    double miss = 1;  // a rank's 32 experts missed by all 8 picks
    for (int i = 0; i < top_k; ++i) miss *= (experts - 32.0 - i) / (experts - i);
    return static_cast<double>(ranks) * tokens * (1 - miss) * row_bytes / seconds / 1e9;
  }
  double miss = 1;
  for (int i = 0; i < top_k; ++i) miss *= (pool - per_node - i) / (pool - i);
  const double node_hit = static_cast<double>(limit) / static_cast<double>(c.nodes) * (1 - miss);
  const double pairs = static_cast<double>(c.nodes) * node_hit;
  return tokens * pairs * row_bytes / seconds / 1e9;
}

TEST(FlexDispatchTest, ReproducesThePublishedDeepEpNormalKernelTable) {
  // deepseek-ai/DeepEP README, normal kernels on H800 (NVLink ≈160 GB/s achieved) with one
  // CX-7 400 Gb/s per GPU, revision 3b1045db43ed232691d32dde0517dfed571b0a65 (after PR #130):
  // intranode EP8 153 / 158 GB/s, internode EP16 43 / 43, EP32 58 / 57, EP64 51 / 50
  // (dispatch FP8 / combine BF16); ../shared/reference/kernel-benchmarks.md §5.1.
  const std::vector<DeepEpCase> table = {
      {1, true, 153}, {1, false, 158}, {2, true, 43}, {2, false, 43},
      {4, true, 58},  {4, false, 57},  {8, true, 51}, {8, false, 50},
  };
  for (const DeepEpCase& c : table) {
    const double model = DeepEpReportedGbPerSecond(c);
    EXPECT_NEAR(model / c.published_gb_per_second, 1.0, 0.10)
        << "EP" << 8 * c.nodes << (c.fp8 ? " dispatch" : " combine") << ": " << model;
  }
}

// Hybrid-EP inside one NVLink domain (deepseek-ai/DeepEP branch hybrid-ep,
// docs/README_Hybrid-EP.md at 94a9f8f6, ../shared/reference/kernel-benchmarks.md §5.4): 4096
// tokens of hidden 7168 in BF16, top-8, uniform routing, 8 local experts per rank (E = 8·n), 16
// SMs; "kernel only" dispatch GB/s = received rows (every rank's rows that reach this rank, its
// own included) · 7168 · 2 bytes / kernel time, the accounting of DeepEP's intranode test above.
// trainscope prices HybridEP's exchange with DeepEP's constants and its host costs apart, so the
// kernel-only column is the one to meet.
double HybridEpKernelGbPerSecond(const std::string& gpu, int64_t ranks) {
  constexpr int64_t kTokens = 4096, kTopK = 8, kLocalExperts = 8;
  constexpr double kRowBytes = 7168 * 2.0;
  const int64_t experts = kLocalExperts * ranks;
  FlexExchange x{.token_bytes = kTokens * kRowBytes, .num_experts = experts, .top_k = kTopK};
  x.rank_domain.assign(static_cast<size_t>(ranks), 0);  // one NVLink domain
  const double seconds = FlexExchangeSeconds(x, config::DefaultCluster(*config::FindGpu(gpu)));
  // Independently: a rank's 8 experts are missed by all 8 picks with probability
  // Π_{i<8} (E − 8 − i)/(E − i).
  double miss = 1;
  for (int64_t i = 0; i < kTopK; ++i) {
    miss *= static_cast<double>(experts - kLocalExperts - i) / static_cast<double>(experts - i);
  }
  return static_cast<double>(ranks * kTokens) * (1 - miss) * kRowBytes / seconds / 1e9;
}

TEST(FlexDispatchTest, ReproducesThePublishedHybridEpKernelTable) {
  // Dispatch BF16, kernel only, 16 SMs: B200 8 ranks 734.95; GB200 8 / 16 / 24 / 32 / 36 ranks
  // 750.15 / 661.93 / 637.80 / 629.79 / 612.85 GB/s.
  const std::vector<std::tuple<std::string, int64_t, double>> table = {
      {"B200", 8, 734.95},   {"GB200", 8, 750.15},  {"GB200", 16, 661.93},
      {"GB200", 24, 637.80}, {"GB200", 32, 629.79}, {"GB200", 36, 612.85},
  };
  for (const auto& [gpu, ranks, published] : table) {
    const double model = HybridEpKernelGbPerSecond(gpu, ranks);
    EXPECT_NEAR(model / published, 1.0, 0.10) << gpu << " " << ranks << " ranks: " << model;
  }
}

}  // namespace
}  // namespace trainscope::cost
