// End-to-end tests of two slime behaviours: dynamic batching (--use-dynamic-batch-size
// --max-tokens-per-gpu, slime/utils/dp_schedule.py; docs/rl.md) in `simulate` and `memory`, with
// its one-line input errors (exit 2) naming the flag, and FlashQLA's SM90 requirement
// (slime_plugins/models/qwen_gdn_backend.py, _validate_flashqla_runtime).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.h"

namespace trainscope {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// d = 8 / (t 2 · c 2) = 2 data-parallel ranks; 16 samples of 4096 tokens by default.
constexpr char kDynamic[] =
    "--model Qwen3-8B --framework slime --num-gpus 8 --tp 2 --cp 2 --sequence-parallel "
    "--gbs 16 --seq 4096 --use-dynamic-batch-size ";

TEST(SlimeCliTest, SimulateReportsTheDynamicBinsWorkedByHand) {
  // Budget 4096 x c 2 = 8192 tokens: two 4096-token samples per bin, 8 bins, a multiple of
  // d = 2, so 4 per rank. Padding: 2·ceil(4096/4) = 2048 per sample and rank, 4096 per bin,
  // already a multiple of t·128 = 256; x c = 8192 tokens. Attention 2·4096² / 8192² = 0.5.
  const Outcome outcome = RunCli(std::string("simulate ") + kDynamic +
                                 "--max-tokens-per-gpu 4096 --micro-batch-size 4 --json");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_THAT(outcome.err, HasSubstr("ignored"));
  EXPECT_THAT(outcome.err, HasSubstr("--micro-batch-size"));
  const nlohmann::json json = nlohmann::json::parse(outcome.out);
  const nlohmann::json& d = json["dynamic_batching"];
  EXPECT_EQ(d["num_bins"], 8);
  EXPECT_EQ(d["micro_batches_per_rank"], 4);
  EXPECT_EQ(d["bin_capacity_tokens"], 8192);
  EXPECT_EQ(d["max_bin_tokens"], 8192);
  EXPECT_DOUBLE_EQ(d["mean_bin_tokens"].get<double>(), 8192);
  EXPECT_DOUBLE_EQ(d["fill"].get<double>(), 1.0);
  EXPECT_EQ(d["simulated_bin_tokens"], 8192);
  EXPECT_EQ(d["memory_bin_tokens"], 8192);
  EXPECT_DOUBLE_EQ(d["attention_flops_fraction"].get<double>(), 0.5);
  EXPECT_EQ(json["num_micro_batches"], 4);
  EXPECT_DOUBLE_EQ(json["tokens_per_step"].get<double>(), 16 * 4096);
}

TEST(SlimeCliTest, CommGuardCountsTheCallsOfTheDynamicMicroBatches) {
  // The dynamic step above is 4 micro-batches of 8192 tokens per DP rank, as a static step of
  // GBS 8 x 8192 tokens over d = 2 is: the same guarded calls and the same memory.
  const Outcome dynamic = RunCli(std::string("simulate ") + kDynamic +
                                 "--max-tokens-per-gpu 4096 --comm-memory-guard all --json");
  const Outcome fixed = RunCli(
      "simulate --model Qwen3-8B --framework slime --num-gpus 8 --tp 2 --cp 2 --sequence-parallel "
      "--gbs 8 --seq 8192 --comm-memory-guard all --json");
  ASSERT_EQ(dynamic.exit_code, 0) << dynamic.err;
  ASSERT_EQ(fixed.exit_code, 0) << fixed.err;
  const nlohmann::json d = nlohmann::json::parse(dynamic.out);
  const nlohmann::json f = nlohmann::json::parse(fixed.out);
  EXPECT_EQ(d["comm_guard"]["guarded_calls"], f["comm_guard"]["guarded_calls"]);
  EXPECT_EQ(d["memory"]["max_peak_bytes"], f["memory"]["max_peak_bytes"]);
}

TEST(SlimeCliTest, TextShowsTheDynamicBatchingSection) {
  const Outcome outcome = RunCli(std::string("simulate ") + kDynamic + "--max-tokens-per-gpu 4096");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_THAT(outcome.out, HasSubstr("Dynamic batching"));
  EXPECT_THAT(outcome.out, HasSubstr("8 micro-batches, 4 per DP rank"));
}

TEST(SlimeCliTest, DistributionSamplesCountTheirRealTokens) {
  // seq_lengths.csv is 150 x 1 and 50 x 3: 16 samples are 4 x 150 and 12 x 50 = 1200 tokens.
  const Outcome outcome =
      RunCli(std::string("simulate ") + kDynamic + "--max-tokens-per-gpu 256 --json " +
             "--seq-length-distribution " + TRAINSCOPE_TEST_DATA_DIR + "/seq_lengths.csv");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  const nlohmann::json json = nlohmann::json::parse(outcome.out);
  EXPECT_DOUBLE_EQ(json["tokens_per_step"].get<double>(), 1200);
  EXPECT_EQ(json["dynamic_batching"]["num_samples"], 16);
  EXPECT_EQ(json["dynamic_batching"]["sample_lengths"], "distribution");
  EXPECT_EQ(json["dynamic_batching"]["num_bins"].get<int64_t>() % 2, 0);  // a multiple of d
  EXPECT_FALSE(json.contains("sequence_lengths"));  // the BSHD/THD what-if is static-only
}

TEST(SlimeCliTest, ForwardOnlyUsesTheSameBins) {
  const std::string flags =
      std::string("simulate ") + kDynamic + "--max-tokens-per-gpu 4096 --json";
  const Outcome train = RunCli(flags);
  const Outcome forward = RunCli(flags + " --forward-only");
  ASSERT_EQ(train.exit_code, 0) << train.err;
  ASSERT_EQ(forward.exit_code, 0) << forward.err;
  const nlohmann::json t = nlohmann::json::parse(train.out);
  const nlohmann::json f = nlohmann::json::parse(forward.out);
  EXPECT_EQ(f["dynamic_batching"], t["dynamic_batching"]);
  EXPECT_LT(f["step_time_s"].get<double>(), t["step_time_s"].get<double>());
}

TEST(SlimeCliTest, MemorySizesTheLargestBin) {
  // A smaller budget makes smaller bins, so less activation memory.
  const Outcome large =
      RunCli(std::string("memory ") + kDynamic + "--max-tokens-per-gpu 4096 --json");
  const Outcome small =
      RunCli(std::string("memory ") + kDynamic + "--max-tokens-per-gpu 2048 --json");
  ASSERT_EQ(large.exit_code, 0) << large.err;
  ASSERT_EQ(small.exit_code, 0) << small.err;
  EXPECT_LT(nlohmann::json::parse(small.out)["max_peak_bytes"].get<int64_t>(),
            nlohmann::json::parse(large.out)["max_peak_bytes"].get<int64_t>());
}

TEST(SlimeCliTest, ValidateLeavesTheMicroBatchCountToThePacking) {
  const Outcome outcome =
      RunCli(std::string("validate ") + kDynamic + "--max-tokens-per-gpu 4096 --json");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  const nlohmann::json layout = nlohmann::json::parse(outcome.out)["layout"];
  EXPECT_EQ(layout["max_tokens_per_gpu"], 4096);
  EXPECT_TRUE(layout["num_micro_batches"].is_null());
  EXPECT_EQ(layout["micro_batch_size"], 1);
}

TEST(SlimeCliTest, DynamicBatchingNeedsItsTokenBudget) {
  const Outcome outcome = RunCli(std::string("validate ") + kDynamic);
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_THAT(outcome.err, HasSubstr("--max-tokens-per-gpu"));
}

TEST(SlimeCliTest, RejectsATokenBudgetBelowOne) {
  const Outcome outcome = RunCli(std::string("validate ") + kDynamic + "--max-tokens-per-gpu 0");
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_THAT(outcome.err, HasSubstr("--max-tokens-per-gpu"));
}

TEST(SlimeCliTest, DynamicBatchingNeedsTheSlimeFramework) {
  const Outcome outcome = RunCli(
      "validate --model Qwen3-8B --num-gpus 8 --tp 2 --use-dynamic-batch-size "
      "--max-tokens-per-gpu 4096");
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_THAT(outcome.err, HasSubstr("--framework slime"));
}

TEST(SlimeCliTest, TokenBudgetWithoutDynamicBatchingIsIgnoredAsSlimeDoes) {
  const Outcome outcome = RunCli(
      "validate --model Qwen3-8B --framework slime --num-gpus 8 --tp 2 --max-tokens-per-gpu 4096");
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_THAT(outcome.err, HasSubstr("ignored"));
  EXPECT_THAT(outcome.err, HasSubstr("--max-tokens-per-gpu"));
}

TEST(SlimeCliTest, TooFewSamplesForTheDataParallelRanksIsAnError) {
  // 1 sample cannot make d = 2 micro-batches.
  const Outcome outcome = RunCli(
      "simulate --model Qwen3-8B --framework slime --num-gpus 8 --tp 2 --cp 2 --gbs 1 "
      "--use-dynamic-batch-size --max-tokens-per-gpu 4096");
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_THAT(outcome.err, HasSubstr("--global-batch-size"));
}

TEST(SlimeCliTest, LargestMicroBatchMustBeAStepTrainscopeCounts) {
  // 1,000 samples of 1e5 tokens per 1e8-token bin: one sequence beyond rule T10's 2^62 FLOPs.
  const Outcome outcome = RunCli(
      "simulate --model Qwen3-8B --framework slime --num-gpus 8 --tp 8 --gbs 1000000 --seq 100000 "
      "--use-dynamic-batch-size --max-tokens-per-gpu 100000000");
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_THAT(outcome.err, HasSubstr("--max-tokens-per-gpu"));
  EXPECT_THAT(outcome.err, HasSubstr("T10"));
}

TEST(SlimeCliTest, PlanAndWorkloadRefuseDynamicBatching) {
  const Outcome workload =
      RunCli(std::string("workload --summary ") + kDynamic + "--max-tokens-per-gpu 4096");
  EXPECT_EQ(workload.exit_code, 2);
  EXPECT_THAT(workload.err, HasSubstr("--use-dynamic-batch-size"));
  const Outcome plan = RunCli(std::string("plan ") + kDynamic + "--max-tokens-per-gpu 4096");
  EXPECT_EQ(plan.exit_code, 2);
  EXPECT_THAT(plan.err, HasSubstr("--use-dynamic-batch-size"));
}

constexpr char kQwen35[] =
    "simulate --model Qwen3.5-35B-A3B --framework slime --num-gpus 8 --tp 2 --cp 4 --ep 8 "
    "--etp 1 --sequence-parallel --qwen-gdn-backend flashqla ";

TEST(SlimeCliTest, FlashQlaNeedsAnSm90Gpu) {
  const Outcome l20 = RunCli(std::string(kQwen35) + "--gpu L20");
  EXPECT_EQ(l20.exit_code, 2);
  EXPECT_THAT(l20.err, HasSubstr("--qwen-gdn-backend flashqla: needs an SM90+ GPU (L20 is SM89)"));
  const Outcome a100 = RunCli(std::string(kQwen35) + "--gpu A100");
  EXPECT_EQ(a100.exit_code, 2);
  EXPECT_THAT(a100.err, HasSubstr("A100 is SM80"));
}

TEST(SlimeCliTest, ClusterFileComputeCapabilityLiftsTheCheck) {
  const std::filesystem::path path =
      std::filesystem::path(testing::TempDir()) / "slime_cli_sm90.yaml";
  std::ofstream(path) << "gpu: L20\ncompute_capability: 9.0\n";
  const Outcome outcome = RunCli(std::string(kQwen35) + "--cluster " + path.string() + " --json");
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_THAT(outcome.err, Not(HasSubstr("SM90")));
}

}  // namespace
}  // namespace trainscope
