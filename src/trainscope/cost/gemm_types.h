// Plain value types shared by the compute cost and the shape-aware GEMM efficiency: the GEMM
// number format, the GPU family with its own kernel data, the pass of a linear layer's GEMM, its
// forward shape, and one user-measured GEMM efficiency. Names are parsed through one table per
// enum (gemm_types.cc). No state.
#ifndef TRAINSCOPE_COST_GEMM_TYPES_H_
#define TRAINSCOPE_COST_GEMM_TYPES_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace trainscope::cost {

// Number format the GEMMs run in; it selects the tensor-core peak. Attention and fused kernels
// always run at the BF16 peak (Transformer Engine keeps core attention in BF16). kFp4 (NVFP4)
// has no per-shape table of its own: its GEMMs take the FP8 shape factor.
enum class MathPrecision { kBf16, kFp8, kFp4 };

// GPU generations with their own kernel data. kOther (Ampere, Ada, unknown) has no table and uses
// the fallback formula only.
enum class GpuFamily { kOther, kHopper, kBlackwell };

// Which GEMM of a linear layer: forward (TN), dgrad (NN) or wgrad (NT into the FP32 main grad).
enum class GemmPass { kForward, kDgrad, kWgrad };

// "bf16" / "fp8" / "fp4"; "hopper" / "blackwell" / "other"; "forward" / "dgrad" / "wgrad": one
// table of names per enum. The FromName functions return nullopt for any other name.
[[nodiscard]] std::string_view MathPrecisionName(MathPrecision precision);
[[nodiscard]] std::optional<MathPrecision> MathPrecisionFromName(std::string_view name);
[[nodiscard]] std::string_view GpuFamilyName(GpuFamily family);
[[nodiscard]] std::optional<GpuFamily> GpuFamilyFromName(std::string_view name);
[[nodiscard]] std::string_view GemmPassName(GemmPass pass);
[[nodiscard]] std::optional<GemmPass> GemmPassFromName(std::string_view name);

// A GEMM in the coordinates of its linear layer's forward pass: tokens x in_features ->
// out_features. A dgrad or wgrad GEMM keeps the triple of its forward GEMM.
struct LinearShape {
  int64_t tokens = 0;
  int64_t in_features = 0;
  int64_t out_features = 0;
  friend bool operator==(const LinearShape&, const LinearShape&) = default;
};

// One GEMM efficiency measured by the user (calibration file "gemm_efficiency_points"): the
// fraction of the `precision` peak that pass `pass` of the GEMM `shape` with `groups` groups
// reached on a GPU of `family`. A grouped point (groups > 1) stands for rows per group =
// shape.tokens / groups; its in / out features are recorded but not used.
struct GemmEfficiencyPoint {
  GpuFamily family = GpuFamily::kOther;
  MathPrecision precision = MathPrecision::kBf16;
  GemmPass pass = GemmPass::kForward;
  LinearShape shape;
  int64_t groups = 1;
  double efficiency = 0;
  friend bool operator==(const GemmEfficiencyPoint&, const GemmEfficiencyPoint&) = default;
};

}  // namespace trainscope::cost

#endif  // TRAINSCOPE_COST_GEMM_TYPES_H_
