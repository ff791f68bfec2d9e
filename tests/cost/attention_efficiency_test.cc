// Attention occupancy against the measured B200 table it interpolates (MooreThreads/SimuMax
// configs/system/b200_bf16_ceperm.json @4dcaae5, sdp_fwd / sdp_bwd, transcribed as causal-counted
// TFLOP/s), and what it does to a kernel's time.
#include "trainscope/cost/attention_efficiency.h"

#include <gtest/gtest.h>

#include <cmath>

#include "trainscope/config/hardware.h"
#include "trainscope/cost/compute_cost.h"
#include "trainscope/graph/op.h"

namespace trainscope::cost {
namespace {

constexpr int64_t Pairs(int64_t heads, int64_t tokens) { return heads * tokens * tokens / 2; }

TEST(AttentionOccupancyTest, ReproducesTheMeasuredPoints) {
  // 4 heads x 4096 tokens: forward 189 and 188 TFLOP/s (two QKV layouts), backward 386 and 389;
  // the best point, 8 heads x 32768 tokens, forward 1352 and backward 1074.
  EXPECT_NEAR(AttentionOccupancy(Pairs(4, 4096), true), (189.0 + 188.0) / 2 / 1352.0, 1e-12);
  EXPECT_NEAR(AttentionOccupancy(Pairs(4, 4096), false), (386.0 + 389.0) / 2 / 1074.0, 1e-12);
  EXPECT_DOUBLE_EQ(AttentionOccupancy(Pairs(8, 32768), true), 1.0);
  EXPECT_DOUBLE_EQ(AttentionOccupancy(Pairs(8, 32768), false), 1.0);
  // 64 heads x 4096 tokens: forward 939 and 980, backward 816 and 821.
  EXPECT_NEAR(AttentionOccupancy(Pairs(64, 4096), true), (939.0 + 980.0) / 2 / 1352.0, 1e-12);
  EXPECT_NEAR(AttentionOccupancy(Pairs(64, 4096), false), (816.0 + 821.0) / 2 / 1074.0, 1e-12);
}

TEST(AttentionOccupancyTest, InterpolatesInLogPairsAndHoldsBeyondTheTable) {
  // Halfway in log between 4 and 8 heads at 4096 tokens (sqrt(32) heads): the mean of the two
  // points, 188.5 and (348 + 349 + 353 + 357) / 4 = 351.75 TFLOP/s.
  const double between = std::sqrt(static_cast<double>(Pairs(4, 4096)) * Pairs(8, 4096));
  EXPECT_NEAR(AttentionOccupancy(static_cast<int64_t>(std::llround(between)), true),
              (188.5 + 351.75) / 2 / 1352.0, 1e-6);
  EXPECT_DOUBLE_EQ(AttentionOccupancy(1, true), AttentionOccupancy(Pairs(4, 4096), true));
  EXPECT_DOUBLE_EQ(AttentionOccupancy(Pairs(64, 262144), false), 930.0 / 1074.0);
  EXPECT_DEATH((void)AttentionOccupancy(0, true), "attention pairs");
}

TEST(AttentionOccupancyTest, ScalesTheCoreKernelTime) {
  // A forward kernel of 16 heads x 4096 tokens runs at the plateau times its occupancy,
  // (646 + 651 + 647 + 655) / 4 / 1352 = 0.48059; with the curve off, at the plateau.
  graph::Op op;
  op.role.kind = graph::OpKind::kAttentionCore;
  op.role.block = graph::OpBlock::kAttention;
  op.attention_pairs = Pairs(16, 4096);
  op.flops = 4 * 128 * op.attention_pairs;
  const config::GpuSpec gpu = *config::FindGpu("H100");
  ComputeEfficiency eff;
  const double with_curve = ComputeSeconds(op, gpu, eff, MathPrecision::kBf16);
  eff.attention_occupancy = false;
  const double flat = ComputeSeconds(op, gpu, eff, MathPrecision::kBf16);
  EXPECT_NEAR(flat / with_curve, (646.0 + 651.0 + 647.0 + 655.0) / 4 / 1352.0, 1e-9);
}

// Head dim against 128 at equal FLOPs, from the published forward figures (TFLOP/s, BF16):
// FlashAttention-3 paper (arXiv:2407.08608) cuDNN on H100 at 4k / 8k / 16k tokens, head dim 64:
// 408 / 412 / 413, 128: 609 / 600 / 595, 256: 483 / 497 / 509; FlashAttention-4 causal on GB300
// at 8 x 4096 (Dao-AILab/flash-attention PR #2605): head dim 64 917, 128 1381.
constexpr double kRatio64 = (408.0 / 609 + 412.0 / 600 + 413.0 / 595 + 917.0 / 1381) / 4;
constexpr double kRatio256 = (483.0 / 609 + 497.0 / 600 + 509.0 / 595) / 3;

TEST(AttentionHeadDimTest, ReproducesTheMeasuredRatios) {
  EXPECT_DOUBLE_EQ(AttentionHeadDimFactor(128, 128, true), 1.0);
  EXPECT_DOUBLE_EQ(AttentionHeadDimFactor(128, 128, false), 1.0);
  EXPECT_NEAR(AttentionHeadDimFactor(64, 64, true), kRatio64, 1e-12);
  EXPECT_NEAR(AttentionHeadDimFactor(64, 64, false), kRatio64, 1e-12);  // backward: forward's
  EXPECT_NEAR(AttentionHeadDimFactor(256, 256, true), kRatio256, 1e-12);
  EXPECT_NEAR(kRatio64, 0.6787, 1e-4);
  EXPECT_NEAR(kRatio256, 0.8256, 1e-4);
  // MLA (d_qk 192, d_v 128) against head dim 128 at 16 / 32 / 64 / 128 heads, B200 (SimuMax
  // b200_bf16_ceperm.json sdp_fwd / sdp_bwd, causal-counted TFLOP/s, two rows per size averaged):
  // forward (718, 716) / (880, 888) / (998, 996) / (935, 934) against
  // (646, 651, 647, 655) / (817, 823, 823, 813) / (939, 980) / (1065, 1121).
  const double forward = ((718.0 + 716) / (646.0 + 651 + 647 + 655) * 2 +
                          (880.0 + 888) / (817.0 + 823 + 823 + 813) * 2 +
                          (998.0 + 996) / (939.0 + 980) + (935.0 + 934) / (1065.0 + 1121)) /
                         4;
  // backward (667, 667) / (688, 686) / (683, 685) / (724, 723) against
  // (851, 850, 821, 834) / (895, 896, 884, 885) / (816, 821) / (928, 936).
  const double backward = ((667.0 + 667) / (851.0 + 850 + 821 + 834) * 2 +
                           (688.0 + 686) / (895.0 + 896 + 884 + 885) * 2 +
                           (683.0 + 685) / (816.0 + 821) + (724.0 + 723) / (928.0 + 936)) /
                          4;
  EXPECT_NEAR(AttentionHeadDimFactor(192, 128, true), forward, 1e-12);
  EXPECT_NEAR(AttentionHeadDimFactor(192, 128, false), backward, 1e-12);
}

TEST(AttentionHeadDimTest, InterpolatesInLog2AndHoldsBeyond) {
  // 96 = 128 · 2^-0.415: 0.585 of the way from the 64 ratio to 1.
  const double x = std::log2(96.0 / 128.0);
  EXPECT_NEAR(AttentionHeadDimFactor(96, 96, true), kRatio64 + (x + 1) * (1 - kRatio64), 1e-12);
  // 160 (GPT-530B): a third of the way, in log2, from 128 to 256.
  const double y = std::log2(160.0 / 128.0);
  EXPECT_NEAR(AttentionHeadDimFactor(160, 160, false), 1 + y * (kRatio256 - 1), 1e-12);
  EXPECT_NEAR(AttentionHeadDimFactor(32, 32, true), kRatio64, 1e-12);
  EXPECT_NEAR(AttentionHeadDimFactor(512, 512, true), kRatio256, 1e-12);
  // Other unequal dims: the mean dim on the equal-dim curve (here 96).
  EXPECT_NEAR(AttentionHeadDimFactor(128, 64, true), AttentionHeadDimFactor(96, 96, true), 1e-12);
  EXPECT_DEATH((void)AttentionHeadDimFactor(0, 128, true), "head dims");
}

TEST(AttentionHeadDimTest, ScalesTheCoreKernelTime) {
  // GPT-OSS's head dim 64 at the same FLOPs and pairs as head dim 128 takes 1 / 0.6787 as long;
  // with the factor off, as long.
  graph::Op op;
  op.role.kind = graph::OpKind::kAttentionCore;
  op.role.block = graph::OpBlock::kAttention;
  op.role.pass = graph::OpPass::kBackward;
  op.attention_pairs = Pairs(64, 4096);
  op.flops = 10 * 128 * op.attention_pairs;
  const config::GpuSpec gpu = *config::FindGpu("GB200");
  ComputeEfficiency eff;
  op.attention_qk_head_dim = op.attention_v_head_dim = 128;
  const double at_128 = ComputeSeconds(op, gpu, eff, MathPrecision::kBf16);
  op.attention_qk_head_dim = op.attention_v_head_dim = 64;
  const double at_64 = ComputeSeconds(op, gpu, eff, MathPrecision::kBf16);
  EXPECT_NEAR(at_64 / at_128, 1 / kRatio64, 1e-9);
  eff.attention_head_dim = false;
  EXPECT_DOUBLE_EQ(ComputeSeconds(op, gpu, eff, MathPrecision::kBf16), at_128);
}

}  // namespace
}  // namespace trainscope::cost
