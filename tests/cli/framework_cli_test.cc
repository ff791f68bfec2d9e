// End-to-end tests of --framework (docs/frameworks.md): the done-when layouts, the profile
// named on every reported rule, and the slime / Megatron-Bridge flag spellings accepted, checked
// against the model or listed as ignored.
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

TEST(FrameworkCliTest, BridgeRejectsTensorParallelFourOnQwen35MoeWithItsRule) {
  const Outcome outcome = RunCli(
      "validate --model Qwen3.5-35B-A3B --framework megatron-bridge --tp 4 --sequence-parallel "
      "--num-gpus 4");
  EXPECT_EQ(outcome.exit_code, 2) << outcome.err;
  EXPECT_THAT(outcome.out, HasSubstr("[MB1]"));
  EXPECT_THAT(outcome.out, HasSubstr("profile: megatron-bridge 0.4"));
}

TEST(FrameworkCliTest, SlimeAcceptsTheSeedLayoutOnCore017) {
  const Outcome outcome = RunCli(
      "validate --model Qwen3.5-35B-A3B --framework slime --megatron-core 0.17 --tp 2 --cp 4 "
      "--ep 8 --etp 1 --sequence-parallel --num-gpus 8 --json");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.out << outcome.err;
  const nlohmann::json json = nlohmann::json::parse(outcome.out);
  EXPECT_TRUE(json["valid"].get<bool>());
  EXPECT_EQ(json["layout"]["framework"], "slime");
  EXPECT_EQ(json["layout"]["sequence_layout"], "thd");
}

TEST(FrameworkCliTest, ArealAcceptsPp2Tp2Ep2OnFourGpusWithoutEtp) {
  const Outcome outcome = RunCli(
      "validate --model Qwen3.5-35B-A3B --framework areal --pp 2 --tp 2 --ep 2 --num-gpus 4 "
      "--json");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.out << outcome.err;
  const nlohmann::json json = nlohmann::json::parse(outcome.out);
  EXPECT_EQ(json["layout"]["etp"].get<int64_t>(), 1);
  EXPECT_EQ(json["layout"]["sequence_layout"], "bshd");
  EXPECT_EQ(json["layout"]["megatron_bridge"], "0.4");
}

TEST(FrameworkCliTest, InvalidConfigurationErrorNamesTheProfile) {
  const Outcome outcome = RunCli(
      "memory --model Qwen3.5-35B-A3B --framework megatron-bridge --tp 4 --sequence-parallel "
      "--num-gpus 4");
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_THAT(outcome.err, HasSubstr("[MB1]"));
  EXPECT_THAT(outcome.err, HasSubstr("(rule of megatron-bridge 0.4)"));
}

// slime's scripts/models/qwen3.5-35B-A3B.sh style arguments: the GDN and gate flags describe the
// model and are checked; --spec and --ffn-hidden-size (no dense layer in an all-MoE model) are
// listed as ignored.
TEST(FrameworkCliTest, AcceptsSlimeModelFlagsThatMatchTheModel) {
  const Outcome outcome = RunCli(
      "validate --model Qwen3.5-35B-A3B --framework slime --spec slime_plugins.models.qwen3_5 "
      "get_qwen3_5_spec --attention-output-gate --moe-shared-expert-gate "
      "--experimental-attention-variant gated_delta_net --linear-attention-freq 4 "
      "--linear-conv-kernel-dim 4 --linear-key-head-dim 128 --linear-value-head-dim 128 "
      "--linear-num-key-heads 16 --linear-num-value-heads 32 --ffn-hidden-size 512");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.out << outcome.err;
  EXPECT_THAT(outcome.err, HasSubstr("ignored"));
  EXPECT_THAT(outcome.err, HasSubstr("--spec"));
  EXPECT_THAT(outcome.err, HasSubstr("--ffn-hidden-size"));
}

// A DeepSeek-V3 Megatron launch script's model flags (Megatron-LM arguments.py MLA group): the
// MLA sizes and router groups are checked; --kv-channels and --num-query-groups, which MLA does
// not read, are listed as ignored.
TEST(FrameworkCliTest, ChecksDeepSeekV3MlaFlagsAgainstTheModel) {
  const Outcome outcome = RunCli(
      "validate --model DeepSeek-V3 --multi-latent-attention --q-lora-rank 1536 "
      "--kv-lora-rank 512 --qk-head-dim 128 --qk-pos-emb-head-dim 64 --v-head-dim 128 "
      "--moe-router-num-groups 8 --moe-router-group-topk 4 --kv-channels 128 "
      "--num-query-groups 128 --num-experts 256 --moe-ffn-hidden-size 2048 --mtp-num-layers 1");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.out << outcome.err;
  EXPECT_THAT(outcome.err, HasSubstr("--kv-channels"));
  const Outcome rank = RunCli("validate --model DeepSeek-V3 --kv-lora-rank 256");
  EXPECT_EQ(rank.exit_code, 2);
  EXPECT_THAT(rank.err, HasSubstr("--kv-lora-rank"));
  const Outcome mla = RunCli("validate --model Qwen3-8B --multi-latent-attention");
  EXPECT_EQ(mla.exit_code, 2);
  EXPECT_THAT(mla.err, HasSubstr("--multi-latent-attention"));
  // Kimi-K2 has no expert groups: --moe-router-num-groups 1 says the same.
  EXPECT_EQ(RunCli("validate --model Kimi-K2 --moe-router-num-groups 1").exit_code, 0);
}

