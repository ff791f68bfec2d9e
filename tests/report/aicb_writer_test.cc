// AICB native CSV: goldens, a read-back of AICB's native CSV columns, and determinism.
#include "trainscope/report/aicb_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "simai_test_configs.h"
#include "trainscope/config/validate.h"

namespace trainscope::report {
namespace {

using testing::ExportCase;
using ::testing::HasSubstr;

std::vector<std::vector<std::string>> ParseCsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> fields;
    std::stringstream stream(line);
    std::string field;
    while (std::getline(stream, field, ',')) fields.push_back(field);
    if (!line.empty() && line.back() == ',') fields.push_back("");
    rows.push_back(fields);
  }
  return rows;
}

ExportResult Render(const ExportCase& c, int64_t rank = 0) {
  EXPECT_TRUE(config::Validate(c.model, c.training).ok());
  return testing::RenderAicb(c, rank);
}

TEST(AicbWriterTest, MatchesGoldenDenseSequenceParallel) {
  testing::ExpectMatchesGolden("aicb_qwen3_0.6b_tp2_sp_dp4_ga2.csv",
                               Render(testing::DenseSpCase()).text);
}

TEST(AicbWriterTest, MatchesGoldenMoeAllToAll) {
  testing::ExpectMatchesGolden("aicb_qwen3_30b_a3b_tp2_sp_ep4.csv",
                               Render(testing::MoeCase()).text);
}

TEST(AicbWriterTest, ReadsBackWithTwelveNativeColumns) {
  for (const ExportCase& c :
       {testing::DenseSpCase(), testing::DenseNoSpCase(), testing::MoeCase()}) {
    const auto rows = ParseCsv(Render(c).text);
    ASSERT_GT(rows.size(), 1u);
    EXPECT_EQ(rows[0][0], "comm_type");
    EXPECT_EQ(rows[0][11], "count");
    const std::set<std::string> types = {"CommType.all_gather", "CommType.reduce_scatter",
                                         "CommType.all_reduce", "CommType.all_to_all",
                                         "CommType.isend",      "CommType.irecv",
                                         "CommType.broadcast"};
    const std::regex stage("(forward|backward|recompute)\\.[A-Za-z.]+|step");
    for (size_t i = 1; i < rows.size(); ++i) {
      ASSERT_EQ(rows[i].size(), 12u) << i;
      EXPECT_TRUE(types.contains(rows[i][0])) << rows[i][0];
      EXPECT_TRUE(rows[i][1].starts_with("CommGroup.")) << rows[i][1];
      EXPECT_TRUE(std::regex_match(rows[i][2], std::regex("[0-9]+")));
      EXPECT_TRUE(std::regex_match(rows[i][3], std::regex("[0-9]+")));
      EXPECT_TRUE(std::regex_match(rows[i][4], stage)) << rows[i][4];
      EXPECT_EQ(rows[i][11], "1");
    }
  }
}

TEST(AicbWriterTest, WritesMegatronBackwardCollectivesAndMoeBackward) {
  const std::string text = Render(testing::MoeCase()).text;
  // Unlike AICB master (MockedMegatron.py MOEMLP.backward) the MoE backward all-to-alls are
  // present.
  EXPECT_THAT(text, HasSubstr("CommType.all_to_all,CommGroup.ep_group,4,67108864,backward.MoE."));
  // SP backward: the column linear's dgrad reduce-scatter of A (AICB writes 0 bytes).
  EXPECT_THAT(text, HasSubstr("CommType.reduce_scatter,CommGroup.tp_group,2,16777216,"
                              "backward.MegatronColumnLinear"));
  EXPECT_THAT(text, HasSubstr("CommType.reduce_scatter,CommGroup.ep_dp_group,2,"));
}

TEST(AicbWriterTest, WritesPipelinePeersAndDirections) {
  ExportCase c = testing::DenseSpCase();
  c.training.parallel.pipeline = 2;
  const std::string text = Render(c, /*rank=*/0).text;
  EXPECT_THAT(text, HasSubstr("CommType.isend,CommGroup.pp_group,2,4194304,forward.PipelineP2P,4,"
                              "None,send_next"));
  EXPECT_THAT(text, HasSubstr("CommType.irecv,CommGroup.pp_group,2,4194304,backward.PipelineP2P,"
                              "None,4,recv_next"));
}

TEST(AicbWriterTest, DiagnosesGroupsAicbCannotName) {
  ExportCase c = testing::DenseSpCase();
  c.training.parallel.context = 2;
  const ExportResult result = Render(c);
  EXPECT_THAT(result.diagnostics, ::testing::Contains(HasSubstr("no CommGroup for the cp group")));
}

// A hand-built rank of t = 2, e = 4 with one collective per expert group: AICB's replayer
// (workload_applyer.py) builds ep_group from Megatron's 'ep' ranks and ep_tp_group from its
// 'tp-ep' ranks, so the 8-rank TP×EP group is ep_tp_group, the 4-rank EP group ep_group, and the
// 2-rank expert-TP group (ETP = TP, the same ranks) tp_group.
TEST(AicbWriterTest, LabelsExpertGroupsAsAicbReplayerDefinesThem) {
  graph::StepGraph graph;
  const auto add = [&](config::GroupKind group, int64_t size) {
    graph::Op op;
    op.id = static_cast<int64_t>(graph.ops.size());
    op.collective = graph::Collective::kAllGather;
    op.group = group;
    op.group_size = size;
    op.message_bytes = 1024;
    graph.ops.push_back(op);
  };
  add(config::GroupKind::kTpEp, 8);
  add(config::GroupKind::kEp, 4);
  add(config::GroupKind::kEtp, 2);
  add(config::GroupKind::kEtp, 4);  // ETP ≠ TP: AICB has no such group
  const ExportResult result = FormatAicbCsv(graph, /*tensor_parallel=*/2);
  const std::vector<std::vector<std::string>> rows = ParseCsv(result.text);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[1][1], "CommGroup.ep_tp_group");
  EXPECT_EQ(rows[1][2], "8");
  EXPECT_EQ(rows[2][1], "CommGroup.ep_group");
  EXPECT_EQ(rows[2][2], "4");
  EXPECT_EQ(rows[3][1], "CommGroup.tp_group");
  EXPECT_EQ(rows[3][2], "2");
  EXPECT_EQ(rows[4][1], "CommGroup.etp_group");
  EXPECT_THAT(result.diagnostics, ::testing::Contains(HasSubstr("no CommGroup for the etp group")));
}

// In a real MoE step (t = 2, e = 4, alltoall) the token-count gather runs over TP×EP.
TEST(AicbWriterTest, WritesTokenCountGatherOnTheTpEpGroup) {
  const std::string text = Render(testing::MoeCase()).text;
  EXPECT_THAT(text, HasSubstr("CommType.all_gather,CommGroup.ep_tp_group,8,8192,forward.MoE."));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("CommGroup.ep_group,8,")));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("CommGroup.ep_tp_group,2,")));
}

TEST(AicbWriterTest, IsByteIdenticalAcrossRuns) {
  EXPECT_EQ(Render(testing::MoeCase()).text, Render(testing::MoeCase()).text);
}

}  // namespace
}  // namespace trainscope::report
