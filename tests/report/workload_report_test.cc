// Workload rendering: summary grouping and totals of a hand-built graph, JSON read-back.
#include "trainscope/report/workload_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace trainscope::report {
namespace {

using graph::Collective;
using graph::Op;
using graph::Phase;

Op Comm(int64_t id, Phase phase, Collective collective, config::GroupKind group, int64_t bytes) {
  Op op;
  op.id = id;
  op.phase = phase;
  op.collective = collective;
  op.group = group;
  op.group_size = 2;
  op.message_bytes = bytes;
  return op;
}

graph::StepGraph SmallGraph() {
  graph::StepGraph graph{.rank = 3, .pipeline_rank = 1, .num_micro_batches = 2, .ops = {}};
  Op gemm;
  gemm.name = "mlp.linear_fc1";
  gemm.flops = 2 * 8 * 16 * 4;  // 2·m·n·k with m 8, n 16, k 4
  gemm.bytes = 100;
  gemm.gemm = {.m = 8, .n = 16, .k = 4};
  graph.ops.push_back(gemm);
  graph.ops.push_back(Comm(1, Phase::kForward, Collective::kAllGather, config::GroupKind::kTp, 64));
  graph.ops.push_back(Comm(2, Phase::kForward, Collective::kAllGather, config::GroupKind::kTp, 64));
  graph.ops.push_back(
      Comm(3, Phase::kBackward, Collective::kReduceScatter, config::GroupKind::kTp, 64));
  graph.ops.push_back(
      Comm(4, Phase::kGradSync, Collective::kAllReduce, config::GroupKind::kDpCp, 1000));
  graph.ops[4].deps = {0, 3};
  return graph;
}

TEST(WorkloadReportTest, SummaryGroupsDistinctCollectivesWithCounts) {
  const nlohmann::json json = nlohmann::json::parse(RenderWorkloadSummaryJson(SmallGraph(), 12345));
  ASSERT_EQ(json["collectives"].size(), 3u);
  EXPECT_EQ(json["collectives"][0]["phase"], "forward");
  EXPECT_EQ(json["collectives"][0]["collective"], "all_gather");
  EXPECT_EQ(json["collectives"][0]["group"], "tp");
  EXPECT_EQ(json["collectives"][0]["message_bytes"], 64);
  EXPECT_EQ(json["collectives"][0]["count"], 2);
  EXPECT_EQ(json["totals"]["megatron_model_flops_per_step"], 12345);
  EXPECT_EQ(json["totals"]["op_flops"], 1024);
  EXPECT_EQ(json["totals"]["comm_bytes_by_group"]["tp"], 192);  // 3 x 64
  EXPECT_EQ(json["totals"]["comm_bytes_by_group"]["dp_cp"], 1000);
}

TEST(WorkloadReportTest, OpsJsonReadsBackWithFieldsAndDeps) {
  const nlohmann::json json = nlohmann::json::parse(RenderWorkloadJson(SmallGraph(), 0));
  ASSERT_EQ(json["ops"].size(), 5u);
  EXPECT_EQ(json["ops"][0]["gemm"]["n"], 16);
  EXPECT_EQ(json["ops"][0]["flops"], 1024);
  EXPECT_EQ(json["ops"][4]["collective"], "all_reduce");
  EXPECT_EQ(json["ops"][4]["group"], "dp_cp");
  EXPECT_EQ(json["ops"][4]["deps"], nlohmann::json::parse("[0, 3]"));
  EXPECT_EQ(json["rank"], 3);
}

TEST(WorkloadReportTest, RenderingIsDeterministic) {
  EXPECT_EQ(RenderWorkloadJson(SmallGraph(), 7), RenderWorkloadJson(SmallGraph(), 7));
  EXPECT_EQ(RenderWorkloadSummaryText(SmallGraph(), 7), RenderWorkloadSummaryText(SmallGraph(), 7));
}

}  // namespace
}  // namespace trainscope::report
