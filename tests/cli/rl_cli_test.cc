// End-to-end tests of `trainscope weight-sync` (docs/rl.md): the JSON contract, the bytes equal to
// 2 x the checkpoint parameters `params` reports, and one-line usage errors (exit 2) naming the
// flag for impossible rollout layouts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.h"

namespace trainscope {
namespace {

using ::testing::HasSubstr;

constexpr char kLayout[] =
    "--model Qwen3.5-35B-A3B --num-gpus 8 --tp 2 --ep 8 --etp 1 --sequence-parallel --gpu H100 ";

TEST(RlCliTest, WeightSyncJsonHasTheContractKeysAndTwoBytesPerParameter) {
  const Outcome sync =
      RunCli(std::string("weight-sync ") + kLayout + "--rollout-gpus 8 --rollout-tp 4 --json");
  ASSERT_EQ(sync.exit_code, 0) << sync.err;
  const nlohmann::json json = nlohmann::json::parse(sync.out);
  for (const char* key : {"bytes", "num_buckets", "gather_seconds", "transfer_seconds",
                          "overhead_seconds", "total_seconds"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  const Outcome params = RunCli("params --model Qwen3.5-35B-A3B --json");
  ASSERT_EQ(params.exit_code, 0) << params.err;
  EXPECT_EQ(json["bytes"].get<int64_t>(),
            2 * nlohmann::json::parse(params.out)["total"].get<int64_t>());
  EXPECT_EQ(json["gathers"].size(), 2u);  // TP 2 and EP 8
  EXPECT_EQ(json["transport"], "nccl");
}

TEST(RlCliTest, WeightSyncTextShowsTheTotal) {
  const Outcome sync = RunCli(std::string("weight-sync ") + kLayout +
                              "--rollout-gpus 8 --rollout-tp 8 --colocate --transport ipc");
  ASSERT_EQ(sync.exit_code, 0) << sync.err;
  EXPECT_THAT(sync.out, HasSubstr("total"));
  EXPECT_THAT(sync.out, HasSubstr("colocated"));
}

TEST(RlCliTest, WeightSyncNeedsTheRolloutLayout) {
  const Outcome outcome = RunCli(std::string("weight-sync ") + kLayout + "--rollout-tp 8");
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_THAT(outcome.err, HasSubstr("--rollout-gpus"));
}

TEST(RlCliTest, WeightSyncRejectsImpossibleRolloutLayouts) {
  const Outcome tp =
      RunCli(std::string("weight-sync ") + kLayout + "--rollout-gpus 8 --rollout-tp 3");
  EXPECT_EQ(tp.exit_code, 2);
  EXPECT_THAT(tp.err, HasSubstr("--rollout-tp"));
  const Outcome ipc = RunCli(std::string("weight-sync ") + kLayout +
                             "--rollout-gpus 8 --rollout-tp 8 --transport ipc");
  EXPECT_EQ(ipc.exit_code, 2);
  EXPECT_THAT(ipc.err, HasSubstr("--transport ipc"));
  const Outcome dtype = RunCli(std::string("weight-sync ") + kLayout +
                               "--rollout-gpus 8 --rollout-tp 8 --rollout-dtype int4");
  EXPECT_EQ(dtype.exit_code, 2);
  EXPECT_THAT(dtype.err, HasSubstr("--rollout-dtype"));
}

TEST(RlCliTest, SimulateReportsBothMfuConventions) {
  const Outcome outcome = RunCli("simulate --model Qwen3-8B --tp 2 --num-gpus 8 --json");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  const nlohmann::json json = nlohmann::json::parse(outcome.out);
  EXPECT_TRUE(json.contains("mfu"));
  EXPECT_GT(json["mfu_6n_active"].get<double>(), 0);
  EXPECT_GT(json["tflops_per_gpu_6n_active"].get<double>(), 0);
}

// A forward-only (log-prob) pass of the same layout: no backward, recompute or optimizer, so it
// is shorter than the training step; its memory keeps no gradients or optimizer state.
TEST(RlCliTest, ForwardOnlyPassIsShorterAndLighterThanTheTrainingStep) {
  const std::string layout =
      "--model Qwen3-8B --tp 2 --pp 2 --num-gpus 8 --gbs 16 --recompute-granularity full "
      "--recompute-method uniform --recompute-num-layers 1 --json";
  const Outcome train = RunCli("simulate " + layout);
  const Outcome eval = RunCli("simulate --forward-only " + layout);
  ASSERT_EQ(train.exit_code, 0) << train.err;
  ASSERT_EQ(eval.exit_code, 0) << eval.err;
  const nlohmann::json train_json = nlohmann::json::parse(train.out);
  const nlohmann::json eval_json = nlohmann::json::parse(eval.out);
  EXPECT_LT(eval_json["step_time_s"].get<double>(), train_json["step_time_s"].get<double>() / 2);
  EXPECT_EQ(eval_json["breakdown"]["optimizer_s"].get<double>(), 0);
  const Outcome memory = RunCli("memory --forward-only " + layout);
  ASSERT_EQ(memory.exit_code, 0) << memory.err;
  const nlohmann::json memory_json = nlohmann::json::parse(memory.out);
  EXPECT_EQ(memory_json["per_rank"][0]["grads_bytes"].get<int64_t>(), 0);
  EXPECT_EQ(memory_json["per_rank"][0]["optimizer_bytes"].get<int64_t>(), 0);
}

}  // namespace
}  // namespace trainscope
