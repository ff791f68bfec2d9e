// Shape-aware GEMM efficiency: the factor by which a GEMM of a given shape, pass, GPU family and
// number format runs slower (< 1) or faster (> 1) than the large-shape plateau that
// ComputeEfficiency::bf16_gemm_efficiency / fp8_gemm_efficiency describe. It comes from the
// published per-shape tables (cost/gemm_efficiency_table.h) where they cover the shape, and from a
// closed-form fallback elsewhere. Pure functions over plain values; docs/cost-model.md has the
// formulas and every constant's source.
#ifndef TRAINSCOPE_COST_GEMM_EFFICIENCY_H_
#define TRAINSCOPE_COST_GEMM_EFFICIENCY_H_

#include <cstdint>
#include <string>

#include "trainscope/config/hardware.h"
#include "trainscope/cost/compute_cost.h"
#include "trainscope/cost/gemm_efficiency_table.h"
#include "trainscope/graph/op.h"

namespace trainscope::cost {

// The extent at which the fallback's small-K and small-N penalties are normalised to 1: the K and
// N of the large shapes that define the plateau (kernel-benchmarks.md §1.6 plateau set, M·K·N >=
// 4096·4096·8192).
inline constexpr int64_t kGemmPlateauExtent = 4096;

// The table / fallback pass of a GEMM op's role: kDgrad and kWgrad keep theirs, anything else is
// kForward.
[[nodiscard]] GemmPass GemmPassOf(graph::OpPass pass);

// The forward (tokens, in, out) triple of a GEMM shape of `pass` (graph/op_sink.h: forward and
// dgrad have m = tokens, wgrad has k = tokens; dgrad swaps n and k; wgrad has m = out, n = in).
[[nodiscard]] LinearShape ForwardLinearShape(const graph::GemmShape& shape, GemmPass pass);

// The calibration key of a family and number format: "<family>_<bf16|fp8>", e.g. "hopper_fp8".
[[nodiscard]] std::string GemmShapeScaleKey(GpuFamily family, MathPrecision precision);

// Fallback shape factor where no table covers the shape, in (0, 1]:
//   tile · wave · small_k · small_n
// tile = GemmTileEfficiency; wave = tiles / (ceil(tiles / num_sms) · num_sms) over the output
// tiles of all busy groups (1 when num_sms is 0); small_x = min(1, (x / (x + x0)) / (P / (P +
// x0))) with P = kGemmPlateauExtent, x0 = eff.gemm_fallback_k0 for the per-group reduction extent
// and eff.gemm_fallback_n0 for n. Precondition (checked): as GemmTileEfficiency, num_sms >= 0.
[[nodiscard]] double FallbackGemmShapeFactor(const graph::GemmShape& shape,
                                             const ComputeEfficiency& eff, int64_t num_sms);

// The shape factor of a GEMM on `gpu` in `precision`, times eff.gemm_shape_scale of the family
// and precision (absent = 1). Under GemmShapeModel::kTile it is GemmTileEfficiency alone (the
// model before shape tables). Under kTable: for a grouped GEMM (groups > 1) the grouped table at
// rows per group = tokens / min(groups, tokens); for a dense GEMM the dense table at the forward
// triple; the fallback where the family has no table for the precision or the dense table does
// not cover the shape. Preconditions (checked): as GemmTileEfficiency.
[[nodiscard]] double GemmShapeFactor(const graph::GemmShape& shape, graph::OpPass pass,
                                     const config::GpuSpec& gpu, const ComputeEfficiency& eff,
                                     MathPrecision precision);

}  // namespace trainscope::cost

#endif  // TRAINSCOPE_COST_GEMM_EFFICIENCY_H_
