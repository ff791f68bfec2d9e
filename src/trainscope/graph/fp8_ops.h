// The FP8 overhead kernels Transformer Engine runs around each FP8 GEMM of a decoder layer:
// the quantization (cast) of each GEMM operand from bf16, its amax pass, its column-wise copy for
// the backward GEMMs, the MXFP8 scale swizzle, and delayed scaling's amax-history update. Pure
// functions returning plain values; docs/cost-model.md ("FP8 overhead kernels") gives the
// formulas and their TransformerEngine / Megatron-LM sources.
#ifndef TRAINSCOPE_GRAPH_FP8_OPS_H_
#define TRAINSCOPE_GRAPH_FP8_OPS_H_

#include <cstdint>
#include <string>

#include "trainscope/config/training_config.h"
#include "trainscope/graph/op.h"

namespace trainscope::graph {

// How the decoder layers' TE GEMMs run in FP8 (or NVFP4: recipe kNvfp4 under --fp4-format),
// derived from the training configuration.
struct Fp8Settings {
  bool enabled = false;  // --fp8-format set
  config::Fp8Recipe recipe = config::Fp8Recipe::kDelayed;
  // Weights are quantized on the first micro-batch of each model chunk only and reused after
  // (TE's FP8 weight workspace, is_first_microbatch); false with
  // --disable-parameter-transpose-cache, when every forward quantizes them again.
  bool cache_weights = true;
  // --fp8-param-gather (--fp4-param-gather under NVFP4): the weights are stored quantized, so
  // no forward quantizes them.
  bool weights_in_fp8 = false;
  // The core attention runs in FP8 (--fp8-dot-product-attention under a recipe with fp8_dpa).
  bool dot_product_attention = false;
  // The LM head's output layer is a quantized TE linear (--fp8-output-proj under MXFP8);
  // otherwise it is Megatron's BF16 ColumnParallelLinear.
  bool output_proj = false;
  friend bool operator==(const Fp8Settings&, const Fp8Settings&) = default;
};

[[nodiscard]] Fp8Settings MakeFp8Settings(const config::TrainingConfig& training);

// The format of the core attention under `fp8`: FP8 with the recipe's scaling when
// dot_product_attention is on, BF16 otherwise.
[[nodiscard]] AttentionPrecision AttentionPrecisionOf(const Fp8Settings& fp8);

// Which copies of a quantized tensor a kernel writes: row-wise (the operand's own layout) and
// column-wise (the layout its transpose needs in the backward GEMMs).
struct Fp8Usage {
  bool rowwise = true;
  bool columnwise = false;
};

// Bytes and launches of quantizing one bf16 tensor of `num_elements` elements under `recipe`.
// `columnwise_bytes` is the part of `bytes` that is the column-wise FP8 copy of a per-tensor
// recipe (delayed, tensorwise): a GPU whose FP8 GEMMs accept non-TN layouts (compute capability
// 10.x and 13+, TE is_non_tn_fp8_gemm_supported) serves both usages from one buffer and does not
// write it.
struct Fp8QuantizeTraffic {
  int64_t bytes = 0;
  int64_t columnwise_bytes = 0;
  int64_t num_launches = 0;
  friend bool operator==(const Fp8QuantizeTraffic&, const Fp8QuantizeTraffic&) = default;
};

// Traffic of quantizing `num_tensors` bf16 tensors of `num_elements` elements each (an expert's
// weights: one per local expert), per recipe (per element E, one tensor; r, c = 1 per usage):
//   delayed:    read 2E (amax fused into the cast), write E·(r + c), scale_inv 4 B;  1 launch
//   tensorwise: amax pass read 2E, scale 12 B, cast read 2E, write E·(r + c) + 4 B;  3 launches
//   blockwise:  read 2E, write E·(r + c) + fp32 scales (4 B per 128 elements per usage for
//               1x128 activation blocks, per 128x128 = 16384 for weights);          1 launch
//   mxfp8:      read 2E, write E·(r + c) + E8M0 scales (1 B per 32 elements per usage); 1 launch
//   nvfp4:      amax pass read 2E (+ 2E for the RHT amax of a non-weight column-wise copy), cast
//               read 2E, write E·(r + c)/2 + E4M3 scales (1 B per 16 elements per usage, per
//               16x16 block for weights) + 4 B global scale; 2 launches (3 with the RHT amax)
//   rowwise:    torchao's axis-wise casts, one per usage (torch.compile'd): the row-wise one
//               reduces along the contiguous dim in the kernel that casts, read 2E, write E,
//               1 launch; the column-wise one reduces across rows first, amax read 2E, then cast
//               read 2E, write E, 2 launches (the fp32 scale per row or column, 4 B per 512 or
//               more elements, is not counted)
// `weight` selects the 128x128 blockwise blocks. Precondition (checked): counts >= 0, at least
// one usage.
[[nodiscard]] Fp8QuantizeTraffic QuantizeTraffic(config::Fp8Recipe recipe, int64_t num_elements,
                                                 Fp8Usage usage, bool weight,
                                                 int64_t num_tensors = 1);

// A kFp8Quantize compute op (phase, layer and pass are set by the caller's sink) named `name`,
// with `role.operand` kept and `role.kind` set, and bytes, launches and fp8_columnwise_bytes
// from QuantizeTraffic.
[[nodiscard]] Op Fp8QuantizeOp(std::string name, OpRole role, config::Fp8Recipe recipe,
                               int64_t num_elements, Fp8Usage usage, int64_t num_tensors = 1);

// MXFP8 and NVFP4: TE's general_gemm swizzles the block scales of both operands into the layout the
// tensor cores read (transformer_engine/pytorch/csrc/extensions/gemm.cpp, swizzle_scales_for_gemm):
// read and write 1 B per 32 (MXFP8) or 16 (NVFP4) elements of each operand; 2 launches. Zero
// traffic for other
// recipes (a per-tensor scale_inv or fp32 block scales are read by the GEMM as they are).
[[nodiscard]] Fp8QuantizeTraffic ScaleSwizzleTraffic(config::Fp8Recipe recipe,
                                                     int64_t operand_a_elements,
                                                     int64_t operand_b_elements);

// torchao's row-wise recipe runs its grad_input and grad_weight GEMMs without fast accumulation
// on cuBLAS's tensor-wise kernel with unit scales and rescales the bf16 output afterwards by the
// outer product of the two operands' row and column scales (torchao/float8/float8_ops.py
// addmm_float8_unwrapped, post_inverse_scale; pytorch/ao#1325, #2184): one compiled element-wise
// kernel per GEMM, read and write 2 B per output element. Zero traffic for other recipes.
[[nodiscard]] Fp8QuantizeTraffic OutputRescaleTraffic(config::Fp8Recipe recipe,
                                                      int64_t output_elements);

// Delayed scaling's amax-history and scale update at the end of one forward or backward pass
// of a model chunk (TE quantization.py, reduce_and_update_fp8_tensors: torch.cat of the amaxes,
// tex.fused_amax_and_scale_update_after_reduction): `num_quantized_tensors` amaxes, history
// length 1 (Megatron's fp8_amax_history_len default). 2 launches.
[[nodiscard]] Fp8QuantizeTraffic ScaleUpdateTraffic(int64_t num_quantized_tensors);

}  // namespace trainscope::graph

#endif  // TRAINSCOPE_GRAPH_FP8_OPS_H_
