// Attention occupancy from the per-shape measurements of TE's DotProductAttention on B200 in
// MooreThreads/SimuMax configs/system/b200_bf16_ceperm.json (commit 4dcaae5), keys
// accelerator.op.sdp_fwd / sdp_bwd: causal, BF16, batch 1, head dim 128, grouped-query heads. The
// points are the throughputs those efficiencies give under the causal-halved FLOP count, TFLOP/s
// over the 2250 TFLOP/s peak, divided by the best point (32,768 tokens, 8 heads: forward 1352,
// backward 1074 TFLOP/s). Where the table has two rows of one size (KV-head count, contiguous
// QKV), the point is their mean.
#include "trainscope/cost/attention_efficiency.h"

#include <algorithm>
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

// Head dim, relative to 128 at equal (query, key) pairs, the unit the occupancy curve is keyed
// on (forward, causal, BF16, TFLOP/s):
// - 64: cuDNN on H100 (FlashAttention-3 paper, arXiv:2407.08608, BF16 forward figure; batch x
//   sequence 16k and hidden 2048, so head dim 64 at s has the pairs of 128 at 2s): 395 / 408 /
//   412 at 2k / 4k / 8k against 609 / 600 / 595 at 4k / 8k / 16k; and FlashAttention-4 causal on
//   GB300 at 8 x 4096, 917 against 1381 (Dao-AILab/flash-attention PR #2605). Mean of the four.
// - 256, Hopper: cuDNN on H100 (same figure), 483 / 497 / 509 at 4k / 8k / 16k against 617 / 609
//   / 600 at 2k / 4k / 8k.
// - 256, Blackwell: cuDNN 9.22 on GB200 (NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training
//   results, 2026-04-24, causal): Qwen3.5 shape (batch 1, 32 q / 2 kv heads) 1441 / 1708 / 1804 /
//   1734 at 4k / 8k / 16k / 32k against the Llama-3.1 shape (batch 2, 64 q / 8 kv heads, four
//   times the heads) 1097 / 1408 / 1574 / 1708 at 2k / 4k / 8k / 16k.
// The backward has no per-head-dim measurement for equal dims; it takes the forward ratio.
constexpr double kHeadDim64 = (395.0 / 609.0 + 408.0 / 600.0 + 412.0 / 595.0 + 917.0 / 1381.0) / 4;
constexpr double kHeadDim256Hopper = (483.0 / 617.0 + 497.0 / 609.0 + 509.0 / 600.0) / 3;
constexpr double kHeadDim256Blackwell =
    (1441.0 / 1097.0 + 1708.0 / 1408.0 + 1804.0 / 1574.0 + 1734.0 / 1708.0) / 4;
// MLA (d_qk 192, d_v 128) against head dim 128 at the same head count (so equal pairs), TE
// DotProductAttention on B200 (the SimuMax table above, causal-counted TFLOP/s), mean over 16 /
// 32 / 64 / 128 heads: forward 717 / 884 / 997 / 934.5 against 649.75 / 819 / 959.5 / 1093;
// backward 667 / 687 / 684 / 723.5 against 839 / 890 / 818.5 / 932.
constexpr double kMlaForward =
    (717.0 / 649.75 + 884.0 / 819.0 + 997.0 / 959.5 + 934.5 / 1093.0) / 4;
