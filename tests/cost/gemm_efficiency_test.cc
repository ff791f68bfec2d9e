// Shape-aware GEMM efficiency against the published figures it was built from and against hand
// derivations. Every table expectation is written from reference/kernel-benchmarks.md (section and
// row cited), not from gemm_efficiency_table.cc: published efficiency / published plateau.
// Tolerance: 1e-12 relative (the figures are reproduced exactly, not approximately).
#include "trainscope/cost/gemm_efficiency.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "trainscope/cost/compute_cost.h"
#include "trainscope/cost/gemm_efficiency_table.h"

namespace trainscope::cost {
namespace {

// §1.6: "Shapes with M·K·N >= 4096·4096·8192 (107 of them) have a fwd median of 0.494".
constexpr double kB200Bf16Plateau = 0.494;
// §1.2: median of the six DeepGEMM M = 4096 rows, (1125 + 1168) / 2 TFLOP/s.
constexpr double kH800Fp8PlateauTflops = (1125.0 + 1168.0) / 2;
// §1.4: vLLM PR #19566, M = 16384, N = K = 4096, FP8 per-tensor without quant.
constexpr double kSm100Fp8PlateauTflops = 2544.7;

constexpr double kRelativeTolerance = 1e-12;

void ExpectClose(double actual, double expected) {
  EXPECT_NEAR(actual, expected, kRelativeTolerance * std::abs(expected));
}

void ExpectClose(std::optional<double> actual, double expected) {
  ASSERT_TRUE(actual.has_value());
  ExpectClose(*actual, expected);
}

config::GpuSpec Gpu(const char* name) {
  const std::optional<config::GpuSpec> gpu = config::FindGpu(name);
  EXPECT_TRUE(gpu.has_value());
  return *gpu;
}

graph::Op Gemm(int64_t m, int64_t n, int64_t k) {
  graph::Op op;
  op.name = "gemm";
  op.role.kind = graph::OpKind::kGemm;
  op.gemm = graph::GemmShape{.m = m, .n = n, .k = k};
  op.flops = 2 * m * n * k;
  return op;  // bytes 0: FLOP-bound by construction
}

TEST(GemmEfficiencyTest, FamiliesFollowTheComputeCapability) {
  EXPECT_EQ(GpuFamilyOf(Gpu("H100").compute_capability), GpuFamily::kHopper);
  EXPECT_EQ(GpuFamilyOf(Gpu("H20").compute_capability), GpuFamily::kHopper);
  EXPECT_EQ(GpuFamilyOf(Gpu("B200").compute_capability), GpuFamily::kBlackwell);
  EXPECT_EQ(GpuFamilyOf(Gpu("GB300").compute_capability), GpuFamily::kBlackwell);
  EXPECT_EQ(GpuFamilyOf(Gpu("A100").compute_capability), GpuFamily::kOther);
  EXPECT_EQ(GemmShapeScaleKey(GpuFamily::kHopper, MathPrecision::kFp8), "hopper_fp8");
  EXPECT_EQ(GemmShapeScaleKey(GpuFamily::kOther, MathPrecision::kBf16), "other_bf16");
}

TEST(GemmEfficiencyTest, DenseTableReproducesSimuMaxB200RowsForEachPass) {
  // §1.6 row "4096 | 4096 | 6144 | 0.653 | 0.633 | 0.609" (tokens, K in, N out).
  const LinearShape shape{.tokens = 4096, .in_features = 4096, .out_features = 6144};
  const auto factor = [&](GemmPass pass) {
    return TableDenseShapeFactor(GpuFamily::kBlackwell, MathPrecision::kBf16, pass, shape);
  };
  ExpectClose(factor(GemmPass::kForward), 0.653 / kB200Bf16Plateau);
  ExpectClose(factor(GemmPass::kDgrad), 0.633 / kB200Bf16Plateau);
  ExpectClose(factor(GemmPass::kWgrad), 0.609 / kB200Bf16Plateau);
  // §1.6 row "16384 | 5120 | 160 | 0.326 | 0.158 | 0.267": a narrow output.
  ExpectClose(TableDenseShapeFactor(GpuFamily::kBlackwell, MathPrecision::kBf16, GemmPass::kDgrad,
                                    {.tokens = 16384, .in_features = 5120, .out_features = 160}),
              0.158 / kB200Bf16Plateau);
  ExpectClose(DensePlateauEfficiency(GpuFamily::kBlackwell, MathPrecision::kBf16),
              kB200Bf16Plateau);
}

TEST(GemmEfficiencyTest, DenseTableReproducesVllmAndDeepGemmRows) {
  // §1.4 BF16 (torch), N 6144, K 4096, M 128: 727.3 TFLOP/s; plateau PR #19566 1512.8.
  ExpectClose(TableDenseShapeFactor(GpuFamily::kBlackwell, MathPrecision::kBf16, GemmPass::kForward,
                                    {.tokens = 128, .in_features = 4096, .out_features = 6144}),
              727.3 / 1512.8);
  // §1.4 FP8 per-tensor, no quant, M 1024: 2207.5 TFLOP/s.
  ExpectClose(TableDenseShapeFactor(GpuFamily::kBlackwell, MathPrecision::kFp8, GemmPass::kForward,
                                    {.tokens = 1024, .in_features = 4096, .out_features = 6144}),
              2207.5 / kSm100Fp8PlateauTflops);
  // §1.2 row "4096 | 4096 | 7168 | 1265" (M, N, K): tokens 4096, in 7168, out 4096. A pass
  // without published data uses the forward figure.
  for (GemmPass pass : {GemmPass::kForward, GemmPass::kWgrad}) {
    ExpectClose(TableDenseShapeFactor(GpuFamily::kHopper, MathPrecision::kFp8, pass,
                                      {.tokens = 4096, .in_features = 7168, .out_features = 4096}),
                1265 / kH800Fp8PlateauTflops);
  }
}

TEST(GemmEfficiencyTest, DenseTableInterpolatesByInverseSquareLog2Distance) {
  // Blackwell FP8 at M 2048, N 6144, K 4096. Distances in log2 units to the §1.4 points: M 1024
  // -> 1, M 512 -> 2, M 256 -> 3, PR #19566 (16384, 4096, 4096) -> sqrt(9 + log2(1.5)^2), M 128
  // -> 4 (fifth, left out). Weights 1 / d^2.
  const double d2_plateau = 9 + std::log2(1.5) * std::log2(1.5);
  const double weighted =
      2207.5 / 1 + 1759.9 / 4 + 1462.9 / 9 + kSm100Fp8PlateauTflops / d2_plateau;
  const double weights = 1.0 / 1 + 1.0 / 4 + 1.0 / 9 + 1.0 / d2_plateau;
  ExpectClose(TableDenseShapeFactor(GpuFamily::kBlackwell, MathPrecision::kFp8, GemmPass::kForward,
                                    {.tokens = 2048, .in_features = 4096, .out_features = 6144}),
              weighted / weights / kSm100Fp8PlateauTflops);
}

TEST(GemmEfficiencyTest, DenseTableHasNoValueOutsideCoverageOrWithoutData) {
  // Nearest Blackwell FP8 point (16384, 4096, 4096) is 2 octaves away on each axis.
  EXPECT_EQ(TableDenseShapeFactor(GpuFamily::kBlackwell, MathPrecision::kFp8, GemmPass::kForward,
                                  {.tokens = 65536, .in_features = 16384, .out_features = 16384}),
            std::nullopt);
  EXPECT_EQ(TableDenseShapeFactor(GpuFamily::kHopper, MathPrecision::kBf16, GemmPass::kForward,
                                  {.tokens = 4096, .in_features = 4096, .out_features = 4096}),
            std::nullopt);
  EXPECT_EQ(TableDenseShapeFactor(GpuFamily::kOther, MathPrecision::kBf16, GemmPass::kForward,
                                  {.tokens = 4096, .in_features = 4096, .out_features = 4096}),
            std::nullopt);
  EXPECT_EQ(DensePlateauEfficiency(GpuFamily::kHopper, MathPrecision::kBf16), std::nullopt);
}

TEST(GemmEfficiencyTest, GroupedTableAveragesEachPublishedRowCount) {
  // §2.4, 256 rows per group (128 groups): fwd 0.274, 0.271, 0.309, 0.303; wgrad uses the FP32
  // main-grad rows only: 0.147, 0.141.
  const double fwd_256 = (0.274 + 0.271 + 0.309 + 0.303) / 4 / kB200Bf16Plateau;
  ExpectClose(
      TableGroupedShapeFactor(GpuFamily::kBlackwell, MathPrecision::kBf16, GemmPass::kForward, 256),
      fwd_256);
  ExpectClose(
      TableGroupedShapeFactor(GpuFamily::kBlackwell, MathPrecision::kBf16, GemmPass::kWgrad, 256),
      (0.147 + 0.141) / 2 / kB200Bf16Plateau);
  // Halfway in log2 between the next smaller published count, 154 rows (160 groups: fwd 0.202,
  // 0.200, 0.118, 0.116), and 256 rows.
  const double fwd_154 = (0.202 + 0.200 + 0.118 + 0.116) / 4 / kB200Bf16Plateau;
  ExpectClose(TableGroupedShapeFactor(GpuFamily::kBlackwell, MathPrecision::kBf16,
                                      GemmPass::kForward, std::sqrt(154.0 * 256.0)),
              (fwd_154 + fwd_256) / 2);
  // The smallest count, 128 rows (256 groups): fwd 0.204, 0.208, 0.183, 0.178.
  const double fwd_128 = (0.204 + 0.208 + 0.183 + 0.178) / 4 / kB200Bf16Plateau;
  // Below the smallest count: in proportion to the rows. Above the largest (9832 rows: fwd 0.475,
  // 0.445): the largest one's value.
  ExpectClose(
      TableGroupedShapeFactor(GpuFamily::kBlackwell, MathPrecision::kBf16, GemmPass::kForward, 64),
      fwd_128 / 2);
  ExpectClose(TableGroupedShapeFactor(GpuFamily::kBlackwell, MathPrecision::kBf16,
                                      GemmPass::kForward, 20000),
              (0.475 + 0.445) / 2 / kB200Bf16Plateau);
}

TEST(GemmEfficiencyTest, GroupedTableReproducesHopperRows) {
  // §2.1 TE 2.7 multi-stream cuBLAS: (16, 2048, 768, 2048) 553.945 over (8, 4096, ...) 627.903.
  ExpectClose(
      TableGroupedShapeFactor(GpuFamily::kHopper, MathPrecision::kBf16, GemmPass::kForward, 2048),
      553.945 / 627.903);
  // §2.2 cuBLAS loop, 128 x 512 rows: 129.5.
  ExpectClose(
      TableGroupedShapeFactor(GpuFamily::kHopper, MathPrecision::kBf16, GemmPass::kDgrad, 512),
      129.5 / 627.903);
  // §2.3 contiguous 8 x 4096 rows: 1346 and 1214 TFLOP/s, over the §1.2 plateau.
  ExpectClose(
      TableGroupedShapeFactor(GpuFamily::kHopper, MathPrecision::kFp8, GemmPass::kForward, 4096),
      (1346.0 + 1214.0) / 2 / kH800Fp8PlateauTflops);
  EXPECT_EQ(
      TableGroupedShapeFactor(GpuFamily::kBlackwell, MathPrecision::kFp8, GemmPass::kForward, 4096),
      std::nullopt);
}

TEST(GemmEfficiencyTest, FallbackIsWaveTimesTileOnLargeShapes) {
  // 8192^3 on 132 SMs with 128 x 128 tiles: 64 · 64 = 4096 tiles in ceil(4096 / 132) = 32 waves.
  ExpectClose(FallbackGemmShapeFactor(graph::GemmShape{.m = 8192, .n = 8192, .k = 8192},
                                      ComputeEfficiency{}, 132),
              4096.0 / (32 * 132));
  // No SM count: no wave term; aligned and at the plateau extents: exactly 1.
  ExpectClose(FallbackGemmShapeFactor(graph::GemmShape{.m = 8192, .n = 4096, .k = 4096},
                                      ComputeEfficiency{}, 0),
              1.0);
}

TEST(GemmEfficiencyTest, FallbackPenalisesSmallKAndSmallN) {
  // K = 512, k0 = 256: (512 / 768) / (4096 / 4352); 32 · 32 = 1024 tiles in 8 waves of 132.
  ExpectClose(FallbackGemmShapeFactor(graph::GemmShape{.m = 4096, .n = 4096, .k = 512},
                                      ComputeEfficiency{}, 132),
              (1024.0 / (8 * 132)) * (512.0 / 768) / (4096.0 / 4352));
  // N = 160, n0 = 128: tile 160 / 256; 64 · 2 = 128 tiles in one wave of 132;
  // (160 / 288) / (4096 / 4224).
  ExpectClose(FallbackGemmShapeFactor(graph::GemmShape{.m = 8192, .n = 160, .k = 4096},
                                      ComputeEfficiency{}, 132),
              (160.0 / 256) * (128.0 / 132) * (160.0 / 288) / (4096.0 / 4224));
}

TEST(GemmEfficiencyTest, FallbackCountsTheTilesOfEveryGroup) {
  // 8 groups x 100 rows, n 256, k 4096, 132 SMs: each group one 128-row tile x 2 column tiles =
  // 16 tiles in one wave; tile quantisation 100 / 128.
  ExpectClose(FallbackGemmShapeFactor(graph::GemmShape{.m = 800, .n = 256, .k = 4096, .groups = 8},
                                      ComputeEfficiency{}, 132),
              (100.0 / 128) * (16.0 / 132) * (256.0 / 384) / (4096.0 / 4224));
}

TEST(GemmEfficiencyTest, ShapeFactorMapsEachPassToItsForwardRow) {
  // The graph's shapes (graph/op_sink.h) of the §1.6 row (4096 tokens, 4096 in, 6144 out):
  // forward m 4096 n 6144 k 4096; dgrad m 4096 n 4096 k 6144; wgrad m 6144 n 4096 k 4096.
  const config::GpuSpec b200 = Gpu("B200");
  const ComputeEfficiency eff;
  ExpectClose(GemmShapeFactor({.m = 4096, .n = 6144, .k = 4096}, graph::OpPass::kForward, b200, eff,
                              MathPrecision::kBf16),
              0.653 / kB200Bf16Plateau);
  ExpectClose(GemmShapeFactor({.m = 4096, .n = 4096, .k = 6144}, graph::OpPass::kDgrad, b200, eff,
                              MathPrecision::kBf16),
              0.633 / kB200Bf16Plateau);
  ExpectClose(
      GemmShapeFactor({.m = 6144, .n = 4096, .k = 4096, .grouped_axis = graph::GroupedAxis::kK},
                      graph::OpPass::kWgrad, b200, eff, MathPrecision::kBf16),
      0.609 / kB200Bf16Plateau);
}

TEST(GemmEfficiencyTest, GroupedShapeFactorUsesRowsPerGroup) {
  // 128 groups x 256 rows = 32768 summed rows: the §2.4 256-row mean; the wgrad of the same
  // experts sums the rows on k.
  const config::GpuSpec b200 = Gpu("B200");
  const ComputeEfficiency eff;
  ExpectClose(GemmShapeFactor({.m = 32768, .n = 4096, .k = 7168, .groups = 128},
                              graph::OpPass::kForward, b200, eff, MathPrecision::kBf16),
              (0.274 + 0.271 + 0.309 + 0.303) / 4 / kB200Bf16Plateau);
  ExpectClose(
      GemmShapeFactor(
          {.m = 4096, .n = 7168, .k = 32768, .groups = 128, .grouped_axis = graph::GroupedAxis::kK},
          graph::OpPass::kWgrad, b200, eff, MathPrecision::kBf16),
      (0.147 + 0.141) / 2 / kB200Bf16Plateau);
}

TEST(GemmEfficiencyTest, ScaleAndTileModelOverrideTheTable) {
  const config::GpuSpec b200 = Gpu("B200");
  ComputeEfficiency eff;
  eff.gemm_shape_scale = {{"blackwell_bf16", 0.5}, {"blackwell_fp8", 2.0}};
  const graph::GemmShape shape{.m = 4096, .n = 6144, .k = 4096};
  ExpectClose(GemmShapeFactor(shape, graph::OpPass::kForward, b200, eff, MathPrecision::kBf16),
              0.5 * 0.653 / kB200Bf16Plateau);
  // Hopper keys are untouched by Blackwell scales: H100 BF16 falls back (no table), 4096 x 6144
  // -> 32 · 48 = 1536 tiles in 12 waves of 132.
  ExpectClose(
      GemmShapeFactor(shape, graph::OpPass::kForward, Gpu("H100"), eff, MathPrecision::kBf16),
      1536.0 / (12 * 132));
  eff.gemm_shape_model = GemmShapeModel::kTile;
  EXPECT_EQ(GemmShapeFactor({.m = 100, .n = 128, .k = 64}, graph::OpPass::kForward, b200, eff,
                            MathPrecision::kBf16),
            100.0 / 128);
}

TEST(GemmEfficiencyTest, ComputeSecondsReproducesThePublishedKernelTime) {
  // With the GEMM efficiency set to the source's plateau and no GPU scale, the predicted time
  // is the published one. §1.6 row 4096 x 4096 -> 6144 fwd 0.653 of 2250 TFLOP/s.
  ComputeEfficiency eff;
  eff.bf16_gemm_efficiency = kB200Bf16Plateau;
  eff.gpu_throughput_scale.clear();
  ExpectClose(ComputeSeconds(Gemm(4096, 6144, 4096), Gpu("B200"), eff),
              2.0 * 4096 * 6144 * 4096 / (0.653 * 2250e12));
  // §1.2 row "4096 | 7168 | 16384 | 1426" on H800: 1426 TFLOP/s.
  eff.fp8_gemm_efficiency = kH800Fp8PlateauTflops / 1979;
  const double seconds =
      ComputeSeconds(Gemm(4096, 7168, 16384), Gpu("H800"), eff, MathPrecision::kFp8);
  // The H800 preset's FP8 peak is 1978.9, the source's 1979: the reproduced rate is 1426 · 1978.9
  // / 1979 TFLOP/s.
  ExpectClose(seconds, 2.0 * 4096 * 7168 * 16384 / (1426e12 * 1978.9 / 1979));
}

TEST(GemmEfficiencyTest, ShapedEfficiencyNeverExceedsThePeak) {
  // Shape factor 0.653 / 0.494 > 1 at full GEMM efficiency: capped at the 2250 TFLOP/s peak.
  ComputeEfficiency eff;
  eff.bf16_gemm_efficiency = 1;
  eff.gpu_throughput_scale.clear();
  ExpectClose(ComputeSeconds(Gemm(4096, 6144, 4096), Gpu("B200"), eff),
              2.0 * 4096 * 6144 * 4096 / 2250e12);
}

}  // namespace
}  // namespace trainscope::cost

