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

}  // namespace

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