constexpr double kMlaBackward = (667.0 / 839.0 + 687.0 / 890.0 + 684.0 / 818.5 + 723.5 / 932.0) / 4;
// Blackwell Ultra (SM 10.3) against Blackwell (SM 10.0) at equal peak, cuDNN 9.22 on GB300 and
// GB200 (cudnn-frontend results above, 2026-04-24, causal BF16), the same shapes: forward
// Llama-3.1 1373 / 1703 / 1856 / 1915 / 1953 against 1097 / 1408 / 1574 / 1708 / 1622 at 2k-32k,
// DeepSeek-V3 1285 / 1590 / 1825 / 1967 / 1991 against 1072 / 1406 / 1585 / 1678 / 1743, Qwen3.5
// 1307 / 1743 / 1965 / 2063 / 2096 against 1126 / 1441 / 1708 / 1804 / 1734; backward Llama-3.1
// 967 / 1248 / 1435 / 1507 / 1490 against 885 / 1148 / 1332 / 1328 / 1226, DeepSeek-V3 914 / 1143
// / 1291 / 1302 / 1289 against 846 / 1057 / 1193 / 1134 / 1076. Means of the ratios: the doubled
// exponential (SFU) rate speeds the forward's softmax more than the shared-memory-bound backward.
// {GB300, GB200} pairs.
// clang-format off
constexpr std::array<std::array<double, 2>, 15> kUltraForward = {{
    {1373, 1097}, {1703, 1408}, {1856, 1574}, {1915, 1708}, {1953, 1622},
    {1285, 1072}, {1590, 1406}, {1825, 1585}, {1967, 1678}, {1991, 1743},
    {1307, 1126}, {1743, 1441}, {1965, 1708}, {2063, 1804}, {2096, 1734}}};
constexpr std::array<std::array<double, 2>, 10> kUltraBackward = {{
    {967, 885}, {1248, 1148}, {1435, 1332}, {1507, 1328}, {1490, 1226},
    {914, 846}, {1143, 1057}, {1291, 1193}, {1302, 1134}, {1289, 1076}}};
// clang-format on

// The mean of measured/reference over {measured, reference} pairs.
template <size_t N>
double MeanRatio(const std::array<std::array<double, 2>, N>& pairs) {
  double sum = 0;
  for (const auto& [measured, reference] : pairs) sum += measured / reference;
  return sum / static_cast<double>(N);
}

// FP8 core attention against BF16 on the same GPU, causal, {FP8, BF16} TFLOP/s at 2k / 4k / 8k /
// 16k / 32k tokens. Hopper: cuDNN 9.19 on H200, Llama-3.1 shape (batch 1, 64 q / 8 kv heads,
// head dim 128), per-tensor FP8 (NVIDIA/cudnn-frontend sdpa_benchmark_training results
// h200_919_only_cudnn, 2026-02-27). Blackwell / Ultra: cuDNN 9.22 on GB200 / GB300, Llama-3.1
// shape (batch 2, 64 / 8 heads) and DeepSeek-V3 shape (batch 2, 128 heads, d_qk 192, d_v 128),
// per-tensor FP8 and MXFP8 (same results, 2026-04-24).
using Fp8Pairs = std::array<std::array<double, 2>, 5>;
struct Fp8Measurement {
  Fp8Pairs forward;
  Fp8Pairs backward;
};
constexpr Fp8Measurement kHopperGqa{
    {{{698, 484}, {854, 591}, {964, 644}, {1010, 673}, {1042, 688}}},
    {{{393, 370}, {471, 474}, {430, 541}, {374, 579}, {370, 581}}}};
constexpr Fp8Measurement kBlackwellGqaPerTensor{
    {{{1420, 1097}, {1805, 1408}, {2047, 1574}, {2154, 1708}, {2197, 1622}}},
    {{{831, 885}, {1178, 1148}, {1454, 1332}, {1632, 1328}, {1687, 1226}}}};
constexpr Fp8Measurement kBlackwellGqaMx{
    {{{1330, 1097}, {1685, 1408}, {1902, 1574}, {1999, 1708}, {2046, 1622}}},
    {{{745, 885}, {1054, 1148}, {1287, 1332}, {1436, 1328}, {1425, 1226}}}};
constexpr Fp8Measurement kUltraGqaPerTensor{
    {{{1954, 1373}, {2532, 1703}, {2897, 1856}, {3054, 1915}, {3108, 1953}}},
    {{{944, 967}, {1396, 1248}, {1781, 1435}, {2035, 1507}, {2128, 1490}}}};
