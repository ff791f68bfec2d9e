// The configuration validator (docs/validation.md: Megatron rules C1-C42, plus trainscope's
// T1-T9). Every rule has a test that breaks it and one that satisfies it; expected outcomes are
// derived by hand from the preset config.json values quoted in each comment.
#include "trainscope/config/validate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/io/hf_config_loader.h"

namespace trainscope::config {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

// The first violation with `rule`, or nullptr.
const Violation* Find(const std::vector<Violation>& violations, std::string_view rule) {
  for (const Violation& violation : violations) {
    if (violation.rule == rule) return &violation;
  }
  return nullptr;
}

bool HasRule(const std::vector<Violation>& violations, std::string_view rule) {
  return Find(violations, rule) != nullptr;
}

// Passes when some violation has `rule`, names `flag` in its message and lists it in its flags.
::testing::AssertionResult Names(const std::vector<Violation>& violations, std::string_view rule,
                                 std::string_view flag) {
  for (const Violation& violation : violations) {
    if (violation.rule != rule) continue;
    const bool in_message = violation.message.find(flag) != std::string::npos;
    const bool in_flags =
        std::find(violation.flags.begin(), violation.flags.end(), flag) != violation.flags.end();
    if (in_message && in_flags) return ::testing::AssertionSuccess();
  }
  std::string listed;
  for (const Violation& violation : violations) {
    listed += "\n  [" + violation.rule + "] " + violation.message;
  }
  return ::testing::AssertionFailure()
         << "no " << rule << " violation naming " << flag << " among:" << listed;
}

TrainingConfig WithSizes(const ParallelSizes& parallel) {
  TrainingConfig training;
  training.parallel = parallel;
  return training;
}

// Example 1: Qwen3-235B-A22B on 256 GPUs, t 2, p 8, v 4, e 32, u 1, SP, both account-for options.
// u must be 1: left unset it defaults to t = 2 and u·e·p = 2·32·8 = 512 does not divide 256 (C2).
// d = 256/(2·8) = 16, GBS 512 with b 1 gives m = 512/16 = 32, a multiple of p = 8.
TrainingConfig Qwen235bExample() {
  TrainingConfig training = WithSizes({.world_size = 256,
                                       .tensor = 2,
                                       .pipeline = 8,
                                       .virtual_stages = 4,
                                       .expert = 32,
                                       .expert_tensor = 1});
  training.sequence_parallel = true;
  training.split.account_for_embedding = true;
  training.split.account_for_loss = true;
  training.batch.micro_batch_size = 1;
  training.batch.global_batch_size = 512;
  return training;
}

// Example 2: Qwen3.5-35B-A3B on 16 GPUs, p 2, e 8, first stage 16 / last stage 24 layers.
TrainingConfig Qwen35MoeExample() {
  TrainingConfig training = WithSizes({.world_size = 16, .pipeline = 2, .expert = 8});
  training.split.first_stage_layers = 16;
  training.split.last_stage_layers = 24;
  training.batch.global_batch_size = 64;
  return training;
}

// Example 3: Qwen3-30B-A3B on 16 GPUs with e 16.
TrainingConfig Qwen30bExample() { return WithSizes({.world_size = 16, .expert = 16}); }

TEST(ValidateTest, AcceptsQwen235bOn256GpusWithVppAndAccountForOptions) {
  // 94 layers + embedding + loss = 96 slots = 8 ranks · 12 = 8 · 4 chunks · 3 (C15, C16).
  const ValidationResult result = Validate(io::LoadPreset("Qwen3-235B-A22B"), Qwen235bExample());
  EXPECT_TRUE(result.ok());
  EXPECT_TRUE(result.errors.empty());
  EXPECT_TRUE(result.warnings.empty());
}

TEST(ValidateTest, AcceptsQwen35MoeWithUnevenFirstAndLastStage) {
  // 40 layers - 16 - 24 = 0 middle layers for 0 middle stages (C18); E 256 % 8 == 0.
  const ValidationResult result = Validate(io::LoadPreset("Qwen3.5-35B-A3B"), Qwen35MoeExample());
  EXPECT_TRUE(result.errors.empty());
  EXPECT_TRUE(result.warnings.empty());
}

TEST(ValidateTest, AcceptsQwen30bWithSixteenWayExpertParallel) {
  // 128 experts / 16 = 8 per rank; W 16 = u·e·p = 1·16·1.
  const ValidationResult result = Validate(io::LoadPreset("Qwen3-30B-A3B"), Qwen30bExample());
  EXPECT_TRUE(result.errors.empty());
  EXPECT_TRUE(result.warnings.empty());
}

TEST(ValidateTest, ReportsEveryViolationNotOnlyTheFirst) {
  // Qwen3-8B: 32 heads. t 3 breaks C4 (32 % 3 = 2) and W 4 breaks C1 (4 % 3 = 1).
  const ValidationResult result =
      Validate(io::LoadPreset("Qwen3-8B"), WithSizes({.world_size = 4, .tensor = 3}));
  EXPECT_TRUE(HasRule(result.errors, "C1"));
  EXPECT_TRUE(HasRule(result.errors, "C4"));
}

TEST(ValidateTest, RejectsNonPositiveSizesBeforeOtherRules) {
  // t 0 would divide by zero in every later rule, so only T1 is reported.
  const ValidationResult result =
      Validate(io::LoadPreset("Qwen3-8B"), WithSizes({.world_size = 8, .tensor = 0}));
  EXPECT_TRUE(Names(result.errors, "T1", "--tensor-model-parallel-size"));
  EXPECT_EQ(result.errors.size(), 1u);
}

TEST(ValidateTest, RejectsZeroGlobalBatchSize) {
  TrainingConfig training = Qwen30bExample();
  training.batch.global_batch_size = 0;
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3-30B-A3B"), training).errors, "T1",
                    "--global-batch-size"));
}

TEST(ValidateTest, AcceptsUnsetExpertTensorSizeAsDefault) {
  // An unset expert_tensor defaults to t; it is not a size below 1.
  const ValidationResult result =
      Validate(io::LoadPreset("Qwen3-8B"), WithSizes({.world_size = 8}));
  EXPECT_FALSE(HasRule(result.errors, "T1"));
}

TEST(ValidateTest, RejectsWorldSizeNotDivisibleByModelParallelSize) {
  // t·p·c = 8·1·1 = 8 does not divide 12.
  const ValidationResult result =
      Validate(io::LoadPreset("Qwen3-8B"), WithSizes({.world_size = 12, .tensor = 8}));
  EXPECT_TRUE(Names(result.errors, "C1", "--num-gpus"));
}

TEST(ValidateTest, AcceptsWorldSizeDivisibleByModelParallelSize) {
  // 16 = 8 · 2.
  const ValidationResult result =
      Validate(io::LoadPreset("Qwen3-8B"), WithSizes({.world_size = 16, .tensor = 8}));
  EXPECT_FALSE(HasRule(result.errors, "C1"));
}

TEST(ValidateTest, RejectsQwen235bExampleWhenExpertTensorDefaultsToTensor) {
  // u = t = 2: u·e·p = 2·32·8 = 512 does not divide 256.
  TrainingConfig training = Qwen235bExample();
  training.parallel.expert_tensor = std::nullopt;
  EXPECT_TRUE(
      Names(Validate(io::LoadPreset("Qwen3-235B-A22B"), training).errors, "C2", "--num-gpus"));
}

TEST(ValidateTest, RejectsWorldSizeNotDivisibleByExpertGrid) {
  // Qwen3-30B-A3B, W 16, t 2 (so u 2), e 16: u·e·p = 32 does not divide 16.
  const ValidationResult result = Validate(
      io::LoadPreset("Qwen3-30B-A3B"), WithSizes({.world_size = 16, .tensor = 2, .expert = 16}));
  const Violation* violation = Find(result.errors, "C2");
  ASSERT_NE(violation, nullptr);
  EXPECT_THAT(violation->flags, Contains("--expert-tensor-parallel-size"));
}

