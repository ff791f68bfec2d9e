#include "trainscope/cost/gemm_efficiency.h"

#include <algorithm>
#include <optional>

#include "trainscope/error.h"
#include "trainscope/units.h"

namespace trainscope::cost {
namespace {

// min(1, (x / (x + x0)) / (P / (P + x0))): a fixed per-tile cost of x0 elements (prologue,
// epilogue) amortised over the extent x, relative to the plateau extent P.
double SmallExtentPenalty(int64_t extent, int64_t x0) {
  const double x = static_cast<double>(extent), overhead = static_cast<double>(x0);
  const double plateau = static_cast<double>(kGemmPlateauExtent);
  return std::min(1.0, (x / (x + overhead)) / (plateau / (plateau + overhead)));
}

// Output tiles of all busy groups over full waves of `num_sms` CTAs.
double WaveEfficiency(const graph::GemmShape& shape, const ComputeEfficiency& eff,
                      int64_t num_sms) {
  if (num_sms == 0) return 1;
  const bool grouped_m = shape.grouped_axis == graph::GroupedAxis::kM;
  const int64_t summed = grouped_m ? shape.m : shape.k;
  const int64_t busy_groups = std::min(shape.groups, summed);
  const int64_t rows = grouped_m ? CeilDiv(shape.m, busy_groups) : shape.m;
  const int64_t tiles =
      busy_groups * CeilDiv(rows, eff.gemm_tile_m) * CeilDiv(shape.n, eff.gemm_tile_n);
  const int64_t waves = CeilDiv(tiles, num_sms);
  return static_cast<double>(tiles) / static_cast<double>(waves * num_sms);
}

// The reduction extent one group's kernel sees.
int64_t PerGroupReduction(const graph::GemmShape& shape) {
  if (shape.grouped_axis != graph::GroupedAxis::kK) return shape.k;
  return CeilDiv(shape.k, std::min(shape.groups, shape.k));
}

}  // namespace

GemmPass GemmPassOf(graph::OpPass pass) {
  if (pass == graph::OpPass::kDgrad) return GemmPass::kDgrad;
  if (pass == graph::OpPass::kWgrad) return GemmPass::kWgrad;
  return GemmPass::kForward;
}

LinearShape ForwardLinearShape(const graph::GemmShape& shape, GemmPass pass) {
  switch (pass) {
    case GemmPass::kForward:
      return {.tokens = shape.m, .in_features = shape.k, .out_features = shape.n};
    case GemmPass::kDgrad:
      return {.tokens = shape.m, .in_features = shape.n, .out_features = shape.k};
    case GemmPass::kWgrad:
      return {.tokens = shape.k, .in_features = shape.n, .out_features = shape.m};
  }
  TRAINSCOPE_CHECK(false, "unhandled GemmPass");
  return {};
}

std::string GemmShapeScaleKey(GpuFamily family, MathPrecision precision) {
  return std::string(GpuFamilyName(family)) + "_" + std::string(MathPrecisionName(precision));
}

double FallbackGemmShapeFactor(const graph::GemmShape& shape, const ComputeEfficiency& eff,
                               int64_t num_sms) {
  TRAINSCOPE_CHECK(num_sms >= 0, "SM count must be >= 0");
  TRAINSCOPE_CHECK(eff.gemm_fallback_k0 >= 0 && eff.gemm_fallback_n0 >= 0,
                   "fallback extents must be >= 0");
  const double tile = GemmTileEfficiency(shape, eff);  // checks the shape and tiles
  return tile * WaveEfficiency(shape, eff, num_sms) *
         SmallExtentPenalty(PerGroupReduction(shape), eff.gemm_fallback_k0) *
         SmallExtentPenalty(shape.n, eff.gemm_fallback_n0);
}

double GemmShapeFactor(const graph::GemmShape& shape, graph::OpPass pass,
                       const config::GpuSpec& gpu, const ComputeEfficiency& eff,
                       MathPrecision precision) {
  TRAINSCOPE_CHECK(shape.m >= 1 && shape.n >= 1 && shape.k >= 1 && shape.groups >= 1,
                   "GEMM extents and groups must be >= 1");
  // No per-shape NVFP4 table: an FP4 GEMM takes the FP8 shape factor (both are block-scaled
  // TMA kernels with the same tiling on Blackwell).
  if (precision == MathPrecision::kFp4) precision = MathPrecision::kFp8;
  if (eff.gemm_shape_model == GemmShapeModel::kTile) return GemmTileEfficiency(shape, eff);
  const GpuFamily family = GpuFamilyOf(gpu.compute_capability);
  const auto scale_entry = eff.gemm_shape_scale.find(GemmShapeScaleKey(family, precision));
  const double scale = scale_entry == eff.gemm_shape_scale.end() ? 1.0 : scale_entry->second;
  TRAINSCOPE_CHECK(scale > 0 && scale <= 2, "gemm_shape_scale must lie in (0, 2]");
  const GemmPass gemm_pass = GemmPassOf(pass);
  const LinearShape linear = ForwardLinearShape(shape, gemm_pass);
  const UserGemmPoints user{.points = eff.gemm_efficiency_points,
                            .plateau_efficiency = precision == MathPrecision::kFp8
                                                      ? eff.fp8_gemm_efficiency
                                                      : eff.bf16_gemm_efficiency};
  std::optional<double> table;
  if (shape.groups > 1) {
    const int64_t busy_groups = std::min(shape.groups, linear.tokens);
    table = TableGroupedShapeFactor(
        family, precision, gemm_pass,
        static_cast<double>(linear.tokens) / static_cast<double>(busy_groups), user);
  } else {
    table = TableDenseShapeFactor(family, precision, gemm_pass, linear, user);
  }
  const double factor =
      table ? *table
            : FallbackGemmShapeFactor(shape, eff, ReferenceSmCount(gpu.compute_capability));
  return scale * factor;
}

}  // namespace trainscope::cost
