// The plan renderers on a hand-built result: the JSON contract's keys and values, the largest
// terms, the explain and compare sections with their differences, the CSV rows.
#include "trainscope/report/plan_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "trainscope/io/cluster_file.h"
#include "trainscope/io/hf_config_loader.h"

namespace trainscope::report {
namespace {

plan::Candidate MakeCandidate(int64_t rank, std::string flags, double tokens, double bubble,
                              double ep) {
  plan::Candidate c;
  c.rank = rank;
  c.flags = std::move(flags);
  c.tokens_per_second_per_gpu = tokens;
  c.step_seconds = 1000.0 / tokens;
  c.mfu = 0.4;
  c.peak_bytes = int64_t{40} << 30;
  c.headroom_bytes = int64_t{40} << 30;
  c.fits = true;
  c.breakdown.compute_seconds = {{"attention", 0.5}, {"moe", 0.25}};
  c.breakdown.exposed_comm_seconds = {{"ep", ep}};
  c.breakdown.bubble_seconds = bubble;
  c.breakdown.total_compute_seconds = 0.75;
  return c;
}

plan::PlanResult Result() {
  plan::PlanResult r;
  r.ranking = {MakeCandidate(1, "--tensor-model-parallel-size 1 --pipeline-model-parallel-size 1",
                             1000, 0.0, 0.125),
               MakeCandidate(2, "--tensor-model-parallel-size 1 --pipeline-model-parallel-size 2",
                             800, 0.25, 0.125)};
  r.pareto = {r.ranking[0]};
  r.rejected = {{"C4", 3}, {"oom", 2}, {"bound", 1}};
  r.num_enumerated = 8;
  r.num_evaluated = 2;
  r.num_pruned = 1;
  r.outcomes = {{r.ranking[0].flags, "ok", r.ranking[0].peak_bytes}, {"--x", "C4", 0}};
  return r;
}

study::Study Base() {
  study::Study study{.model = io::LoadPreset("Qwen3-0.6B")};
  study.training.parallel.world_size = 8;
  study.training.batch.global_batch_size = 64;
  study.cluster = io::ResolveCluster({.gpu = std::string("H100")});
  return study;
}

TEST(PlanReportTest, JsonCarriesTheContractKeysAndValues) {
  const study::Study base = Base();
  const plan::PlanResult result = Result();
  const PlanReportInput input{.base = base, .result = result, .top_k = 1, .search_seconds = 1.5};
  const nlohmann::json json = nlohmann::json::parse(RenderPlanJson(input));
  ASSERT_EQ(json["candidates"].size(), 1u);  // top K = 1
  const nlohmann::json& c = json["candidates"][0];
  EXPECT_EQ(c["rank"], 1);
  EXPECT_EQ(c["tokens_per_s_per_gpu"], 1000.0);
  EXPECT_EQ(c["step_time_s"], 1.0);
  EXPECT_EQ(c["peak_bytes"], int64_t{40} << 30);
  EXPECT_EQ(c["breakdown"][0]["term"], "compute:attention");  // 0.5 s, the largest
  EXPECT_EQ(json["rejected"]["C4"], 3);
  EXPECT_EQ(json["rejected"]["oom"], 2);
  EXPECT_EQ(json["rejected"]["bound"], 1);
  EXPECT_EQ(json["evaluated"], 2);
  EXPECT_EQ(json["search_seconds"], 1.5);
  EXPECT_EQ(json["pareto"].size(), 1u);
}

TEST(PlanReportTest, LargestTermsComeFirstWithTiesByName) {
  const plan::Candidate c = MakeCandidate(1, "", 1000, 0.125, 0.125);
  const std::vector<Term> terms = LargestTerms(c.breakdown, 3);
  ASSERT_EQ(terms.size(), 3u);
  EXPECT_EQ(terms[0].name, "compute:attention");
  EXPECT_EQ(terms[1].name, "compute:moe");
  EXPECT_EQ(terms[2].name, "bubble");  // 0.125 s, ties with comm:ep; "bubble" < "comm:ep"
}

TEST(PlanReportTest, ExplainShowsTheTermsThatDiffer) {
  const std::string text = RenderExplainText(Result(), 1);
  EXPECT_NE(text.find("why #1 beats #2 (1000.0 vs 800.0 tok/s/GPU, +25.0%)"), std::string::npos)
      << text;
  // #2 − #1: bubble 0.25 s more, step 1.25 − 1 = 0.25 s more; EP comm the same.
  EXPECT_NE(text.find("bubble / idle"), std::string::npos);
  EXPECT_NE(text.find("+0.2500 s"), std::string::npos) << text;
  EXPECT_NE(text.find("flags only in #2: --pipeline-model-parallel-size 2"), std::string::npos)
      << text;
}

TEST(PlanReportTest, CompareStatesTheGainOfSwitching) {
  const plan::PlanResult result = Result();
  ComparedLayout mine{
      .flags = "--tensor-model-parallel-size 2",
      .candidate = MakeCandidate(0, "--tensor-model-parallel-size 2", 500, 0.5, 0.25),
      .rank = 3};
  const std::string text = RenderCompareText(result, mine);
  EXPECT_NE(text.find("ranks #3 of 3"), std::string::npos) << text;
  EXPECT_NE(text.find("switching to #1 gains +100.0%"), std::string::npos) << text;
  ComparedLayout invalid{.flags = "--tensor-model-parallel-size 3", .invalid_reason = "[C4] x"};
  EXPECT_NE(RenderCompareText(result, invalid).find("is invalid: [C4] x"), std::string::npos);
}

TEST(PlanReportTest, CsvHasOneRowPerLayout) {
  const std::string csv = RenderPlanCsv(Result());
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  EXPECT_NE(csv.find("\"--x\",C4,,,,,\n"), std::string::npos) << csv;
}

}  // namespace
}  // namespace trainscope::report
