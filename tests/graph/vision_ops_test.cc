// The Qwen3.5 vision tower in the step graph: hand-derived FLOPs of its GEMMs and attention,
// emitted on the first pipeline stage only, and only when image tokens are given.
#include <gtest/gtest.h>

#include <cstdint>

#include "trainscope/config/validate.h"
#include "trainscope/graph/layer_ops.h"
#include "trainscope/graph/step_graph.h"
#include "trainscope/io/hf_config_loader.h"

namespace trainscope::graph {
namespace {

// Qwen3.5-27B (vision: depth 27, Hv 1152, Iv 4304, 16 heads of 72, merge 2x2, out 5120),
// b = 1, s = 4096, 1024 image tokens -> P = 4096 patches, t = 1.
config::TrainingConfig VisionTraining(int64_t tp, int64_t pp) {
  config::TrainingConfig training;
  training.parallel.tensor = tp;
  training.parallel.pipeline = pp;
  training.parallel.world_size = tp * pp;
  training.sequence_parallel = tp > 1;
  training.batch.seq_length = 4096;
  training.batch.vision_tokens_per_sample = 1024;
  return training;
}

struct Totals {
  int64_t gemm_and_attention_flops = 0;
  int64_t ops = 0;
};

Totals VisionTotals(const std::vector<Op>& ops) {
  Totals totals;
  for (const Op& op : ops) {
    if (op.role.block != OpBlock::kVision) continue;
    ++totals.ops;
    if (op.role.kind == OpKind::kGemm || op.role.kind == OpKind::kAttentionCore) {
      totals.gemm_and_attention_flops += op.flops;
    }
  }
  return totals;
}

// Per block: qkv 2·P·3Hv·Hv = 32,614,907,904; attention (bidirectional, one image)
// 4·16·72·P² = 77,309,411,328; proj 2·P·Hv² = 10,871,635,968; fc1 = fc2 = 2·P·Iv·Hv =
// 40,617,639,936; block total 202,031,235,072. Merger fc1 2·1024·4608² = 43,486,543,872, fc2
// 2·1024·5120·4608 = 48,318,382,080; patch embedding 2·P·Hv·1536 = 14,495,514,624.
// Forward 27·block + merger + patch = 5,561,143,787,520. Backward: dgrad + wgrad of every
// GEMM and 2x attention, the patch embedding wgrad only: 11,107,792,060,416.
TEST(VisionOpsTest, ForwardAndBackwardFlopsFollowTheTowersShapes) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-27B");
  const config::TrainingConfig training = VisionTraining(1, 1);
  const LayerOpContext context = MakeLayerOpContext(model, training);
  EXPECT_EQ(VisionTotals(VisionForward(context)).gemm_and_attention_flops, 5'561'143'787'520);
  EXPECT_EQ(VisionTotals(VisionBackward(context)).gemm_and_attention_flops, 11'107'792'060'416);
}

// t = 2 halves every split GEMM and the attention heads; the patch embedding (replicated) does
// not: forward = (5,561,143,787,520 − 14,495,514,624) / 2 + 14,495,514,624.
TEST(VisionOpsTest, TensorParallelSplitsTheTower) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-27B");
  const config::TrainingConfig training = VisionTraining(2, 1);
  ASSERT_TRUE(config::Validate(model, training).ok());
  const LayerOpContext context = MakeLayerOpContext(model, training);
  EXPECT_EQ(VisionTotals(VisionForward(context)).gemm_and_attention_flops,
            (5'561'143'787'520 - 14'495'514'624) / 2 + 14'495'514'624);
  int64_t reductions = 0;
  for (const Op& op : VisionForward(context)) {
    if (op.role.block == OpBlock::kVision && op.IsComm()) ++reductions;
  }
  EXPECT_EQ(reductions, 2 * 27 + 1);  // proj and fc2 of each block, merger fc2
}

TEST(VisionOpsTest, RunsOnTheFirstStageOnlyAndOnlyWithImageTokens) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-27B");
  config::TrainingConfig training = VisionTraining(1, 2);
  training.batch.global_batch_size = 2;
  ASSERT_TRUE(config::Validate(model, training).ok());
  const Totals first = VisionTotals(BuildStepGraph(model, training, 0).ops);
  EXPECT_EQ(first.gemm_and_attention_flops, 2 * (5'561'143'787'520 + 11'107'792'060'416));
  EXPECT_EQ(VisionTotals(BuildStepGraph(model, training, 1).ops).ops, 0);
  training.batch.vision_tokens_per_sample = 0;
  EXPECT_EQ(VisionTotals(BuildStepGraph(model, training, 0).ops).ops, 0);
}

TEST(VisionOpsTest, ValidationNeedsAVisionTowerAndTokensWithinTheSequence) {
  config::TrainingConfig training = VisionTraining(1, 1);
  const config::ValidationResult text_only = config::Validate(io::LoadPreset("Qwen3-8B"), training);
  ASSERT_FALSE(text_only.ok());
  EXPECT_EQ(text_only.errors[0].rule, "C44");
  training.batch.vision_tokens_per_sample = 8192;
  const config::ValidationResult too_many =
      config::Validate(io::LoadPreset("Qwen3.5-27B"), training);
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.errors[0].rule, "C44");
}

}  // namespace
}  // namespace trainscope::graph
