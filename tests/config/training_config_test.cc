// Derived quantities of the run configuration: global batch, micro-batch count, interleaved group
// size, per-layer full recompute, gradient and dtype element sizes and the resolved sequence
// layout. Expected values are derived by hand from Megatron-LM's definitions.
#include "trainscope/config/training_config.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>

#include "trainscope/config/model_config.h"
#include "trainscope/io/hf_config_loader.h"

namespace trainscope::config {
namespace {

// W = 8 GPUs with t = 2, p = c = 1, so d = W/(t·p·c) = 4 (parallel_state.py:814-825).
TrainingConfig DataParallelFour() {
  TrainingConfig training;
  training.parallel.world_size = 8;
  training.parallel.tensor = 2;
  return training;
}

TEST(TrainingConfigTest, GlobalBatchDefaultsToMicroBatchTimesData) {
  // Megatron-LM sets an unset --global-batch-size to b·d (arguments.py): 2·4 = 8.
  TrainingConfig training = DataParallelFour();
  training.batch.micro_batch_size = 2;
  EXPECT_EQ(training.GlobalBatchSize(), 8);
}

TEST(TrainingConfigTest, GlobalBatchIsTheStatedValueWhenSet) {
  // --global-batch-size 64 is used as given.
  TrainingConfig training = DataParallelFour();
  training.batch.global_batch_size = 64;
  EXPECT_EQ(training.GlobalBatchSize(), 64);
}

TEST(TrainingConfigTest, CountsMicroBatchesAsGlobalOverMicroTimesData) {
  // num_microbatches_calculator.py:381: m = GBS/(b·d) = 64/(1·4) = 16.
  TrainingConfig training;
  training.parallel.world_size = 4;
  training.batch.global_batch_size = 64;
  EXPECT_EQ(training.NumMicroBatches(), 16);
}

TEST(TrainingConfigTest, CountsMicroBatchesWithModelParallelism) {
  // W = 32, t = p = c = 2: d = 32/8 = 4; m = GBS/(b·d) = 64/(2·4) = 8.
  TrainingConfig training;
  training.parallel = {.world_size = 32, .tensor = 2, .pipeline = 2, .context = 2};
  training.batch.micro_batch_size = 2;
  training.batch.global_batch_size = 64;
  EXPECT_EQ(training.NumMicroBatches(), 8);
}

TEST(TrainingConfigTest, CountsOneMicroBatchWhenGlobalBatchIsUnset) {
  // GBS defaults to b·d, so m = b·d/(b·d) = 1.
  TrainingConfig training = DataParallelFour();
  training.batch.micro_batch_size = 2;
  EXPECT_EQ(training.NumMicroBatches(), 1);
}

TEST(TrainingConfigTest, MicroBatchGroupSizeDefaultsToPipelineSize) {
  // --microbatch-group-size-per-virtual-pipeline-stage defaults to p (schedules.py:1160-1180).
  TrainingConfig training;
  training.parallel.pipeline = 4;
  EXPECT_EQ(training.MicroBatchGroupSize(), 4);
}

TEST(TrainingConfigTest, MicroBatchGroupSizeIsTheStatedValueWhenSet) {
  TrainingConfig training;
  training.parallel.pipeline = 4;
  training.batch.microbatch_group_size_per_vp_stage = 8;
  EXPECT_EQ(training.MicroBatchGroupSize(), 8);
}

TEST(TrainingConfigTest, ExpertTensorDefaultsToTensor) {
  // Megatron uses u = t when --expert-tensor-parallel-size is unset (parallel_state.py:874-884).
  ParallelSizes sizes{.tensor = 4};
  EXPECT_EQ(sizes.ExpertTensor(), 4);
  sizes.expert_tensor = 1;
  EXPECT_EQ(sizes.ExpertTensor(), 1);
}

TEST(TrainingConfigTest, NoLayerIsFullyRecomputedWithoutFullGranularity) {
  // Selective recompute replays submodules, never whole layers (transformer_config.py).
  const RecomputeConfig none;
  const RecomputeConfig selective{.granularity = RecomputeGranularity::kSelective};
  EXPECT_FALSE(none.FullRecomputeLayer(0));
  EXPECT_FALSE(selective.FullRecomputeLayer(0));
}

TEST(TrainingConfigTest, UniformFullRecomputeReplaysEveryLayer) {
  // Uniform checkpoints every group of num_layers layers, so every layer is recomputed
  // (transformer_block.py _checkpointed_forward, recompute_method "uniform").
  const RecomputeConfig recompute{.granularity = RecomputeGranularity::kFull,
                                  .method = RecomputeMethod::kUniform,
                                  .num_layers = 2};
  EXPECT_TRUE(recompute.FullRecomputeLayer(0));
  EXPECT_TRUE(recompute.FullRecomputeLayer(1));
  EXPECT_TRUE(recompute.FullRecomputeLayer(5));
}

TEST(TrainingConfigTest, BlockFullRecomputeReplaysTheFirstLayersOfEachChunk) {
  // Block recomputes the first num_layers = 2 layers of each chunk (indices 0 and 1), not 2 on
  // (transformer_block.py _checkpointed_forward, recompute_method "block").
  const RecomputeConfig recompute{.granularity = RecomputeGranularity::kFull,
                                  .method = RecomputeMethod::kBlock,
                                  .num_layers = 2};
  EXPECT_TRUE(recompute.FullRecomputeLayer(0));
  EXPECT_TRUE(recompute.FullRecomputeLayer(1));
  EXPECT_FALSE(recompute.FullRecomputeLayer(2));
}

TEST(TrainingConfigTest, FullRecomputeWithoutMethodOrCountReplaysNothing) {
  // Without a method, or block without --recompute-num-layers (both rejected by C40), no layer.
  const RecomputeConfig no_method{.granularity = RecomputeGranularity::kFull};
  const RecomputeConfig no_count{.granularity = RecomputeGranularity::kFull,
                                 .method = RecomputeMethod::kBlock};
  EXPECT_FALSE(no_method.FullRecomputeLayer(0));
  EXPECT_FALSE(no_count.FullRecomputeLayer(0));
}

TEST(TrainingConfigTest, GradientsReduceInFp32ByDefault) {
  // Megatron-LM reduces gradients in fp32 unless --grad-reduce-in-bf16 (arguments.py:1204-1216).
  TrainingConfig training;
  EXPECT_EQ(training.GradReduceBytes(), 4);
  training.precision.grad_reduce_in_fp32 = false;
  EXPECT_EQ(training.GradReduceBytes(), 2);
}

TEST(TrainingConfigTest, MegatronFsdpReducesGradientsInTheParamsDtype) {
  // Megatron-FSDP's grad-comm dtype `auto` is the params dtype (arguments.py:3687-3694), even
  // with grad_reduce_in_fp32 set: bf16 params give 2 bytes, fp32 params 4.
  TrainingConfig training;
  training.data_parallel.megatron_fsdp = true;
  EXPECT_EQ(training.GradReduceBytes(), 2);
  training.precision.params = ParamDtype::kFp32;
  EXPECT_EQ(training.GradReduceBytes(), 4);
}

TEST(TrainingConfigTest, ElementSizesOfEachDtype) {
  // IEEE fp32 4 bytes, bf16 and fp16 2 bytes, fp8 (E4M3/E5M2) 1 byte, fp64 8 bytes.
  EXPECT_EQ(BytesOf(ParamDtype::kFp32), 4);
  EXPECT_EQ(BytesOf(ParamDtype::kBf16), 2);
  EXPECT_EQ(BytesOf(ParamDtype::kFp16), 2);
  EXPECT_EQ(BytesOf(OptimizerDtype::kFp32), 4);
  EXPECT_EQ(BytesOf(OptimizerDtype::kFp16), 2);
  EXPECT_EQ(BytesOf(OptimizerDtype::kBf16), 2);
  EXPECT_EQ(BytesOf(OptimizerDtype::kFp8), 1);
  EXPECT_EQ(BytesOf(RouterDtype::kFp32), 4);
  EXPECT_EQ(BytesOf(RouterDtype::kFp64), 8);
  // router.py:105-112: without --moe-router-dtype the router runs in the bf16 activation dtype.
  EXPECT_EQ(BytesOf(RouterDtype::kActivation), 2);
}

TEST(TrainingConfigTest, ResolvesAutoLayoutToThdForADenseModel) {
  // Without Gated DeltaNet layers nothing forbids packed sequences.
  EXPECT_EQ(TrainingConfig{}.ResolvedSequenceLayout(io::LoadPreset("Qwen3-0.6B")),
            SequenceLayout::kThd);
}

TEST(TrainingConfigTest, ResolvesAutoLayoutToBshdForGdnInDeterministicMode) {
  // C32: Gated DeltaNet forbids packed sequences in deterministic mode.
  TrainingConfig training;
  training.deterministic = true;
  EXPECT_EQ(training.ResolvedSequenceLayout(io::LoadPreset("Qwen3.5-35B-A3B")),
            SequenceLayout::kBshd);
}

}  // namespace
}  // namespace trainscope::config
