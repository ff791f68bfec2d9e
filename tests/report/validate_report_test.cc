// Text and JSON rendering of a validation result. Results are built by hand (no call to
// Validate), so the tests check the rendering alone; layouts are derived from the preset values
// quoted in the comments.
#include "trainscope/report/validate_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "trainscope/io/hf_config_loader.h"

namespace trainscope::report {
namespace {

using config::TrainingConfig;
using config::ValidationResult;
using config::Violation;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// Qwen3-235B-A22B (94 layers, 128 experts) on 256 GPUs: t 2, p 8, v 4, e 32, u 1, SP, both
// account-for options, b 1, GBS 512.
TrainingConfig Qwen235bExample() {
  TrainingConfig training;
  training.parallel = {.world_size = 256,
                       .tensor = 2,
                       .pipeline = 8,
                       .virtual_stages = 4,
                       .expert = 32,
                       .expert_tensor = 1};
  training.sequence_parallel = true;
  training.split.account_for_embedding = true;
  training.split.account_for_loss = true;
  training.batch.global_batch_size = 512;
  return training;
}

// Qwen3.5-35B-A3B (40 layers, 256 experts, 1 MTP layer, vision) on 16 GPUs: p 2, e 8, uneven
// 16 / 24 split, GBS 64.
TrainingConfig Qwen35MoeExample() {
  TrainingConfig training;
  training.parallel = {.world_size = 16, .pipeline = 2, .expert = 8};
  training.split.first_stage_layers = 16;
  training.split.last_stage_layers = 24;
  training.batch.global_batch_size = 64;
  return training;
}

Violation TensorViolation() {
  return Violation{.rule = "C4",
                   .flags = {"--tensor-model-parallel-size"},
                   .message =
                       "--tensor-model-parallel-size 3: 32 attention heads are not "
                       "divisible by 3",
                   .fix = "use --tensor-model-parallel-size 1, 2, 4 or 8"};
}

Violation SequenceWarning() {
  return Violation{.rule = "T7",
                   .flags = {"--seq-length", "--max-position-embeddings"},
                   .message = "--seq-length 65536: too long",
                   .fix = "use --seq-length 40960 or less"};
}

TEST(ValidateReportTest, InvalidTextCountsProblemsAndShowsEachFix) {
  const ValidationResult result{.errors = {TensorViolation()}, .warnings = {}};
  // The fix line is indented under the message: "  [C4] " is 7 characters.
  EXPECT_EQ(RenderValidationText(io::LoadPreset("Qwen3-8B"), TrainingConfig{}, result),
            "configuration is invalid: 1 problem(s)\n"
            "  [C4] --tensor-model-parallel-size 3: 32 attention heads are not divisible by 3\n"
            "       fix: use --tensor-model-parallel-size 1, 2, 4 or 8\n"
            "warnings       none\n");
}

TEST(ValidateReportTest, InvalidTextListsWarningsAfterErrors) {
  const ValidationResult result{.errors = {TensorViolation()}, .warnings = {SequenceWarning()}};
  const std::string text =
      RenderValidationText(io::LoadPreset("Qwen3-8B"), TrainingConfig{}, result);
  EXPECT_THAT(text, EndsWith("warnings (1)\n"
                             "  [T7] --seq-length 65536: too long\n"
                             "       fix: use --seq-length 40960 or less\n"));
}

TEST(ValidateReportTest, InvalidJsonListsErrorsWithoutLayout) {
  const ValidationResult result{.errors = {TensorViolation()}, .warnings = {}};
  const std::string text =
      RenderValidationJson(io::LoadPreset("Qwen3-8B"), TrainingConfig{}, result);
  const nlohmann::json json = nlohmann::json::parse(text);
  EXPECT_FALSE(json["valid"].get<bool>());
  ASSERT_EQ(json["errors"].size(), 1u);
  EXPECT_EQ(json["errors"][0]["rule"], "C4");
  EXPECT_EQ(json["errors"][0]["flags"][0], "--tensor-model-parallel-size");
  EXPECT_EQ(json["errors"][0]["fix"], "use --tensor-model-parallel-size 1, 2, 4 or 8");
  EXPECT_TRUE(json["warnings"].empty());
  EXPECT_FALSE(json.contains("layout"));
}

TEST(ValidateReportTest, JsonKeepsKeysInTheDocumentedOrder) {
  const ValidationResult result{.errors = {TensorViolation()}, .warnings = {}};
  const std::string text =
      RenderValidationJson(io::LoadPreset("Qwen3-8B"), TrainingConfig{}, result);
  EXPECT_THAT(text, StartsWith("{\n  \"valid\": false,\n  \"errors\": [\n    {\n      \"rule\""));
  EXPECT_LT(text.find("\"flags\""), text.find("\"message\""));
  EXPECT_LT(text.find("\"message\""), text.find("\"fix\""));
  EXPECT_LT(text.find("\"errors\""), text.find("\"warnings\""));
  EXPECT_THAT(text, EndsWith("}\n"));
}

TEST(ValidateReportTest, ValidTextSummarisesQwen235bLayout) {
  // d = 256/(2·8·1) = 16, d_e = 256/(1·32·8) = 1, m = 512/(1·16) = 32, 128/32 = 4 experts per
  // EP rank. 96 slots: 3 per chunk; chunk 0 of rank 0 and chunk 3 of rank 7 give one slot to
  // the embedding / loss. Round 0 holds 2 + 7·3 = 23 layers (0-22), so rank 0 chunk 1 starts at
  // 23; rounds 1 and 2 hold 24 each, so round 3 starts at 71 and rank 7 ends it with 92-93.
  const std::string text = RenderValidationText(io::LoadPreset("Qwen3-235B-A22B"),
                                                Qwen235bExample(), ValidationResult{});
  EXPECT_THAT(text, StartsWith("configuration is valid\n"));
  EXPECT_THAT(text, HasSubstr("model          Qwen3-235B-A22B (qwen3_moe, 94 decoder layers"));
  EXPECT_THAT(text, HasSubstr("world size     256 GPUs\n"));
  EXPECT_THAT(text, HasSubstr("parallelism    t=2 p=8 v=4 c=1 e=32 u=1 d=16 d_e=1\n"));
  EXPECT_THAT(text, HasSubstr("micro-batch 1, global batch 512, 32 micro-batches per step"));
  EXPECT_THAT(text, HasSubstr("sequence       4096 tokens, layout thd\n"));
  EXPECT_THAT(text, HasSubstr("megatron-core  0.18\n"));
  EXPECT_THAT(text, HasSubstr("  pp 0    11 layers  chunk 0: 0-1 +embedding | chunk 1: 23-25 | "
                              "chunk 2: 47-49 | chunk 3: 71-73\n"));
  EXPECT_THAT(text, HasSubstr("  pp 3    12 layers  chunk 0: 8-10 | "));
  EXPECT_THAT(text, HasSubstr("  pp 7    11 layers  chunk 0: 20-22 | chunk 1: 44-46 | "
                              "chunk 2: 68-70 | chunk 3: 92-93 +lm-head\n"));
  EXPECT_THAT(text, HasSubstr("128 experts, 4 per EP rank (e=32), expert-DP size d_e=1\n"));
  EXPECT_THAT(text, EndsWith("warnings       none\n"));
}

TEST(ValidateReportTest, ValidTextMarksVisionMtpAndUnevenStages) {
  // 16 layers on rank 0 with the vision tower and embedding; 24 on rank 1 with MTP and LM head.
  const std::string text = RenderValidationText(io::LoadPreset("Qwen3.5-35B-A3B"),
                                                Qwen35MoeExample(), ValidationResult{});
  EXPECT_THAT(text, HasSubstr("  pp 0    16 layers  0-15 +vision +embedding\n"));
  EXPECT_THAT(text, HasSubstr("  pp 1    24 layers  16-39 +mtp(1) +lm-head\n"));
  EXPECT_THAT(text, HasSubstr("30 Gated DeltaNet + 10 attention"));
}

TEST(ValidateReportTest, ValidTextListsWarnings) {
  const ValidationResult result{.errors = {}, .warnings = {SequenceWarning()}};
  const std::string text =
      RenderValidationText(io::LoadPreset("Qwen3-30B-A3B"), TrainingConfig{}, result);
  EXPECT_THAT(text, StartsWith("configuration is valid\n"));
  EXPECT_THAT(text, HasSubstr("warnings (1)\n  [T7] --seq-length 65536: too long\n"));
}

TEST(ValidateReportTest, ValidTextSaysDenseModelHasNoExperts) {
  const std::string text =
      RenderValidationText(io::LoadPreset("Qwen3-8B"), TrainingConfig{}, ValidationResult{});
  EXPECT_THAT(text, HasSubstr("experts        none (dense model)\n"));
  EXPECT_THAT(text, Not(HasSubstr("per EP rank")));
}

TEST(ValidateReportTest, ValidJsonDescribesQwen35MoeLayout) {
  // d = 16/(1·2·1) = 8, d_e = 16/(1·8·2) = 1, m = 64/(1·8) = 8, 256/8 = 32 experts per rank.
  const nlohmann::json json = nlohmann::json::parse(RenderValidationJson(
      io::LoadPreset("Qwen3.5-35B-A3B"), Qwen35MoeExample(), ValidationResult{}));
  ASSERT_TRUE(json["valid"].get<bool>());
  const nlohmann::json& layout = json["layout"];
  EXPECT_EQ(layout["world_size"], 16);
  EXPECT_EQ(layout["tp"], 1);
  EXPECT_EQ(layout["pp"], 2);
  EXPECT_EQ(layout["vpp"], 1);
  EXPECT_EQ(layout["cp"], 1);
  EXPECT_EQ(layout["ep"], 8);
  EXPECT_EQ(layout["etp"], 1);
  EXPECT_EQ(layout["dp"], 8);
  EXPECT_EQ(layout["edp"], 1);
  EXPECT_EQ(layout["micro_batch_size"], 1);
  EXPECT_EQ(layout["global_batch_size"], 64);
  EXPECT_EQ(layout["num_micro_batches"], 8);
  EXPECT_EQ(layout["seq_length"], 4096);
  EXPECT_EQ(layout["sequence_layout"], "thd");
  EXPECT_EQ(layout["megatron_core"], "0.18");
  EXPECT_EQ(layout["experts_per_ep_rank"], 32);
  ASSERT_EQ(layout["stages"].size(), 2u);
  const nlohmann::json& first = layout["stages"][0]["chunks"][0];
  EXPECT_EQ(first["first_layer"], 0);
  EXPECT_EQ(first["num_layers"], 16);
  EXPECT_TRUE(first["embedding"].get<bool>());
  EXPECT_TRUE(first["vision"].get<bool>());
  EXPECT_FALSE(first["lm_head"].get<bool>());
  const nlohmann::json& last = layout["stages"][1]["chunks"][0];
  EXPECT_EQ(layout["stages"][1]["pp_rank"], 1);
  EXPECT_EQ(last["first_layer"], 16);
  EXPECT_EQ(last["num_layers"], 24);
  EXPECT_EQ(last["mtp_layers"], 1);
  EXPECT_TRUE(last["lm_head"].get<bool>());
}

TEST(ValidateReportTest, ValidJsonDefaultsGlobalBatchToOneMicroBatchPerRank) {
  // Qwen3-30B-A3B on 16 GPUs, e 16, GBS unset: GBS = b·d = 1·16, m = 1.
  TrainingConfig training;
  training.parallel = {.world_size = 16, .expert = 16};
  const nlohmann::json json = nlohmann::json::parse(
      RenderValidationJson(io::LoadPreset("Qwen3-30B-A3B"), training, ValidationResult{}));
  EXPECT_EQ(json["layout"]["global_batch_size"], 16);
  EXPECT_EQ(json["layout"]["num_micro_batches"], 1);
  EXPECT_EQ(json["layout"]["experts_per_ep_rank"], 8);  // 128 / 16
}

TEST(ValidateReportTest, ValidJsonReportsNoExpertsForDenseModel) {
  const nlohmann::json json = nlohmann::json::parse(
      RenderValidationJson(io::LoadPreset("Qwen3-8B"), TrainingConfig{}, ValidationResult{}));
  EXPECT_EQ(json["layout"]["experts_per_ep_rank"], 0);
}

TEST(ValidateReportTest, ValidJsonListsEveryChunkOfEveryStage) {
  // p 8 · v 4: 8 stages of 4 chunks; chunk 3 of rank 7 holds layers 92-93 (see the text test).
  const nlohmann::json json = nlohmann::json::parse(RenderValidationJson(
      io::LoadPreset("Qwen3-235B-A22B"), Qwen235bExample(), ValidationResult{}));
  const nlohmann::json& stages = json["layout"]["stages"];
  ASSERT_EQ(stages.size(), 8u);
  ASSERT_EQ(stages[7]["chunks"].size(), 4u);
  EXPECT_EQ(stages[7]["chunks"][3]["chunk"], 3);
  EXPECT_EQ(stages[7]["chunks"][3]["first_layer"], 92);
  EXPECT_EQ(stages[7]["chunks"][3]["num_layers"], 2);
  EXPECT_TRUE(stages[7]["chunks"][3]["lm_head"].get<bool>());
}

TEST(ValidateReportTest, RendersTheSameBytesTwice) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-235B-A22B");
  const ValidationResult result{.errors = {}, .warnings = {SequenceWarning()}};
  EXPECT_EQ(RenderValidationJson(model, Qwen235bExample(), result),
            RenderValidationJson(model, Qwen235bExample(), result));
  EXPECT_EQ(RenderValidationText(model, Qwen235bExample(), result),
            RenderValidationText(model, Qwen235bExample(), result));
}

}  // namespace
}  // namespace trainscope::report