TEST(FrameworkCliTest, RejectsModelFlagsThatContradictTheModel) {
  const Outcome gate = RunCli("validate --model Qwen3-8B --attention-output-gate");
  EXPECT_EQ(gate.exit_code, 2);
  EXPECT_THAT(gate.err, HasSubstr("--attention-output-gate"));
  const Outcome variant = RunCli(
      "validate --model Qwen3-8B --experimental-attention-variant "
      "gated_delta_net");
  EXPECT_EQ(variant.exit_code, 2);
  EXPECT_THAT(variant.err, HasSubstr("--experimental-attention-variant"));
  const Outcome freq = RunCli("validate --model Qwen3.5-35B-A3B --linear-attention-freq 3");
  EXPECT_EQ(freq.exit_code, 2);
  EXPECT_THAT(freq.err, HasSubstr("--linear-attention-freq"));
  const Outcome heads = RunCli("validate --model Qwen3.5-35B-A3B --linear-num-key-heads 8");
  EXPECT_EQ(heads.exit_code, 2);
  EXPECT_THAT(heads.err, HasSubstr("--linear-num-key-heads"));
}

TEST(FrameworkCliTest, RejectsAnUnknownFramework) {
  const Outcome outcome = RunCli("validate --model Qwen3-8B --framework nemo");
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_THAT(outcome.err, HasSubstr("--framework"));
}

// The same layout under slime spends more time in the GDN: it runs unsplit on all t·c = 8 ranks.
TEST(FrameworkCliTest, SlimeSimulatesTheDuplicatedGatedDeltaNet) {
  const std::string layout =
      "simulate --model Qwen3.5-35B-A3B --tp 2 --cp 4 --ep 8 --etp 1 --sequence-parallel "
      "--num-gpus 8 --moe-token-dispatcher-type alltoall --json";
  const Outcome core = RunCli(layout);
  const Outcome slime = RunCli(layout + " --framework slime");
  ASSERT_EQ(core.exit_code, 0) << core.err;
  ASSERT_EQ(slime.exit_code, 0) << slime.err;
  const nlohmann::json core_json = nlohmann::json::parse(core.out);
  const nlohmann::json slime_json = nlohmann::json::parse(slime.out);
  EXPECT_GT(slime_json["breakdown"]["compute_total_s"].get<double>(),
            core_json["breakdown"]["compute_total_s"].get<double>());
}

// --optimizer is modelled now (not listed as ignored); the offloaded optimizer reports its pinned
// host bytes per rank and per node (8 ranks of the one stage).
TEST(FrameworkCliTest, MemoryReportsHostBytesOfTheOffloadedOptimizer) {
  const Outcome outcome = RunCli(
      "memory --model Qwen3-8B --tp 2 --num-gpus 8 --use-distributed-optimizer --optimizer adam "
      "--optimizer-cpu-offload --use-precision-aware-optimizer --overlap-cpu-optimizer-d2h-h2d "
      "--json");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_THAT(outcome.err, ::testing::Not(HasSubstr("--optimizer")));
  const nlohmann::json json = nlohmann::json::parse(outcome.out);
  const int64_t per_rank = json["per_rank"][0]["host_optimizer_bytes"].get<int64_t>();
  EXPECT_GT(per_rank, 0);
  EXPECT_EQ(json["host_bytes_per_node"].get<int64_t>(), 8 * per_rank);
  EXPECT_EQ(json["per_rank"][0]["optimizer_bytes"].get<int64_t>(), 0);
}

TEST(FrameworkCliTest, OffloadedOptimizerStepTakesLongerThanTheGpuStep) {
  const std::string base =
      "simulate --model Qwen3-8B --tp 2 --num-gpus 8 "
      "--use-distributed-optimizer --use-precision-aware-optimizer --json";
  const Outcome gpu = RunCli(base);
  const Outcome host = RunCli(base + " --optimizer-cpu-offload");
  ASSERT_EQ(gpu.exit_code, 0) << gpu.err;
  ASSERT_EQ(host.exit_code, 0) << host.err;
  EXPECT_GT(nlohmann::json::parse(host.out)["breakdown"]["optimizer_s"].get<double>(),
            nlohmann::json::parse(gpu.out)["breakdown"]["optimizer_s"].get<double>());
}

TEST(FrameworkCliTest, RejectsAnOffloadFractionAboveOne) {
  const Outcome outcome = RunCli("memory --model Qwen3-8B --optimizer-offload-fraction 1.5");
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_THAT(outcome.err, HasSubstr("--optimizer-offload-fraction"));
}

}  // namespace
}  // namespace trainscope
