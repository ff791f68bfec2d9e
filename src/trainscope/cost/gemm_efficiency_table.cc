#include "trainscope/cost/gemm_efficiency_table.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <map>
#include <span>
#include <utility>

#include "trainscope/error.h"

namespace trainscope::cost {
namespace {

// One published dense GEMM: the forward triple and the efficiency of each pass as a fraction of
// the source's dense peak. 0 = not published for that pass (the forward value stands in).
struct DensePoint {
  int64_t tokens;
  int64_t in_features;
  int64_t out_features;
  double forward;
  double dgrad;
  double wgrad;
};

// log2 of a point's three extents, computed at compile time.
struct Log2Point {
  double tokens;
  double in_features;
  double out_features;
};

// A set of points measured under one condition, their log2 coordinates (same order), and the
// source's large-shape plateau (same peak).
struct DenseSource {
  std::span<const DensePoint> points;
  std::span<const Log2Point> log2;
  double plateau_efficiency;
};

// log2 of a positive integer at compile time: the binary exponent plus log2 of the mantissa m in
// [1, 2), ln(m) = 2·atanh(z) = 2·(z + z³/3 + z⁵/5 + ...) with z = (m - 1) / (m + 1) <= 1/3; 30
// terms leave an error far below one ulp.
constexpr double Log2Of(int64_t value) {
  constexpr double kLn2 = 0.693147180559945309417232121458176568;
  int exponent = 0;
  double mantissa = static_cast<double>(value);
  while (mantissa >= 2) {
    mantissa /= 2;
    ++exponent;
  }
  const double z = (mantissa - 1) / (mantissa + 1);
  double term = z, series = 0;
  for (int power = 1; power < 60; power += 2) {
    series += term / power;
    term *= z * z;
  }
  return exponent + 2 * series / kLn2;
}

template <size_t N>
constexpr std::array<Log2Point, N> Log2Points(const std::array<DensePoint, N>& points) {
  std::array<Log2Point, N> log2{};
  for (size_t i = 0; i < N; ++i) {
    log2[i] = {Log2Of(points[i].tokens), Log2Of(points[i].in_features),
               Log2Of(points[i].out_features)};
  }
  return log2;
}

// The wgrad accumulation buffer of a grouped measurement (kernel-benchmarks.md §2.4).
enum class MainGrad { kUnstated, kBf16, kFp32 };

struct GroupedPoint {
  int64_t groups;
  int64_t rows_per_group;
  int64_t out_features;
  int64_t in_features;
  MainGrad main_grad;
  double forward;
  double dgrad;  // 0 = not published
  double wgrad;  // 0 = not published
};

struct GroupedSource {
  std::span<const GroupedPoint> points;
  double plateau_efficiency;
};

// Dense peaks the sources divide by (TFLOP/s), as each source states it.
constexpr double kB200Bf16PeakTflops = 2250;
constexpr double kB200Fp8PeakTflops = 4500;
constexpr double kH100Bf16PeakTflops = 989.4;
constexpr double kH800Fp8PeakTflops = 1979;

// reference/kernel-benchmarks.md §1.6: MooreThreads/SimuMax configs/system/b200_bf16_ceperm.json
// (commit 4dcaae5), key accelerator.op.matmul; B200, TE general_gemm (cuBLASLt), fraction of
// 2250 TFLOP/s. Columns: tokens M, K (in), N (out), fwd TN, dgrad NN, wgrad NT (FP32 main grad).
// All 144 rows of the table, in its order.
constexpr std::array<DensePoint, 144> kB200Bf16SimuMax = {{
    {2048, 2048, 8192, 0.453, 0.436, 0.343},    {2048, 4096, 8192, 0.430, 0.417, 0.454},
    {2048, 4096, 16384, 0.570, 0.458, 0.359},   {2048, 7168, 8192, 0.480, 0.473, 0.460},
    {2048, 8192, 2560, 0.353, 0.485, 0.380},    {2048, 8192, 5120, 0.474, 0.461, 0.413},
    {2048, 8192, 14336, 0.540, 0.520, 0.483},   {2048, 8192, 28672, 0.475, 0.480, 0.424},
    {2048, 8192, 32128, 0.498, 0.504, 0.417},   {2048, 8192, 64128, 0.497, 0.505, 0.406},
    {2048, 13312, 16384, 0.461, 0.550, 0.461},  {2048, 14336, 8192, 0.508, 0.575, 0.485},
    {2048, 16384, 5120, 0.452, 0.556, 0.445},   {2048, 16384, 26624, 0.480, 0.491, 0.413},
    {2048, 16384, 32128, 0.512, 0.487, 0.413},  {4096, 512, 4096, 0.368, 0.532, 0.503},
    {4096, 512, 32768, 0.319, 0.398, 0.487},    {4096, 1024, 4096, 0.616, 0.630, 0.586},
    {4096, 1024, 8192, 0.617, 0.614, 0.584},    {4096, 1536, 24576, 0.633, 0.637, 0.461},
    {4096, 1792, 4096, 0.639, 0.461, 0.430},    {4096, 2048, 4096, 0.647, 0.636, 0.617},
    {4096, 2048, 7168, 0.437, 0.383, 0.389},    {4096, 2048, 8192, 0.622, 0.553, 0.516},
    {4096, 2048, 16384, 0.487, 0.433, 0.536},   {4096, 3072, 5120, 0.423, 0.393, 0.344},
    {4096, 3584, 4096, 0.391, 0.467, 0.501},    {4096, 3584, 8192, 0.503, 0.498, 0.404},
    {4096, 4096, 768, 0.446, 0.409, 0.391},     {4096, 4096, 1536, 0.643, 0.639, 0.605},
    {4096, 4096, 3072, 0.637, 0.639, 0.599},    {4096, 4096, 3584, 0.616, 0.636, 0.540},
    {4096, 4096, 4096, 0.638, 0.637, 0.599},    {4096, 4096, 6144, 0.653, 0.633, 0.609},
    {4096, 4096, 7168, 0.638, 0.618, 0.551},    {4096, 4096, 8192, 0.460, 0.391, 0.570},
    {4096, 4096, 14336, 0.651, 0.505, 0.524},   {4096, 4096, 16128, 0.635, 0.477, 0.535},
    {4096, 4096, 16384, 0.496, 0.508, 0.534},   {4096, 4096, 28672, 0.524, 0.539, 0.588},
    {4096, 4096, 32128, 0.626, 0.511, 0.438},   {4096, 4096, 64256, 0.526, 0.500, 0.433},
    {4096, 4096, 128384, 0.502, 0.508, 0.447},  {4096, 5120, 160, 0.184, 0.167, 0.187},
    {4096, 5120, 576, 0.322, 0.321, 0.224},     {4096, 5120, 1536, 0.414, 0.637, 0.573},
    {4096, 5120, 6144, 0.389, 0.446, 0.486},    {4096, 5120, 24576, 0.565, 0.494, 0.437},
    {4096, 5120, 102400, 0.487, 0.457, 0.445},  {4096, 6656, 16384, 0.478, 0.493, 0.437},
    {4096, 7168, 256, 0.232, 0.219, 0.271},     {4096, 7168, 576, 0.588, 0.523, 0.485},
    {4096, 7168, 1536, 0.596, 0.599, 0.545},    {4096, 7168, 4096, 0.383, 0.503, 0.409},
    {4096, 7168, 8192, 0.476, 0.469, 0.408},    {4096, 7168, 36864, 0.485, 0.433, 0.449},
    {4096, 7168, 129280, 0.489, 0.426, 0.448},  {4096, 8192, 1280, 0.594, 0.631, 0.522},
    {4096, 8192, 2560, 0.584, 0.655, 0.562},    {4096, 8192, 5120, 0.627, 0.643, 0.473},
    {4096, 8192, 7168, 0.611, 0.444, 0.474},    {4096, 8192, 8192, 0.463, 0.496, 0.479},
    {4096, 8192, 10240, 0.645, 0.498, 0.598},   {4096, 8192, 14336, 0.494, 0.492, 0.476},
    {4096, 8192, 16128, 0.588, 0.490, 0.450},   {4096, 8192, 16384, 0.453, 0.473, 0.453},
    {4096, 8192, 28672, 0.494, 0.482, 0.454},   {4096, 8192, 32128, 0.492, 0.492, 0.444},
    {4096, 8192, 57344, 0.487, 0.483, 0.454},   {4096, 8192, 64128, 0.490, 0.466, 0.453},
    {4096, 8192, 128256, 0.487, 0.471, 0.455},  {4096, 12288, 5120, 0.449, 0.485, 0.445},
    {4096, 13312, 16384, 0.508, 0.480, 0.447},  {4096, 14336, 4096, 0.455, 0.559, 0.454},
    {4096, 14336, 8192, 0.476, 0.494, 0.457},   {4096, 16384, 2560, 0.605, 0.596, 0.452},
    {4096, 16384, 5120, 0.629, 0.467, 0.480},   {4096, 16384, 7168, 0.456, 0.493, 0.472},
    {4096, 16384, 10240, 0.553, 0.489, 0.477},  {4096, 16384, 13312, 0.495, 0.502, 0.444},
    {4096, 16384, 16128, 0.510, 0.515, 0.449},  {4096, 16384, 16384, 0.510, 0.515, 0.452},
    {4096, 16384, 20480, 0.533, 0.513, 0.455},  {4096, 16384, 26624, 0.497, 0.513, 0.451},
    {4096, 16384, 32128, 0.499, 0.511, 0.452},  {4096, 16384, 53248, 0.489, 0.512, 0.455},
    {4096, 16384, 64128, 0.494, 0.512, 0.453},  {4096, 16384, 106496, 0.496, 0.512, 0.456},
    {4096, 16384, 128256, 0.491, 0.511, 0.455}, {4096, 18432, 7168, 0.430, 0.491, 0.455},
    {4096, 26624, 16384, 0.508, 0.498, 0.455},  {4096, 28672, 8192, 0.485, 0.474, 0.459},
    {4096, 53248, 16384, 0.511, 0.501, 0.454},  {8192, 4096, 8192, 0.561, 0.483, 0.442},
    {8192, 8192, 5120, 0.453, 0.502, 0.494},    {8192, 8192, 16384, 0.477, 0.511, 0.450},
    {8192, 8192, 28672, 0.480, 0.505, 0.440},   {8192, 8192, 64128, 0.481, 0.510, 0.445},
    {8192, 14336, 8192, 0.498, 0.478, 0.444},   {8192, 16384, 10240, 0.491, 0.471, 0.465},
    {8192, 16384, 53248, 0.485, 0.507, 0.446},  {8192, 16384, 64128, 0.478, 0.509, 0.446},
    {8192, 26624, 16384, 0.503, 0.492, 0.454},  {16384, 512, 32768, 0.421, 0.466, 0.468},
    {16384, 1536, 24576, 0.506, 0.476, 0.511},  {16384, 3072, 5120, 0.528, 0.513, 0.437},
    {16384, 5120, 160, 0.326, 0.158, 0.267},    {16384, 5120, 576, 0.279, 0.433, 0.455},
    {16384, 5120, 1536, 0.423, 0.446, 0.366},   {16384, 5120, 6144, 0.518, 0.514, 0.470},
    {16384, 5120, 24576, 0.501, 0.496, 0.492},  {16384, 5120, 102400, 0.507, 0.500, 0.492},
    {16384, 8192, 8192, 0.476, 0.472, 0.490},   {16384, 8192, 10240, 0.475, 0.499, 0.548},
    {16384, 8192, 57344, 0.482, 0.505, 0.469},  {16384, 8192, 128256, 0.485, 0.479, 0.462},
    {16384, 12288, 5120, 0.500, 0.501, 0.484},  {16384, 16384, 5120, 0.506, 0.498, 0.482},
    {16384, 28672, 8192, 0.509, 0.483, 0.483},  {24640, 1536, 5120, 0.522, 0.471, 0.395},
    {24640, 5120, 3072, 0.527, 0.485, 0.498},   {32768, 2048, 7168, 0.483, 0.440, 0.444},
    {32768, 4096, 8192, 0.495, 0.462, 0.485},   {32768, 7168, 4096, 0.470, 0.500, 0.431},
    {32768, 8192, 5120, 0.470, 0.492, 0.472},   {32768, 8192, 16384, 0.476, 0.503, 0.498},
    {32768, 8192, 28672, 0.479, 0.475, 0.485},  {32768, 8192, 64128, 0.479, 0.468, 0.459},
    {32768, 14336, 8192, 0.499, 0.476, 0.490},  {32768, 16384, 10240, 0.498, 0.466, 0.492},
    {32768, 16384, 53248, 0.475, 0.462, 0.455}, {32768, 16384, 64128, 0.471, 0.462, 0.451},
    {32768, 26624, 16384, 0.472, 0.476, 0.462}, {65536, 512, 32768, 0.378, 0.442, 0.454},
    {65536, 1536, 24576, 0.472, 0.499, 0.484},  {65536, 3072, 5120, 0.491, 0.480, 0.487},
    {65536, 5120, 160, 0.345, 0.160, 0.393},    {65536, 5120, 576, 0.356, 0.490, 0.453},
    {65536, 5120, 1536, 0.471, 0.478, 0.542},   {65536, 5120, 6144, 0.490, 0.480, 0.445},
    {65536, 5120, 24576, 0.500, 0.483, 0.498},  {65536, 5120, 102400, 0.504, 0.460, 0.469},
    {65536, 12288, 5120, 0.496, 0.495, 0.481},  {65536, 16384, 5120, 0.488, 0.496, 0.483},
}};
// §1.6 "Shapes with M·K·N >= 4096·4096·8192 (107 of them) have a fwd median of 0.494".
constexpr double kB200Bf16SimuMaxPlateau = 0.494;

// §1.4: vLLM PR #18778, SM100 (B200 by context, SKU unverified), torch BF16 matmul, Llama-3.1-8B
// shape N = 6144, K = 4096, TFLOP/s by M; and PR #19566, M = 16384, N = K = 4096: 1512.8. Forward
// only. The PR #19566 point is the plateau of this source.
constexpr std::array<DensePoint, 8> kSm100Bf16Vllm = {{
    {1, 4096, 6144, 5.9 / kB200Bf16PeakTflops, 0, 0},
    {16, 4096, 6144, 94.8 / kB200Bf16PeakTflops, 0, 0},
    {64, 4096, 6144, 402.6 / kB200Bf16PeakTflops, 0, 0},
    {128, 4096, 6144, 727.3 / kB200Bf16PeakTflops, 0, 0},
    {256, 4096, 6144, 1111.9 / kB200Bf16PeakTflops, 0, 0},
    {512, 4096, 6144, 1337.8 / kB200Bf16PeakTflops, 0, 0},
    {1024, 4096, 6144, 1433.0 / kB200Bf16PeakTflops, 0, 0},
    {16384, 4096, 4096, 1512.8 / kB200Bf16PeakTflops, 0, 0},
}};

// §1.4: the same PRs, CUTLASS FP8 per-tensor scaling, "no quant" (GEMM alone; the quantisation
// is costed elsewhere), fraction of 4500 TFLOP/s. PR #19566 M = 16384, N = K = 4096: 2544.7 is
// the plateau.
constexpr std::array<DensePoint, 8> kSm100Fp8Vllm = {{
    {1, 4096, 6144, 8.5 / kB200Fp8PeakTflops, 0, 0},
    {16, 4096, 6144, 137.1 / kB200Fp8PeakTflops, 0, 0},
    {64, 4096, 6144, 533.2 / kB200Fp8PeakTflops, 0, 0},
    {128, 4096, 6144, 905.7 / kB200Fp8PeakTflops, 0, 0},
    {256, 4096, 6144, 1462.9 / kB200Fp8PeakTflops, 0, 0},
    {512, 4096, 6144, 1759.9 / kB200Fp8PeakTflops, 0, 0},
    {1024, 4096, 6144, 2207.5 / kB200Fp8PeakTflops, 0, 0},
    {16384, 4096, 4096, 2544.7 / kB200Fp8PeakTflops, 0, 0},
}};

// §1.2: deepseek-ai/DeepGEMM README at 55ab91f, H800 SXM5, FP8 e4m3 1x128 / 128x128 block
// scaling, TFLOP/s over 1979. Published as M, N, K: here tokens M, in K, out N. Forward only.
constexpr std::array<DensePoint, 18> kH800Fp8DeepGemm = {{
    {64, 7168, 2112, 206 / kH800Fp8PeakTflops, 0, 0},
    {64, 1536, 24576, 289 / kH800Fp8PeakTflops, 0, 0},
    {64, 512, 32768, 219 / kH800Fp8PeakTflops, 0, 0},
    {64, 16384, 7168, 336 / kH800Fp8PeakTflops, 0, 0},
    {64, 7168, 4096, 287 / kH800Fp8PeakTflops, 0, 0},
    {64, 2048, 7168, 295 / kH800Fp8PeakTflops, 0, 0},
    {128, 7168, 2112, 352 / kH800Fp8PeakTflops, 0, 0},
    {128, 1536, 24576, 535 / kH800Fp8PeakTflops, 0, 0},
    {128, 512, 32768, 358 / kH800Fp8PeakTflops, 0, 0},
    {128, 16384, 7168, 645 / kH800Fp8PeakTflops, 0, 0},
    {128, 7168, 4096, 533 / kH800Fp8PeakTflops, 0, 0},
    {128, 2048, 7168, 510 / kH800Fp8PeakTflops, 0, 0},
    {4096, 7168, 2112, 1009 / kH800Fp8PeakTflops, 0, 0},
    {4096, 1536, 24576, 1125 / kH800Fp8PeakTflops, 0, 0},
    {4096, 512, 32768, 751 / kH800Fp8PeakTflops, 0, 0},
    {4096, 16384, 7168, 1426 / kH800Fp8PeakTflops, 0, 0},
    {4096, 7168, 4096, 1265 / kH800Fp8PeakTflops, 0, 0},
    {4096, 2048, 7168, 1168 / kH800Fp8PeakTflops, 0, 0},
}};
// Derived: median of the six M = 4096 rows, (1125 + 1168) / 2 / 1979.
constexpr double kH800Fp8DeepGemmPlateau = (1125.0 + 1168.0) / 2 / kH800Fp8PeakTflops;

// §2.4: SimuMax b200_bf16_ceperm.json (4dcaae5), key accelerator.op.group_matmul; TE
// general_grouped_gemm, uniform rows per group, fraction of 2250. Columns: groups, rows per
// group, N, K, main-grad dtype, fwd, dgrad, wgrad. All 36 rows, in the table's order. The
// plateau is the dense one of the same machine (§1.6).
constexpr std::array<GroupedPoint, 36> kB200Bf16GroupedSimuMax = {{
    {20, 1232, 3072, 5120, MainGrad::kBf16, 0.450, 0.390, 0.385},
    {20, 1232, 3072, 5120, MainGrad::kFp32, 0.513, 0.422, 0.328},
    {20, 1232, 5120, 1536, MainGrad::kBf16, 0.393, 0.378, 0.360},
    {20, 1232, 5120, 1536, MainGrad::kFp32, 0.397, 0.389, 0.320},
    {32, 1024, 4096, 7168, MainGrad::kBf16, 0.458, 0.434, 0.347},
    {32, 1024, 4096, 7168, MainGrad::kFp32, 0.457, 0.435, 0.289},
    {32, 1024, 7168, 2048, MainGrad::kBf16, 0.402, 0.457, 0.295},
    {32, 1024, 7168, 2048, MainGrad::kFp32, 0.384, 0.430, 0.274},
    {40, 616, 3072, 5120, MainGrad::kBf16, 0.470, 0.345, 0.343},
    {40, 616, 3072, 5120, MainGrad::kFp32, 0.462, 0.321, 0.258},
    {40, 616, 5120, 1536, MainGrad::kBf16, 0.301, 0.281, 0.361},
    {40, 616, 5120, 1536, MainGrad::kFp32, 0.326, 0.281, 0.272},
    {40, 2460, 3072, 5120, MainGrad::kFp32, 0.487, 0.452, 0.417},
    {40, 2460, 5120, 1536, MainGrad::kFp32, 0.496, 0.489, 0.403},
    {40, 9832, 3072, 5120, MainGrad::kFp32, 0.475, 0.476, 0.419},
    {40, 9832, 5120, 1536, MainGrad::kFp32, 0.445, 0.463, 0.413},
    {64, 512, 4096, 7168, MainGrad::kBf16, 0.363, 0.399, 0.289},
    {64, 512, 4096, 7168, MainGrad::kFp32, 0.367, 0.405, 0.219},
    {64, 512, 7168, 2048, MainGrad::kBf16, 0.393, 0.296, 0.284},
    {64, 512, 7168, 2048, MainGrad::kFp32, 0.427, 0.294, 0.215},
    {80, 308, 3072, 5120, MainGrad::kBf16, 0.361, 0.290, 0.243},
    {80, 308, 3072, 5120, MainGrad::kFp32, 0.387, 0.304, 0.162},
    {80, 308, 5120, 1536, MainGrad::kBf16, 0.235, 0.247, 0.245},
    {80, 308, 5120, 1536, MainGrad::kFp32, 0.235, 0.250, 0.178},
    {128, 256, 4096, 7168, MainGrad::kBf16, 0.274, 0.329, 0.219},
    {128, 256, 4096, 7168, MainGrad::kFp32, 0.271, 0.333, 0.147},
    {128, 256, 7168, 2048, MainGrad::kBf16, 0.309, 0.227, 0.218},
    {128, 256, 7168, 2048, MainGrad::kFp32, 0.303, 0.233, 0.141},
    {160, 154, 3072, 5120, MainGrad::kBf16, 0.202, 0.190, 0.149},
    {160, 154, 3072, 5120, MainGrad::kFp32, 0.200, 0.195, 0.094},
    {160, 154, 5120, 1536, MainGrad::kBf16, 0.118, 0.125, 0.123},
    {160, 154, 5120, 1536, MainGrad::kFp32, 0.116, 0.123, 0.083},
    {256, 128, 4096, 7168, MainGrad::kBf16, 0.204, 0.225, 0.142},
    {256, 128, 4096, 7168, MainGrad::kFp32, 0.208, 0.226, 0.077},
    {256, 128, 7168, 2048, MainGrad::kBf16, 0.183, 0.148, 0.141},
    {256, 128, 7168, 2048, MainGrad::kFp32, 0.178, 0.151, 0.080},
}};

// §2.1: TransformerEngine PR #2045, H100 BF16, TE 2.7 multi-stream cuBLAS (the TE default),
// shape (g, m, n, k); §2.2: tgale96/grouped_gemm PR #37, H100, 128 experts, N 1536, K 2048,
// uniform, cuBLAS loop (base). TFLOP/s over 989.4. Forward only. No dense Hopper BF16 table
// shares these conditions, so the plateau is the 8 x 4096 point (4096 rows per group are taken to
// reach the dense plateau).
constexpr std::array<GroupedPoint, 3> kH100Bf16Grouped = {{
    {8, 4096, 768, 2048, MainGrad::kUnstated, 627.903 / kH100Bf16PeakTflops, 0, 0},
    {16, 2048, 768, 2048, MainGrad::kUnstated, 553.945 / kH100Bf16PeakTflops, 0, 0},
    {128, 512, 1536, 2048, MainGrad::kUnstated, 129.5 / kH100Bf16PeakTflops, 0, 0},
}};
constexpr double kH100Bf16GroupedPlateau = 627.903 / kH100Bf16PeakTflops;

// §2.3: DeepGEMM README (55ab91f), H800, block-scaled FP8, contiguous layout (training) and
// masked layout (fixed capacity per group; the only published FP8 points below 4096 rows).
// TFLOP/s over 1979. Forward only. Plateau: the dense DeepGEMM one (§1.2).
constexpr std::array<GroupedPoint, 10> kH800Fp8GroupedDeepGemm = {{
    {4, 8192, 4096, 7168, MainGrad::kUnstated, 1346 / kH800Fp8PeakTflops, 0, 0},
    {4, 8192, 7168, 2048, MainGrad::kUnstated, 1214 / kH800Fp8PeakTflops, 0, 0},
    {8, 4096, 4096, 7168, MainGrad::kUnstated, 1346 / kH800Fp8PeakTflops, 0, 0},
    {8, 4096, 7168, 2048, MainGrad::kUnstated, 1214 / kH800Fp8PeakTflops, 0, 0},
    {1, 1024, 4096, 7168, MainGrad::kUnstated, 1233 / kH800Fp8PeakTflops, 0, 0},
    {1, 1024, 7168, 2048, MainGrad::kUnstated, 925 / kH800Fp8PeakTflops, 0, 0},
    {2, 512, 4096, 7168, MainGrad::kUnstated, 1040 / kH800Fp8PeakTflops, 0, 0},
    {2, 512, 7168, 2048, MainGrad::kUnstated, 916 / kH800Fp8PeakTflops, 0, 0},
    {4, 256, 4096, 7168, MainGrad::kUnstated, 932 / kH800Fp8PeakTflops, 0, 0},
    {4, 256, 7168, 2048, MainGrad::kUnstated, 815 / kH800Fp8PeakTflops, 0, 0},
}};

constexpr auto kB200Bf16SimuMaxLog2 = Log2Points(kB200Bf16SimuMax);
constexpr auto kSm100Bf16VllmLog2 = Log2Points(kSm100Bf16Vllm);
constexpr auto kSm100Fp8VllmLog2 = Log2Points(kSm100Fp8Vllm);
constexpr auto kH800Fp8DeepGemmLog2 = Log2Points(kH800Fp8DeepGemm);

constexpr std::array<DenseSource, 2> kBlackwellBf16Dense = {{
    {kB200Bf16SimuMax, kB200Bf16SimuMaxLog2, kB200Bf16SimuMaxPlateau},
    {kSm100Bf16Vllm, kSm100Bf16VllmLog2, 1512.8 / kB200Bf16PeakTflops},
}};
constexpr std::array<DenseSource, 1> kBlackwellFp8Dense = {{
    {kSm100Fp8Vllm, kSm100Fp8VllmLog2, 2544.7 / kB200Fp8PeakTflops},
}};
constexpr std::array<DenseSource, 1> kHopperFp8Dense = {{
    {kH800Fp8DeepGemm, kH800Fp8DeepGemmLog2, kH800Fp8DeepGemmPlateau},
}};

// The dense sources of a family and precision; the first one's plateau is the family's.
std::span<const DenseSource> DenseSources(GpuFamily family, MathPrecision precision) {
  const bool fp8 = precision == MathPrecision::kFp8;
  switch (family) {
    case GpuFamily::kBlackwell:
      return fp8 ? std::span<const DenseSource>(kBlackwellFp8Dense)
                 : std::span<const DenseSource>(kBlackwellBf16Dense);
    case GpuFamily::kHopper:
      return fp8 ? std::span<const DenseSource>(kHopperFp8Dense) : std::span<const DenseSource>();
    case GpuFamily::kOther:
      return {};
  }
  return {};
}

std::optional<GroupedSource> GroupedSourceOf(GpuFamily family, MathPrecision precision) {
  const bool fp8 = precision == MathPrecision::kFp8;
  if (family == GpuFamily::kBlackwell && !fp8) {
    return GroupedSource{kB200Bf16GroupedSimuMax, kB200Bf16SimuMaxPlateau};
  }
  if (family == GpuFamily::kHopper && !fp8) {
    return GroupedSource{kH100Bf16Grouped, kH100Bf16GroupedPlateau};
  }
  if (family == GpuFamily::kHopper && fp8) {
    return GroupedSource{kH800Fp8GroupedDeepGemm, kH800Fp8DeepGemmPlateau};
  }
  return std::nullopt;
}

// The value of `pass` in a point, or its forward value when the pass was not published.
double PassValue(double forward, double dgrad, double wgrad, GemmPass pass) {
  if (pass == GemmPass::kDgrad && dgrad > 0) return dgrad;
  if (pass == GemmPass::kWgrad && wgrad > 0) return wgrad;
  return forward;
}

Log2Point Log2Of(const LinearShape& shape) {
  return {std::log2(static_cast<double>(shape.tokens)),
          std::log2(static_cast<double>(shape.in_features)),
          std::log2(static_cast<double>(shape.out_features))};
}

double SquaredDistance(const Log2Point& a, const Log2Point& b) {
  const double dt = a.tokens - b.tokens, di = a.in_features - b.in_features;
  const double d_o = a.out_features - b.out_features;
  return dt * dt + di * di + d_o * d_o;
}

struct Neighbour {
  double distance_squared = 0;
  double shape_factor = 0;
  bool user = false;  // a calibration-file point
};

// Nearer first; at equal distance user points first, then by value: a total order, so the
// result does not depend on the order the points are offered in.
bool Precedes(const Neighbour& a, const Neighbour& b) {
  if (a.distance_squared != b.distance_squared) return a.distance_squared < b.distance_squared;
  if (a.user != b.user) return a.user;
  return a.shape_factor < b.shape_factor;
}

// Squared log2 distance under which a point is the query's own shape.
constexpr double kExactDistanceSquared = 1e-18;

// The kInterpolationNeighbours nearest points offered, and the sums over the exact hits, without
// allocating.
class NearestPoints {
 public:
  void Offer(const Neighbour& candidate) {
    if (candidate.distance_squared < kExactDistanceSquared) {
      (candidate.user ? exact_user_ : exact_published_).Add(candidate.shape_factor);
    }
    if (size_ == nearest_.size() && !Precedes(candidate, nearest_.back())) return;
    size_t i = size_ == nearest_.size() ? size_ - 1 : size_++;
    for (; i > 0 && Precedes(candidate, nearest_[i - 1]); --i) nearest_[i] = nearest_[i - 1];
    nearest_[i] = candidate;
  }

