// Framework profiles in the validator (docs/frameworks.md): Megatron-Bridge's Qwen3.5 rules per
// release (MB1-MB3), AReaL's padded-sequence CP rule (AR1), slime's duplicated Gated DeltaNet that
// lifts Megatron-Core's GDN split rules, the profile named on every violation, and the defaults
// each profile contributes. Model facts are quoted from the preset config.json files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/config/validate.h"
#include "trainscope/io/hf_config_loader.h"

namespace trainscope::config {
namespace {

const Violation* Find(const std::vector<Violation>& violations, std::string_view rule) {
  for (const Violation& violation : violations) {
    if (violation.rule == rule) return &violation;
  }
  return nullptr;
}

TrainingConfig Layout(Framework framework, int64_t world, int64_t t, int64_t c, int64_t e,
                      std::optional<int64_t> u) {
  TrainingConfig training;
  training.framework.framework = framework;
  training.parallel = {
      .world_size = world, .tensor = t, .context = c, .expert = e, .expert_tensor = u};
  training.sequence_parallel = t > 1;  // MoE layers need SP at t > 1 (C8)
  return training;
}

// Qwen3.5-35B-A3B: num_key_value_heads 2, so Megatron-Bridge 0.4 refuses TP 4 (MB1); Megatron-Core
// itself replicates KV heads and accepts it (16 query heads, 16/32 GDN heads divide by 4).
TEST(ValidateFrameworkTest, BridgeRejectsTensorParallelAboveKvHeads) {
  const ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  const TrainingConfig bridge = Layout(Framework::kMegatronBridge, 4, 4, 1, 1, std::nullopt);
  const ValidationResult result = Validate(model, bridge);
  const Violation* mb1 = Find(result.errors, "MB1");
  ASSERT_NE(mb1, nullptr);
  EXPECT_EQ(mb1->profile, "megatron-bridge 0.4");
  EXPECT_THAT(mb1->message, ::testing::HasSubstr("--tensor-model-parallel-size 4"));
  const ValidationResult core =
      Validate(model, Layout(Framework::kMegatronCore, 4, 4, 1, 1, std::nullopt));
  EXPECT_TRUE(core.ok()) << (core.ok() ? "" : core.errors.front().message);
}

// The guard was removed before v0.5.0 (#3238).
TEST(ValidateFrameworkTest, BridgeFiveAcceptsTensorParallelAboveKvHeads) {
  TrainingConfig bridge = Layout(Framework::kMegatronBridge, 4, 4, 1, 1, std::nullopt);
  bridge.framework.bridge_version = BridgeVersion::kV0_5;
  const ValidationResult result = Validate(io::LoadPreset("Qwen3.5-35B-A3B"), bridge);
  EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.errors.front().message);
}

// Qwen3.5-2B ties its embeddings (tie_word_embeddings true); 24 layers over p 2 · v 2 = 6 each.
TEST(ValidateFrameworkTest, BridgeBeforeSixRejectsVirtualStagesWithTiedEmbeddings) {
  const ModelConfig model = io::LoadPreset("Qwen3.5-2B");
  TrainingConfig bridge = Layout(Framework::kMegatronBridge, 2, 1, 1, 1, std::nullopt);
  bridge.parallel.pipeline = 2;
  bridge.parallel.virtual_stages = 2;
  bridge.batch.global_batch_size = 2;  // the interleaved schedule needs m >= p (C22)
  bridge.framework.bridge_version = BridgeVersion::kV0_5;
  const ValidationResult five = Validate(model, bridge);
  const Violation* mb2 = Find(five.errors, "MB2");
  ASSERT_NE(mb2, nullptr);
  EXPECT_EQ(mb2->profile, "megatron-bridge 0.5");
  bridge.framework.bridge_version = BridgeVersion::kV0_6;
  const ValidationResult six = Validate(model, bridge);
  EXPECT_TRUE(six.ok()) << (six.ok() ? "" : six.errors.front().message);
}

// Qwen3.5-2B: mtp_num_hidden_layers 1, tied embeddings; SP at t 2 (= its 2 KV heads).
TEST(ValidateFrameworkTest, BridgeFourRejectsMtpWithSequenceParallelAndTiedEmbeddings) {
  const ModelConfig model = io::LoadPreset("Qwen3.5-2B");
  TrainingConfig bridge = Layout(Framework::kMegatronBridge, 2, 2, 1, 1, std::nullopt);
  bridge.sequence_parallel = true;
  const ValidationResult four = Validate(model, bridge);
  EXPECT_NE(Find(four.errors, "MB3"), nullptr);
  // AReaL patches the crash at import, so its profile does not report it.
  bridge.framework.framework = Framework::kAreal;
  const ValidationResult areal = Validate(model, bridge);
  EXPECT_EQ(Find(areal.errors, "MB3"), nullptr);
}

// AReaL pads Qwen3.5 (BSHD) and rejects CP > 1 there.
TEST(ValidateFrameworkTest, ArealRejectsContextParallelWithPaddedSequences) {
  const ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  const TrainingConfig areal = Layout(Framework::kAreal, 2, 1, 2, 1, std::nullopt);
  EXPECT_EQ(areal.ResolvedSequenceLayout(model), SequenceLayout::kBshd);
  const ValidationResult result = Validate(model, areal);
  const Violation* ar1 = Find(result.errors, "AR1");
  ASSERT_NE(ar1, nullptr);
  EXPECT_EQ(ar1->profile, "areal");
}

// AReaL's ParallelStrategy defaults ETP to 1: PP2/TP2/EP2 on 4 GPUs fills u·e·p = 1·2·2 = 4,
// where Megatron's default u = t = 2 would need 8 (C2).
TEST(ValidateFrameworkTest, ArealDefaultsExpertTensorParallelToOne) {
  const ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  TrainingConfig areal = Layout(Framework::kAreal, 4, 2, 1, 2, std::nullopt);
  areal.parallel.pipeline = 2;
  const TrainingConfig with_defaults = WithFrameworkDefaults(areal);
  EXPECT_EQ(with_defaults.parallel.ExpertTensor(), 1);
  EXPECT_TRUE(with_defaults.sequence_parallel);  // t = 2 > 1
  const ValidationResult defaulted = Validate(model, with_defaults);
  EXPECT_TRUE(defaulted.ok()) << (defaulted.ok() ? "" : defaulted.errors.front().message);
  const ValidationResult megatron_default = Validate(model, areal);
  EXPECT_NE(Find(megatron_default.errors, "C2"), nullptr);
  // A stated ETP is kept.
  areal.parallel.expert_tensor = 2;
  EXPECT_EQ(WithFrameworkDefaults(areal).parallel.ExpertTensor(), 2);
}

TEST(ValidateFrameworkTest, SlimeAlwaysUsesTheDistributedOptimizer) {
  const TrainingConfig slime = Layout(Framework::kSlime, 1, 1, 1, 1, std::nullopt);
  EXPECT_TRUE(WithFrameworkDefaults(slime).data_parallel.distributed_optimizer);
  EXPECT_FALSE(WithFrameworkDefaults(TrainingConfig{}).data_parallel.distributed_optimizer);
}

// The slime seed: TP2 CP4 EP8 ETP1 on 8 GPUs, core 0.17. Megatron-Core 0.17 asserts CP 1 for GDN
// (C31); slime's HF GDN runs unsplit, with packed THD sequences, so the layout is legal.
TEST(ValidateFrameworkTest, SlimeAcceptsContextParallelOnCore017) {
  const ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  TrainingConfig slime = Layout(Framework::kSlime, 8, 2, 4, 8, 1);
  slime.core_version = CoreVersion::kV0_17;
  slime.sequence_parallel = true;
  EXPECT_EQ(slime.ResolvedSequenceLayout(model), SequenceLayout::kThd);
  const ValidationResult slime_result = Validate(model, slime);
  EXPECT_TRUE(slime_result.ok()) << (slime_result.ok() ? "" : slime_result.errors.front().message);
  TrainingConfig core = slime;
  core.framework.framework = Framework::kMegatronCore;
  const ValidationResult core_result = Validate(model, core);
  const Violation* c31 = Find(core_result.errors, "C31");
  ASSERT_NE(c31, nullptr);
  EXPECT_EQ(c31->profile, "megatron-core 0.17");
}

TEST(ValidateFrameworkTest, CoreRulesNameTheCoreProfileUnderAFramework) {
  // 16 query heads over t 3 (C4).
  const ValidationResult result = Validate(io::LoadPreset("Qwen3.5-35B-A3B"),
                                           Layout(Framework::kVerl, 3, 3, 1, 1, std::nullopt));
  const Violation* c4 = Find(result.errors, "C4");
  ASSERT_NE(c4, nullptr);
  EXPECT_EQ(c4->profile, "megatron-core 0.18 (verl)");
}

// C43: the hybrid device optimizer needs the precision-aware optimizer (arguments.py).
TEST(ValidateFrameworkTest, CpuOffloadedOptimizerNeedsThePrecisionAwareOptimizer) {
  const ModelConfig model = io::LoadPreset("Qwen3-8B");
  TrainingConfig training;
  training.optimizer.cpu_offload = true;
  const ValidationResult result = Validate(model, training);
  const Violation* c43 = Find(result.errors, "C43");
  ASSERT_NE(c43, nullptr);
  EXPECT_THAT(c43->message, ::testing::HasSubstr("--optimizer-cpu-offload"));
  training.precision.precision_aware_optimizer = true;
  EXPECT_TRUE(Validate(model, training).ok());
}

// TT1: --training.compile is torchtitan's switch (its [training] compile key); under a
// Megatron-Core framework it would change nothing, so it is refused with the fix.
TEST(ValidateFrameworkTest, TorchCompileNeedsTorchtitan) {
  const ModelConfig model = io::LoadPreset("Llama-3-8B");
  TrainingConfig training = Layout(Framework::kMegatronCore, 8, 1, 1, 1, std::nullopt);
  training.framework.torch_compile = true;
  const ValidationResult refused = Validate(model, training);
  const Violation* tt1 = Find(refused.errors, "TT1");
  ASSERT_NE(tt1, nullptr);
  EXPECT_EQ(tt1->profile, "megatron-core");
  EXPECT_THAT(tt1->fix, testing::HasSubstr("--framework torchtitan"));
  training.framework.framework = Framework::kTorchtitan;
  EXPECT_EQ(Find(Validate(model, training).errors, "TT1"), nullptr);
}

}  // namespace
}  // namespace trainscope::config
