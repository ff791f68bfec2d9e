// Sequence packing against small histograms worked by hand. The THD fill packs a representative
// sample of 100,000 samples, so a 1:1 histogram becomes 50,000 samples of each length.
#include "trainscope/cost/sequence_packing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace trainscope::cost {
namespace {

TEST(SequencePackingTest, FirstFitDecreasingCountsBins) {
  EXPECT_EQ(FirstFitDecreasingBins({40, 60, 40, 60}, 100), 2);  // 60+40 twice
  EXPECT_EQ(FirstFitDecreasingBins({50, 70, 50}, 100), 2);      // 70 | 50+50
  EXPECT_EQ(FirstFitDecreasingBins({70, 70, 70}, 100), 3);
  EXPECT_EQ(FirstFitDecreasingBins({30, 30, 30, 30}, 100), 2);  // 30+30+30 | 30
}

TEST(SequencePackingTest, ComplementaryLengthsPackPerfectly) {
  // s = 100, b = 1; lengths 60 and 40, one each. BSHD: E[u] = 50 -> 0.5 useful. THD: 60+40 fill
  // every micro-batch, 2 samples each; attention Σu² per micro-batch = 3600 + 1600 = 5200 over
  // s² = 10000 -> 0.52.
  const SequencePacking p = PackSequences({.lengths = {60, 40}, .counts = {1, 1}}, 100, 1);
  EXPECT_DOUBLE_EQ(p.mean_length, 50);
  EXPECT_DOUBLE_EQ(p.truncated_sample_fraction, 0);
  EXPECT_DOUBLE_EQ(p.bshd_useful_token_fraction, 0.5);
  EXPECT_DOUBLE_EQ(p.thd_packed_micro_batch_fill, 1.0);
  EXPECT_DOUBLE_EQ(p.thd_samples_per_micro_batch, 2.0);
  EXPECT_DOUBLE_EQ(p.thd_attention_flops_fraction, 0.52);
}

TEST(SequencePackingTest, LengthsThatDoNotPairLeaveGaps) {
  // s = 100, b = 1; 50,000 samples of 70 and of 50. FFD: each 70 alone (50,000 bins, 30 free
  // each, too small for a 50), then the 50s two per bin (25,000 bins): 75,000 bins for
  // 6,000,000 tokens -> fill 6e6 / 7.5e6 = 0.8; 100,000 / 75,000 = 4/3 samples per micro-batch.
  // Attention: Σu² = 50,000 · (4900 + 2500) = 3.7e8 over 75,000 · 1e4 -> 37/75.
  const SequencePacking p = PackSequences({.lengths = {70, 50}, .counts = {1, 1}}, 100, 1);
  EXPECT_DOUBLE_EQ(p.bshd_useful_token_fraction, 0.6);
  EXPECT_DOUBLE_EQ(p.thd_packed_micro_batch_fill, 0.8);
  EXPECT_DOUBLE_EQ(p.thd_samples_per_micro_batch, 4.0 / 3);
  EXPECT_DOUBLE_EQ(p.thd_attention_flops_fraction, 37.0 / 75);
}

TEST(SequencePackingTest, LongSamplesAreTruncatedToSeqLength) {
  // s = 100, b = 2 (capacity 200); one sample of 150 per three of 50. E[l] = (150 + 150) / 4 = 75;
  // a quarter is truncated; E[u] = (100 + 150) / 4 = 62.5 -> BSHD 0.625. THD: 25,000 truncated
  // samples of 100 pack two per bin (12,500 bins), 75,000 of 50 four per bin (18,750): fill 1,
  // 100,000 / 31,250 = 3.2 samples per micro-batch. Attention: E[u²] = (1e4 + 3 · 2500) / 4 =
  // 4375, fraction 1 · 4375 / (62.5 · 100) = 0.7.
  const SequencePacking p = PackSequences({.lengths = {150, 50}, .counts = {1, 3}}, 100, 2);
  EXPECT_DOUBLE_EQ(p.mean_length, 75);
  EXPECT_DOUBLE_EQ(p.truncated_sample_fraction, 0.25);
  EXPECT_DOUBLE_EQ(p.mean_used_length, 62.5);
  EXPECT_DOUBLE_EQ(p.bshd_useful_token_fraction, 0.625);
  EXPECT_DOUBLE_EQ(p.thd_packed_micro_batch_fill, 1.0);
  EXPECT_DOUBLE_EQ(p.thd_samples_per_micro_batch, 3.2);
  EXPECT_DOUBLE_EQ(p.thd_attention_flops_fraction, 0.7);
}

TEST(SequencePackingTest, FrequenciesGiveTheSameResultAsCounts) {
  EXPECT_EQ(PackSequences({.lengths = {70, 50}, .counts = {0.5, 0.5}}, 100, 1),
            PackSequences({.lengths = {70, 50}, .counts = {3, 3}}, 100, 1));
}

TEST(SequencePackingTest, FullLengthSamplesMatchTheDenseModel) {
  const SequencePacking p = PackSequences({.lengths = {4096}, .counts = {10}}, 4096, 1);
  EXPECT_DOUBLE_EQ(p.bshd_useful_token_fraction, 1.0);
  EXPECT_DOUBLE_EQ(p.thd_packed_micro_batch_fill, 1.0);
  EXPECT_DOUBLE_EQ(p.thd_attention_flops_fraction, 1.0);
}

TEST(SequencePackingTest, DrawsTheApportionedSamplesInAFixedShuffledOrder) {
  // Counts 3:1 over 8 samples: quotas 6 and 2, exactly.
  const SequenceLengthHistogram histogram{.lengths = {100, 200}, .counts = {3, 1}};
  std::vector<int64_t> lengths = DrawSampleLengths(histogram, 8);
  EXPECT_EQ(lengths, DrawSampleLengths(histogram, 8));  // deterministic
  std::sort(lengths.begin(), lengths.end());
  EXPECT_EQ(lengths, (std::vector<int64_t>{100, 100, 100, 100, 100, 100, 200, 200}));
}

TEST(SequencePackingTest, DrawnRemaindersGoToTheShorterLengths) {
  // Three equal counts over 2 samples: quotas 2/3 each, floors 0, equal remainders -> the two
  // shorter lengths, 10 and 20.
  std::vector<int64_t> lengths =
      DrawSampleLengths({.lengths = {30, 10, 20}, .counts = {1, 1, 1}}, 2);
  std::sort(lengths.begin(), lengths.end());
  EXPECT_EQ(lengths, (std::vector<int64_t>{10, 20}));
}

}  // namespace
}  // namespace trainscope::cost
