// Host launch floor and CUDA-graph capture against their definitions: one eager launch costs the
// CPU time of one torch.nn.Linear forward measured in NVIDIA/TransformerEngine#2053 (13.48 µs on
// a DGX H100's Xeon 8480C; 33.17 / 37.08 µs on GH200 / GB200 Grace, mean 35.1 µs), and the
// captured regions are those of Megatron-Core's cuda_graph_modules (transformer_config.py).
#include "trainscope/cost/launch_overhead.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "trainscope/config/hardware.h"

namespace trainscope::cost {
namespace {

config::GpuSpec Gpu(const std::string& name) {
  const std::optional<config::GpuSpec> gpu = config::FindGpu(name);
  EXPECT_TRUE(gpu.has_value());
  return *gpu;
}

graph::Op Kernel(graph::OpBlock block, int64_t num_launches, int64_t layer = 0) {
  graph::Op op;
  op.name = "kernel";
  op.layer = layer;
  op.role = graph::OpRole{.kind = graph::OpKind::kElementwise, .block = block};
  op.num_launches = num_launches;
  return op;
}

TEST(LaunchOverheadTest, HostSecondsFollowTheHostCpuOfTheGpuPreset) {
  const ComputeEfficiency eff;
  EXPECT_DOUBLE_EQ(LaunchHostSeconds(Gpu("H100"), eff), 13.48e-6);
  EXPECT_DOUBLE_EQ(LaunchHostSeconds(Gpu("B200"), eff), 13.48e-6);
  // Grace: the mean of 33.17 and 37.08 µs, 35.125, rounded to 35.1 µs.
  EXPECT_NEAR(LaunchHostSeconds(Gpu("GB200"), eff), (33.17e-6 + 37.08e-6) / 2, 0.03e-6);
  EXPECT_DOUBLE_EQ(LaunchHostSeconds(Gpu("GB300"), eff), 35.1e-6);
}

TEST(LaunchOverheadTest, FloorIsLaunchesTimesHostSecondsUnlessCaptured) {
  const ComputeEfficiency eff;
  const graph::Op op = Kernel(graph::OpBlock::kMlp, 1571);
  EXPECT_DOUBLE_EQ(HostFloorSeconds(op, Gpu("H100"), eff, /*captured=*/false), 1571 * 13.48e-6);
  EXPECT_DOUBLE_EQ(HostFloorSeconds(op, Gpu("H100"), eff, /*captured=*/true), 0.0);
  const graph::Op host_side = Kernel(graph::OpBlock::kOptimizer, 0);
  EXPECT_DOUBLE_EQ(HostFloorSeconds(host_side, Gpu("GB200"), eff, false), 0.0);
}

// A host sync costs one D2H round trip, 32.21 µs (kekzl/imp#1654: median of a 4-byte D2H +
// cudaStreamSynchronize), on top of its launches: 3 syncs and 2 launches on an x86 host =
// 3·32.21 + 2·13.48 = 123.59 µs; on Grace 3·32.21 + 2·35.1 = 166.83 µs.
TEST(LaunchOverheadTest, HostSyncsAddARoundTripEach) {
  const ComputeEfficiency eff;
  graph::Op op = Kernel(graph::OpBlock::kGdn, 2);
  op.role.kind = graph::OpKind::kHostSync;
  op.num_host_syncs = 3;
  EXPECT_NEAR(HostFloorSeconds(op, Gpu("H100"), eff, false), 123.59e-6, 1e-12);
  EXPECT_NEAR(HostFloorSeconds(op, Gpu("GB200"), eff, false), 166.83e-6, 1e-12);
}

TEST(LaunchOverheadTest, NoCudaGraphCapturesNothing) {
  const config::TrainingConfig training;
  EXPECT_FALSE(CapturedByCudaGraph(Kernel(graph::OpBlock::kAttention, 1), training));
}

TEST(LaunchOverheadTest, EnableCudaGraphCapturesWholeDecoderLayersOnly) {
  config::TrainingConfig training;
  training.cuda_graph.enable_cuda_graph = true;  // cuda_graph_impl local, empty modules
  EXPECT_TRUE(CapturedByCudaGraph(Kernel(graph::OpBlock::kAttention, 1), training));
  EXPECT_TRUE(CapturedByCudaGraph(Kernel(graph::OpBlock::kGdn, 1), training));
  EXPECT_TRUE(CapturedByCudaGraph(Kernel(graph::OpBlock::kMoeRouted, 1), training));
  EXPECT_FALSE(CapturedByCudaGraph(Kernel(graph::OpBlock::kLmHead, 1, -1), training));
  EXPECT_FALSE(CapturedByCudaGraph(Kernel(graph::OpBlock::kEmbedding, 1, -1), training));
  EXPECT_FALSE(CapturedByCudaGraph(Kernel(graph::OpBlock::kOptimizer, 1, -1), training));
}

TEST(LaunchOverheadTest, ScopeAttnCapturesAttentionAndGdnButNotTheMlp) {
  config::TrainingConfig training;
  training.cuda_graph.external_cuda_graph = true;
  training.cuda_graph.scope = {"attn"};
  EXPECT_TRUE(CapturedByCudaGraph(Kernel(graph::OpBlock::kAttention, 1), training));
  EXPECT_TRUE(CapturedByCudaGraph(Kernel(graph::OpBlock::kGdn, 1), training));
  EXPECT_FALSE(CapturedByCudaGraph(Kernel(graph::OpBlock::kMlp, 1), training));
  EXPECT_FALSE(CapturedByCudaGraph(Kernel(graph::OpBlock::kMoeRouted, 1), training));
}

TEST(LaunchOverheadTest, MoeRouterScopeTakesTheSharedExpertUnlessItOverlaps) {
  config::TrainingConfig training;
  training.cuda_graph.impl = config::CudaGraphImpl::kTransformerEngine;
  training.cuda_graph.modules = {"moe_router", "moe_preprocess"};
  EXPECT_TRUE(CapturedByCudaGraph(Kernel(graph::OpBlock::kMoeRouter, 1), training));
  EXPECT_TRUE(CapturedByCudaGraph(Kernel(graph::OpBlock::kMoeShared, 1), training));
  graph::Op permute = Kernel(graph::OpBlock::kMoeRouted, 3);
  permute.role.kind = graph::OpKind::kPermute;
  EXPECT_TRUE(CapturedByCudaGraph(permute, training));
  graph::Op expert = Kernel(graph::OpBlock::kMoeRouted, 35);
  expert.role.kind = graph::OpKind::kGemm;
  EXPECT_FALSE(CapturedByCudaGraph(expert, training));
  training.moe.shared_expert_overlap = true;
  EXPECT_FALSE(CapturedByCudaGraph(Kernel(graph::OpBlock::kMoeShared, 1), training));
}

TEST(LaunchOverheadTest, FullIterationScopeCapturesForwardAndBackwardButNotTheOptimizer) {
  config::TrainingConfig training;
  training.cuda_graph.enable_cuda_graph = true;
  training.cuda_graph.scope = {"full_iteration"};
  EXPECT_EQ(training.cuda_graph.EffectiveImpl(), config::CudaGraphImpl::kLocal);
  training.cuda_graph.enable_cuda_graph = false;
  EXPECT_EQ(training.cuda_graph.EffectiveImpl(), config::CudaGraphImpl::kFullIteration);
  EXPECT_TRUE(CapturedByCudaGraph(Kernel(graph::OpBlock::kLmHead, 1, -1), training));
  graph::Op step = Kernel(graph::OpBlock::kOptimizer, 1, -1);
  step.phase = graph::Phase::kOptimizer;
  EXPECT_FALSE(CapturedByCudaGraph(step, training));
}

// FP8 casts sit in their linear's block and layer, so layer graphs capture them with it; delayed
// scaling's update runs outside the layers (layer -1) and only a full-iteration graph holds it.
TEST(LaunchOverheadTest, LayerGraphsCaptureFp8CastsButNotTheDelayedScaleUpdate) {
  graph::Op cast = Kernel(graph::OpBlock::kAttention, 3);
  cast.role.kind = graph::OpKind::kFp8Quantize;
  cast.role.operand = graph::Fp8Operand::kInput;
  graph::Op update = Kernel(graph::OpBlock::kFp8Scaling, 2, /*layer=*/-1);
  update.role.kind = graph::OpKind::kFp8ScaleUpdate;
  config::TrainingConfig training;
  EXPECT_DOUBLE_EQ(
      HostFloorSeconds(cast, Gpu("H100"), ComputeEfficiency{}, CapturedByCudaGraph(cast, training)),
      3 * 13.48e-6);
  training.cuda_graph.enable_cuda_graph = true;
  EXPECT_TRUE(CapturedByCudaGraph(cast, training));
  EXPECT_FALSE(CapturedByCudaGraph(update, training));
  training.cuda_graph.enable_cuda_graph = false;
  training.cuda_graph.impl = config::CudaGraphImpl::kFullIteration;
  EXPECT_TRUE(CapturedByCudaGraph(update, training));
}

}  // namespace
}  // namespace trainscope::cost