namespace trainscope::cost {
namespace {

GemmEfficiencyPoint UserPoint(GpuFamily family, MathPrecision precision, GemmPass pass,
                              LinearShape shape, int64_t groups, double efficiency) {
  return {.family = family,
          .precision = precision,
          .pass = pass,
          .shape = shape,
          .groups = groups,
          .efficiency = efficiency};
}

TEST(GemmEfficiencyTest, UserPointReplacesThePublishedValueAtItsShape) {
  // A measured 0.70 of peak at the §1.6 shape 4096 x 4096 -> 6144 (published 0.653): the GEMM
  // reaches exactly 0.70 of 2250 TFLOP/s, whatever bf16_gemm_efficiency is.
  ComputeEfficiency eff;
  eff.gpu_throughput_scale.clear();
  eff.gemm_efficiency_points = {
      UserPoint(GpuFamily::kBlackwell, MathPrecision::kBf16, GemmPass::kForward,
                {.tokens = 4096, .in_features = 4096, .out_features = 6144}, 1, 0.70)};
  ExpectClose(ComputeSeconds(Gemm(4096, 6144, 4096), Gpu("B200"), eff),
              2.0 * 4096 * 6144 * 4096 / (0.70 * 2250e12));
  // The point is a forward measurement: the dgrad keeps the published 0.633.
  ExpectClose(GemmShapeFactor({.m = 4096, .n = 4096, .k = 6144}, graph::OpPass::kDgrad, Gpu("B200"),
                              eff, MathPrecision::kBf16),
              0.633 / kB200Bf16Plateau);
}

TEST(GemmEfficiencyTest, UserPointCoversItsOctaveWhereNoTableExists) {
  // Hopper BF16 has no table. A measured 0.80 at 8192^3 under a plateau of 0.75: factor
  // 0.80 / 0.75 at the point and one octave away (its only neighbour). Two octaves away the
  // fallback: 32768 x 8192 -> 256 · 64 = 16384 tiles in ceil(16384 / 132) = 125 waves.
  ComputeEfficiency eff;
  eff.bf16_gemm_efficiency = 0.75;
  eff.gemm_efficiency_points = {
      UserPoint(GpuFamily::kHopper, MathPrecision::kBf16, GemmPass::kForward,
                {.tokens = 8192, .in_features = 8192, .out_features = 8192}, 1, 0.80)};
  const config::GpuSpec h100 = Gpu("H100");
  ExpectClose(GemmShapeFactor({.m = 8192, .n = 8192, .k = 8192}, graph::OpPass::kForward, h100, eff,
                              MathPrecision::kBf16),
              0.80 / 0.75);
  ExpectClose(GemmShapeFactor({.m = 16384, .n = 8192, .k = 8192}, graph::OpPass::kForward, h100,
                              eff, MathPrecision::kBf16),
              0.80 / 0.75);
  ExpectClose(GemmShapeFactor({.m = 32768, .n = 8192, .k = 8192}, graph::OpPass::kForward, h100,
                              eff, MathPrecision::kBf16),
              16384.0 / (125 * 132));
}

TEST(GemmEfficiencyTest, GroupedUserPointsAddAndReplaceRowLevels) {
  // Blackwell FP8 has no grouped table: 8 groups x 512 rows measured at 0.40 of the FP8 peak,
  // relative to fp8_gemm_efficiency 0.5944. Below it in proportion to the rows, above it flat.
  ComputeEfficiency eff;
  eff.fp8_gemm_efficiency = 0.5944;
  eff.gemm_efficiency_points = {
      UserPoint(GpuFamily::kBlackwell, MathPrecision::kFp8, GemmPass::kForward,
                {.tokens = 4096, .in_features = 4096, .out_features = 1536}, 8, 0.40)};
  const config::GpuSpec b200 = Gpu("B200");
  ExpectClose(GemmShapeFactor({.m = 4096, .n = 1536, .k = 4096, .groups = 8},
                              graph::OpPass::kForward, b200, eff, MathPrecision::kFp8),
              0.40 / 0.5944);
  ExpectClose(GemmShapeFactor({.m = 2048, .n = 1536, .k = 4096, .groups = 8},
                              graph::OpPass::kForward, b200, eff, MathPrecision::kFp8),
              0.40 / 0.5944 / 2);
  // On B200 BF16 a user level at 256 rows replaces the §2.4 256-row mean.
  eff.gemm_efficiency_points = {
      UserPoint(GpuFamily::kBlackwell, MathPrecision::kBf16, GemmPass::kForward,
                {.tokens = 2560, .in_features = 4096, .out_features = 1536}, 10, 0.30)};
  ExpectClose(
      TableGroupedShapeFactor(GpuFamily::kBlackwell, MathPrecision::kBf16, GemmPass::kForward, 256,
                              {.points = eff.gemm_efficiency_points, .plateau_efficiency = 0.75}),
      0.30 / 0.75);
}

}  // namespace
}  // namespace trainscope::cost