constexpr Fp8Measurement kUltraGqaMx{
    {{{1751, 1373}, {2272, 1703}, {2570, 1856}, {2727, 1915}, {2785, 1953}}},
    {{{811, 967}, {1143, 1248}, {1404, 1435}, {1563, 1507}, {1590, 1490}}}};
constexpr Fp8Measurement kBlackwellMlaPerTensor{
    {{{1659, 1072}, {2095, 1406}, {2397, 1585}, {2486, 1678}, {2447, 1743}}},
    {{{1312, 846}, {1692, 1057}, {1959, 1193}, {1968, 1134}, {1857, 1076}}}};
constexpr Fp8Measurement kBlackwellMlaMx{
    {{{1535, 1072}, {1925, 1406}, {2219, 1585}, {2355, 1678}, {2329, 1743}}},
    {{{1047, 846}, {1364, 1057}, {1494, 1193}, {1552, 1134}, {1532, 1076}}}};
constexpr Fp8Measurement kUltraMlaPerTensor{
    {{{2290, 1285}, {2788, 1590}, {3128, 1825}, {3305, 1967}, {3364, 1991}}},
    {{{1511, 914}, {1982, 1143}, {2310, 1291}, {2459, 1302}, {2406, 1289}}}};
constexpr Fp8Measurement kUltraMlaMx{
    {{{2069, 1285}, {2517, 1590}, {2829, 1825}, {2998, 1967}, {2959, 1991}}},
    {{{1158, 914}, {1522, 1143}, {1780, 1291}, {1844, 1302}, {1863, 1289}}}};

const Fp8Measurement& Fp8MeasurementFor(AttentionArch arch, bool mx, bool mla) {
  switch (arch) {
    case AttentionArch::kHopperOrOlder:
      return kHopperGqa;
    case AttentionArch::kBlackwell:
      if (mla) return mx ? kBlackwellMlaMx : kBlackwellMlaPerTensor;
      return mx ? kBlackwellGqaMx : kBlackwellGqaPerTensor;
    case AttentionArch::kBlackwellUltra:
      if (mla) return mx ? kUltraMlaMx : kUltraMlaPerTensor;
      return mx ? kUltraGqaMx : kUltraGqaPerTensor;
  }
  TRAINSCOPE_CHECK(false, "unhandled AttentionArch");
  return kHopperGqa;
}

double EqualHeadDimFactor(double head_dim, AttentionArch arch) {
  const double at_256 =
      arch == AttentionArch::kHopperOrOlder ? kHeadDim256Hopper : kHeadDim256Blackwell;
  const double x = std::log2(head_dim / 128.0);
  if (x <= -1) return kHeadDim64;
  if (x <= 0) return kHeadDim64 + (x + 1) * (1.0 - kHeadDim64);
  if (x <= 1) return 1.0 + x * (at_256 - 1.0);
  return at_256;
}

// Fixed cost per query tile of a sliding-window kernel, in tile-times of the same GPU's causal
// plateau at the kernel's head dim, {forward, backward}. Measured with cuDNN's SDPA benchmark
// (NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training, results/gpt_oss), BF16, head dim 64,
// top-left causal band: per point k0 = time / (query tiles · tile time) − visited tiles, where a
// tile time is 4·128²·64 FLOPs forward (2.5 times that backward, the benchmark's own count) at the
// causal plateau = the same GPU's measured Llama-3.1-shape causal throughput at 16k tokens, head
// dim 128 (results/llama3.1), times kHeadDim64; the mean over 2k / 4k / 8k / 16k tokens (the
// 32k forward points, 3.2 times the 16k time for twice the tokens, are left out).
// - Blackwell: GB200, cuDNN 9.22 (2026-04-24), batch 2, 128 heads, window 128 (2 tiles visited):
//   forward 0.109 / 0.210 / 0.414 / 0.822 ms against 1708 TFLOP/s, k0 5.27 / 5.01 / 4.91 / 4.86;
//   backward 0.237 / 0.465 / 0.911 / 1.818 ms against 1328, k0 2.92 / 2.83 / 2.73 / 2.72.
// - Blackwell Ultra: GB300, same run: forward 0.104 / 0.202 / 0.397 / 0.790 ms against 1915,
//   k0 5.78 / 5.56 / 5.43 / 5.39; backward 0.227 / 0.442 / 0.862 / 1.712 ms against 1507,
//   k0 3.35 / 3.21 / 3.08 / 3.04.
// - Hopper: H200, cuDNN 9.19 (results/h200_919_only_cudnn, 2026-02-27), batch 2, 64 / 8 heads,
//   window 1024 (9 tiles visited): forward 0.166 / 0.358 / 0.738 / 1.499 ms against 673,
//   k0 −0.27 / 0.41 / 0.70 / 0.85; backward 0.488 / 1.042 / 2.149 / 4.392 ms against 579,
//   k0 −0.17 / 0.43 / 0.72 / 0.94.
constexpr std::array<double, 2> kWindowTileOverheadBlackwell = {5.011, 2.797};
constexpr std::array<double, 2> kWindowTileOverheadUltra = {5.539, 3.167};
constexpr std::array<double, 2> kWindowTileOverheadHopper = {0.425, 0.480};

}  // namespace

