// Layer placement over pipeline ranks and virtual chunks (transformer_block.py
// get_num_layers_to_build, transformer_layer.py get_transformer_layer_offset).
#include "trainscope/config/pipeline_layout.h"

#include <gtest/gtest.h>

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
}  // namespace trainscope::config
