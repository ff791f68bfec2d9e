#include "trainscope/cost/compute_cost.h"

#include <algorithm>
#include <string>

#include "trainscope/error.h"
#include "trainscope/units.h"

namespace trainscope::cost {
namespace {

// extent / (extent rounded up to `tile`): the useful fraction of the tiles covering one axis.
double AxisTileEfficiency(int64_t extent, int64_t tile) {
  return static_cast<double>(extent) / static_cast<double>(RoundUp(extent, tile));
}

bool IsFraction(double value) { return value > 0 && value <= 1; }

// Throws InputError when the GPU preset has no figure for a rate the op needs.
void RequirePositiveRate(double rate, const config::GpuSpec& gpu, const char* key) {
  if (rate <= 0) {
    throw InputError("gpu " + gpu.name + ": " + key +
                     ": the preset has no figure for this rate (got 0, expected > 0; set it in "
                     "the hardware profile)");
  }
}

// Achieved FLOP/s for `op`: the tensor-core peak of its kernel class times its efficiency.
double AchievedFlopsPerSecond(const graph::Op& op, const config::GpuSpec& gpu,
                              const ComputeEfficiency& eff, MathPrecision precision) {
  if (op.gemm.m == 0) {
    RequirePositiveRate(gpu.bf16_flops_per_second, gpu, "bf16_flops_per_second");
    return gpu.bf16_flops_per_second * eff.fused_kernel_efficiency;
  }
  const double tile_efficiency = GemmTileEfficiency(op.gemm, eff);
  if (precision == MathPrecision::kFp8) {
    RequirePositiveRate(gpu.fp8_flops_per_second, gpu, "fp8_flops_per_second");
    return gpu.fp8_flops_per_second * eff.fp8_gemm_efficiency * tile_efficiency;
  }
  RequirePositiveRate(gpu.bf16_flops_per_second, gpu, "bf16_flops_per_second");
  return gpu.bf16_flops_per_second * eff.bf16_gemm_efficiency * tile_efficiency;
}

}  // namespace

double GemmTileEfficiency(const graph::GemmShape& shape, const ComputeEfficiency& eff) {
  TRAINSCOPE_CHECK(shape.m >= 1 && shape.n >= 1 && shape.k >= 1, "GEMM extents must be >= 1");
  TRAINSCOPE_CHECK(eff.gemm_tile_m >= 1 && eff.gemm_tile_n >= 1 && eff.gemm_tile_k >= 1,
                   "GEMM tile sizes must be >= 1");
  return AxisTileEfficiency(shape.m, eff.gemm_tile_m) *
         AxisTileEfficiency(shape.n, eff.gemm_tile_n) *
         AxisTileEfficiency(shape.k, eff.gemm_tile_k);
}

double ComputeSeconds(const graph::Op& op, const config::GpuSpec& gpu, const ComputeEfficiency& eff,
                      MathPrecision precision) {
  TRAINSCOPE_CHECK(!op.IsComm(), "ComputeSeconds called on communication op " + op.name);
  TRAINSCOPE_CHECK(op.flops >= 0 && op.bytes >= 0, "negative FLOPs or bytes in op " + op.name);
  TRAINSCOPE_CHECK(IsFraction(eff.bf16_gemm_efficiency) && IsFraction(eff.fp8_gemm_efficiency) &&
                       IsFraction(eff.fused_kernel_efficiency) && IsFraction(eff.memory_efficiency),
                   "compute efficiencies must lie in (0, 1]");
  // Roofline: the kernel is bound by whichever of its FLOPs and its HBM traffic takes longer.
  double flop_seconds = 0;
  if (op.flops > 0) {
    flop_seconds = static_cast<double>(op.flops) / AchievedFlopsPerSecond(op, gpu, eff, precision);
  }
  double memory_seconds = 0;
  if (op.bytes > 0) {
    RequirePositiveRate(gpu.hbm_bytes_per_second, gpu, "hbm_bytes_per_second");
    memory_seconds =
        static_cast<double>(op.bytes) / (gpu.hbm_bytes_per_second * eff.memory_efficiency);
  }
  return std::max(flop_seconds, memory_seconds);
}

}  // namespace trainscope::cost