double AttentionWindowFactor(int64_t pairs, int64_t query_rows, int64_t window, AttentionArch arch,
                             bool forward) {
  TRAINSCOPE_CHECK(pairs >= 1 && query_rows >= 1 && window >= 1,
                   "sliding-window pairs, query rows and window must be >= 1");
  const std::array<double, 2>& overhead =
      arch == AttentionArch::kBlackwellUltra ? kWindowTileOverheadUltra
      : arch == AttentionArch::kBlackwell    ? kWindowTileOverheadBlackwell
                                             : kWindowTileOverheadHopper;
  constexpr int64_t b = kWindowTileRows;
  const double query_tiles = static_cast<double>((query_rows + b - 1) / b);
  const double visited = static_cast<double>((window - 1 + b - 1) / b + 1);
  const double tile_pairs = static_cast<double>(b * b);
  const double charged = query_tiles * (visited + overhead[forward ? 0 : 1]) * tile_pairs;
  return std::min(1.0, static_cast<double>(pairs) / charged);
}

double AttentionUnskippedWindowFactor(int64_t pairs, int64_t query_rows, int64_t sequence_tokens,
                                      bool forward, bool occupancy) {
  TRAINSCOPE_CHECK(pairs >= 1 && query_rows >= 1 && sequence_tokens >= 1,
                   "sliding-window pairs, query rows and sequence tokens must be >= 1");
  const double causal = static_cast<double>(query_rows) * static_cast<double>(sequence_tokens) / 2;
  const double shape =
      occupancy ? AttentionOccupancy(static_cast<int64_t>(std::max(1.0, causal)), forward) : 1.0;
  return std::min(1.0, static_cast<double>(pairs) / causal) * shape;
}

// cuDNN 9.22's forward on GPT-OSS's band (NVIDIA/cudnn-frontend sdpa_benchmark_training results
// gpt_oss, 2026-04-24: batch 2, 128 heads, head dim 64, window 128), {BF16, FP8} ms at 2k / 4k /
// 8k / 16k tokens (the 32k points, 3.2 times the 16k BF16 time, are left out as in
// kWindowTileOverheadBlackwell). The ratio is BF16 time over FP8 time.
using WindowFp8Pairs = std::array<std::array<double, 2>, 4>;
constexpr WindowFp8Pairs kWindowFp8Blackwell = {
    {{0.109, 0.101}, {0.210, 0.195}, {0.414, 0.385}, {0.822, 0.766}}};
constexpr WindowFp8Pairs kWindowMxfp8Blackwell = {
    {{0.109, 0.109}, {0.210, 0.210}, {0.414, 0.417}, {0.822, 0.826}}};
constexpr WindowFp8Pairs kWindowFp8Ultra = {
    {{0.104, 0.086}, {0.202, 0.167}, {0.397, 0.327}, {0.790, 0.650}}};