TEST(ValidateTest, AcceptsExpertGridWithExpertTensorOne) {
  // u 1: 1·16·1 = 16 divides 16.
  const ValidationResult result =
      Validate(io::LoadPreset("Qwen3-30B-A3B"),
               WithSizes({.world_size = 16, .tensor = 2, .expert = 16, .expert_tensor = 1}));
  EXPECT_FALSE(HasRule(result.errors, "C2"));
}

TEST(ValidateTest, RejectsTpPpDpOrderWhenExpertDataDiffersFromData) {
  // W 16, t 2, p 2, e 4, u 1: d = 16/(2·2) = 4, d_e = 16/(1·4·2) = 2; pp is not last.
  TrainingConfig training = WithSizes({.world_size = 16,
                                       .tensor = 2,
                                       .pipeline = 2,
                                       .expert = 4,
                                       .expert_tensor = 1,
                                       .order = RankOrder::kTpCpEpPpDp});
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3-30B-A3B"), training).errors, "C3",
                    "--use-tp-pp-dp-mapping"));
}

TEST(ValidateTest, AcceptsTpPpDpOrderWhenExpertDataEqualsData) {
  // e 2, u 1: d_e = 16/(1·2·2) = 4 = d.
  TrainingConfig training = WithSizes({.world_size = 16,
                                       .tensor = 2,
                                       .pipeline = 2,
                                       .expert = 2,
                                       .expert_tensor = 1,
                                       .order = RankOrder::kTpCpEpPpDp});
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-30B-A3B"), training).errors, "C3"));
}

TEST(ValidateTest, RejectsStatedDataParallelSizeThatDiffersFromWorldOverModel) {
  // W 16, t 2: d = 8, not 4.
  const ValidationResult result =
      Validate(io::LoadPreset("Qwen3-8B"), WithSizes({.world_size = 16, .tensor = 2, .data = 4}));
  EXPECT_TRUE(Names(result.errors, "T2", "--data-parallel-size"));
}

TEST(ValidateTest, AcceptsStatedDataParallelSizeThatMatches) {
  const ValidationResult result =
      Validate(io::LoadPreset("Qwen3-8B"), WithSizes({.world_size = 16, .tensor = 2, .data = 8}));
  EXPECT_FALSE(HasRule(result.errors, "T2"));
}

TEST(ValidateTest, RejectsVirtualStagesWithoutPipelineParallel) {
  const ValidationResult result = Validate(
      io::LoadPreset("Qwen3-8B"), WithSizes({.world_size = 8, .pipeline = 1, .virtual_stages = 2}));
  EXPECT_TRUE(Names(result.errors, "C20", "--num-virtual-stages-per-pipeline-rank"));
}

TEST(ValidateTest, AcceptsVirtualStagesWithPipelineParallel) {
  // Qwen3-8B: 36 layers / p 2 = 18 per rank, / v 2 = 9 per chunk.
  const ValidationResult result = Validate(
      io::LoadPreset("Qwen3-8B"), WithSizes({.world_size = 8, .pipeline = 2, .virtual_stages = 2}));
  EXPECT_FALSE(HasRule(result.errors, "C20"));
}

TEST(ValidateTest, RejectsVirtualStagesOnTwoStagesWithoutP2pOverlap) {
  TrainingConfig training = WithSizes({.world_size = 8, .pipeline = 2, .virtual_stages = 2});
  training.overlap.overlap_p2p_comm = false;
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C21",
                    "--no-overlap-p2p-communication"));
}

TEST(ValidateTest, AcceptsVirtualStagesOnFourStagesWithoutP2pOverlap) {
  // 36 layers / 4 = 9 per rank; v 3 -> 3 per chunk.
  TrainingConfig training = WithSizes({.world_size = 8, .pipeline = 4, .virtual_stages = 3});
  training.overlap.overlap_p2p_comm = false;
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C21"));
}

TEST(ValidateTest, RejectsTensorParallelThatDoesNotDivideHeads) {
  // Qwen3-8B: 32 heads, 32 % 3 = 2; divisors of gcd(32, 24) = 8 are 1, 2, 4, 8.
  const ValidationResult result =
      Validate(io::LoadPreset("Qwen3-8B"), WithSizes({.world_size = 24, .tensor = 3}));
  ASSERT_TRUE(Names(result.errors, "C4", "--tensor-model-parallel-size"));
  EXPECT_THAT(Find(result.errors, "C4")->message, HasSubstr("32 attention heads"));
  EXPECT_THAT(Find(result.errors, "C4")->fix,
              HasSubstr("--tensor-model-parallel-size 1, 2, 4 or 8"));
}

TEST(ValidateTest, AcceptsTensorParallelThatDividesHeads) {
  const ValidationResult result =
      Validate(io::LoadPreset("Qwen3-8B"), WithSizes({.world_size = 24, .tensor = 4}));
  EXPECT_FALSE(HasRule(result.errors, "C4"));
}

TEST(ValidateTest, RejectsTensorParallelThatNeitherDividesNorIsMultipleOfKvHeads) {
  // Qwen3-14B: 40 heads, 8 KV heads. t 5 divides 40 but 8 % 5 = 3 and 5 % 8 = 5.
  const ValidationResult result =
      Validate(io::LoadPreset("Qwen3-14B"), WithSizes({.world_size = 5, .tensor = 5}));
  EXPECT_TRUE(Names(result.errors, "C5", "--tensor-model-parallel-size"));
  EXPECT_FALSE(HasRule(result.errors, "C4"));
}

TEST(ValidateTest, AcceptsTensorParallelAboveKvHeadsWhenAMultiple) {
  // Qwen3.5-35B-A3B: 2 KV heads; t 4 is a multiple of 2 (KV heads replicated,
  // attention.py:340-380).
  TrainingConfig training = WithSizes({.world_size = 4, .tensor = 4});
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3.5-35B-A3B"), training).errors, "C5"));
}

TEST(ValidateTest, RejectsTensorParallelThatDoesNotDivideDenseFfn) {
  // Llama-2-13B: 40 heads (40 % 5 = 0) but ffn 13824 % 5 = 4.
  const ValidationResult result =
      Validate(io::LoadPreset("Llama-2-13B"), WithSizes({.world_size = 5, .tensor = 5}));
  EXPECT_TRUE(Names(result.errors, "T3", "--tensor-model-parallel-size"));
}

TEST(ValidateTest, AcceptsTensorParallelThatDividesDenseFfn) {
  // 13824 = 2^9 · 27, divisible by 4.
  const ValidationResult result =
      Validate(io::LoadPreset("Llama-2-13B"), WithSizes({.world_size = 4, .tensor = 4}));
  EXPECT_FALSE(HasRule(result.errors, "T3"));
}

TEST(ValidateTest, RejectsTensorParallelThatDoesNotDivideVisionMlp) {
  // A vision MLP width of 4306 = 2 · 2153 is not divisible by t 4.
  ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  model.vision.intermediate_size = 4306;
  TrainingConfig training = WithSizes({.world_size = 4, .tensor = 4});
  EXPECT_TRUE(Names(Validate(model, training).errors, "T6", "--tensor-model-parallel-size"));
}

TEST(ValidateTest, AcceptsTensorParallelThatDividesVisionTower) {
  // Qwen3.5-35B-A3B vision: 16 heads and width 4304 = 16 · 269, both divisible by 4.
  TrainingConfig training = WithSizes({.world_size = 4, .tensor = 4});
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3.5-35B-A3B"), training).errors, "T6"));
}

TEST(ValidateTest, RejectsTensorParallelThatDoesNotDivideMtpProjection) {
  // eh_proj is column-parallel with output width h: a hidden size of 2050 % 4 = 2.
  ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  model.hidden_size = 2050;
  TrainingConfig training = WithSizes({.world_size = 4, .tensor = 4});
  EXPECT_TRUE(Names(Validate(model, training).errors, "T9", "--tensor-model-parallel-size"));
}

