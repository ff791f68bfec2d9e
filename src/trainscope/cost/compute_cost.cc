#include "trainscope/cost/compute_cost.h"

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "trainscope/cost/attention_efficiency.h"
#include "trainscope/cost/gemm_efficiency.h"
#include "trainscope/error.h"
#include "trainscope/units.h"

namespace trainscope::cost {
namespace {

constexpr std::array<std::pair<std::string_view, GdnBackend>, 2> kGdnBackendNames = {{
    {"fla", GdnBackend::kFla},
    {"flashqla", GdnBackend::kFlashQla},
}};

constexpr std::array<std::pair<std::string_view, GemmShapeModel>, 2> kGemmShapeModelNames = {{
    {"table", GemmShapeModel::kTable},
    {"tile", GemmShapeModel::kTile},
}};

// Useful fraction of the tiles covering one axis of `extent` elements. When the axis is the sum
// over `groups` groups (a grouped GEMM's token axis), each group that receives tokens is padded
// to the tile on its own; the tokens are spread evenly over min(groups, extent) groups.
double AxisTileEfficiency(int64_t extent, int64_t tile, int64_t groups) {
  const int64_t busy_groups = std::min(groups, extent);
  const int64_t padded = busy_groups * RoundUp(CeilDiv(extent, busy_groups), tile);
  return static_cast<double>(extent) / static_cast<double>(padded);
}

bool IsFraction(double value) { return value > 0 && value <= 1; }

bool AllFractions(const ComputeEfficiency& eff) {
  return IsFraction(eff.bf16_gemm_efficiency) && IsFraction(eff.fp8_gemm_efficiency) &&
         IsFraction(eff.fp4_over_fp8_gemm_efficiency) &&
         IsFraction(eff.fp4_over_fp8_gemm_efficiency_ultra) &&
         IsFraction(eff.fused_kernel_efficiency) && IsFraction(eff.memory_efficiency) &&
         IsFraction(eff.fp8_cast_memory_efficiency) &&
         IsFraction(eff.attention_forward_efficiency) &&
         IsFraction(eff.attention_backward_efficiency) &&
         IsFraction(eff.gdn_fla_forward_efficiency) &&
         IsFraction(eff.gdn_fla_backward_efficiency) &&
         IsFraction(eff.gdn_flashqla_forward_efficiency) &&
         IsFraction(eff.gdn_flashqla_backward_efficiency);
}

// Throws InputError when the GPU preset has no figure for a rate the op needs.
void RequirePositiveRate(double rate, const config::GpuSpec& gpu, const char* key) {
  if (rate <= 0) {
    throw InputError("gpu " + gpu.name + ": " + key +
                     ": the preset has no figure for this rate (got 0, expected > 0; set it in "
                     "the hardware profile)");
  }
}

// Whether `op` is a sliding-window attention kernel priced by the tiles it visits.
bool WindowTiled(const graph::Op& op, const ComputeEfficiency& eff) {
  return eff.attention_window_tiles && op.attention_window > 0 && op.attention_query_rows > 0 &&
         op.attention_pairs > 0;
}

// What the GPU generation changes in an attention kernel's throughput: its head-dim factor and,
// for a sliding-window kernel, its tile factor (both measured per generation), and the
// generation's own factor (cost/attention_efficiency.h); 1 for other kernels.
double AttentionGpuFactor(const graph::Op& op, KernelClass kernel_class, const config::GpuSpec& gpu,
                          const ComputeEfficiency& eff) {
  if (kernel_class != KernelClass::kAttentionForward &&
      kernel_class != KernelClass::kAttentionBackward) {
    return 1.0;
  }
  const bool forward = kernel_class == KernelClass::kAttentionForward;
  const AttentionArch arch = AttentionArchOf(gpu.compute_capability);
  const double head_dim =
      eff.attention_head_dim && op.attention_qk_head_dim > 0 && op.attention_v_head_dim > 0
          ? AttentionHeadDimFactor(op.attention_qk_head_dim, op.attention_v_head_dim, forward, arch)
          : 1.0;
  double window = 1.0;
  if (WindowTiled(op, eff)) {
    window = WindowKernelWalksCausalTriangle(arch, op.attention_precision, forward) &&
                     op.attention_sequence_tokens > 0
                 ? AttentionUnskippedWindowFactor(op.attention_pairs, op.attention_query_rows,
                                                  op.attention_sequence_tokens, forward,
                                                  eff.attention_occupancy)
                 : AttentionWindowFactor(op.attention_pairs, op.attention_query_rows,
                                         op.attention_window, arch, forward);
  }
  const double fp8 =
      WindowTiled(op, eff)
          ? AttentionWindowFp8Factor(arch, op.attention_precision, forward)
          : AttentionFp8Factor(arch, op.attention_precision,
                               IsMlaHeadDims(op.attention_qk_head_dim, op.attention_v_head_dim),
                               forward);
  return head_dim * window * AttentionArchFactor(arch, forward) *
         AttentionKernelFactor(op.attention_kernel, gpu.compute_capability, forward) * fp8;
}

// Achieved FLOP/s for `op`: the tensor-core peak of its kernel class times its efficiency.
double AchievedFlopsPerSecond(const graph::Op& op, const config::GpuSpec& gpu,
                              const ComputeEfficiency& eff, MathPrecision precision,
                              GdnBackend gdn_backend) {
  const auto scale_entry = eff.gpu_throughput_scale.find(gpu.name);
  const double scale = scale_entry == eff.gpu_throughput_scale.end() ? 1.0 : scale_entry->second;
  TRAINSCOPE_CHECK(scale > 0 && scale <= 2, "gpu_throughput_scale must lie in (0, 2]");
  const KernelClass kernel_class = ClassifyKernel(op);
  if (kernel_class != KernelClass::kGemm) {
    const double efficiency = scale * KernelEfficiency(op, eff, precision, gdn_backend) *
                              AttentionGpuFactor(op, kernel_class, gpu, eff);
    RequirePositiveRate(gpu.bf16_flops_per_second, gpu, "bf16_flops_per_second");
    const double peak_fraction = kernel_class == KernelClass::kTorchFp32 ? kTf32PerBf16Peak : 1.0;
    return gpu.bf16_flops_per_second * peak_fraction * efficiency;
  }
  // The shape factor may exceed 1 (a shape faster than the plateau); the kernel never beats peak.
  const double shaped =
      std::min(1.0, KernelEfficiency(op, eff, precision, gdn_backend) *
                        GemmShapeFactor(op.gemm, op.role.pass, gpu, eff, precision));
  if (precision == MathPrecision::kFp8) {
    RequirePositiveRate(gpu.fp8_flops_per_second, gpu, "fp8_flops_per_second");
    return gpu.fp8_flops_per_second * scale * shaped;
  }
  if (precision == MathPrecision::kFp4) {
    RequirePositiveRate(gpu.fp4_flops_per_second, gpu, "fp4_flops_per_second");
    return gpu.fp4_flops_per_second * scale *
           std::min(1.0, shaped * Fp4OverFp8Efficiency(gpu, eff));
  }
  RequirePositiveRate(gpu.bf16_flops_per_second, gpu, "bf16_flops_per_second");
  return gpu.bf16_flops_per_second * scale * shaped;
}

}  // namespace

double Fp4OverFp8Efficiency(const config::GpuSpec& gpu, const ComputeEfficiency& eff) {
  return AttentionArchOf(gpu.compute_capability) == AttentionArch::kBlackwellUltra
             ? eff.fp4_over_fp8_gemm_efficiency_ultra
             : eff.fp4_over_fp8_gemm_efficiency;
}

std::optional<GdnBackend> GdnBackendFromName(std::string_view name) {
  for (const auto& [known, backend] : kGdnBackendNames) {
    if (known == name) return backend;
  }
  return std::nullopt;
}

std::string_view GdnBackendName(GdnBackend backend) {
  for (const auto& [name, known] : kGdnBackendNames) {
    if (known == backend) return name;
  }
  TRAINSCOPE_CHECK(false, "GdnBackend without a name");
  return {};
}

std::optional<GemmShapeModel> GemmShapeModelFromName(std::string_view name) {
  for (const auto& [known, model] : kGemmShapeModelNames) {
    if (known == name) return model;
  }
  return std::nullopt;
}

std::string_view GemmShapeModelName(GemmShapeModel model) {
  for (const auto& [name, known] : kGemmShapeModelNames) {
    if (known == model) return name;
  }
  TRAINSCOPE_CHECK(false, "GemmShapeModel without a name");
  return {};
}

KernelClass ClassifyKernel(const graph::Op& op) {
  TRAINSCOPE_CHECK(!op.IsComm(), "ClassifyKernel called on communication op " + op.name);
  if (op.gemm.m > 0) return KernelClass::kGemm;
  // Roles set by graph/attention_ops.cc (CoreAttention) and graph/gdn_ops.cc (GdnCore).
  const bool backward = op.role.pass != graph::OpPass::kForward;
  switch (op.role.kind) {
    case graph::OpKind::kAttentionCore:
      return backward ? KernelClass::kAttentionBackward : KernelClass::kAttentionForward;
    case graph::OpKind::kGdnKernel:
      return backward ? KernelClass::kGdnBackward : KernelClass::kGdnForward;
    case graph::OpKind::kGdnTorchKernel:
      return KernelClass::kTorchFp32;
    case graph::OpKind::kFp8Quantize:
    case graph::OpKind::kFp8ScaleUpdate:
      return KernelClass::kFp8Cast;
    default:
      return KernelClass::kFused;
  }
}

namespace {

// The attention kernel's occupancy factor on its plateau: 1 when switched off or unknown, and for
// a sliding-window kernel priced by its tiles (AttentionGpuFactor).
double AttentionShape(const graph::Op& op, const ComputeEfficiency& eff, bool forward) {
  return eff.attention_occupancy && op.attention_pairs > 0 && !WindowTiled(op, eff)
             ? AttentionOccupancy(op.attention_pairs, forward)
             : 1.0;
}

}  // namespace

double KernelEfficiency(const graph::Op& op, const ComputeEfficiency& eff, MathPrecision precision,
                        GdnBackend gdn_backend) {
  const bool flashqla = gdn_backend == GdnBackend::kFlashQla;
  switch (ClassifyKernel(op)) {
    case KernelClass::kGemm:
      switch (precision) {
        case MathPrecision::kBf16:
          return eff.bf16_gemm_efficiency;
        case MathPrecision::kFp8:
        case MathPrecision::kFp4:  // times Fp4OverFp8Efficiency in AchievedFlopsPerSecond
          return eff.fp8_gemm_efficiency;
      }
      break;
    case KernelClass::kAttentionForward:
      return eff.attention_forward_efficiency * AttentionShape(op, eff, /*forward=*/true);
    case KernelClass::kAttentionBackward:
      return eff.attention_backward_efficiency * AttentionShape(op, eff, /*forward=*/false);
    case KernelClass::kGdnForward:
      return flashqla ? eff.gdn_flashqla_forward_efficiency : eff.gdn_fla_forward_efficiency;
    case KernelClass::kGdnBackward:
      return flashqla ? eff.gdn_flashqla_backward_efficiency : eff.gdn_fla_backward_efficiency;
    case KernelClass::kFused:
    case KernelClass::kTorchFp32:
    case KernelClass::kFp8Cast:
      return eff.fused_kernel_efficiency;
  }
  TRAINSCOPE_CHECK(false, "unhandled KernelClass");
  return 0;
}

double GemmTileEfficiency(const graph::GemmShape& shape, const ComputeEfficiency& eff) {
  TRAINSCOPE_CHECK(shape.m >= 1 && shape.n >= 1 && shape.k >= 1, "GEMM extents must be >= 1");
  TRAINSCOPE_CHECK(shape.groups >= 1, "GEMM groups must be >= 1");
  TRAINSCOPE_CHECK(eff.gemm_tile_m >= 1 && eff.gemm_tile_n >= 1 && eff.gemm_tile_k >= 1,
                   "GEMM tile sizes must be >= 1");
  const bool grouped_m = shape.grouped_axis == graph::GroupedAxis::kM;
  return AxisTileEfficiency(shape.m, eff.gemm_tile_m, grouped_m ? shape.groups : 1) *
         AxisTileEfficiency(shape.n, eff.gemm_tile_n, 1) *
         AxisTileEfficiency(shape.k, eff.gemm_tile_k, grouped_m ? 1 : shape.groups);
}

bool HasNonTnFp8Gemm(const config::GpuSpec& gpu) {
  const int major = gpu.compute_capability.major;
  return (major >= 10 && major < 12) || major >= 13;
}

double ComputeSeconds(const graph::Op& op, const config::GpuSpec& gpu, const ComputeEfficiency& eff,
                      MathPrecision precision, GdnBackend gdn_backend) {
  TRAINSCOPE_CHECK(!op.IsComm(), "ComputeSeconds called on communication op " + op.name);
  TRAINSCOPE_CHECK(op.flops >= 0 && op.bytes >= 0, "negative FLOPs or bytes in op " + op.name);
  TRAINSCOPE_CHECK(op.fp8_columnwise_bytes >= 0 && op.fp8_columnwise_bytes <= op.bytes,
                   "FP8 column-wise bytes outside [0, bytes] in op " + op.name);
  TRAINSCOPE_CHECK(AllFractions(eff), "compute efficiencies must lie in (0, 1]");
  // Roofline: the kernel is bound by whichever of its FLOPs and its HBM traffic takes longer.
  double flop_seconds = 0;
  if (op.flops > 0) {
    flop_seconds = static_cast<double>(op.flops) /
                   AchievedFlopsPerSecond(op, gpu, eff, precision, gdn_backend);
  }
  // FP8 casts: a GPU with non-TN FP8 GEMMs writes no separate column-wise copy.
  const bool fp8_cast = ClassifyKernel(op) == KernelClass::kFp8Cast;
  const int64_t bytes =
      fp8_cast && HasNonTnFp8Gemm(gpu) ? op.bytes - op.fp8_columnwise_bytes : op.bytes;
  double memory_seconds = 0;
  if (bytes > 0) {
    RequirePositiveRate(gpu.hbm_bytes_per_second, gpu, "hbm_bytes_per_second");
    const double efficiency = fp8_cast ? eff.fp8_cast_memory_efficiency : eff.memory_efficiency;
    memory_seconds = static_cast<double>(bytes) / (gpu.hbm_bytes_per_second * efficiency);
  }
  return std::max(flop_seconds, memory_seconds);
}

}  // namespace trainscope::cost
