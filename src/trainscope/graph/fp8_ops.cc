// FP8 overhead traffic per recipe. TransformerEngine citations are at commit d0067d0d:
// csrc/quantizer.cpp (Float8CurrentScalingQuantizer::quantize_impl: nvte_compute_amax,
// nvte_compute_scale_from_amax, nvte_quantize_v2), tensor/float8_tensor.py (column-wise data is a
// separate transpose only when non-TN FP8 GEMMs are unsupported), module/linear.py (_Linear
// forward: input quantized row- and column-wise, weight row-wise plus column-wise when the input
// needs a gradient), csrc/extensions/gemm.cpp (swizzle_scales_for_gemm).
#include "trainscope/graph/fp8_ops.h"

#include <utility>

#include "trainscope/error.h"
#include "trainscope/units.h"

namespace trainscope::graph {
namespace {

using config::Fp8Recipe;

// Per-tensor recipes keep one fp32 scale_inv per tensor (written by the cast).
constexpr int64_t kScaleInvBytes = kFp32Bytes;
// Current scaling's nvte_compute_scale_from_amax: reads the amax, writes scale and scale_inv.
constexpr int64_t kComputeScaleBytes = 3 * kFp32Bytes;
// MXFP8: one E8M0 (1 byte) scale per 32 consecutive elements (OCP MX v1.0).
constexpr int64_t kMxfp8BlockElements = 32;
constexpr int64_t kE8m0Bytes = 1;
// Blockwise FP8 (DeepSeek-V3 style): 1x128 blocks for activations and gradients, 128x128 for
// weights, one fp32 scale each (TE Float8BlockScaling).
constexpr int64_t kBlockwiseActivationBlockElements = 128;
constexpr int64_t kBlockwiseWeightBlockElements = 128 * 128;
// NVFP4 (TE NVFP4BlockScaling): E2M1 values, two per byte; one E4M3 (1 byte) scale per 16
// consecutive elements per usage, per 16x16 block for weights (2D quantization); a per-tensor
// fp32 global scale computed from an amax pass over the input (and, for the column-wise copy of
// an input or gradient, a second amax pass over its random-Hadamard-transformed values).
constexpr int64_t kNvfp4BlockElements = 16;
constexpr int64_t kNvfp4WeightBlockElements = 16 * 16;
constexpr int64_t kE4m3ScaleBytes = 1;
// Delayed scaling with history length 1: per tensor the update reads the amax, the history and
// the scale, and writes history, scale and scale_inv; torch.cat reads and writes the amax.
constexpr int64_t kScaleUpdateBytesPerTensor = 8 * kFp32Bytes;

int64_t NumUsages(Fp8Usage usage) { return (usage.rowwise ? 1 : 0) + (usage.columnwise ? 1 : 0); }

// Bytes of one tensor's scales, all usages.
int64_t ScaleBytes(Fp8Recipe recipe, int64_t num_elements, Fp8Usage usage, bool weight) {
  switch (recipe) {
    case Fp8Recipe::kDelayed:
      return kScaleInvBytes;
    case Fp8Recipe::kTensorwise:
      return kScaleInvBytes + kComputeScaleBytes;
    case Fp8Recipe::kBlockwise: {
      const int64_t block =
          weight ? kBlockwiseWeightBlockElements : kBlockwiseActivationBlockElements;
      return NumUsages(usage) * CeilDiv(num_elements, block) * kFp32Bytes;
    }
    case Fp8Recipe::kMxfp8:
      return NumUsages(usage) * CeilDiv(num_elements, kMxfp8BlockElements) * kE8m0Bytes;
    case Fp8Recipe::kNvfp4: {
      const int64_t block = weight ? kNvfp4WeightBlockElements : kNvfp4BlockElements;
      return NumUsages(usage) * CeilDiv(num_elements, block) * kE4m3ScaleBytes + kScaleInvBytes;
    }
    case Fp8Recipe::kRowwise:
      return 0;  // one fp32 scale per row of >= 512 elements: not counted (fp8_ops.h)
  }
  TRAINSCOPE_CHECK(false, "unhandled Fp8Recipe");
  return 0;
}

}  // namespace

Fp8Settings MakeFp8Settings(const config::TrainingConfig& training) {
  const config::PrecisionConfig& precision = training.precision;
  const bool fp8 = precision.fp8 != config::Fp8Format::kNone;
  // --fp4-format: TE's NVFP4BlockScaling recipe in the same places as an FP8 recipe
  // (megatron/core/fp4_utils.py get_fp4_recipe; the layers' autocast in fp8_utils.py).
  const bool fp4 = precision.fp4 != config::Fp4Format::kNone;
  return Fp8Settings{
      .enabled = fp8 || fp4,
      .recipe = fp4 ? Fp8Recipe::kNvfp4 : precision.fp8_recipe,
      .cache_weights = !precision.disable_parameter_transpose_cache &&
                       (fp4 || precision.fp8_recipe != Fp8Recipe::kRowwise),
      // MXFP8 parameters arrive from the gather in bf16 and are quantized after it
      // (param_and_grad_buffer.py _post_param_sync), once a step as the cached weight cast is.
      .weights_in_fp8 = precision.QuantizedParamGather(),
      // torchao's row-wise recipe keeps no FP8 weight across micro-batches (each forward casts
      // the weight again) and has no FP8 attention (Transformer Engine's fp8_dpa).
      .dot_product_attention = fp8 && !fp4 && precision.fp8_recipe != Fp8Recipe::kBlockwise &&
                               precision.fp8_recipe != Fp8Recipe::kRowwise &&
                               precision.fp8_dot_product_attention,
      .output_proj =
          fp8 && !fp4 && precision.fp8_recipe == Fp8Recipe::kMxfp8 && precision.fp8_output_proj};
}

AttentionPrecision AttentionPrecisionOf(const Fp8Settings& fp8) {
  if (!fp8.dot_product_attention) return AttentionPrecision::kBf16;
  return fp8.recipe == Fp8Recipe::kMxfp8 ? AttentionPrecision::kMxfp8
                                         : AttentionPrecision::kFp8PerTensor;
}

Fp8QuantizeTraffic QuantizeTraffic(Fp8Recipe recipe, int64_t num_elements, Fp8Usage usage,
                                   bool weight, int64_t num_tensors) {
  TRAINSCOPE_CHECK(num_elements >= 0 && num_tensors >= 0, "negative FP8 quantize size");
  TRAINSCOPE_CHECK(NumUsages(usage) > 0, "an FP8 quantize writes at least one usage");
  const int64_t read = kBf16Bytes * num_elements;
  if (recipe == Fp8Recipe::kNvfp4) {
    // amax pass, the RHT amax pass for an activation's or gradient's column-wise copy, then one
    // cast kernel writing every usage at half a byte per element.
    const bool rht_amax = usage.columnwise && !weight;
    const int64_t amax_reads = rht_amax ? 2 * read : read;
    const int64_t written = CeilDiv(num_elements * NumUsages(usage), 2);
    const int64_t per_tensor =
        amax_reads + read + written + ScaleBytes(recipe, num_elements, usage, weight);
    const int64_t launches = rht_amax ? 3 : 2;
    return Fp8QuantizeTraffic{.bytes = num_tensors * per_tensor,
                              .num_launches = num_tensors * launches};
  }
  if (recipe == Fp8Recipe::kRowwise) {
    // Row-wise usage: amax and cast in one kernel along the contiguous dim (read once); column-
    // wise usage: an amax pass across rows, then the cast (read twice).
    const int64_t row = usage.rowwise ? read + kFp8Bytes * num_elements : 0;
    const int64_t column = usage.columnwise ? 2 * read + kFp8Bytes * num_elements : 0;
    const int64_t launches = (usage.rowwise ? 1 : 0) + (usage.columnwise ? 2 : 0);
    return Fp8QuantizeTraffic{.bytes = num_tensors * (row + column),
                              .num_launches = num_tensors * launches};
  }
  const int64_t written = kFp8Bytes * num_elements * NumUsages(usage);
  // Current scaling reads its input twice: the amax pass, then the cast.
  const int64_t amax_read = recipe == Fp8Recipe::kTensorwise ? read : 0;
  const int64_t per_tensor =
      amax_read + read + written + ScaleBytes(recipe, num_elements, usage, weight);
  const bool per_tensor_recipe = recipe == Fp8Recipe::kDelayed || recipe == Fp8Recipe::kTensorwise;
  const int64_t columnwise = per_tensor_recipe && usage.columnwise ? kFp8Bytes * num_elements : 0;
  // Current scaling: amax, compute-scale and cast kernels; the others one fused kernel.
  const int64_t launches = recipe == Fp8Recipe::kTensorwise ? 3 : 1;
  return Fp8QuantizeTraffic{.bytes = num_tensors * per_tensor,
                            .columnwise_bytes = num_tensors * columnwise,
                            .num_launches = num_tensors * launches};
}

Op Fp8QuantizeOp(std::string name, OpRole role, Fp8Recipe recipe, int64_t num_elements,
                 Fp8Usage usage, int64_t num_tensors) {
  const bool weight =
      role.operand == Fp8Operand::kWeight || role.operand == Fp8Operand::kCachedWeight;
  const Fp8QuantizeTraffic traffic =
      QuantizeTraffic(recipe, num_elements, usage, weight, num_tensors);
  role.kind = OpKind::kFp8Quantize;
  Op op;
  op.name = std::move(name);
  op.role = role;
  op.bytes = traffic.bytes;
  op.fp8_columnwise_bytes = traffic.columnwise_bytes;
  op.num_launches = traffic.num_launches;
  return op;
}

Fp8QuantizeTraffic ScaleSwizzleTraffic(Fp8Recipe recipe, int64_t operand_a_elements,
                                       int64_t operand_b_elements) {
  if (recipe != Fp8Recipe::kMxfp8 && recipe != Fp8Recipe::kNvfp4) return {};
  // One 1-byte scale per block: 32 elements (E8M0, MXFP8) or 16 (E4M3, NVFP4's 1D layout; the
  // GEMM reads 2D weight scales expanded to it).
  const int64_t block = recipe == Fp8Recipe::kMxfp8 ? kMxfp8BlockElements : kNvfp4BlockElements;
  const int64_t scales = CeilDiv(operand_a_elements, block) + CeilDiv(operand_b_elements, block);
  return Fp8QuantizeTraffic{.bytes = 2 * scales, .num_launches = 2};
}

Fp8QuantizeTraffic OutputRescaleTraffic(Fp8Recipe recipe, int64_t output_elements) {
  TRAINSCOPE_CHECK(output_elements >= 0, "negative GEMM output size");
  if (recipe != Fp8Recipe::kRowwise) return {};
  return Fp8QuantizeTraffic{.bytes = 2 * kBf16Bytes * output_elements, .num_launches = 1};
}

Fp8QuantizeTraffic ScaleUpdateTraffic(int64_t num_quantized_tensors) {
  TRAINSCOPE_CHECK(num_quantized_tensors >= 0, "negative FP8 tensor count");
  return Fp8QuantizeTraffic{.bytes = num_quantized_tensors * kScaleUpdateBytesPerTensor,
                            .num_launches = 2};
}

}  // namespace trainscope::graph
