// Calibration CSV reader: RFC 4180 quoting, empty cells, qualified numeric cells, errors, and
// the shipped data file (371 rows: 352 copied plus 19 appended, 37 with peak memory, per
// data/calibration/SOURCES.md).
#include "trainscope/io/calibration_csv.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "trainscope/error.h"

namespace trainscope::io {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr std::string_view kHeader =
    "source,model,gpu,num_gpus,seq_len,gbs,mbs,tp,pp,cp,vp,ep,etp,precision,"
    "tokens_per_sec_per_gpu,tflops_per_gpu,peak_mem_gib,notes\r\n";

std::string Csv(std::string_view rows) { return std::string(kHeader) + std::string(rows); }

TEST(CalibrationCsvTest, ParsesQuotedFieldsWithCommasAndConvertsUnits) {
  const std::vector<CalibrationRow> rows = ParseCalibrationCsv(
      Csv("\"repo, path\",Llama3-8B,H100,8,8192,128,1,1,1,1,,1,1,BF16,12000.5,650,"
          "60.5,\"DP8, selective; \"\"quoted\"\"\"\r\n"),
      "test.csv");
  ASSERT_EQ(rows.size(), 1u);
  const CalibrationRow& row = rows[0];
  EXPECT_EQ(row.line, 2);
  EXPECT_EQ(row.source, "repo, path");
  EXPECT_EQ(row.model, "Llama3-8B");
  EXPECT_EQ(row.num_gpus, 8);
  EXPECT_EQ(row.seq_len, 8192);
  EXPECT_EQ(row.gbs, 128);
  EXPECT_EQ(row.vp, std::nullopt);
  EXPECT_EQ(row.precision, "BF16");
  EXPECT_DOUBLE_EQ(*row.tokens_per_second_per_gpu, 12000.5);
  EXPECT_DOUBLE_EQ(*row.flops_per_second_per_gpu, 650e12);      // 650 TFLOP/s
  EXPECT_DOUBLE_EQ(*row.peak_memory_bytes, 60.5 * 1073741824);  // 60.5 GiB
  EXPECT_EQ(row.notes, "DP8, selective; \"quoted\"");
  EXPECT_TRUE(row.qualifiers.empty());
}

TEST(CalibrationCsvTest, EmptyCellsAreNullopt) {
  const std::vector<CalibrationRow> rows =
      ParseCalibrationCsv(Csv("s,m,GB200,,,,,,,,,,,,,,,\n"), "test.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].num_gpus, std::nullopt);
  EXPECT_EQ(rows[0].etp, std::nullopt);
  EXPECT_EQ(rows[0].peak_memory_bytes, std::nullopt);
  EXPECT_EQ(rows[0].notes, "");
}

TEST(CalibrationCsvTest, KeepsLeadingNumberAndRecordsQualifier) {
  const std::vector<CalibrationRow> rows = ParseCalibrationCsv(
      Csv("s,m,H100,512,8192 (assumed),ramp to 15360,1,8,8,1,interleaved,64 (spans 8 nodes),"
          "1,FP8,,,,\n"),
      "test.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].seq_len, 8192);
  EXPECT_EQ(rows[0].gbs, std::nullopt);
  EXPECT_EQ(rows[0].vp, std::nullopt);
  EXPECT_EQ(rows[0].ep, 64);
  EXPECT_THAT(rows[0].qualifiers, ElementsAre("seq_len: 8192 (assumed)", "gbs: ramp to 15360",
                                              "vp: interleaved", "ep: 64 (spans 8 nodes)"));
}

TEST(CalibrationCsvTest, QuotedLineBreakCountsLines) {
  const std::vector<CalibrationRow> rows = ParseCalibrationCsv(
      Csv("s,a,H100,,,,,,,,,,,,,,,\"two\nlines\"\ns,b,H100,,,,,,,,,,,,,,,\n"), "test.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].notes, "two\nlines");
  EXPECT_EQ(rows[1].model, "b");
  EXPECT_EQ(rows[1].line, 4);
}

TEST(CalibrationCsvTest, RejectsRowWithWrongFieldCount) {
  EXPECT_THAT([] { (void)ParseCalibrationCsv(Csv("s,m,H100,8\n"), "test.csv"); },
              ThrowsMessage<InputError>(HasSubstr("test.csv: line 2: wrong number of fields")));
}

TEST(CalibrationCsvTest, RejectsUnterminatedQuote) {
  EXPECT_THAT([] { (void)ParseCalibrationCsv(Csv("s,\"m,H100\n"), "test.csv"); },
              ThrowsMessage<InputError>(HasSubstr("line 2: unterminated quoted field")));
}

TEST(CalibrationCsvTest, RejectsWrongHeader) {
  EXPECT_THAT([] { (void)ParseCalibrationCsv("source,model\n", "test.csv"); },
              ThrowsMessage<InputError>(HasSubstr("line 1: header")));
}

TEST(CalibrationCsvTest, LoadsShippedCalibrationSet) {
  const std::vector<CalibrationRow> rows =
      LoadCalibrationCsv(std::string(TRAINSCOPE_CALIBRATION_CSV));
  // data/calibration/SOURCES.md: 352 rows copied, 19 appended (§9), 37 with peak memory.
  EXPECT_EQ(rows.size(), 371u);
  EXPECT_EQ(std::ranges::count_if(
                rows, [](const CalibrationRow& row) { return row.peak_memory_bytes.has_value(); }),
            37);
}

}  // namespace
}  // namespace trainscope::io