TEST(ValidateTest, AcceptsTensorParallelThatDividesMtpProjection) {
  // Qwen3.5-35B-A3B: hidden 2048 % 4 = 0, one MTP layer.
  TrainingConfig training = WithSizes({.world_size = 4, .tensor = 4});
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3.5-35B-A3B"), training).errors, "T9"));
}

TEST(ValidateTest, RejectsMoeWithTensorParallelButNoSequenceParallel) {
  TrainingConfig training = WithSizes({.world_size = 2, .tensor = 2});
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3-30B-A3B"), training).errors, "C8",
                    "--sequence-parallel"));
}

TEST(ValidateTest, AcceptsMoeWithTensorAndSequenceParallel) {
  TrainingConfig training = WithSizes({.world_size = 2, .tensor = 2});
  training.sequence_parallel = true;
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-30B-A3B"), training).errors, "C8"));
}

TEST(ValidateTest, RejectsExpertParallelOnDenseModel) {
  const ValidationResult result =
      Validate(io::LoadPreset("Qwen3-8B"), WithSizes({.world_size = 2, .expert = 2}));
  EXPECT_TRUE(Names(result.errors, "C9", "--expert-model-parallel-size"));
}

TEST(ValidateTest, RejectsExpertParallelThatDoesNotDivideExperts) {
  // 128 experts % 3 = 2.
  const ValidationResult result =
      Validate(io::LoadPreset("Qwen3-30B-A3B"), WithSizes({.world_size = 3, .expert = 3}));
  ASSERT_TRUE(Names(result.errors, "C9", "--expert-model-parallel-size"));
  EXPECT_THAT(Find(result.errors, "C9")->message, HasSubstr("128 experts"));
}

TEST(ValidateTest, AcceptsExpertParallelThatDividesExperts) {
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-30B-A3B"), Qwen30bExample()).errors, "C9"));
}

TEST(ValidateTest, RejectsExpertTensorParallelThatDoesNotDivideExpertFfn) {
  // Qwen3-30B-A3B: expert ffn 768 % 5 = 3.
  const ValidationResult result =
      Validate(io::LoadPreset("Qwen3-30B-A3B"), WithSizes({.world_size = 5, .expert_tensor = 5}));
  EXPECT_TRUE(Names(result.errors, "T4", "--expert-tensor-parallel-size"));
}

TEST(ValidateTest, AcceptsExpertTensorParallelThatDividesExpertFfn) {
  // 768 = 2^8 · 3.
  const ValidationResult result =
      Validate(io::LoadPreset("Qwen3-30B-A3B"), WithSizes({.world_size = 4, .expert_tensor = 4}));
  EXPECT_FALSE(HasRule(result.errors, "T4"));
}

TEST(ValidateTest, RejectsTensorParallelThatDoesNotDivideSharedExpertFfn) {
  // A shared-expert width of 514 = 2 · 257 is not divisible by t 4.
  ModelConfig model = io::LoadPreset("Qwen3-Next-80B-A3B");
  model.moe.shared_expert_ffn_hidden_size = 514;
  TrainingConfig training = WithSizes({.world_size = 4, .tensor = 4});
  EXPECT_TRUE(Names(Validate(model, training).errors, "T5", "--tensor-model-parallel-size"));
}

TEST(ValidateTest, AcceptsTensorParallelThatDividesSharedExpertFfn) {
  // Qwen3-Next-80B-A3B: shared expert 512 % 4 = 0.
  TrainingConfig training = WithSizes({.world_size = 4, .tensor = 4});
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-Next-80B-A3B"), training).errors, "T5"));
}

TEST(ValidateTest, RejectsSharedExpertOverlapWithAllGatherDispatcher) {
  TrainingConfig training;
  training.moe.shared_expert_overlap = true;  // dispatcher defaults to allgather
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3-Next-80B-A3B"), training).errors, "C11",
                    "--moe-shared-expert-overlap"));
}

TEST(ValidateTest, AcceptsSharedExpertOverlapWithAllToAllDispatcher) {
  TrainingConfig training;
  training.moe.shared_expert_overlap = true;
  training.moe.dispatcher = TokenDispatcher::kAllToAll;
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-Next-80B-A3B"), training).errors, "C11"));
}

TEST(ValidateTest, RejectsCapacityFactorWithSinkhornLoadBalancing) {
  TrainingConfig training;
  training.moe.capacity_factor = 1.0;
  training.moe.load_balancing = LoadBalancing::kSinkhorn;
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3-30B-A3B"), training).errors, "C12",
                    "--moe-expert-capacity-factor"));
}

TEST(ValidateTest, RejectsPaddingToCapacityWithoutCapacityFactor) {
  TrainingConfig training;
  training.moe.pad_expert_input_to_capacity = true;
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3-30B-A3B"), training).errors, "C12",
                    "--moe-pad-expert-input-to-capacity"));
}

TEST(ValidateTest, AcceptsPaddingToCapacityWithAuxLossCapacityFactor) {
  TrainingConfig training;
  training.moe.capacity_factor = 1.0;
  training.moe.pad_expert_input_to_capacity = true;
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-30B-A3B"), training).errors, "C12"));
}

TEST(ValidateTest, RejectsDeepEpWithoutFlexDispatcher) {
  TrainingConfig training = Qwen30bExample();
  training.moe.enable_deepep = true;
  training.moe.dispatcher = TokenDispatcher::kAllToAll;
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3-30B-A3B"), training).errors, "C13",
                    "--moe-enable-deepep"));
}

TEST(ValidateTest, RejectsFlexDispatcherWithoutExpertOrTensorParallel) {
  // u·e = 1·1 = 1.
  TrainingConfig training;
  training.moe.dispatcher = TokenDispatcher::kFlex;
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3-30B-A3B"), training).errors, "C13",
                    "--moe-token-dispatcher-type"));
}

TEST(ValidateTest, AcceptsDeepEpWithFlexDispatcherAndExpertParallel) {
  // u·e = 1·16 = 16 > 1.
  TrainingConfig training = Qwen30bExample();
  training.moe.enable_deepep = true;
  training.moe.dispatcher = TokenDispatcher::kFlex;
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-30B-A3B"), training).errors, "C13"));
}

TEST(ValidateTest, RejectsExpertParallelCommOverlapWithoutExpertParallel) {
  TrainingConfig training;
  training.moe.overlap_expert_parallel_comm = true;
  training.moe.dispatcher = TokenDispatcher::kAllToAll;
  const ValidationResult result = Validate(io::LoadPreset("Qwen3-30B-A3B"), training);
  ASSERT_TRUE(Names(result.errors, "C14", "--overlap-moe-expert-parallel-comm"));
  EXPECT_THAT(Find(result.errors, "C14")->message, HasSubstr("--expert-model-parallel-size"));
}

TEST(ValidateTest, RejectsExpertParallelCommOverlapWithFullRecompute) {
  TrainingConfig training = Qwen30bExample();
  training.moe.overlap_expert_parallel_comm = true;
  training.moe.dispatcher = TokenDispatcher::kAllToAll;
  training.recompute.granularity = RecomputeGranularity::kFull;
  training.recompute.method = RecomputeMethod::kUniform;
  training.recompute.num_layers = 1;
  const ValidationResult result = Validate(io::LoadPreset("Qwen3-30B-A3B"), training);
  ASSERT_TRUE(Names(result.errors, "C14", "--overlap-moe-expert-parallel-comm"));
  EXPECT_THAT(Find(result.errors, "C14")->flags, Contains("--recompute-granularity"));
}

TEST(ValidateTest, AcceptsExpertParallelCommOverlapWithAllToAllAndExpertParallel) {
  TrainingConfig training = Qwen30bExample();
  training.moe.overlap_expert_parallel_comm = true;
  training.moe.dispatcher = TokenDispatcher::kAllToAll;
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-30B-A3B"), training).errors, "C14"));
}

