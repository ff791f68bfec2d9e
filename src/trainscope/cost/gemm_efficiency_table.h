// Published per-shape GEMM efficiencies (fractions of the dense tensor-core peak) by GPU family and
// number format, and the lookups over them: inverse-distance interpolation in log2 shape space for
// dense GEMMs, piecewise-linear interpolation in log2(rows per group) for grouped GEMMs. The data
// is constant (no mutable state); every entry cites its row of reference/kernel-benchmarks.md in
// gemm_efficiency_table.cc. The method and its limits are in docs/cost-model.md.
#ifndef TRAINSCOPE_COST_GEMM_EFFICIENCY_TABLE_H_
#define TRAINSCOPE_COST_GEMM_EFFICIENCY_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "trainscope/config/hardware.h"
#include "trainscope/cost/gemm_types.h"

namespace trainscope::cost {

// Hopper for SM 9.x, Blackwell for SM 10.x (B200 / GB200 10.0, B300 / GB300 10.3), kOther for the
// rest (A100 8.0, L20 8.9, 0.0 = unknown).
[[nodiscard]] GpuFamily GpuFamilyOf(config::ComputeCapability capability);

// Dense interpolation: the k nearest published points (Euclidean distance over log2 of the
// three extents) weighted by 1 / distance^2; a point at distance 0 is returned as is (the mean
// of all such points). Outside kCoverageRadiusLog2 of every point there is no table value.
inline constexpr std::size_t kInterpolationNeighbours = 4;
inline constexpr double kCoverageRadiusLog2 = 1.0;

// The calibration file's measured points and the plateau they are relative to (the
// ComputeEfficiency GEMM efficiency of the precision), so that a measured point is reproduced
// exactly. Borrowed: the points must outlive the call.
struct UserGemmPoints {
  std::span<const GemmEfficiencyPoint> points;
  double plateau_efficiency = 0;
};

// The large-shape plateau of the family's forward GEMMs in `precision`: the efficiency the table's
// shape factors are relative to. nullopt when the family has no dense table for the precision.
[[nodiscard]] std::optional<double> DensePlateauEfficiency(GpuFamily family,
                                                           MathPrecision precision);

// The published dense efficiency of `shape` for `pass`, interpolated as above, divided by the
// plateau of its source: 1 = a large GEMM, below 1 slower, above 1 faster than the plateau.
// nullopt when the family has no table for the precision or the shape is outside coverage.
// `user` points (dense ones, groups == 1, of this family, precision and pass) join the
// interpolation as value / user.plateau_efficiency, and at their exact shape replace the published
// value. Preconditions (checked): every extent >= 1; user.plateau_efficiency > 0 when a user
// point applies.
[[nodiscard]] std::optional<double> TableDenseShapeFactor(GpuFamily family, MathPrecision precision,
                                                          GemmPass pass, const LinearShape& shape,
                                                          const UserGemmPoints& user = {});

// The published grouped-GEMM efficiency at `rows_per_group` tokens per group for `pass`, divided
// by the plateau of its source. Entries with equal rows per group are averaged (over group
// counts, N, K and, except for wgrad, the main-grad type; wgrad uses the FP32 main-grad rows);
// between the published row counts it is linear in log2(rows); above the largest it keeps the
// largest one's value; below the smallest it falls in proportion to the rows (each group still
// pays its full tiles). `user` grouped points (groups > 1) of this family, precision and pass
// add their rows per group (tokens / groups) as levels and replace the published level at equal
// rows. nullopt when there is neither a grouped table for the precision nor a user point.
// Preconditions (checked): rows_per_group > 0; user.plateau_efficiency > 0 when a point applies.
[[nodiscard]] std::optional<double> TableGroupedShapeFactor(GpuFamily family,
                                                            MathPrecision precision, GemmPass pass,
                                                            double rows_per_group,
                                                            const UserGemmPoints& user = {});

// Streaming multiprocessors of the family's reference GPU (H100/H200 SXM 132, B200 148, A100
// 108 for SM 8.0); 0 = unknown, no wave quantisation.
[[nodiscard]] int64_t ReferenceSmCount(config::ComputeCapability capability);

}  // namespace trainscope::cost

#endif  // TRAINSCOPE_COST_GEMM_EFFICIENCY_TABLE_H_
