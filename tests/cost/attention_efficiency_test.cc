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

}  // namespace
}  // namespace trainscope::cost
