// Attention occupancy from the per-shape measurements of TE's DotProductAttention on B200 in
// MooreThreads/SimuMax configs/system/b200_bf16_ceperm.json (commit 4dcaae5), keys
// accelerator.op.sdp_fwd / sdp_bwd: causal, BF16, batch 1, head dim 128, grouped-query heads. The
// points are the throughputs those efficiencies give under the causal-halved FLOP count, TFLOP/s
// over the 2250 TFLOP/s peak, divided by the best point (32,768 tokens, 8 heads: forward 1352,
// backward 1074 TFLOP/s). Where the table has two rows of one size (KV-head count, contiguous
// QKV), the point is their mean.
#include "trainscope/cost/attention_efficiency.h"

#include <array>
#include <cmath>

#include "trainscope/error.h"

namespace trainscope::cost {
namespace {

struct OccupancyPoint {
  double pairs;     // heads · s² / 2 at batch 1
  double forward;   // causal-counted TFLOP/s
  double backward;  // causal-counted TFLOP/s
};

// heads x tokens: 4x4096, 8x4096, 16x4096, 32x4096, 64x4096, 128x4096, 8x32768, 16x32768,
// 8x131072, 16x131072 (rows of one size with several KV-head counts or QKV layouts average
// them; the MLA rows, head dim 192, are left out).
constexpr std::array<OccupancyPoint, 10> kPoints = {{
    {4.0 * 4096 * 4096 / 2, 188.5, 387.5},
    {8.0 * 4096 * 4096 / 2, 351.75, 724.25},
    {16.0 * 4096 * 4096 / 2, 649.75, 838.75},
    {32.0 * 4096 * 4096 / 2, 819.0, 890.0},
    {64.0 * 4096 * 4096 / 2, 959.5, 818.5},
    {128.0 * 4096 * 4096 / 2, 1093.0, 932.0},
    {8.0 * 32768 * 32768 / 2, 1352.0, 1074.0},
    {16.0 * 32768 * 32768 / 2, 1311.0, 981.0},
    {8.0 * 131072 * 131072 / 2, 1128.0, 930.0},
    {16.0 * 131072 * 131072 / 2, 1112.0, 930.0},
}};
constexpr double kBestForward = 1352.0;
constexpr double kBestBackward = 1074.0;

double Value(const OccupancyPoint& point, bool forward) {
  return forward ? point.forward / kBestForward : point.backward / kBestBackward;
}

// Head dim, relative to 128 at equal FLOPs (forward, causal, BF16, TFLOP/s):
// - 64: cuDNN on H100 at 4k / 8k / 16k tokens, 408 / 412 / 413 against 609 / 600 / 595 at 128
//   (FlashAttention-3 paper, arXiv:2407.08608, BF16 forward figure; hidden fixed at 2048, so
//   equal FLOPs), and FlashAttention-4 causal on GB300 at 8 x 4096, 917 against 1381
//   (Dao-AILab/flash-attention PR #2605): the mean of 0.670, 0.687, 0.694, 0.664.
// - 256: cuDNN on H100 at 4k / 8k / 16k, 483 / 497 / 509 against 609 / 600 / 595 (same figure):
//   the mean of 0.793, 0.828, 0.855.
// The backward has no per-head-dim measurement at equal FLOPs; it takes the forward ratio.
constexpr double kHeadDim64 = (408.0 / 609.0 + 412.0 / 600.0 + 413.0 / 595.0 + 917.0 / 1381.0) / 4;
constexpr double kHeadDim256 = (483.0 / 609.0 + 497.0 / 600.0 + 509.0 / 595.0) / 3;
// MLA (d_qk 192, d_v 128) against head dim 128 at the same head count, TE DotProductAttention on
// B200 (the SimuMax table above, causal-counted TFLOP/s), mean over 16 / 32 / 64 / 128 heads:
// forward 717 / 884 / 997 / 934.5 against 649.75 / 819 / 959.5 / 1093; backward 667 / 687 / 684 /
// 723.5 against 839 / 890 / 818.5 / 932.
constexpr double kMlaForward =
    (717.0 / 649.75 + 884.0 / 819.0 + 997.0 / 959.5 + 934.5 / 1093.0) / 4;
constexpr double kMlaBackward = (667.0 / 839.0 + 687.0 / 890.0 + 684.0 / 818.5 + 723.5 / 932.0) / 4;

double EqualHeadDimFactor(double head_dim) {
  const double x = std::log2(head_dim / 128.0);
  if (x <= -1) return kHeadDim64;
  if (x <= 0) return kHeadDim64 + (x + 1) * (1.0 - kHeadDim64);
  if (x <= 1) return 1.0 + x * (kHeadDim256 - 1.0);
  return kHeadDim256;
}

}  // namespace

double AttentionHeadDimFactor(int64_t qk_head_dim, int64_t v_head_dim, bool forward) {
  TRAINSCOPE_CHECK(qk_head_dim >= 1 && v_head_dim >= 1, "attention head dims must be >= 1");
  if (qk_head_dim == 192 && v_head_dim == 128) return forward ? kMlaForward : kMlaBackward;
  return EqualHeadDimFactor(static_cast<double>(qk_head_dim + v_head_dim) / 2);
}

double AttentionOccupancy(int64_t pairs, bool forward) {
  TRAINSCOPE_CHECK(pairs >= 1, "attention pairs must be >= 1");
  const double x = std::log(static_cast<double>(pairs));
  if (x <= std::log(kPoints.front().pairs)) return Value(kPoints.front(), forward);
  for (size_t i = 1; i < kPoints.size(); ++i) {
    const double x1 = std::log(kPoints[i].pairs);
    if (x <= x1) {
      const double x0 = std::log(kPoints[i - 1].pairs);
      const double t = (x - x0) / (x1 - x0);
      return Value(kPoints[i - 1], forward) +
             t * (Value(kPoints[i], forward) - Value(kPoints[i - 1], forward));
    }
  }
  return Value(kPoints.back(), forward);
}

}  // namespace trainscope::cost
