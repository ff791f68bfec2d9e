// Layer placement over pipeline ranks and virtual chunks (transformer_block.py
// get_num_layers_to_build, transformer_layer.py get_transformer_layer_offset).
#include "trainscope/config/pipeline_layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "trainscope/config/validate.h"
#include "trainscope/error.h"
#include "trainscope/io/hf_config_loader.h"

namespace trainscope::config {
namespace {

TEST(PipelineLayoutTest, AccountForEmbeddingAndLossWithVpp) {
  // Qwen3-235B-A22B, 94 layers, p 8, v 4, both account flags: 96 slots, 12 per rank,
  // 3 per chunk; chunk 0 of rank 0 and chunk 3 of rank 7 build 2 layers (C15, C16).
  const ModelConfig model = io::LoadPreset("Qwen3-235B-A22B");
  TrainingConfig training;
  training.parallel = {.world_size = 256, .tensor = 2, .pipeline = 8, .virtual_stages = 4};
  training.split.account_for_embedding = true;
  training.split.account_for_loss = true;
  const PipelineLayout layout = BuildPipelineLayout(model, training);
  EXPECT_EQ(layout.Chunk(0, 0).num_layers, 2);
  EXPECT_EQ(layout.Chunk(0, 1).num_layers, 3);
  EXPECT_EQ(layout.Chunk(7, 3).num_layers, 2);
  EXPECT_EQ(layout.LayersOnRank(0), 11);
  EXPECT_EQ(layout.LayersOnRank(3), 12);
  EXPECT_EQ(layout.LayersOnRank(7), 11);
  // Round-robin: chunk 0 of rank 1 starts after chunk 0 of rank 0 (2 layers); chunk 1 of
  // rank 0 starts after round 0 (2 + 7 x 3 = 23 layers).
  EXPECT_EQ(layout.Chunk(1, 0).first_layer, 2);
  EXPECT_EQ(layout.Chunk(0, 1).first_layer, 23);
  EXPECT_TRUE(layout.Chunk(0, 0).has_embedding);
  EXPECT_TRUE(layout.Chunk(7, 3).has_lm_head);
  EXPECT_FALSE(layout.Chunk(7, 0).has_lm_head);
}

TEST(PipelineLayoutTest, UnevenFirstAndLastStage) {
  // Qwen3.5-35B-A3B, 40 layers, p 2, first 16 / last 24: no middle stages (C18).
  const ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  TrainingConfig training;
  training.parallel = {.world_size = 16, .pipeline = 2, .expert = 8};
  training.split.first_stage_layers = 16;
  training.split.last_stage_layers = 24;
  const PipelineLayout layout = BuildPipelineLayout(model, training);
  EXPECT_EQ(layout.LayersOnRank(0), 16);
  EXPECT_EQ(layout.LayersOnRank(1), 24);
  EXPECT_EQ(layout.Chunk(1, 0).first_layer, 16);
  EXPECT_EQ(layout.Chunk(1, 0).num_mtp_layers, 1);
  EXPECT_TRUE(layout.Chunk(1, 0).has_embedding_copy);  // MTP needs the embedding, p > 1
  EXPECT_TRUE(layout.Chunk(0, 0).has_vision);
}

TEST(PipelineLayoutTest, UnevenMiddleStagesShareTheRest) {
  // 94 layers, p 4, first 22, last 24: two middle ranks share 48 -> 24 each.
  const std::vector<int64_t> per_rank =
      LayersPerPipelineRank(94, ParallelSizes{.world_size = 4, .pipeline = 4},
                            PipelineSplit{.first_stage_layers = 22, .last_stage_layers = 24});
  EXPECT_EQ(per_rank, (std::vector<int64_t>{22, 24, 24, 24}));
}

TEST(PipelineLayoutTest, ReportsUnevenRemainderAsMinusOne) {
  // 94 layers over p 4 without options: 94 % 4 != 0.
  const std::vector<int64_t> per_rank =
      LayersPerPipelineRank(94, ParallelSizes{.pipeline = 4}, PipelineSplit{});
  EXPECT_EQ(per_rank, (std::vector<int64_t>{-1, -1, -1, -1}));
}

TEST(PipelineLayoutTest, TiedEmbeddingOnOneStageHasNoCopy) {
  const ModelConfig model = io::LoadPreset("Qwen3-0.6B");
  TrainingConfig training;
  const PipelineLayout single = BuildPipelineLayout(model, training);
  EXPECT_FALSE(single.Chunk(0, 0).has_embedding_copy);
  training.parallel = {.world_size = 2, .pipeline = 2};
  const PipelineLayout two = BuildPipelineLayout(model, training);
  EXPECT_TRUE(two.Chunk(1, 0).has_embedding_copy);
}

}  // namespace

// --pipeline-model-parallel-layout, parsed as Megatron-Core's
// PipelineParallelLayerLayout.parse_str_to_list expands it.
TEST(PipelineLayoutTest, ParsesMegatronBridgeDeepSeekLayout) {
  // "Et*4|(t*4|)*14tmL" (Megatron-Bridge perf_recipes/deepseek/gb300/deepseek_v3.py): stage 0
  // is E + 4 t, stages 1-14 are 4 t each, stage 15 is t + m + L; 4 + 56 + 1 = 61 decoder layers.
  const std::vector<LayoutStage> stages = ParsePipelineLayout("Et*4|(t*4|)*14tmL");
  ASSERT_EQ(stages.size(), 16U);
  EXPECT_EQ(stages[0], (LayoutStage{.embedding = true, .decoder_layers = 4}));
  for (size_t k = 1; k <= 14; ++k) EXPECT_EQ(stages[k], (LayoutStage{.decoder_layers = 4}));
  EXPECT_EQ(stages[15], (LayoutStage{.decoder_layers = 1, .mtp_layers = 1, .loss = true}));
  // Commas are cosmetic; an empty stage is allowed ("Ettt|(tt|)*29,m|L" from the docstring:
  // 1 + 29 + 1 + 1 = 32 stages, the last two holding only m and only L).
  const std::vector<LayoutStage> doc = ParsePipelineLayout("Ettt|(tt|)*29,m|L");
  ASSERT_EQ(doc.size(), 32U);
  EXPECT_EQ(doc[30], (LayoutStage{.mtp_layers = 1}));
  EXPECT_EQ(doc[31], (LayoutStage{.loss = true}));
  EXPECT_EQ(ParsePipelineLayout("E||L").size(), 3U);
}

TEST(PipelineLayoutTest, RejectsMalformedLayouts) {
  EXPECT_THROW((void)ParsePipelineLayout("Etx|L"), UsageError);                 // unknown letter
  EXPECT_THROW((void)ParsePipelineLayout("E((t)*2)*2|L"), UsageError);          // nested group
  EXPECT_THROW((void)ParsePipelineLayout("E(t|*2L"), UsageError);               // unclosed group
  EXPECT_THROW((void)ParsePipelineLayout("Et*|L"), UsageError);                 // missing count
  EXPECT_THROW((void)ParsePipelineLayout("tE|L"), UsageError);                  // E not first
  EXPECT_THROW((void)ParsePipelineLayout("Et|Lt"), UsageError);                 // L not last
  EXPECT_THROW((void)ParsePipelineLayout("Etm|tL"), UsageError);                // t after m
  EXPECT_THROW((void)ParsePipelineLayout("E(t*100000|)*100000L"), UsageError);  // too large
}

TEST(PipelineLayoutTest, LayoutPlacesChunksInMegatronOrder) {
  // DeepSeek-V3 (61 layers + 1 MTP), p 2: 16 stages give v 8; stage k is virtual stage k / 2
  // of rank k % 2, so rank 0 holds stages 0, 2, ..., 14 (4 + 7 x 4 = 32 layers) and rank 1
  // stages 1, 3, ..., 15 (7 x 4 + 1 = 29 layers).
  const ModelConfig model = io::LoadPreset("DeepSeek-V3");
  TrainingConfig training;
  training.parallel = {.world_size = 256, .pipeline = 2, .virtual_stages = 8, .expert = 32};
  training.split.layout = ParsePipelineLayout("Et*4|(t*4|)*14tmL");
  const PipelineLayout layout = BuildPipelineLayout(model, training);
  EXPECT_EQ(layout.virtual_stages, 8);
  EXPECT_EQ(layout.LayersOnRank(0), 32);
  EXPECT_EQ(layout.LayersOnRank(1), 29);
  EXPECT_TRUE(layout.Chunk(0, 0).has_embedding);
  EXPECT_EQ(layout.Chunk(1, 0).first_layer, 4);   // stage 1 follows stage 0's 4 layers
  EXPECT_EQ(layout.Chunk(0, 1).first_layer, 8);   // stage 2
  EXPECT_EQ(layout.Chunk(1, 7).first_layer, 60);  // stage 15: the 61st layer
  EXPECT_EQ(layout.Chunk(1, 7).num_layers, 1);
  EXPECT_EQ(layout.Chunk(1, 7).num_mtp_layers, 1);
  EXPECT_TRUE(layout.Chunk(1, 7).has_lm_head);
  EXPECT_TRUE(layout.Chunk(1, 7).has_embedding_copy);  // MTP needs the embedding, p > 1
  EXPECT_FALSE(layout.Chunk(0, 7).has_lm_head);
}

TEST(PipelineLayoutTest, ValidatorChecksLayoutAgainstModel) {
  // C50 (transformer_config.py "PP layout", validate_layer_layout).
  const ModelConfig model = io::LoadPreset("DeepSeek-V3");
  TrainingConfig training;
  training.parallel = {.world_size = 256, .pipeline = 2, .virtual_stages = 8, .expert = 32};
  training.batch.global_batch_size = 4096;
  training.moe.grouped_gemm = true;
  training.split.layout = ParsePipelineLayout("Et*4|(t*4|)*14tmL");
  const auto rules = [&] {
    std::vector<std::string> ids;
    for (const Violation& v : Validate(model, training).errors) ids.push_back(v.rule);
    return ids;
  };
  EXPECT_EQ(std::count(rules().begin(), rules().end(), "C50"), 0);
  training.split.layout = ParsePipelineLayout("Et*4|(t*4|)*14tL");  // no MTP layer
  EXPECT_EQ(rules(), std::vector<std::string>{"C50"});
  training.split.layout = ParsePipelineLayout("Et*4|(t*4|)*14ttmL");  // 62 decoder layers
  EXPECT_EQ(rules(), std::vector<std::string>{"C50"});
  training.split.layout = ParsePipelineLayout("Et*4|(t*4|)*14tmL");
  training.parallel.virtual_stages = 4;  // conflicts with 16 stages over p = 2
  EXPECT_EQ(rules(), std::vector<std::string>{"C50"});
  training.parallel.virtual_stages = 8;
  training.split.account_for_loss = true;  // cannot combine with the layout
  EXPECT_EQ(rules(), std::vector<std::string>{"C50"});
}

}  // namespace trainscope::config