namespace trainscope::cost {
namespace {

TEST(GemmEfficiencyTest, GpusWithoutATableFallBackWithTheirSmCount) {
  // A100 (SM 8.0, 108 SMs): 4096 x 4096 x 4096 -> 32 · 32 = 1024 tiles in ceil(1024 / 108) = 10
  // waves. L20 (SM 8.9): no SM count, no wave term, so exactly 1 at the plateau extents.
  const graph::GemmShape shape{.m = 4096, .n = 4096, .k = 4096};
  const ComputeEfficiency eff;
  ExpectClose(
      GemmShapeFactor(shape, graph::OpPass::kForward, Gpu("A100"), eff, MathPrecision::kBf16),
      1024.0 / (10 * 108));
  ExpectClose(
      GemmShapeFactor(shape, graph::OpPass::kForward, Gpu("L20"), eff, MathPrecision::kBf16), 1.0);
}

TEST(GemmEfficiencyTest, EverySm100PresetUsesTheBlackwellTable) {
  // §1.6 row "4096 | 2048 | 4096 | 0.647 | 0.636 | 0.617" on GB200 (10.0) and GB300 (10.3).
  for (const char* name : {"GB200", "B300", "GB300"}) {
    ExpectClose(GemmShapeFactor({.m = 4096, .n = 4096, .k = 2048}, graph::OpPass::kForward,
                                Gpu(name), ComputeEfficiency{}, MathPrecision::kBf16),
                0.647 / kB200Bf16Plateau);
  }
}

}  // namespace
}  // namespace trainscope::cost
