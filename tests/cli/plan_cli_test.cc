// `trainscope plan` end to end: the JSON contract's keys, pins from Megatron flags and --fix,
// the explain and compare sections, the CSV file, and usage errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_runner.h"

namespace trainscope {
namespace {

const std::string kSmallPlan =
    "plan --model Qwen3-0.6B --num-gpus 8 --gbs 64 --seq 4096 --max-tp 2 --allow-recompute none "
    "--threads 2";

TEST(PlanCliTest, JsonHasTheContractKeys) {
  const Outcome outcome = RunCli(kSmallPlan + " --json --top 3");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_EQ(outcome.err, "");  // no progress line when stderr is not a terminal
  const nlohmann::json json = nlohmann::json::parse(outcome.out);
  for (const char* key : {"candidates", "pareto", "rejected", "evaluated", "search_seconds"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  ASSERT_EQ(json["candidates"].size(), 3u);
  for (const nlohmann::json& c : json["candidates"]) {
    for (const char* key : {"rank", "flags", "tokens_per_s_per_gpu", "step_time_s", "mfu",
                            "peak_bytes", "fits", "breakdown"}) {
      EXPECT_TRUE(c.contains(key)) << key;
    }
    EXPECT_TRUE(c["fits"].get<bool>());
  }
  EXPECT_EQ(json["candidates"][0]["rank"], 1);
  EXPECT_TRUE(json["rejected"].is_object());
}

TEST(PlanCliTest, MegatronFlagAndFixPinTheDimension) {
  for (const std::string pin : {"--tp 2", "--fix tp=2", "--fix=--tensor-model-parallel-size=2"}) {
    const Outcome outcome = RunCli(kSmallPlan + " --json " + pin);
    ASSERT_EQ(outcome.exit_code, 0) << pin << ": " << outcome.err;
    const nlohmann::json json = nlohmann::json::parse(outcome.out);
    ASSERT_FALSE(json["candidates"].empty()) << pin;
    for (const nlohmann::json& c : json["candidates"]) {
      EXPECT_NE(c["flags"].get<std::string>().find("--tensor-model-parallel-size 2 "),
                std::string::npos)
          << pin;
    }
  }
}

TEST(PlanCliTest, ExplainAndCompareProduceTheirSections) {
  const Outcome outcome =
      RunCli(kSmallPlan + " --explain 1 --compare \"--tp 1 --pp 2 --use-distributed-optimizer\"");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_NE(outcome.out.find("explain: why #1 beats #2"), std::string::npos) << outcome.out;
  EXPECT_NE(outcome.out.find("compare: your layout"), std::string::npos);
  EXPECT_NE(outcome.out.find("switching to #1 gains"), std::string::npos);
  EXPECT_NE(outcome.out.find("bubble / idle"), std::string::npos);
  EXPECT_NE(outcome.out.find("Pareto front"), std::string::npos);
  EXPECT_NE(outcome.out.find("rejected:"), std::string::npos);
}

TEST(PlanCliTest, CompareReadsAFile) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "trainscope_plan_compare.args";
  std::ofstream(path) << "--tp 2 --sequence-parallel\n--pp 1 # current layout\n";
  const Outcome outcome = RunCli(kSmallPlan + " --compare @" + path.string());
  std::filesystem::remove(path);
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_NE(outcome.out.find("--tensor-model-parallel-size 2 --sequence-parallel "
                             "--pipeline-model-parallel-size 1"),
            std::string::npos)
      << outcome.out;
}

TEST(PlanCliTest, WritesEveryLayoutToCsv) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "trainscope_plan_test.csv";
  const Outcome outcome = RunCli(kSmallPlan + " --json --csv " + path.string());
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  std::ifstream in(path);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header, "flags,status,rank,tokens_per_s_per_gpu,step_time_s,mfu,peak_bytes");
  int64_t rows = 0;
  for (std::string line; std::getline(in, line);) ++rows;
  std::filesystem::remove(path);
  EXPECT_GT(rows, 0);
}

TEST(PlanCliTest, RejectsMissingWorldSizeAndBadValues) {
  EXPECT_EQ(RunCli("plan --model Qwen3-0.6B --gbs 64").exit_code, 2);
  const Outcome objective = RunCli(kSmallPlan + " --objective speed");
  EXPECT_EQ(objective.exit_code, 2);
  EXPECT_NE(objective.err.find("--objective"), std::string::npos);
  const Outcome fix = RunCli(kSmallPlan + " --fix lr=3");
  EXPECT_EQ(fix.exit_code, 2);
  EXPECT_NE(fix.err.find("--fix"), std::string::npos);
}

}  // namespace
}  // namespace trainscope
