// slime's dynamic batching (slime/utils/dp_schedule.py, build_dp_schedule) against packings
// worked by hand: first fit in sample order, the largest multi-sample bin split until the bin
// count is a multiple of d, bins dealt round-robin, slime's padding.
#include "trainscope/cost/dynamic_batching.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace trainscope::cost {
namespace {

using ::testing::ElementsAre;

TEST(DynamicBatchingTest, PacksFirstFitInSampleOrderAndSplitsToAMultipleOfDp) {
  // Capacity 4 tokens/GPU · c 2 = 8. First fit in order:
  //   5 -> bin0 (5); 3 -> bin0 (8); 4 -> bin1 (4); 2 -> bin1 (6); 6 -> bin2 (6); 1 -> bin1 (7).
  // K = 3 bins, d = 2 -> 4 needed: split the fullest multi-sample bin, bin0 {5, 3} (8 > 7):
  // 5 to the first half, 3 to the second (appended). Bins {0} {2,3,5} {4} {1}; rank 0 runs bins
  // 0 and 2, rank 1 bins 1 and 3.
  const std::vector<int64_t> lengths = {5, 3, 4, 2, 6, 1};
  const std::optional<DpSchedule> schedule = BuildDpSchedule(
      lengths, {.max_tokens_per_gpu = 4, .context_parallel = 2, .data_parallel = 2});
  ASSERT_TRUE(schedule.has_value());
  EXPECT_THAT(schedule->bins,
              ElementsAre(ElementsAre(0), ElementsAre(2, 3, 5), ElementsAre(4), ElementsAre(1)));
  EXPECT_THAT(schedule->ranks, ElementsAre(ElementsAre(0, 2), ElementsAre(1, 3)));
  EXPECT_EQ(schedule->num_micro_batches_per_rank, 2);
}

TEST(DynamicBatchingTest, SampleLongerThanTheCapacityGetsABinNothingJoins) {
  // Capacity 8: 10 opens bin0 alone; 3 does not fit beside it (13 > 8) and opens bin1; 5 joins
  // bin1 (8), not the oversized bin0.
  const std::vector<int64_t> lengths = {10, 3, 5};
  EXPECT_THAT(FirstFitPack(lengths, 8), ElementsAre(ElementsAre(0), ElementsAre(1, 2)));
}

TEST(DynamicBatchingTest, SplitsTheLaterOfEquallyFullBins) {
  // Capacity 8: {0,1} and {2,3}, both 8 tokens. d = 3 needs 3 bins; Python's max over (tokens,
  // index) picks bin 1, split into {2} and {3}.
  const std::vector<int64_t> lengths = {4, 4, 4, 4};
  const std::optional<DpSchedule> schedule =
      BuildDpSchedule(lengths, {.max_tokens_per_gpu = 8, .data_parallel = 3});
  ASSERT_TRUE(schedule.has_value());
  EXPECT_THAT(schedule->bins, ElementsAre(ElementsAre(0, 1), ElementsAre(2), ElementsAre(3)));
  EXPECT_THAT(schedule->ranks, ElementsAre(ElementsAre(0), ElementsAre(1), ElementsAre(2)));
}

TEST(DynamicBatchingTest, SplitBalancesTokensLongestFirst) {
  // One bin {3, 5, 2, 4} (14 tokens); by length 5 (idx 1), 4 (idx 3), 3 (idx 0), 2 (idx 2):
  // 5 -> first (5|0), 4 -> second (5|4), 3 -> second (5|7), 2 -> first (7|7).
  const std::vector<int64_t> lengths = {3, 5, 2, 4};
  EXPECT_THAT(ExpandBinsBySplitting({{0, 1, 2, 3}}, 2, lengths),
              ElementsAre(ElementsAre(1, 2), ElementsAre(3, 0)));
}

TEST(DynamicBatchingTest, TooFewSamplesForTheDataParallelRanksGiveNoSchedule) {
  // Two samples can make at most 2 bins; d = 4 needs 4.
  const std::vector<int64_t> lengths = {4, 4};
  EXPECT_FALSE(BuildDpSchedule(lengths, {.max_tokens_per_gpu = 8, .data_parallel = 4}));
}

TEST(DynamicBatchingTest, VirtualPipelineAlignsToDpTimesGroup) {
  // Capacity 100: every sample fits one bin; d 2 · G 2 = 4 bins. {0,1,2,3} (4 x 10) splits into
  // {0,2} {1,3}; then the later of the two 20-token bins, {1,3}, into {1} and {3} (appended);
  // then {0,2} into {0} and {2} (appended).
  const std::vector<int64_t> lengths = {10, 10, 10, 10};
  const std::optional<DpSchedule> schedule =
      BuildDpSchedule(lengths, {.max_tokens_per_gpu = 100, .data_parallel = 2, .align_group = 2});
  ASSERT_TRUE(schedule.has_value());
  EXPECT_THAT(schedule->bins,
              ElementsAre(ElementsAre(0), ElementsAre(1), ElementsAre(3), ElementsAre(2)));
  EXPECT_EQ(schedule->num_micro_batches_per_rank, 2);
}

TEST(DynamicBatchingTest, PadsLikeSlime) {
  // c 4: per sample 2·ceil(l/8): 1000 -> 250, 3000 -> 750; 1000 per rank, padded to t·128 = 256
  // -> 1024; times c -> 4096.
  EXPECT_EQ(PaddedBinTokens(std::vector<int64_t>{1000, 3000}, 4, 2, 128), 4096);
  // c 1: 4000 padded to 256 -> 4096; 100 padded to 128 -> 128.
  EXPECT_EQ(PaddedBinTokens(std::vector<int64_t>{1000, 3000}, 1, 2, 128), 4096);
  EXPECT_EQ(PaddedBinTokens(std::vector<int64_t>{100}, 1, 1, 128), 128);
}

TEST(DynamicBatchingTest, SummarisesTheBusiestRanksMicroBatches) {
  // The first test's schedule with t 1, pad multiple 1, c 2. Padded: per sample 2·ceil(l/4):
  // 5->4, 3->2, 4->2, 2->2, 6->4, 1->2; bins {0} 4·2 = 8, {2,3,5} 6·2 = 12, {4} 8, {1} 4.
  // Rank 0: 8 + 8 = 16, rank 1: 12 + 4 = 16 -> tie, rank 0. Granularity c·lcm(1, 2) = 4; mean
  // padded 16/2 = 8 -> S = 8; largest padded 12 -> 12. Attention: (5² + 6²)/(2 · 8²) = 61/128.
  // Real tokens 21 in 4 bins of capacity 8: mean 5.25, fill 21/32, fullest bin 4+2+1 = 7.
  const std::vector<int64_t> lengths = {5, 3, 4, 2, 6, 1};
  const DpScheduleOptions options{
      .max_tokens_per_gpu = 4, .context_parallel = 2, .data_parallel = 2};
  const DynamicBatchStep step =
      SummariseDpSchedule(lengths, *BuildDpSchedule(lengths, options), options, 1, 1);
  EXPECT_EQ(step.num_samples, 6);
  EXPECT_EQ(step.bin_capacity_tokens, 8);
  EXPECT_EQ(step.num_bins, 4);
  EXPECT_EQ(step.num_micro_batches_per_rank, 2);
  EXPECT_EQ(step.real_tokens, 21);
  EXPECT_DOUBLE_EQ(step.mean_bin_tokens, 5.25);
  EXPECT_EQ(step.max_bin_tokens, 7);
  EXPECT_DOUBLE_EQ(step.fill, 21.0 / 32);
  EXPECT_EQ(step.busiest_rank, 0);
  EXPECT_EQ(step.simulated_bin_tokens, 8);
  EXPECT_EQ(step.memory_bin_tokens, 12);
  EXPECT_DOUBLE_EQ(step.attention_flops_fraction, 61.0 / 128);
}

}  // namespace
}  // namespace trainscope::cost
