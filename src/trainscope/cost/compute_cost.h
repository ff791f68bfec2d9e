// Compute cost of one kernel: a roofline over the GPU's tensor-core peak and HBM bandwidth, with
// a shape-dependent GEMM efficiency (tile quantisation). Pure functions over plain values; the
// formulas, default constants and omissions are listed in docs/cost-model.md.
#ifndef TRAINSCOPE_COST_COMPUTE_COST_H_
#define TRAINSCOPE_COST_COMPUTE_COST_H_

#include <cstdint>

#include "trainscope/config/hardware.h"
#include "trainscope/graph/op.h"

namespace trainscope::cost {

// Number format the GEMMs run in; it selects the tensor-core peak. Attention and fused kernels
// always run at the BF16 peak (Transformer Engine keeps core attention in BF16).
enum class MathPrecision { kBf16, kFp8 };

// Achieved fractions of the hardware peaks. Every default is a starting value from common
// experience of Hopper kernels, not a fit: they are to be fitted against
// reference/calibration_runs.csv (hardware.md §4.4) and overridden by a calibration file.
struct ComputeEfficiency {
  // Fraction of the BF16 / FP8 tensor-core peak a large, tile-aligned GEMM reaches.
  double bf16_gemm_efficiency = 0.75;
  double fp8_gemm_efficiency = 0.65;
  // Output tile (m x n) and reduction step (k) of the GEMM kernel; a partial tile costs as much
  // as a full one. 128 x 128 x 64 is the common BF16 Hopper CUTLASS / cuBLASLt configuration.
  int64_t gemm_tile_m = 128;
  int64_t gemm_tile_n = 128;
  int64_t gemm_tile_k = 64;
  // Fraction of the BF16 peak reached by compute ops without a GEMM shape (flash attention,
  // fused elementwise kernels, which are normally memory-bound anyway).
  double fused_kernel_efficiency = 0.55;
  // Fraction of the HBM bandwidth reached by memory-bound kernels.
  double memory_efficiency = 0.80;
  friend bool operator==(const ComputeEfficiency&, const ComputeEfficiency&) = default;
};

// The tile-quantisation efficiency of a GEMM shape, in (0, 1]: the product over m, n and k of
// extent / (extent rounded up to the tile). 1 for tile-aligned shapes. For a grouped GEMM
// (groups > 1) the shape's summed dimension is used as given (see docs/cost-model.md).
// Precondition (checked): m, n, k >= 1 and every tile size >= 1.
[[nodiscard]] double GemmTileEfficiency(const graph::GemmShape& shape,
                                        const ComputeEfficiency& eff);

// Seconds one compute op takes on `gpu`: max(flops / achieved peak, bytes / achieved HBM
// bandwidth). The achieved peak is the GEMM peak of `precision` times its GEMM efficiency times
// GemmTileEfficiency for ops with a GEMM shape (op.gemm.m > 0), and the BF16 peak times
// fused_kernel_efficiency otherwise. An op with no FLOPs and no bytes takes 0 seconds.
// Throws InputError when the op needs a rate the GPU preset does not have (FP8 on A100).
// Preconditions (checked): !op.IsComm(), flops and bytes >= 0, efficiencies in (0, 1].
[[nodiscard]] double ComputeSeconds(const graph::Op& op, const config::GpuSpec& gpu,
                                    const ComputeEfficiency& eff,
                                    MathPrecision precision = MathPrecision::kBf16);

}  // namespace trainscope::cost

#endif  // TRAINSCOPE_COST_COMPUTE_COST_H_