constexpr WindowFp8Pairs kWindowMxfp8Ultra = {
    {{0.104, 0.092}, {0.202, 0.175}, {0.397, 0.342}, {0.790, 0.676}}};

double AttentionWindowFp8Factor(AttentionArch arch, graph::AttentionPrecision precision,
                                bool forward) {
  if (!forward || precision == graph::AttentionPrecision::kBf16 ||
      arch == AttentionArch::kHopperOrOlder) {
    return AttentionFp8Factor(arch, precision, /*mla=*/false, forward);
  }
  const bool mx = precision == graph::AttentionPrecision::kMxfp8;
  if (arch == AttentionArch::kBlackwellUltra) {
    return MeanRatio(mx ? kWindowMxfp8Ultra : kWindowFp8Ultra);
  }
  return MeanRatio(mx ? kWindowMxfp8Blackwell : kWindowFp8Blackwell);
}

bool WindowKernelWalksCausalTriangle(AttentionArch arch, graph::AttentionPrecision precision,
                                     bool forward) {
  return !forward && precision != graph::AttentionPrecision::kBf16 &&
         arch != AttentionArch::kHopperOrOlder;
}

// FlashAttention-2 against cuDNN on H100 SXM5, BF16/FP16, head dim 128, batch x sequence 16k
// tokens (FlashAttention-3 paper, Shah et al. 2024, arXiv:2407.08608, Figure 5 (d): forward with
// causal mask, TFLOP/s, and Figure 6: backward, without causal mask; the only backward the paper
// gives), at 2k / 4k / 8k / 16k tokens: forward 298 / 319 / 333 / 335 against 484 / 518 / 529 /
// 539, backward 291 / 310 / 318 / 322 against 465 / 499 / 518 / 516. {FA2, cuDNN} pairs.
constexpr std::array<std::array<double, 2>, 4> kFa2Forward = {
    {{298, 484}, {319, 518}, {333, 529}, {335, 539}}};
constexpr std::array<std::array<double, 2>, 4> kFa2Backward = {
    {{291, 465}, {310, 499}, {318, 518}, {322, 516}}};

AttentionArch AttentionArchOf(config::ComputeCapability capability) {
  if (capability >= config::ComputeCapability{10, 3}) return AttentionArch::kBlackwellUltra;
  if (capability >= config::ComputeCapability{10, 0}) return AttentionArch::kBlackwell;
  return AttentionArch::kHopperOrOlder;
}

double AttentionHeadDimFactor(int64_t qk_head_dim, int64_t v_head_dim, bool forward,
                              AttentionArch arch) {
  TRAINSCOPE_CHECK(qk_head_dim >= 1 && v_head_dim >= 1, "attention head dims must be >= 1");
  if (IsMlaHeadDims(qk_head_dim, v_head_dim)) return forward ? kMlaForward : kMlaBackward;
  return EqualHeadDimFactor(static_cast<double>(qk_head_dim + v_head_dim) / 2, arch);
}

double AttentionFp8Factor(AttentionArch arch, graph::AttentionPrecision precision, bool mla,
                          bool forward) {
  if (precision == graph::AttentionPrecision::kBf16) return 1.0;
  const Fp8Measurement& m =
      Fp8MeasurementFor(arch, precision == graph::AttentionPrecision::kMxfp8, mla);
  return MeanRatio(forward ? m.forward : m.backward);
}

double AttentionKernelFactor(graph::AttentionKernel kernel, config::ComputeCapability capability,
                             bool forward) {
  if (kernel == graph::AttentionKernel::kTeFused || capability < config::ComputeCapability{9, 0}) {
    return 1.0;
  }
  return forward ? MeanRatio(kFa2Forward) : MeanRatio(kFa2Backward);
}

double AttentionArchFactor(AttentionArch arch, bool forward) {
  if (arch != AttentionArch::kBlackwellUltra) return 1.0;
  return forward ? MeanRatio(kUltraForward) : MeanRatio(kUltraBackward);
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