TEST(ValidateTest, RejectsDelayedWgradWithoutExpertParallelCommOverlap) {
  // transformer_config.py: "overlap_moe_expert_parallel_comm must be enabled when enabling
  // delay_wgrad_compute".
  TrainingConfig training = Qwen30bExample();
  training.moe.dispatcher = TokenDispatcher::kAllToAll;
  training.moe.delay_wgrad_compute = true;
  const ValidationResult rejected = Validate(io::LoadPreset("Qwen3-30B-A3B"), training);
  ASSERT_TRUE(Names(rejected.errors, "C51", "--delay-wgrad-compute"));
  EXPECT_THAT(Find(rejected.errors, "C51")->flags, Contains("--overlap-moe-expert-parallel-comm"));
  training.moe.overlap_expert_parallel_comm = true;
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-30B-A3B"), training).errors, "C51"));
}

TEST(ValidateTest, RejectsEvenSplitThatDoesNotDivideLayers) {
  // 94 layers % 8 = 6; with both account-for options 96 = 8 · 12, which the fix suggests.
  TrainingConfig training = Qwen235bExample();
  training.split = {};
  const ValidationResult result = Validate(io::LoadPreset("Qwen3-235B-A22B"), training);
  ASSERT_TRUE(Names(result.errors, "C15", "--pipeline-model-parallel-size"));
  EXPECT_THAT(Find(result.errors, "C15")->fix,
              HasSubstr("--account-for-embedding-in-pipeline-split"));
}

TEST(ValidateTest, AcceptsEvenSplitWithAccountForOptions) {
  EXPECT_FALSE(
      HasRule(Validate(io::LoadPreset("Qwen3-235B-A22B"), Qwen235bExample()).errors, "C15"));
}

TEST(ValidateTest, RejectsVirtualStagesThatDoNotDivideSlotsPerRank) {
  // 96 slots / 8 = 12 per rank; 12 % 5 = 2.
  TrainingConfig training = Qwen235bExample();
  training.parallel.virtual_stages = 5;
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3-235B-A22B"), training).errors, "C16",
                    "--num-virtual-stages-per-pipeline-rank"));
}

TEST(ValidateTest, AcceptsVirtualStagesThatDivideSlotsPerRank) {
  // 12 % 4 = 0.
  EXPECT_FALSE(
      HasRule(Validate(io::LoadPreset("Qwen3-235B-A22B"), Qwen235bExample()).errors, "C16"));
}

TEST(ValidateTest, RejectsUnevenSplitCombinedWithAccountForOptions) {
  TrainingConfig training = Qwen35MoeExample();
  training.split.account_for_loss = true;
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3.5-35B-A3B"), training).errors, "C17",
                    "--decoder-first-pipeline-num-layers"));
}

TEST(ValidateTest, RejectsNonPositiveFirstStageCount) {
  TrainingConfig training = Qwen35MoeExample();
  training.split.first_stage_layers = 0;
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3.5-35B-A3B"), training).errors, "C17",
                    "--decoder-first-pipeline-num-layers"));
}

TEST(ValidateTest, AcceptsUnevenSplitWithPositiveCountsOnly) {
  EXPECT_FALSE(
      HasRule(Validate(io::LoadPreset("Qwen3.5-35B-A3B"), Qwen35MoeExample()).errors, "C17"));
}

TEST(ValidateTest, RejectsUnevenSplitLeavingLayersWithoutMiddleStages) {
  // 40 - 16 - 20 = 4 layers left, p 2 leaves 0 middle stages.
  TrainingConfig training = Qwen35MoeExample();
  training.split.last_stage_layers = 20;
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3.5-35B-A3B"), training).errors, "C18",
                    "--decoder-last-pipeline-num-layers"));
}

TEST(ValidateTest, RejectsUnevenSplitWhoseMiddleLayersDoNotDivide) {
  // p 4, 40 - 15 - 20 = 5 layers over 2 middle stages.
  TrainingConfig training = Qwen35MoeExample();
  training.parallel.pipeline = 4;
  training.parallel.world_size = 32;
  training.split.first_stage_layers = 15;
  training.split.last_stage_layers = 20;
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3.5-35B-A3B"), training).errors, "C18",
                    "--pipeline-model-parallel-size"));
}

TEST(ValidateTest, AcceptsUnevenSplitWithEvenMiddleStages) {
  // p 4, 40 - 16 - 20 = 4 layers over 2 middle stages = 2 each.
  TrainingConfig training = Qwen35MoeExample();
  training.parallel.pipeline = 4;
  training.parallel.world_size = 32;
  training.split.last_stage_layers = 20;
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3.5-35B-A3B"), training).errors, "C18"));
}

TEST(ValidateTest, RejectsUnevenSplitNotDivisibleByVirtualStages) {
  // v 3: 16 % 3 = 1 and 24 % 3 = 0.
  TrainingConfig training = Qwen35MoeExample();
  training.parallel.virtual_stages = 3;
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3.5-35B-A3B"), training).errors, "C19",
                    "--num-virtual-stages-per-pipeline-rank"));
}

TEST(ValidateTest, AcceptsUnevenSplitDivisibleByVirtualStages) {
  // v 2: 16 and 24 are even.
  TrainingConfig training = Qwen35MoeExample();
  training.parallel.virtual_stages = 2;
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3.5-35B-A3B"), training).errors, "C19"));
}

TEST(ValidateTest, RejectsInterleavedMicroBatchRemainderBelowPipelineSize) {
  // GBS 192 / (b 1 · d 16) = 12 micro-batches; G = p = 8; 12 mod 8 = 4 < 8.
  TrainingConfig training = Qwen235bExample();
  training.batch.global_batch_size = 192;
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3-235B-A22B"), training).errors, "C22",
                    "--global-batch-size"));
}

TEST(ValidateTest, RejectsInterleavedScheduleWithFewerMicroBatchesThanStages) {
  // GBS 64 / 16 = 4 micro-batches < p 8.
  TrainingConfig training = Qwen235bExample();
  training.batch.global_batch_size = 64;
  const ValidationResult result = Validate(io::LoadPreset("Qwen3-235B-A22B"), training);
  ASSERT_TRUE(Names(result.errors, "C22", "--global-batch-size"));
  EXPECT_THAT(Find(result.errors, "C22")->fix, HasSubstr("--global-batch-size 128"));
}

TEST(ValidateTest, AcceptsInterleavedMicroBatchGroupRemainderOfAtLeastPipelineSize) {
  // G 16, GBS 384: m = 384/16 = 24; p 8 <= G 16 <= m 24 and 24 mod 16 = 8 >= p 8.
  TrainingConfig training = Qwen235bExample();
  training.batch.global_batch_size = 384;
  training.batch.microbatch_group_size_per_vp_stage = 16;
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-235B-A22B"), training).errors, "C22"));
}

TEST(ValidateTest, RejectsGlobalBatchNotDivisibleByMicroBatchTimesData) {
  // d = 16, b 1: 100 % 16 = 4.
  TrainingConfig training = Qwen30bExample();
  training.batch.global_batch_size = 100;
  const ValidationResult result = Validate(io::LoadPreset("Qwen3-30B-A3B"), training);
  ASSERT_TRUE(Names(result.errors, "C23", "--global-batch-size"));
  EXPECT_THAT(Find(result.errors, "C23")->fix, HasSubstr("96 or 112"));
}

TEST(ValidateTest, AcceptsGlobalBatchDivisibleByMicroBatchTimesData) {
  TrainingConfig training = Qwen30bExample();
  training.batch.global_batch_size = 96;
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-30B-A3B"), training).errors, "C23"));
}

