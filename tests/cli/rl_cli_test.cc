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
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

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

// `trainscope rl`: the per-phase JSON contract of one RL step, and its one-line usage errors.
TEST(RlCliTest, RlJsonListsEveryPhaseAndTheStepTime) {
  const Outcome rl = RunCli(std::string("rl ") + kLayout +
                            "--gbs 32 --seq 4096 --colocate --rollout-tp 8 --transport ipc "
                            "--rollout-batch-size 16 --n-samples-per-prompt 8 "
                            "--rollout-max-response-len 4096 --use-kl-loss --json");
  ASSERT_EQ(rl.exit_code, 0) << rl.err;
  const nlohmann::json json = nlohmann::json::parse(rl.out);
  for (const char* key : {"step_seconds", "phases", "bottleneck", "num_optimizer_steps"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  // 16 x 8 = 128 samples over GBS 32: four optimizer steps; colocated, with the ref pass.
  EXPECT_EQ(json["num_optimizer_steps"].get<int64_t>(), 4);
  std::vector<std::string> names;
  double sum = 0;
  for (const nlohmann::json& phase : json["phases"]) {
    names.push_back(phase["name"].get<std::string>());
    EXPECT_TRUE(phase.contains("peak_bytes"));
    sum += phase["seconds"].get<double>();
  }
  EXPECT_EQ(names, (std::vector<std::string>{"rollout", "offload_onload", "ref_log_probs",
                                             "old_log_probs", "actor_train", "weight_sync"}));
  EXPECT_NEAR(json["step_seconds"].get<double>(), sum, 1e-9 * sum);
}

TEST(RlCliTest, RlNeedsTheRolloutShape) {
  const Outcome outcome =
      RunCli(std::string("rl ") + kLayout + "--colocate --rollout-tp 8 --rollout-batch-size 16");
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_THAT(outcome.err, HasSubstr("--rollout-max-response-len"));
  const Outcome mean = RunCli(std::string("rl ") + kLayout +
                              "--colocate --rollout-tp 8 --rollout-batch-size 16 "
                              "--rollout-max-response-len 100 --rollout-mean-response-len 200");
  EXPECT_EQ(mean.exit_code, 2);
  EXPECT_THAT(mean.err, HasSubstr("--rollout-mean-response-len"));
}

TEST(RlCliTest, RlReportsTheCommGuardOfBothPasses) {
  const Outcome rl = RunCli(std::string("rl ") + kLayout +
                            "--gbs 32 --seq 4096 --colocate --rollout-tp 8 --transport ipc "
                            "--rollout-batch-size 16 --n-samples-per-prompt 8 "
                            "--rollout-max-response-len 4096 --comm-memory-guard all --json");
  ASSERT_EQ(rl.exit_code, 0) << rl.err;
  const nlohmann::json guard = nlohmann::json::parse(rl.out)["comm_guard"];
  EXPECT_EQ(guard["mode"], "all");
  // A forward-only pass over all 4 global batches issues fewer guarded calls than 4 training
  // steps (no backward, no recompute, no gradient sync), and at least one.
  const int64_t train = guard["actor_train_step"]["guarded_calls"].get<int64_t>();
  const int64_t forward = guard["log_prob_pass"]["guarded_calls"].get<int64_t>();
  EXPECT_GT(forward, 0);
  EXPECT_LT(forward, 4 * train);
}

// `rl --trace`: one slice per phase laid end to end (the step is synchronous), four optimizer-step
// slices inside actor_train, on the rollout engines' own process when they are not colocated.
TEST(RlCliTest, RlTraceLaysThePhasesEndToEnd) {
  const std::filesystem::path trace =
      std::filesystem::temp_directory_path() / ("rl_trace_" + std::to_string(::getpid()) + ".json");
  const Outcome rl = RunCli(std::string("rl ") + kLayout +
                            "--gbs 32 --seq 4096 --rollout-gpus 8 --rollout-tp 8 "
                            "--rollout-batch-size 16 --n-samples-per-prompt 8 "
                            "--rollout-max-response-len 4096 --json --trace " +
                            trace.string());
  ASSERT_EQ(rl.exit_code, 0) << rl.err;
  const nlohmann::json step = nlohmann::json::parse(rl.out);
  std::ifstream in(trace);
  const nlohmann::json json = nlohmann::json::parse(in);
  std::filesystem::remove(trace);
  double clock_us = 0;
  int optimizer_steps = 0;
  std::set<int64_t> pids;
  for (const nlohmann::json& event : json["traceEvents"]) {
    if (event["ph"] == "M") pids.insert(event["pid"].get<int64_t>());
    if (event["ph"] != "X") continue;
    const std::string name = event["name"];
    if (name.rfind("optimizer step", 0) == 0) {
      ++optimizer_steps;
      continue;
    }
    if (name == "weight_sync" && event["pid"].get<int64_t>() == 2) continue;  // the receivers
    EXPECT_NEAR(event["ts"].get<double>(), clock_us, 1e-3) << name;
    clock_us += event["dur"].get<double>();
  }
  EXPECT_EQ(optimizer_steps, 4);
  EXPECT_EQ(pids, (std::set<int64_t>{1, 2}));  // trainer and rollout engines
  EXPECT_NEAR(clock_us, step["step_seconds"].get<double>() * 1e6, 1e-2);
}

// `rl --critic --teacher-log-probs`: the new phases under their stable names in slime's order,
// and the log-prob budget's one-line errors.
TEST(RlCliTest, RlCriticAndTeacherAddTheirPhases) {
  const std::string base = std::string("rl ") + kLayout +
                           "--gbs 32 --seq 4096 --colocate --rollout-tp 8 --transport ipc "
                           "--rollout-batch-size 16 --n-samples-per-prompt 8 "
                           "--rollout-max-response-len 4096 --use-kl-loss ";
  const Outcome rl = RunCli(base + "--critic --teacher-log-probs --json");
  ASSERT_EQ(rl.exit_code, 0) << rl.err;
  const nlohmann::json json = nlohmann::json::parse(rl.out);
  std::vector<std::string> names;
  for (const nlohmann::json& phase : json["phases"]) {
    names.push_back(phase["name"].get<std::string>());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"rollout", "offload_onload", "critic_values",
                                             "critic_train", "ref_log_probs", "teacher_log_probs",
                                             "old_log_probs", "actor_train", "weight_sync"}));
  EXPECT_TRUE(json["critic"].get<bool>());
  const Outcome zero = RunCli(base + "--log-prob-max-token-len-per-gpu 0");
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_THAT(zero.err, HasSubstr("--log-prob-max-token-len-per-gpu"));
  const Outcome short_budget = RunCli(base + "--log-prob-max-token-len-per-gpu 1000");
  EXPECT_EQ(short_budget.exit_code, 2);  // below one 4096-token sample
  EXPECT_THAT(short_budget.err, HasSubstr("--log-prob-max-token-len-per-gpu 1000"));
}

}  // namespace
}  // namespace trainscope
