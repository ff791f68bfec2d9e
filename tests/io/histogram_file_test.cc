// Expert and sequence-length histogram readers: every accepted form, and one test per kind of
// bad input, each checking that the message names the file and the line or key.
#include "trainscope/io/histogram_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trainscope/error.h"

namespace trainscope::io {
namespace {

using testing::AllOf;
using testing::HasSubstr;
using testing::ThrowsMessage;

const std::string kDataDir = TRAINSCOPE_TEST_DATA_DIR;

TEST(HistogramFileTest, ReadsExpertCountsAsJsonArray) {
  EXPECT_EQ(ParseExpertHistogram("[10, 30.5, 0, 40]", "h.json"),
            (std::vector<double>{10, 30.5, 0, 40}));
}

TEST(HistogramFileTest, ReadsOneCountPerLineWithOptionalHeader) {
  EXPECT_EQ(ParseExpertHistogram("tokens\n10\n\n30\n20\r\n", "h.csv"),
            (std::vector<double>{10, 30, 20}));
  EXPECT_EQ(ParseExpertHistogram("10\n30\n", "h.csv"), (std::vector<double>{10, 30}));
}

TEST(HistogramFileTest, ReadsExpertCountPairsInAnyOrder) {
  EXPECT_EQ(LoadExpertHistogramFile(kDataDir + "/expert_histogram.csv"),
            (std::vector<double>{10, 30, 20, 40}));
}

TEST(HistogramFileTest, RejectsRepeatedExpertIdNamingTheLine) {
  EXPECT_THAT([] { (void)ParseExpertHistogram("0,1\n0,2\n", "h.csv"); },
              ThrowsMessage<InputError>(
                  AllOf(HasSubstr("h.csv"), HasSubstr("line 2"), HasSubstr("expert"))));
}

TEST(HistogramFileTest, RejectsNegativeExpertCount) {
  EXPECT_THAT([] { (void)ParseExpertHistogram("5\n-1\n", "h.csv"); },
              ThrowsMessage<InputError>(
                  AllOf(HasSubstr("h.csv"), HasSubstr("line 2"), HasSubstr("count"))));
  EXPECT_THAT([] { (void)ParseExpertHistogram("[5, -1]", "h.json"); },
              ThrowsMessage<InputError>(AllOf(HasSubstr("h.json"), HasSubstr("experts[1]"))));
}

TEST(HistogramFileTest, RejectsAllZeroExpertCounts) {
  EXPECT_THAT([] { (void)ParseExpertHistogram("0\n0\n", "h.csv"); },
              ThrowsMessage<InputError>(AllOf(HasSubstr("h.csv"), HasSubstr("positive total"))));
}

TEST(HistogramFileTest, RejectsNonNumberInJsonArray) {
  EXPECT_THAT([] { (void)ParseExpertHistogram("[1, \"2\"]", "h.json"); },
              ThrowsMessage<InputError>(AllOf(HasSubstr("h.json"), HasSubstr("experts[1]"))));
}

TEST(HistogramFileTest, RoutingSkewNumberIsAZipfExponent) {
  const cost::RoutingSkew skew = ParseRoutingSkew("1.2");
  EXPECT_EQ(skew.zipf_exponent, 1.2);
  EXPECT_EQ(skew.placement, cost::ExpertPlacement::kRandom);
  EXPECT_TRUE(skew.expert_tokens.empty());
}

TEST(HistogramFileTest, RoutingSkewContiguousPlacesThePopularExpertsTogether) {
  const cost::RoutingSkew skew = ParseRoutingSkew("contiguous=0.8");
  EXPECT_EQ(skew.zipf_exponent, 0.8);
  EXPECT_EQ(skew.placement, cost::ExpertPlacement::kContiguous);
  EXPECT_THAT([] { (void)ParseRoutingSkew("contiguous=hot", "--moe-routing-skew"); },
              ThrowsMessage<UsageError>(HasSubstr("--moe-routing-skew")));
}

TEST(HistogramFileTest, RoutingSkewNegativeExponentNamesTheFlag) {
  EXPECT_THAT([] { (void)ParseRoutingSkew("-0.5", "--routing"); },
              ThrowsMessage<InputError>(HasSubstr("--routing")));
}

TEST(HistogramFileTest, RoutingSkewLoadIsTheFactorGivenDirectly) {
  const cost::RoutingSkew skew = ParseRoutingSkew("load=1.3");
  EXPECT_EQ(skew.load_factor, 1.3);
  EXPECT_FALSE(skew.zipf_exponent.has_value());
  EXPECT_TRUE(skew.expert_tokens.empty());
}

TEST(HistogramFileTest, RoutingSkewLoadBelowOneNamesTheFlag) {
  EXPECT_THAT([] { (void)ParseRoutingSkew("load=0.5"); },
              ThrowsMessage<UsageError>(HasSubstr("--moe-routing-skew")));
  EXPECT_THAT([] { (void)ParseRoutingSkew("load=x"); },
              ThrowsMessage<UsageError>(HasSubstr("--moe-routing-skew")));
}

TEST(HistogramFileTest, RoutingSkewPathLoadsTheHistogram) {
  const std::string path = kDataDir + "/expert_histogram.csv";
  const cost::RoutingSkew skew = ParseRoutingSkew(path);
  EXPECT_FALSE(skew.zipf_exponent.has_value());
  EXPECT_EQ(skew.expert_tokens, (std::vector<double>{10, 30, 20, 40}));
  EXPECT_EQ(skew.source, path);
}

TEST(HistogramFileTest, RoutingSkewMissingFileNamesThePath) {
  EXPECT_THAT([] { (void)ParseRoutingSkew("no/such/hist.csv"); },
              ThrowsMessage<InputError>(HasSubstr("no/such/hist.csv")));
}

TEST(HistogramFileTest, ReadsSequenceLengthsFromCsvWithHeader) {
  const cost::SequenceLengthHistogram histogram =
      LoadSequenceLengthHistogramFile(kDataDir + "/seq_lengths.csv");
  EXPECT_EQ(histogram.lengths, (std::vector<int64_t>{150, 50}));
  EXPECT_EQ(histogram.counts, (std::vector<double>{1, 3}));
}

TEST(HistogramFileTest, ReadsSequenceLengthsFromJson) {
  const cost::SequenceLengthHistogram histogram =
      ParseSequenceLengthHistogram(R"({"lengths": [128, 4096], "counts": [0.25, 0.75]})", "l.json");
  EXPECT_EQ(histogram.lengths, (std::vector<int64_t>{128, 4096}));
  EXPECT_EQ(histogram.counts, (std::vector<double>{0.25, 0.75}));
}

TEST(HistogramFileTest, RejectsUnknownSequenceLengthKey) {
  EXPECT_THAT(
      [] {
        (void)ParseSequenceLengthHistogram(R"({"lengths": [1], "counts": [1], "bins": 3})",
                                           "l.json");
      },
      ThrowsMessage<InputError>(AllOf(HasSubstr("l.json"), HasSubstr("bins"))));
}

TEST(HistogramFileTest, RejectsSequenceLengthsAndCountsOfDifferentSizes) {
  EXPECT_THAT(
      [] { (void)ParseSequenceLengthHistogram(R"({"lengths": [1, 2], "counts": [1]})", "l.json"); },
      ThrowsMessage<InputError>(AllOf(HasSubstr("l.json"), HasSubstr("counts"))));
}

TEST(HistogramFileTest, RejectsNonIntegerOrZeroLength) {
  EXPECT_THAT([] { (void)ParseSequenceLengthHistogram("length,count\n0,4\n", "l.csv"); },
              ThrowsMessage<InputError>(
                  AllOf(HasSubstr("l.csv"), HasSubstr("line 2"), HasSubstr("length"))));
  EXPECT_THAT(
      [] { (void)ParseSequenceLengthHistogram(R"({"lengths": [1.5], "counts": [1]})", "l.json"); },
      ThrowsMessage<InputError>(AllOf(HasSubstr("l.json"), HasSubstr("lengths[0]"))));
}

TEST(HistogramFileTest, RejectsSequenceLineWithoutCount) {
  EXPECT_THAT([] { (void)ParseSequenceLengthHistogram("100\n", "l.csv"); },
              ThrowsMessage<InputError>(AllOf(HasSubstr("l.csv"), HasSubstr("line 1"))));
}

TEST(HistogramFileTest, RejectsANumberThatOverflowsADouble) {
  EXPECT_THAT([] { (void)ParseExpertHistogram("[1, 1e400]", "h.json"); },
              ThrowsMessage<InputError>(HasSubstr("h.json: number out of range")));
}

TEST(HistogramFileTest, RejectsDeepNesting) {
  const std::string text = std::string(50'000, '[') + std::string(50'000, ']');
  EXPECT_THAT([&] { (void)ParseExpertHistogram(text, "h.json"); },
              ThrowsMessage<InputError>(HasSubstr("h.json: nested deeper than 64 levels")));
}

TEST(HistogramFileTest, RejectsCountsWhoseSumWouldOverflow) {
  EXPECT_THAT(
      [] {
        (void)ParseSequenceLengthHistogram(
            R"({"lengths": [50, 150], "counts": [1.7976931348623157e308, 1e308]})", "l.json");
      },
      ThrowsMessage<InputError>(HasSubstr("l.json: counts[0]: expected a count >= 0 and <= 1e15")));
  EXPECT_THAT([] { (void)ParseSequenceLengthHistogram("50,1e300\n", "l.csv"); },
              ThrowsMessage<InputError>(HasSubstr("l.csv: line 1: count: expected a number >= 0")));
  EXPECT_THAT([] { (void)ParseExpertHistogram("[1, 1e300]", "e.json"); },
              ThrowsMessage<InputError>(HasSubstr("e.json: experts[1]: expected a count")));
}

TEST(HistogramFileTest, RejectsLengthsAboveTheSequenceLengthBound) {
  EXPECT_THAT([] { (void)ParseSequenceLengthHistogram("1000000000,1\n", "l.csv"); },
              ThrowsMessage<InputError>(HasSubstr("l.csv: line 1: length: expected an integer <= "
                                                  "100000000")));
}

}  // namespace
}  // namespace trainscope::io