  // Step 3 of TableDenseShapeFactor: the exact hits (the user's alone when there are any), else
  // inverse-square-distance weights; nullopt outside coverage.
  [[nodiscard]] std::optional<double> Value() const {
    if (exact_user_.count > 0) return exact_user_.Mean();
    if (exact_published_.count > 0) return exact_published_.Mean();
    if (size_ == 0 || nearest_[0].distance_squared > kCoverageRadiusLog2 * kCoverageRadiusLog2) {
      return std::nullopt;
    }
    double weighted = 0, weights = 0;
    for (size_t i = 0; i < size_; ++i) {
      weighted += nearest_[i].shape_factor / nearest_[i].distance_squared;
      weights += 1 / nearest_[i].distance_squared;
    }
    return weighted / weights;
  }

 private:
  struct Sum {
    double total = 0;
    int count = 0;
    void Add(double value) {
      total += value;
      ++count;
    }
    [[nodiscard]] double Mean() const { return total / count; }
  };
  std::array<Neighbour, kInterpolationNeighbours> nearest_{};
  size_t size_ = 0;
  Sum exact_user_;
  Sum exact_published_;
};

// Rows per group -> (sum of shape factors, count), ascending in rows.
using RowLevels = std::map<double, std::pair<double, int>>;

void AddToLevel(RowLevels& levels, double rows, double factor) {
  auto& [sum, count] = levels[rows];
  sum += factor;
  count += 1;
}

// Below the smallest count the work falls with the rows while the tiles stay; above the largest
// the plateau holds; in between linear in log2(rows). Precondition: levels not empty.
double InterpolateLevels(const RowLevels& levels, double rows_per_group) {
  const auto mean = [](const RowLevels::value_type& level) {
    return level.second.first / level.second.second;
  };
  const auto& smallest = *levels.begin();
  if (rows_per_group <= smallest.first) return mean(smallest) * rows_per_group / smallest.first;
  const auto upper = levels.lower_bound(rows_per_group);
  if (upper == levels.end()) return mean(*levels.rbegin());
  if (upper->first == rows_per_group) return mean(*upper);
  const auto lower = std::prev(upper);
  const double t =
      std::log2(rows_per_group / lower->first) / std::log2(upper->first / lower->first);
  return mean(*lower) + t * (mean(*upper) - mean(*lower));
}

}  // namespace

GpuFamily GpuFamilyOf(config::ComputeCapability capability) {
  if (capability.major == 9) return GpuFamily::kHopper;
  if (capability.major == 10) return GpuFamily::kBlackwell;
  return GpuFamily::kOther;
}

std::optional<double> DensePlateauEfficiency(GpuFamily family, MathPrecision precision) {
  const std::span<const DenseSource> sources = DenseSources(family, precision);
  if (sources.empty()) return std::nullopt;
  return sources.front().plateau_efficiency;
}

std::optional<double> TableDenseShapeFactor(GpuFamily family, MathPrecision precision,
                                            GemmPass pass, const LinearShape& shape,
                                            const UserGemmPoints& user) {
  TRAINSCOPE_CHECK(shape.tokens >= 1 && shape.in_features >= 1 && shape.out_features >= 1,
                   "GEMM extents must be >= 1");
  const Log2Point query = Log2Of(shape);
  NearestPoints nearest;
  // Step 1: every published point as (squared log2 distance, value / its source's plateau).
  for (const DenseSource& source : DenseSources(family, precision)) {
    for (size_t i = 0; i < source.points.size(); ++i) {
      const DensePoint& point = source.points[i];
      nearest.Offer(
          {SquaredDistance(source.log2[i], query),
           PassValue(point.forward, point.dgrad, point.wgrad, pass) / source.plateau_efficiency,
           false});
    }
  }
  // Step 2: the user's dense points of this family, precision and pass, relative to the user's
  // plateau.
  for (const GemmEfficiencyPoint& point : user.points) {
    if (point.groups != 1 || point.family != family || point.precision != precision ||
        point.pass != pass) {
      continue;
    }
    TRAINSCOPE_CHECK(user.plateau_efficiency > 0, "user plateau must be > 0");
    nearest.Offer({SquaredDistance(Log2Of(point.shape), query),
                   point.efficiency / user.plateau_efficiency, true});
  }
  // Step 3: exact hits as measured, else interpolation, else nothing (outside coverage).
  return nearest.Value();
}

std::optional<double> TableGroupedShapeFactor(GpuFamily family, MathPrecision precision,
                                              GemmPass pass, double rows_per_group,
                                              const UserGemmPoints& user) {
  TRAINSCOPE_CHECK(rows_per_group > 0, "rows per group must be > 0");
  // Step 1: the mean shape factor at each row count, ascending in rows: the user's grouped
  // points of this family, precision and pass, then the published ones at the counts the user
  // did not measure.
  RowLevels user_levels, levels;
  for (const GemmEfficiencyPoint& point : user.points) {
    if (point.groups <= 1 || point.family != family || point.precision != precision ||
        point.pass != pass) {
      continue;
    }
    TRAINSCOPE_CHECK(user.plateau_efficiency > 0, "user plateau must be > 0");
    AddToLevel(user_levels,
               static_cast<double>(point.shape.tokens) / static_cast<double>(point.groups),
               point.efficiency / user.plateau_efficiency);
  }
  if (const std::optional<GroupedSource> source = GroupedSourceOf(family, precision)) {
    for (const GroupedPoint& point : source->points) {
      if (pass == GemmPass::kWgrad && point.main_grad == MainGrad::kBf16) continue;
      const double rows = static_cast<double>(point.rows_per_group);
      if (user_levels.contains(rows)) continue;
      AddToLevel(
          levels, rows,
          PassValue(point.forward, point.dgrad, point.wgrad, pass) / source->plateau_efficiency);
    }
  }
  levels.insert(user_levels.begin(), user_levels.end());
  if (levels.empty()) return std::nullopt;
  return InterpolateLevels(levels, rows_per_group);
}

int64_t ReferenceSmCount(config::ComputeCapability capability) {
  // H100 / H200 SXM: 132 SMs (kernel-benchmarks.md §1.5, "H200 (132 SMs)"); B200: 148 and A100
  // SXM: 108 (NVIDIA architecture whitepapers; not in the reference files, unconfirmed here).
  if (capability.major == 9) return 132;
  if (capability.major == 10) return 148;
  if (capability.major == 8 && capability.minor == 0) return 108;
  return 0;
}

}  // namespace trainscope::cost