TEST(ValidateTest, WarnsWhenSequenceExceedsMaxPositionEmbeddings) {
  // Qwen3-30B-A3B: max_position_embeddings 40960 < 65536. A warning, not an error.
  TrainingConfig training = Qwen30bExample();
  training.batch.seq_length = 65536;
  const ValidationResult result = Validate(io::LoadPreset("Qwen3-30B-A3B"), training);
  EXPECT_TRUE(result.ok());
  EXPECT_TRUE(Names(result.warnings, "T7", "--seq-length"));
}

TEST(ValidateTest, DoesNotWarnWhenSequenceFitsMaxPositionEmbeddings) {
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-30B-A3B"), Qwen30bExample()).warnings, "T7"));
}

TEST(ValidateTest, RejectsSequenceNotDivisibleByTwiceContextParallel) {
  // c 2: 4094 % 4 = 2.
  TrainingConfig training = WithSizes({.world_size = 2, .context = 2});
  training.batch.seq_length = 4094;
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C24", "--seq-length"));
}

TEST(ValidateTest, AcceptsSequenceDivisibleByTwiceContextParallel) {
  TrainingConfig training = WithSizes({.world_size = 2, .context = 2});
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C24"));
}

TEST(ValidateTest, RejectsAllToAllContextParallelThatDoesNotDivideLocalKvHeads) {
  // Qwen3-8B: 32 heads, 8 KV heads; t 4 leaves 8 and 2 per rank; 2 % 4 != 0.
  TrainingConfig training = WithSizes({.world_size = 16, .tensor = 4, .context = 4});
  training.context.comm_types = {CpCommType::kA2a};
  EXPECT_TRUE(
      Names(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C25", "--cp-comm-type"));
}

TEST(ValidateTest, AcceptsAllToAllContextParallelThatDividesLocalHeads) {
  // c 2: 8 % 2 = 0 and 2 % 2 = 0.
  TrainingConfig training = WithSizes({.world_size = 8, .tensor = 4, .context = 2});
  training.context.comm_types = {CpCommType::kA2a};
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C25"));
}

TEST(ValidateTest, RejectsPerLayerCommTypesOfWrongLength) {
  // Qwen3-8B has 36 layers; 2 entries are neither 1 nor 36.
  TrainingConfig training = WithSizes({.world_size = 2, .context = 2});
  training.context.comm_types = {CpCommType::kP2p, CpCommType::kAllGather};
  EXPECT_TRUE(
      Names(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C26", "--cp-comm-type"));
}

TEST(ValidateTest, AcceptsOneCommTypePerLayer) {
  TrainingConfig training = WithSizes({.world_size = 2, .context = 2});
  training.context.comm_types = std::vector<CpCommType>(36, CpCommType::kAllGather);
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C26"));
}

TEST(ValidateTest, RejectsHierarchicalCommTypeWithoutHierarchicalSizes) {
  TrainingConfig training = WithSizes({.world_size = 4, .context = 4});
  training.context.comm_types = {CpCommType::kA2aP2p};
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C27",
                    "--hierarchical-context-parallel-sizes"));
}

TEST(ValidateTest, RejectsHierarchicalSizesWhoseProductIsNotContextParallel) {
  // 2 · 2 = 4 != c 2.
  TrainingConfig training = WithSizes({.world_size = 2, .context = 2});
  training.context.comm_types = {CpCommType::kA2aP2p};
  training.context.hierarchical_sizes = {2, 2};
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C27",
                    "--hierarchical-context-parallel-sizes"));
}

TEST(ValidateTest, AcceptsHierarchicalSizesWhoseProductIsContextParallel) {
  TrainingConfig training = WithSizes({.world_size = 4, .context = 4});
  training.context.comm_types = {CpCommType::kA2aP2p};
  training.context.hierarchical_sizes = {2, 2};
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C27"));
}

TEST(ValidateTest, RejectsGatedDeltaNetWithoutConvKernel) {
  ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  model.gdn.conv_kernel = 0;
  EXPECT_TRUE(Names(Validate(model, TrainingConfig{}).errors, "C28", "--linear-conv-kernel-dim"));
}

TEST(ValidateTest, AcceptsGatedDeltaNetWithAllDimensions) {
  EXPECT_FALSE(
      HasRule(Validate(io::LoadPreset("Qwen3.5-35B-A3B"), TrainingConfig{}).errors, "C28"));
}

TEST(ValidateTest, RejectsValueHeadsThatAreNotAMultipleOfKeyHeads) {
  // 24 value heads % 16 key heads = 8.
  ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  model.gdn.num_value_heads = 24;
  EXPECT_TRUE(Names(Validate(model, TrainingConfig{}).errors, "C29", "--linear-num-value-heads"));
}

TEST(ValidateTest, AcceptsValueHeadsThatAreAMultipleOfKeyHeads) {
  // Qwen3.5-35B-A3B: 32 value heads, 16 key heads.
  EXPECT_FALSE(
      HasRule(Validate(io::LoadPreset("Qwen3.5-35B-A3B"), TrainingConfig{}).errors, "C29"));
}

TEST(ValidateTest, RejectsGdnHeadsNotDivisibleByTensorTimesContextOnCore018) {
  // Core 0.18: 16 key heads % (t 2 · c 16 = 32) != 0.
  TrainingConfig training = WithSizes({.world_size = 32, .tensor = 2, .context = 16});
  training.sequence_parallel = true;
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3.5-35B-A3B"), training).errors, "C30",
                    "--tensor-model-parallel-size"));
}

TEST(ValidateTest, AppliesGdnHeadRuleToTensorParallelOnlyOnCore017) {
  // Core 0.17: the head rule is % t only: 16 % 2 = 0 (c 16 is rejected by C31 instead).
  TrainingConfig training = WithSizes({.world_size = 32, .tensor = 2, .context = 16});
  training.sequence_parallel = true;
  training.core_version = CoreVersion::kV0_17;
  const ValidationResult result = Validate(io::LoadPreset("Qwen3.5-35B-A3B"), training);
  EXPECT_FALSE(HasRule(result.errors, "C30"));
  EXPECT_TRUE(HasRule(result.errors, "C31"));
}

TEST(ValidateTest, AcceptsGdnHeadsDivisibleByTensorTimesContextOnCore018) {
  // t 4 · c 4 = 16 divides 16 key heads and 32 value heads.
  TrainingConfig training = WithSizes({.world_size = 16, .tensor = 4, .context = 4});
  training.sequence_parallel = true;
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3.5-35B-A3B"), training).errors, "C30"));
}

TEST(ValidateTest, RejectsContextParallelWithGdnOnCore017) {
  TrainingConfig training = WithSizes({.world_size = 2, .context = 2});
  training.core_version = CoreVersion::kV0_17;
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3.5-35B-A3B"), training).errors, "C31",
                    "--context-parallel-size"));
}

TEST(ValidateTest, RejectsExplicitThdWithGdnOnCore016) {
  TrainingConfig training;
  training.core_version = CoreVersion::kV0_16;
  training.sequence_layout = SequenceLayout::kThd;
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3.5-35B-A3B"), training).errors, "C31",
                    "--sequence-layout"));
}

TEST(ValidateTest, AcceptsContextParallelWithGdnOnCore018) {
  TrainingConfig training = WithSizes({.world_size = 2, .context = 2});
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3.5-35B-A3B"), training).errors, "C31"));
}

TEST(ValidateTest, AcceptsAutoLayoutWithGdnOnCore017) {
  // Auto resolves to BSHD on 0.17, so no packed-sequence violation.
  TrainingConfig training;
  training.core_version = CoreVersion::kV0_17;
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3.5-35B-A3B"), training).errors, "C31"));
}

TEST(ValidateTest, RejectsExplicitThdWithGdnAndMicroBatchAboveOne) {
  TrainingConfig training;
  training.batch.micro_batch_size = 2;
  training.sequence_layout = SequenceLayout::kThd;
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3.5-35B-A3B"), training).errors, "C32",
                    "--sequence-layout"));
}

