// Megatron's theoretical memory formula (megatron/training/theoretical_memory_usage.py),
// evaluated by hand below for Llama-3-8B and Qwen3-30B-A3B.
// The same figures were cross-checked by running the Python functions of Megatron-LM d98e8a64.
#include "trainscope/cost/megatron_memory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "trainscope/io/hf_config_loader.h"

namespace trainscope::cost {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

config::TrainingConfig Training(int64_t world_size, int64_t tensor, int64_t pipeline) {
  config::TrainingConfig training;
  training.parallel = {.world_size = world_size, .tensor = tensor, .pipeline = pipeline};
  training.batch = {.micro_batch_size = 1, .seq_length = 4096};
  training.sequence_parallel = true;
  training.recompute.granularity = config::RecomputeGranularity::kSelective;
  training.data_parallel.distributed_optimizer = true;
  return training;
}

// Llama-3-8B: h = 4096, L = 32, n = 32, g = 8, d_h = 128, F = 14336, V0 = 128256, untied.
// W = 8, t = 2, p = 1 -> d = 4; s = 4096, b = 1; SP + selective; distributed optimizer.
//   V     = ceil(128256/256)·256                          = 128,256
//   P_att = 2·4096·4096·(1 + 8/32)·(4096/4096)           = 41,943,040
//   P_mlp = 2·4096·14336·3/2                              = 176,160,768
//   TP_block  = (41,943,040 + 176,160,768)·32             = 6,979,321,856
//   REP_block = 2·4096·32 + 4096                          = 266,240
//   V·h       = 4096·128,256                              = 525,336,576
//   W_tp = (6,979,321,856 + 525,336,576)/2 + 525,336,576/2 (untied, p = 1) = 4,014,997,504
//   bpp(4) = 6 + 12/4 = 9
//   M_wo = (4,014,997,504 + 266,240)·9                    = 36,137,373,696
//   sbh = 4096·4096 = 16,777,216; 18 + 4·14336/4096 = 32
//   layers 16,777,216·32·32 = 17,179,869,184; + 8sbp 32,768 + sbhp 16,777,216; φ = 1
//   p = 1 term 4·16,777,216·(1 + 128,256/4096) = 67,108,864·32.3125 = 2,168,455,168
//   M_act = (17,196,679,168 + 2,168,455,168)/2           = 9,682,567,168
TEST(MegatronMemoryTest, DenseLlamaWithSpAndSelectiveRecompute) {
  const MegatronMemoryEstimate estimate =
      MegatronTheoreticalMemory(io::LoadPreset("Llama-3-8B"), Training(8, 2, 1));
  EXPECT_EQ(estimate.weights_and_optimizer_bytes, 36'137'373'696);
  EXPECT_EQ(estimate.activations_bytes, 9'682'567'168);
  EXPECT_EQ(estimate.total_bytes, 45'819'940'864);
}

// A plain GPT (GPT-1.7B: h = 2304, L = 24, 24 heads, F = 4h, LayerNorm, tied, V0 = 51200): no
// --swiglu, so gated_linear_multiplier 1, and norm_size 2. W = 8, t = 2, p = 1 -> d = 4.
//   P_att = 2·h²·(1 + 1)·1 = 4h²; P_mlp = 2·h·4h·1 = 8h²; TP_block = 12h²·24 = 1,528,823,808
//   V·h = 51,200·2304 = 117,964,800 (tied: no extra output layer)
//   W_tp = (1,528,823,808 + 117,964,800)/2 = 823,394,304
//   REP = 2·h·2·24 + 2·h = 225,792; M_wo = (823,394,304 + 225,792)·9 = 7,412,580,864
TEST(MegatronMemoryTest, PlainGptUsesGeluMultiplierAndLayerNormSize) {
  const MegatronMemoryEstimate estimate =
      MegatronTheoreticalMemory(io::LoadPreset("GPT-1.7B"), Training(8, 2, 1));
  EXPECT_EQ(estimate.weights_and_optimizer_bytes, 7'412'580'864);
}

// Same model, W = 8, t = 2, p = 2 (d = 2), no SP, no recompute, no distributed optimizer,
// GBS unset -> m = 1.
//   W_tp = (6,979,321,856/2 + 525,336,576)/2 = 2,007,498,752 (no untied term for p > 1)
//   W_rep = 266,240/2 = 133,120; M_wo = 2,007,631,872·18 = 36,137,373,696
//   per layer sbh·(10 + 24/2) = 16,777,216·22 = 369,098,752; ·32 = 11,811,160,064
//   + 8sbp 65,536 + sbhp 33,554,432 = 11,844,780,032; φ = min(1, 1/2) -> 5,922,390,016
//   ·1.05 = 6,218,509,516.8 -> 6,218,509,517 bytes
TEST(MegatronMemoryTest, DenseLlamaWithoutSpUsesOverheadFactorAndPipelineDiscount) {
  config::TrainingConfig training = Training(8, 2, 2);
  training.sequence_parallel = false;
  training.recompute.granularity = config::RecomputeGranularity::kNone;
  training.data_parallel.distributed_optimizer = false;
  const MegatronMemoryEstimate estimate =
      MegatronTheoreticalMemory(io::LoadPreset("Llama-3-8B"), training);
  EXPECT_EQ(estimate.weights_and_optimizer_bytes, 36'137'373'696);
  EXPECT_EQ(estimate.activations_bytes, 6'218'509'517);
  EXPECT_EQ(estimate.total_bytes, 42'355'883'213);
}

// W = 16, t = 2, p = 4, v = 2 (d = 2): φ = 1 + 3/(4·2) = 1.375.
//   W_tp = (6,979,321,856/4 + 525,336,576)/2 = 1,135,083,520; W_rep = 266,240/4 = 66,560
//   M_wo = 1,135,150,080·(6 + 12/2) = 13,621,800,960
//   M_act = (17,179,869,184 + 8·4096·4 + 16,777,216·4)·1.375/2 = 17,247,109,120·1.375/2
//         = 11,857,387,520 (no output-layer term for p > 1)
TEST(MegatronMemoryTest, InterleavedScheduleAppliesPenalty) {
  config::TrainingConfig training = Training(16, 2, 4);
  training.parallel.virtual_stages = 2;
  training.batch.global_batch_size = 16;
  const MegatronMemoryEstimate estimate =
      MegatronTheoreticalMemory(io::LoadPreset("Llama-3-8B"), training);
  EXPECT_EQ(estimate.weights_and_optimizer_bytes, 13'621'800'960);
  EXPECT_EQ(estimate.activations_bytes, 11'857'387'520);
}

// W = 16, t = 2, c = 2: d = W/(t·p·c) = 4 as in the first case, and activations use the full
// s = 4096, so both figures equal the W = 8, c = 1 case.
TEST(MegatronMemoryTest, ContextParallelNeitherShrinksActivationsNorWidensOptimizerSharding) {
  config::TrainingConfig training = Training(16, 2, 1);
  training.parallel.context = 2;
  const MegatronMemoryEstimate estimate =
      MegatronTheoreticalMemory(io::LoadPreset("Llama-3-8B"), training);
  EXPECT_EQ(estimate.weights_and_optimizer_bytes, 36'137'373'696);
  EXPECT_EQ(estimate.activations_bytes, 9'682'567'168);
  EXPECT_THAT(estimate.notes, Contains(HasSubstr("context parallelism is not modelled")));
}

// Qwen3-30B-A3B: h = 2048, L = 48 (all MoE), n = 32, g = 4, d_h = 128, E = 128, F_e = 768,
// V0 = 151936, untied, no shared expert. W = 16, t = 2, e = 8, u = 1, p = 1:
// d = 16/2 = 8, d_e = 16/(1·8·1) = 2; SP + selective; distributed optimizer.
//   V     = ceil(151936/256)·256                          = 152,064
//   P_att = 2·2048·2048·(1 + 4/32)·(4096/2048)           = 18,874,368
//   P_rt  = 2·2048·768·128·3/2                            = 603,979,776
//   P_ln = 4096, P_r = 2048·128 = 262,144
//   TP_block  = 18,874,368·48                             = 905,969,664
//   REP_block = (4096 + 262,144)·48 + 2048                = 12,781,568
//   EXP_block = 603,979,776·48                            = 28,991,029,248
//   V·h = 2048·152,064                                    = 311,427,072
//   W_tp  = (905,969,664 + 311,427,072)/2 + 311,427,072/2 = 764,411,904
//   W_exp = 28,991,029,248/(1·8)                          = 3,623,878,656
//   M_wo = (764,411,904 + 12,781,568)·(6 + 12/8) + 3,623,878,656·(6 + 12/2)
//        = 5,828,951,040 + 43,486,543,872                 = 49,315,494,912
//   F (no dense FFN, Megatron's swiglu default) = int((4·2048·2/3)/64)·64 = 5440
//   sbh = 4096·2048 = 8,388,608; 18 + 4·5440/2048 = 28.625
//   layers 8,388,608·28.625·48 = 11,525,947,392; + 32,768 + 8,388,608 = 11,534,368,768
//   p = 1 term 4·8,388,608·(1 + 152,064/2048) = 33,554,432·75.25 = 2,524,971,008
//   M_act = (11,534,368,768 + 2,524,971,008)/2           = 7,029,669,888
TEST(MegatronMemoryTest, MoeQwen3SplitsExpertsOverExpertDataParallel) {
  config::TrainingConfig training = Training(16, 2, 1);
  training.parallel.expert = 8;
  training.parallel.expert_tensor = 1;
  const MegatronMemoryEstimate estimate =
      MegatronTheoreticalMemory(io::LoadPreset("Qwen3-30B-A3B"), training);
  EXPECT_EQ(estimate.weights_and_optimizer_bytes, 49'315'494'912);
  EXPECT_EQ(estimate.activations_bytes, 7'029'669'888);
  EXPECT_EQ(estimate.total_bytes, 56'345'164'800);
  EXPECT_THAT(estimate.notes, Contains(HasSubstr("MoE activations")));
  EXPECT_THAT(estimate.notes, Contains(HasSubstr("qk-norm")));
  EXPECT_THAT(estimate.notes, Contains(HasSubstr("--ffn-hidden-size 5440")));
}

// DeepSeek-V3, W = 256, t = 2 (SP), p = 8, e = 32, u = 1 -> d = 16; distributed optimizer.
// The MLA branch of compute_weight_and_optimizer_memory (:62-80): P_att = q_term + kv_term +
// h·rope + n·v·h = 1536·(7168 + 128·192 + 1) + 512·(7168 + 128·256 + 1) + 7168·64 +
// 128·128·7168 = 48,760,320 + 20,447,744 + 458,752 + 117,440,512 = 187,107,328. Evaluated with
// Megatron-LM d98e8a64's Python function itself (args: the MLA fields, moe_layer_freq
// [0]*3 + [1]*58, mtp_num_layers 1, shared 2048, padded vocab 129,280, untied):
// 62,724,784,320 bytes on the most loaded rank.
TEST(MegatronMemoryTest, DeepSeekV3UsesTheMlaAttentionTerm) {
  config::TrainingConfig training = Training(256, 2, 8);
  training.parallel.expert = 32;
  training.parallel.expert_tensor = 1;
  const MegatronMemoryEstimate estimate =
      MegatronTheoreticalMemory(io::LoadPreset("DeepSeek-V3"), training);
  EXPECT_EQ(estimate.weights_and_optimizer_bytes, 62'724'784'320);
}

TEST(MegatronMemoryTest, HybridModelIsComputedWithANote) {
  config::TrainingConfig training = Training(16, 2, 1);
  training.parallel.expert = 8;
  training.parallel.expert_tensor = 1;
  const MegatronMemoryEstimate estimate =
      MegatronTheoreticalMemory(io::LoadPreset("Qwen3.5-35B-A3B"), training);
  EXPECT_GT(estimate.weights_and_optimizer_bytes, 0);
  EXPECT_GT(estimate.activations_bytes, 0);
  EXPECT_THAT(estimate.notes, Contains(HasSubstr("refuses hybrid models")));
  EXPECT_THAT(estimate.notes, Contains(HasSubstr("output gate")));
}

TEST(MegatronMemoryTest, FullRecomputeFallsBackToWithoutSpFormulaWithNote) {
  config::TrainingConfig training = Training(8, 2, 1);
  training.recompute = {.granularity = config::RecomputeGranularity::kFull,
                        .method = config::RecomputeMethod::kUniform,
                        .num_layers = 1};
  const MegatronMemoryEstimate estimate =
      MegatronTheoreticalMemory(io::LoadPreset("Llama-3-8B"), training);
  // 1.05·[16,777,216·22·32 + 32,768 + 16,777,216 + 2·(4096·128,256/2 + 16,777,216)]
  //   = 1.05·(11,811,160,064 + 16,809,984 + 2·(262,668,288 + 16,777,216))
  //   = 1.05·12,386,861,056 = 13,006,204,108.8
  EXPECT_EQ(estimate.activations_bytes, 13'006'204'109);
  EXPECT_THAT(estimate.notes, Contains(HasSubstr("full recompute is not modelled")));
}

}  // namespace
}  // namespace trainscope::cost
