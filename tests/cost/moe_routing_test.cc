// MoE routing skew against hand-computed Zipf shares and per-rank sums of small histograms.
#include "trainscope/cost/moe_routing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "trainscope/error.h"

namespace trainscope::cost {
namespace {

TEST(MoeRoutingTest, ForcedBalanceHasLoadFactorOne) {
  EXPECT_EQ(BusiestRankLoadFactor(RoutingSkew{}, 64, 8, 8), 1.0);
}

TEST(MoeRoutingTest, ZipfSharesAreNormalisedInversePowers) {
  // s = 1, E = 4: weights 1, 1/2, 1/3, 1/4, total 25/12 -> 12/25, 6/25, 4/25, 3/25. With
  // top_k = 1 the cap is 1, so nothing is capped.
  const std::vector<double> shares = ZipfExpertShares(1.0, 4, 1);
  ASSERT_EQ(shares.size(), 4u);
  EXPECT_DOUBLE_EQ(shares[0], 12.0 / 25);
  EXPECT_DOUBLE_EQ(shares[1], 6.0 / 25);
  EXPECT_DOUBLE_EQ(shares[2], 4.0 / 25);
  EXPECT_DOUBLE_EQ(shares[3], 3.0 / 25);
}

TEST(MoeRoutingTest, ZipfLoadFactorOfASmallCaseByHand) {
  // Same shares on ep = 2: rank 0 holds experts 0 and 1, 18/25 of the tokens; the mean rank
  // holds 1/2: factor 2 · 18/25 = 36/25 = 1.44. top_k = 2 caps at 1/2 > 12/25, so no change.
  const RoutingSkew skew{.zipf_exponent = 1.0, .placement = ExpertPlacement::kContiguous};
  EXPECT_DOUBLE_EQ(BusiestRankLoadFactor(skew, 4, 1, 2), 36.0 / 25);
  EXPECT_DOUBLE_EQ(BusiestRankLoadFactor(skew, 4, 2, 2), 36.0 / 25);
}

TEST(MoeRoutingTest, ZipfSharesAreCappedAtOneOverTopK) {
  // s = 2, E = 4, top_k = 2: weights 1, 1/4, 1/9, 1/16 (total 205/144) give p0 = 144/205 > 1/2,
  // so p0 = 1/2 and the other half is shared by 1/4 : 1/9 : 1/16 = 36 : 16 : 9 (total 61):
  // p1 = 18/61, p2 = 8/61, p3 = 4.5/61, all below 1/2.
  const std::vector<double> shares = ZipfExpertShares(2.0, 4, 2);
  EXPECT_DOUBLE_EQ(shares[0], 0.5);
  EXPECT_DOUBLE_EQ(shares[1], 18.0 / 61);
  EXPECT_DOUBLE_EQ(shares[2], 8.0 / 61);
  EXPECT_DOUBLE_EQ(shares[3], 4.5 / 61);
  // ep = 2: rank 0 = 1/2 + 18/61 = 97/122, factor 2 · 97/122 = 97/61.
  EXPECT_DOUBLE_EQ(
      BusiestRankLoadFactor(
          RoutingSkew{.zipf_exponent = 2.0, .placement = ExpertPlacement::kContiguous}, 4, 2, 2),
      97.0 / 61);
}

TEST(MoeRoutingTest, DirectLoadFactorIsReturnedAsGiven) {
  EXPECT_DOUBLE_EQ(BusiestRankLoadFactor(RoutingSkew{.load_factor = 1.5}, 4, 1, 2), 1.5);
}

TEST(MoeRoutingTest, DirectLoadFactorSharesLoadRankZero) {
  // E = 4, k = 1, ep = 2, F = 1.5: rank 0 (experts 0, 1) holds 1.5/2 = 3/4 of the assignments,
  // 3/8 each; experts 2 and 3 share 1/4, 1/8 each. Those shares give the same factor back.
  const std::vector<double> shares = ExpertShares(RoutingSkew{.load_factor = 1.5}, 4, 1, 2);
  EXPECT_EQ(shares, (std::vector<double>{0.375, 0.375, 0.125, 0.125}));
  EXPECT_DOUBLE_EQ(BusiestRankLoadFactor(RoutingSkew{.expert_tokens = shares}, 4, 1, 2), 1.5);
}

TEST(MoeRoutingTest, DirectLoadFactorBeyondTheLayoutNamesTheFlag) {
  // E = 4, k = 2, ep = 2: a rank's 2 experts receive at most 2 · 1/2 = all tokens, factor <= 2.
  EXPECT_DOUBLE_EQ(BusiestRankLoadFactor(RoutingSkew{.load_factor = 2.0}, 4, 2, 2), 2.0);
  EXPECT_THAT([] { (void)BusiestRankLoadFactor(RoutingSkew{.load_factor = 2.5}, 4, 2, 2); },
              testing::ThrowsMessage<InputError>(testing::HasSubstr("--moe-routing-skew")));
}

TEST(MoeRoutingTest, ZipfExponentZeroIsBalanced) {
  EXPECT_DOUBLE_EQ(BusiestRankLoadFactor(RoutingSkew{.zipf_exponent = 0.0}, 64, 8, 8), 1.0);
}

TEST(MoeRoutingTest, EveryExpertPickedByEveryTokenIsBalanced) {
  // top_k = E: every share is capped at 1/E, whatever the exponent.
  EXPECT_DOUBLE_EQ(BusiestRankLoadFactor(RoutingSkew{.zipf_exponent = 3.0}, 4, 4, 2), 1.0);
}

TEST(MoeRoutingTest, OneExpertParallelRankIsAlwaysBalanced) {
  EXPECT_DOUBLE_EQ(BusiestRankLoadFactor(RoutingSkew{.zipf_exponent = 1.5}, 8, 2, 1), 1.0);
}

TEST(MoeRoutingTest, HistogramLoadFactorIsBusiestRankOverMean) {
  // Experts 10, 30 | 20, 40 on ep = 2: ranks 40 and 60, mean 50 -> 1.2. On ep = 4 the busiest
  // expert, 40, over the mean 25 -> 1.6.
  const RoutingSkew skew{.expert_tokens = {10, 30, 20, 40}, .source = "h.csv"};
  EXPECT_DOUBLE_EQ(BusiestRankLoadFactor(skew, 4, 2, 2), 1.2);
  EXPECT_DOUBLE_EQ(BusiestRankLoadFactor(skew, 4, 2, 4), 1.6);
}

TEST(MoeRoutingTest, HistogramWithWrongNumberOfExpertsNamesTheFile) {
  const RoutingSkew skew{.expert_tokens = {1, 2, 3}, .source = "routing/hist.csv"};
  EXPECT_THAT([&] { (void)BusiestRankLoadFactor(skew, 4, 2, 2); },
              testing::ThrowsMessage<InputError>(testing::AllOf(
                  testing::HasSubstr("routing/hist.csv"), testing::HasSubstr("got 3"))));
}

TEST(MoeRoutingTest, RandomPlacementTakesTheMedianPairing) {
  // E = 4, k = 2, s = 2: shares 1/2, 18/61, 8/61, 4.5/61 in popularity order (test above). On
  // ep = 2 ranks of two experts a random placement pairs the most popular expert with one of the
  // other three, each with probability 1/3: busiest rank 48.5/61, 38.5/61 or 35/61 of the
  // assignments, factors 97/61, 77/61 and 70/61. The median placement is the middle one.
  const RoutingSkew skew{.zipf_exponent = 2.0};
  EXPECT_DOUBLE_EQ(BusiestRankLoadFactor(skew, 4, 2, 2), 77.0 / 61);
  // Its shares are a permutation of the Zipf shares with the same busiest rank.
  std::vector<double> shares = ExpertShares(skew, 4, 2, 2);
  EXPECT_DOUBLE_EQ(std::max(shares[0] + shares[1], shares[2] + shares[3]), 38.5 / 61);
  std::sort(shares.begin(), shares.end());
  EXPECT_DOUBLE_EQ(shares[3], 0.5);
  EXPECT_DOUBLE_EQ(shares[0], 4.5 / 61);
}

}  // namespace
}  // namespace trainscope::cost