TEST(ValidateTest, RejectsPackedGdnSequencesInDeterministicMode) {
  // Explicit THD with GDN forbids deterministic mode (gdn.py:138-140).
  TrainingConfig training;
  training.deterministic = true;
  training.sequence_layout = SequenceLayout::kThd;
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3.5-35B-A3B"), training).errors, "C32",
                    "--deterministic-mode"));
}

TEST(ValidateTest, AutoLayoutFallsBackToPaddedInDeterministicMode) {
  // Auto picks THD only where it is legal: deterministic mode forbids it for GDN.
  TrainingConfig training;
  training.deterministic = true;
  EXPECT_EQ(training.ResolvedSequenceLayout(io::LoadPreset("Qwen3.5-35B-A3B")),
            SequenceLayout::kBshd);
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3.5-35B-A3B"), training).errors, "C32"));
}

TEST(ValidateTest, AcceptsPaddedGdnSequencesWithMicroBatchAboveOne) {
  TrainingConfig training;
  training.batch.micro_batch_size = 2;
  training.sequence_layout = SequenceLayout::kBshd;
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3.5-35B-A3B"), training).errors, "C32"));
}

// A GDN model whose in_proj width 2·512 + 2·2560 + 2·20 = 6184 is not a multiple of 16
// (6184 = 16·386 + 8): 4 key heads and 20 value heads of 128.
ModelConfig GdnModelWithOddInProj() {
  ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  model.gdn.num_key_heads = 4;
  model.gdn.num_value_heads = 20;
  return model;
}

TEST(ValidateTest, RejectsFp8WhenGdnInProjIsNotAlignedTo16) {
  TrainingConfig training;
  training.precision.fp8 = Fp8Format::kHybrid;
  EXPECT_TRUE(Names(Validate(GdnModelWithOddInProj(), training).errors, "C33", "--fp8-format"));
}

TEST(ValidateTest, AcceptsFp8WhenGdnInProjIsAlignedTo16) {
  // Qwen3.5-35B-A3B: 2·2048 + 2·4096 + 2·32 = 12352 = 16·772.
  TrainingConfig training;
  training.precision.fp8 = Fp8Format::kHybrid;
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3.5-35B-A3B"), training).errors, "C33"));
}

TEST(ValidateTest, WarnsThatSequenceParallelWithoutTensorParallelIsOff) {
  TrainingConfig training;
  training.sequence_parallel = true;
  const ValidationResult result = Validate(io::LoadPreset("Qwen3-8B"), training);
  EXPECT_TRUE(result.ok());
  EXPECT_TRUE(Names(result.warnings, "C7", "--sequence-parallel"));
}

TEST(ValidateTest, DoesNotWarnAboutSequenceParallelWithTensorParallel) {
  TrainingConfig training = WithSizes({.world_size = 2, .tensor = 2});
  training.sequence_parallel = true;
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-8B"), training).warnings, "C7"));
}

TEST(ValidateTest, RejectsTpCommOverlapWithoutSequenceParallel) {
  TrainingConfig training = WithSizes({.world_size = 2, .tensor = 2});
  training.overlap.tp_comm_overlap = true;
  EXPECT_TRUE(
      Names(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C37", "--tp-comm-overlap"));
}

TEST(ValidateTest, AcceptsTpCommOverlapWithSequenceParallel) {
  TrainingConfig training = WithSizes({.world_size = 2, .tensor = 2});
  training.overlap.tp_comm_overlap = true;
  training.sequence_parallel = true;
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C37"));
}

TEST(ValidateTest, RejectsParamGatherOverlapWithoutDistributedOptimizer) {
  TrainingConfig training;
  training.data_parallel.overlap_param_gather = true;
  training.data_parallel.overlap_grad_reduce = true;
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C38",
                    "--use-distributed-optimizer"));
}

TEST(ValidateTest, RejectsParamGatherOverlapWithoutGradReduceOverlap) {
  TrainingConfig training;
  training.data_parallel.overlap_param_gather = true;
  training.data_parallel.distributed_optimizer = true;
  EXPECT_TRUE(
      Names(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C38", "--overlap-grad-reduce"));
}

TEST(ValidateTest, AcceptsParamGatherOverlapWithDistributedOptimizerAndGradOverlap) {
  TrainingConfig training;
  training.data_parallel.overlap_param_gather = true;
  training.data_parallel.overlap_grad_reduce = true;
  training.data_parallel.distributed_optimizer = true;
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C38"));
}

TEST(ValidateTest, RejectsTorchFsdp2WithPipelineParallel) {
  TrainingConfig training = WithSizes({.world_size = 2, .pipeline = 2});
  training.data_parallel.torch_fsdp2 = true;
  EXPECT_TRUE(
      Names(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C39", "--use-torch-fsdp2"));
}

TEST(ValidateTest, RejectsTorchFsdp2WithTiedEmbeddings) {
  // Qwen3-0.6B ties its embeddings (tie_word_embeddings true).
  TrainingConfig training;
  training.data_parallel.torch_fsdp2 = true;
  const ValidationResult result = Validate(io::LoadPreset("Qwen3-0.6B"), training);
  ASSERT_TRUE(Names(result.errors, "C39", "--use-torch-fsdp2"));
  EXPECT_THAT(Find(result.errors, "C39")->message,
              HasSubstr("--untie-embeddings-and-output-weights"));
}

TEST(ValidateTest, AcceptsTorchFsdp2WithoutPipelineOrExpertParallel) {
  TrainingConfig training;
  training.data_parallel.torch_fsdp2 = true;
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C39"));
}

TEST(ValidateTest, RejectsMegatronFsdpTogetherWithTorchFsdp2) {
  TrainingConfig training;
  training.data_parallel.megatron_fsdp = true;
  training.data_parallel.torch_fsdp2 = true;
  EXPECT_TRUE(
      Names(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "T8", "--use-megatron-fsdp"));
}

TEST(ValidateTest, WarnsThatMegatronFsdpTurnsOnTheDistributedOptimizer) {
  // Megatron-FSDP v1 requires the distributed optimizer; Megatron-LM enables it
  // (arguments.py:1128-1135 at Megatron-LM d98e8a64).
  TrainingConfig training;
  training.data_parallel.megatron_fsdp = true;
  const ValidationResult result = Validate(io::LoadPreset("Qwen3-8B"), training);
  EXPECT_TRUE(result.ok());
  EXPECT_TRUE(Names(result.warnings, "T8", "--use-distributed-optimizer"));
}

TEST(ValidateTest, AcceptsMegatronFsdpWithDistributedOptimizer) {
  TrainingConfig training;
  training.data_parallel.megatron_fsdp = true;
  training.data_parallel.distributed_optimizer = true;
  const ValidationResult result = Validate(io::LoadPreset("Qwen3-8B"), training);
  EXPECT_FALSE(HasRule(result.errors, "T8"));
  EXPECT_FALSE(HasRule(result.warnings, "T8"));
}

TEST(ValidateTest, RejectsFullRecomputeWithoutMethod) {
  TrainingConfig training;
  training.recompute.granularity = RecomputeGranularity::kFull;
  training.recompute.num_layers = 1;
  EXPECT_TRUE(
      Names(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C40", "--recompute-method"));
}

TEST(ValidateTest, RejectsSelectiveRecomputeWithLayerCount) {
  TrainingConfig training;
  training.recompute.granularity = RecomputeGranularity::kSelective;
  training.recompute.num_layers = 2;
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C40",
                    "--recompute-num-layers"));
}

TEST(ValidateTest, RejectsDistributedSavedActivationsWithSequenceParallel) {
  TrainingConfig training = WithSizes({.world_size = 2, .tensor = 2});
  training.sequence_parallel = true;
  training.recompute = {.granularity = RecomputeGranularity::kFull,
                        .method = RecomputeMethod::kUniform,
                        .num_layers = 1,
                        .distribute_saved_activations = true};
  EXPECT_TRUE(Names(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C40",
                    "--distribute-saved-activations"));
}

TEST(ValidateTest, WarnsThatRecomputeMethodIsIgnoredWithoutGranularity) {
  TrainingConfig training;
  training.recompute.method = RecomputeMethod::kBlock;
  const ValidationResult result = Validate(io::LoadPreset("Qwen3-8B"), training);
  EXPECT_TRUE(result.ok());
  EXPECT_TRUE(Names(result.warnings, "C40", "--recompute-method"));
}

TEST(ValidateTest, AcceptsFullRecomputeWithUniformMethodAndLayerCount) {
  TrainingConfig training;
  training.recompute = {.granularity = RecomputeGranularity::kFull,
                        .method = RecomputeMethod::kUniform,
                        .num_layers = 1};
  const ValidationResult result = Validate(io::LoadPreset("Qwen3-8B"), training);
  EXPECT_FALSE(HasRule(result.errors, "C40"));
  EXPECT_FALSE(HasRule(result.warnings, "C40"));
}

TEST(ValidateTest, RejectsUnknownRecomputeModule) {
  TrainingConfig training;
  training.recompute.granularity = RecomputeGranularity::kSelective;
  training.recompute.modules = {"attention"};
  EXPECT_TRUE(
      Names(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C41", "--recompute-modules"));
}

TEST(ValidateTest, RejectsMoeActivationRecomputeWithoutGroupedGemm) {
  TrainingConfig training;
  training.recompute.granularity = RecomputeGranularity::kSelective;
  training.recompute.modules = {"moe_act"};
  const ValidationResult result = Validate(io::LoadPreset("Qwen3-30B-A3B"), training);
  ASSERT_TRUE(Names(result.errors, "C41", "--recompute-modules"));
  EXPECT_THAT(Find(result.errors, "C41")->flags, Contains("--moe-grouped-gemm"));
}

TEST(ValidateTest, RejectsGdnNormRecomputeOnModelWithoutGdn) {
  TrainingConfig training;
  training.recompute.granularity = RecomputeGranularity::kSelective;
  training.recompute.modules = {"gdn_norm_out"};
  EXPECT_TRUE(
      Names(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C41", "--recompute-modules"));
}

TEST(ValidateTest, RejectsMlaUpProjectionRecomputeWithoutMla) {
  // transformer_config.py:1969-1973: mla_up_proj only with multi_latent_attention.
  TrainingConfig training;
  training.recompute.granularity = RecomputeGranularity::kSelective;
  training.recompute.modules = {"mla_up_proj"};
  EXPECT_TRUE(
      Names(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C48", "--recompute-modules"));
  training.sequence_parallel = false;
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Moonlight-16B-A3B"), training).errors, "C48"));
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Moonlight-16B-A3B"), training).errors, "C41"));
}

TEST(ValidateTest, AcceptsMoeActivationRecomputeWithGroupedGemm) {
  TrainingConfig training;
  training.recompute.granularity = RecomputeGranularity::kSelective;
  training.recompute.modules = {"moe_act", "core_attn"};
  training.moe.grouped_gemm = true;
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-30B-A3B"), training).errors, "C41"));
}

TEST(ValidateTest, IgnoresRecomputeModulesWithoutSelectiveGranularity) {
  // Megatron checks the modules only for selective recompute (transformer_config.py:1942).
  TrainingConfig training;
  training.recompute.modules = {"gdn_norm_out"};
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C41"));
}

TEST(ValidateTest, RejectsCpuOffloadingWithPipelineParallel) {
  TrainingConfig training = WithSizes({.world_size = 2, .pipeline = 2});
  training.cpu_offloading = true;
  EXPECT_TRUE(
      Names(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C42", "--cpu-offloading"));
}

TEST(ValidateTest, RejectsCpuOffloadingWithRecompute) {
  TrainingConfig training;
  training.cpu_offloading = true;
  training.recompute.granularity = RecomputeGranularity::kSelective;
  const ValidationResult result = Validate(io::LoadPreset("Qwen3-8B"), training);
  ASSERT_TRUE(Names(result.errors, "C42", "--cpu-offloading"));
  EXPECT_THAT(Find(result.errors, "C42")->flags, Contains("--recompute-granularity"));
}

TEST(ValidateTest, AcceptsCpuOffloadingWithoutPipelineOrRecompute) {
  TrainingConfig training;
  training.cpu_offloading = true;
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C42"));
}

TEST(ValidateTest, CpuOffloadingCoversFewerLayersThanTheModelHas) {
  // transformer_config.py: cpu_offloading_num_layers must be in [0, num_layers); Qwen3-8B has 36.
  TrainingConfig training;
  training.cpu_offloading = true;
  training.cpu_offloading_num_layers = 36;
  const ValidationResult result = Validate(io::LoadPreset("Qwen3-8B"), training);
  ASSERT_TRUE(Names(result.errors, "C42", "--cpu-offloading-num-layers"));
  EXPECT_THAT(Find(result.errors, "C42")->message, HasSubstr("36 decoder layers"));
  training.cpu_offloading_num_layers = 35;
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C42"));
}

TEST(ValidateTest, RejectsCpuOffloadingWithPerLayerCudaGraphs) {
  // transformer_config.py: "CUDA graphs not supported with CPU offloading" unless
  // cuda_graph_impl is full_iteration.
  TrainingConfig training;
  training.cpu_offloading = true;
  training.cuda_graph.impl = CudaGraphImpl::kTransformerEngine;
  EXPECT_TRUE(
      Names(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C42", "--cuda-graph-impl"));
  training.cuda_graph.impl = CudaGraphImpl::kFullIteration;
  EXPECT_FALSE(HasRule(Validate(io::LoadPreset("Qwen3-8B"), training).errors, "C42"));
}

TEST(ValidateTest, ResolvesAutoLayoutToThdWithoutGdn) {
  EXPECT_EQ(TrainingConfig{}.ResolvedSequenceLayout(io::LoadPreset("Qwen3-8B")),
            SequenceLayout::kThd);
}

TEST(ValidateTest, ResolvesAutoLayoutToThdForGdnOnCore018WithMicroBatchOne) {
  EXPECT_EQ(TrainingConfig{}.ResolvedSequenceLayout(io::LoadPreset("Qwen3.5-35B-A3B")),
            SequenceLayout::kThd);
}

TEST(ValidateTest, ResolvesAutoLayoutToBshdForGdnWithMicroBatchAboveOne) {
  TrainingConfig training;
  training.batch.micro_batch_size = 2;
  EXPECT_EQ(training.ResolvedSequenceLayout(io::LoadPreset("Qwen3.5-35B-A3B")),
            SequenceLayout::kBshd);
}

TEST(ValidateTest, ResolvesAutoLayoutToBshdForGdnOnCore017) {
  TrainingConfig training;
  training.core_version = CoreVersion::kV0_17;
  EXPECT_EQ(training.ResolvedSequenceLayout(io::LoadPreset("Qwen3.5-35B-A3B")),
            SequenceLayout::kBshd);
}

TEST(ValidateTest, KeepsAnExplicitLayout) {
  TrainingConfig training;
  training.sequence_layout = SequenceLayout::kBshd;
  EXPECT_EQ(training.ResolvedSequenceLayout(io::LoadPreset("Qwen3-8B")), SequenceLayout::kBshd);
}

TEST(ValidateTest, CountsMicroBatchesAsGlobalOverMicroTimesData) {
  // 512 / (1 · 16) = 32.
  EXPECT_EQ(Qwen235bExample().NumMicroBatches(), 32);
}

TEST(ValidateTest, CountsOneMicroBatchWhenGlobalBatchIsUnset) {
  // Unset GBS defaults to b·d, so m = 1.
  TrainingConfig training = Qwen30bExample();
  training.batch.micro_batch_size = 2;
  EXPECT_EQ(training.NumMicroBatches(), 1);
}

}  // namespace
}  // namespace trainscope::config

namespace trainscope::config {
namespace {

// T10: Qwen3-8B (32 heads x 128) at s = 1e9, b = 1, t = c = 1: core attention alone is
// 4·4096·1e18 = 1.6e22 FLOPs per micro-batch (forward and backward), beyond 2^62 ≈ 4.6e18.
// At s = 1e6 it is 4·4096·1e12 = 1.6e16, well inside.
TEST(ValidateTest, RejectsSequencesWhoseOpsCannotBeCountedIn64Bits) {
  const ModelConfig model = io::LoadPreset("Qwen3-8B");
  TrainingConfig training;
  training.batch.seq_length = 1'000'000'000;
  const ValidationResult result = Validate(model, training);
  const Violation* violation = Find(result.errors, "T10");
  ASSERT_NE(violation, nullptr);
  EXPECT_THAT(violation->message, HasSubstr("--seq-length 1000000000"));
  training.batch.seq_length = 1'000'000;
  EXPECT_FALSE(HasRule(Validate(model, training).errors, "T10"));
}

// C52-C54: Megatron-LM validate_args rejects --fp4-format with --fp8-format and
// --fp4-param-gather without --fp4-format; trainscope rejects the custom FP4 recipe, whose
// quantizer factory it cannot know.
TEST(ValidateTest, Fp4FlagsFollowMegatronsRules) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  TrainingConfig training = WithSizes({.world_size = 8});
  training.precision.fp4 = Fp4Format::kE2m1;
  EXPECT_TRUE(Validate(model, training).ok());
  training.precision.fp8 = Fp8Format::kHybrid;
  EXPECT_TRUE(Names(Validate(model, training).errors, "C52", "--fp4-format"));
  training.precision.fp8 = Fp8Format::kNone;
  training.precision.fp4_recipe = Fp4Recipe::kCustom;
  EXPECT_TRUE(Names(Validate(model, training).errors, "C54", "--fp4-recipe"));
  training.precision = {};
  training.precision.fp4_param_gather = true;
  EXPECT_TRUE(Names(Validate(model, training).errors, "C53", "--fp4-param-gather"));
}

// C55 (transformer_config.py __post_init__): fp8_output_proj needs fp8 with the MXFP8 recipe.
TEST(ValidateTest, Fp8OutputProjNeedsMxfp8) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  TrainingConfig training = WithSizes({.world_size = 8});
  training.precision.fp8_output_proj = true;
  EXPECT_TRUE(Names(Validate(model, training).errors, "C55", "--fp8-output-proj"));
  training.precision.fp8 = Fp8Format::kE4m3;
  EXPECT_TRUE(Names(Validate(model, training).errors, "C55", "--fp8-output-proj"));
  training.precision.fp8_recipe = Fp8Recipe::kMxfp8;
  EXPECT_TRUE(Validate(model, training).ok());
}

// Megatron-Core 0.18 transformer_config.py __post_init__: the rank budget is HybridEP's and
// needs TE's fused experts (C57); the paged stash needs the budget and no CPU offloading (C58);
// the three options do not exist before 0.18 (C59).
TEST(ValidateTest, HybridEpRankBudgetAndPagedStashFollowMegatronCore) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  TrainingConfig training = Qwen30bExample();
  training.moe.rank_capacity_factor = 1.5;
  ValidationResult result = Validate(model, training);
  EXPECT_TRUE(Names(result.errors, "C57", "--moe-flex-dispatcher-backend"));
  EXPECT_TRUE(Names(result.errors, "C57", "--use-transformer-engine-op-fuser"));
  training.moe.dispatcher = TokenDispatcher::kFlex;
  training.moe.flex_backend = config::FlexBackend::kHybridEp;
  training.moe.te_op_fuser = true;
  EXPECT_TRUE(Validate(model, training).ok());
  training.moe.paged_stash = true;
  EXPECT_TRUE(Validate(model, training).ok());
  training.moe.rank_capacity_factor.reset();
  EXPECT_TRUE(Names(Validate(model, training).errors, "C58", "--moe-expert-rank-capacity-factor"));
  training.moe.rank_capacity_factor = 1.5;
  training.moe.permute_fusion_into_hybridep = true;
  training.core_version = config::CoreVersion::kV0_17;
  result = Validate(model, training);
  EXPECT_TRUE(Names(result.errors, "C59", "--moe-permute-fusion-into-hybridep"));
  EXPECT_TRUE(Names(result.errors, "C59", "--moe-expert-rank-capacity-factor"));
  EXPECT_TRUE(Names(result.errors, "C59", "--moe-paged-stash"));
}

// transformer_config.py __post_init__: "fp8/fp4 must be specified when
// moe_router_padding_for_quantization is True"; "allgather and alltoall_seq dispatcher does not
// support moe_router_padding_for_quantization".
TEST(ValidateTest, RouterPaddingForQuantizationNeedsFp8OrFp4AndNotAllGather) {
  TrainingConfig training = Qwen30bExample();
  training.moe.dispatcher = TokenDispatcher::kAllToAll;
  training.moe.router_padding_for_quantization = true;
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  EXPECT_TRUE(Names(Validate(model, training).errors, "C60", "--fp8-format"));
  training.precision.fp8 = config::Fp8Format::kE4m3;
  EXPECT_FALSE(HasRule(Validate(model, training).errors, "C60"));
  training.moe.dispatcher = TokenDispatcher::kAllGather;
  EXPECT_TRUE(Names(Validate(model, training).errors, "C60", "--moe-token-dispatcher-type"));
}

// TT2: torchao's row-wise recipe exists only under torchtitan; Megatron-LM's --fp8-recipe has no
// row-wise choice.
TEST(ValidateTest, RowwiseRecipeNeedsTorchtitan) {
  TrainingConfig training = Qwen30bExample();
  training.precision.fp8 = config::Fp8Format::kHybrid;
  training.precision.fp8_recipe = config::Fp8Recipe::kRowwise;
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  EXPECT_TRUE(Names(Validate(model, training).errors, "TT2", "--framework"));
  training.framework.framework = config::Framework::kTorchtitan;
  EXPECT_FALSE(HasRule(Validate(model, training).errors, "TT2"));
  // torchao's FP8 all-gather is tensor-wise only.
  training.precision.fp8_param_gather = true;
  EXPECT_TRUE(Names(Validate(model, training).errors, "TT2", "--fp8-param-gather"));
  training.precision.fp8_param_gather = false;
  // Without --fp8-format the recipe flag has no effect, as for Megatron's own recipes.
  training.framework = {};
  training.precision.fp8 = config::Fp8Format::kNone;
  EXPECT_FALSE(HasRule(Validate(model, training).errors, "TT2"));
}

// transformer_config.py __post_init__: --moe-enable-deepep selects deepep, so a hybridep backend
// beside it is an error; the deepep backend cannot pad experts to capacity (HybridEP can).
TEST(ValidateTest, FlexBackendRulesFollowMegatronCore) {
  TrainingConfig training = Qwen30bExample();
  training.moe.dispatcher = TokenDispatcher::kFlex;
  training.moe.enable_deepep = true;
  training.moe.flex_backend = config::FlexBackend::kHybridEp;
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  EXPECT_TRUE(Names(Validate(model, training).errors, "C56", "--moe-flex-dispatcher-backend"));
  training.moe.enable_deepep = false;
  EXPECT_FALSE(HasRule(Validate(model, training).errors, "C56"));
  training.moe.capacity_factor = 1.0;
  training.moe.pad_expert_input_to_capacity = true;
  EXPECT_FALSE(HasRule(Validate(model, training).errors, "C56"));
  training.moe.flex_backend = config::FlexBackend::kDeepEp;
  EXPECT_TRUE(Names(Validate(model, training).errors, "C56", "--moe-pad-expert-input-to-capacity"));
}

}  // namespace
}  // namespace trainscope::config
