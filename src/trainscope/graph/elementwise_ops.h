// Internal to the layer-op builders: the memory-bound element-wise kernels (norms, activations,
// RoPE, sigmoid gates, MoE permutes) with their per-element FLOP and byte constants
// (docs/workload.md, "Element-wise kernels"). Each helper appends to a borrowed OpSink and picks
// the pass from the sink's phase: `name` in forward and recompute, `name.backward` with twice the
// FLOPs and bytes in backward.
#ifndef TRAINSCOPE_GRAPH_ELEMENTWISE_OPS_H_
#define TRAINSCOPE_GRAPH_ELEMENTWISE_OPS_H_

#include <cstdint>
#include <string>

#include "trainscope/graph/layer_ops.h"
#include "trainscope/graph/op_sink.h"
#include "trainscope/units.h"

namespace trainscope::graph::internal {

// FLOPs and bytes (read + written) per element of a kernel's main tensor.
struct ElementwiseCost {
  int64_t flops = 0;
  int64_t bytes = 0;
};

// RMSNorm x·rsqrt(mean(x²) + ε)·w: square, accumulate, scale, weight = 4 FLOPs; read x and write
// y in bf16 (the weight and the per-row statistic are negligible).
inline constexpr ElementwiseCost kRmsNorm{.flops = 4, .bytes = 2 * kBf16Bytes};
// LayerNorm (x − mean)·rsqrt(var + ε)·w + b: mean, subtract, square-accumulate, scale, weight,
// bias ≈ 5 FLOPs (as the vision tower's); read x, write y.
inline constexpr ElementwiseCost kLayerNorm{.flops = 5, .bytes = 2 * kBf16Bytes};
// GeLU (tanh approximation, Megatron's default MLP activation): about 8 FLOPs per element (cube,
// scale, add, tanh, add, multiply); read the fc1 output, write the activation.
inline constexpr ElementwiseCost kGelu{.flops = 8, .bytes = 2 * kBf16Bytes};
// Gated RMSNorm RMSNorm(x)·silu(z) (GDN out_norm): 4 + silu 5 (neg, exp, add, div, mul) + 1
// product = 10 FLOPs; read x and z, write y.
inline constexpr ElementwiseCost kGatedRmsNorm{.flops = 10, .bytes = 3 * kBf16Bytes};
// SwiGLU per output element silu(a)·b: 5 + 1 = 6 FLOPs; read a and b, write the product.
inline constexpr ElementwiseCost kSwiGlu{.flops = 6, .bytes = 3 * kBf16Bytes};
// Expert SwiGLU also scales each row by its routing prob (activation_func_with_probs,
// experts.py): 7 FLOPs; the per-row prob read is negligible.
inline constexpr ElementwiseCost kWeightedSwiGlu{.flops = 7, .bytes = 3 * kBf16Bytes};
// x·sigmoid(g) (attention output gate): sigmoid 4 (neg, exp, add, div) + 1 = 5 FLOPs; read x and
// g, write y.
inline constexpr ElementwiseCost kSigmoidGate{.flops = 5, .bytes = 3 * kBf16Bytes};
// RoPE x·cos + rotate_half(x)·sin = 3 FLOPs per rotated element; every element is read and
// written (the pass-through part of a partial rotary is copied; cos/sin are shared by the heads).
inline constexpr ElementwiseCost kRope{.flops = 3, .bytes = 2 * kBf16Bytes};
// Residual add residual + x (Megatron's bias-dropout-add with no bias and dropout 0, which
// returns x unchanged and adds): 1 FLOP; read both, write the sum. Its backward is the autograd
// sum of the block input's two gradients (residual path and block), the same kernel.
inline constexpr ElementwiseCost kResidualAdd{.flops = 1, .bytes = 3 * kBf16Bytes};
// Row gather (permute, sort by local expert): no arithmetic, each element read and written once.
inline constexpr ElementwiseCost kRowGather{.flops = 0, .bytes = 2 * kBf16Bytes};
// Softmax max, subtract, exp, sum, divide = 5 FLOPs per logit (as the cross-entropy).
inline constexpr int64_t kSoftmaxFlops = 5;
// GDN gates per (token, value head): g = −exp(A_log)·softplus(α + dt_bias) in fp32 (add, exp,
// add, log, multiply = 5) and β = sigmoid(b) (4) = 9 FLOPs; read α and b in bf16, write g in fp32
// and β in bf16 (gdn.py, "g_and_beta").
inline constexpr ElementwiseCost kGdnGates{.flops = 9, .bytes = 3 * kBf16Bytes + kFp32Bytes};
// Backward of an element-wise kernel: gradients of the inputs from the saved inputs and the
// output gradient, counted as 2× the forward FLOPs and bytes.
inline constexpr int64_t kElementwiseBackwardFactor = 2;

// A chain of eager PyTorch kernels whose forward and backward traffic are derived kernel by
// kernel where it is used (not the 2x rule of Kernel): FLOPs, bytes and host launches per pass.
struct EagerChainCost {
  int64_t flops = 0;
  int64_t forward_bytes = 0;
  int64_t forward_launches = 0;
  int64_t backward_bytes = 0;
  int64_t backward_launches = 0;
};
// Appends `name` (forward and recompute) or `name.backward` with role `role` and `cost`; the
// backward counts 2x the FLOPs.
void EagerChain(OpSink& sink, OpRole role, const std::string& name, const EagerChainCost& cost);
// A per-element cost scaled to `elements` elements (the launches stay as they are).
[[nodiscard]] EagerChainCost Times(const EagerChainCost& per_element, int64_t elements);

// torchtitan's PyTorch modules (graph/torch_native_ops.cc; docs/cost-model.md, "torchtitan"):
// eager RMSNorm (norms.py RMSNorm: x.float(), pow, mean, rsqrt, scale, type_as, weight) over
// `elements` hidden elements, or, `compiled` by torch.compile, Inductor's one-pass kernel.
void TorchRmsNorm(OpSink& sink, OpRole role, const std::string& name, int64_t elements,
                  bool compiled);
// torchtitan's complex-number RoPE (model.py apply_rotary_emb) over `elements` q and k elements
// with `rotated_elements` of them rotated; eager, or fused under --training.compile (as the
// SwiGLU below).
void TorchRope(OpSink& sink, const LayerOpContext& c, int64_t elements, int64_t rotated_elements);
// F.silu(w1(x)) * w3(x) over `elements` FFN elements.
void TorchSwiGlu(OpSink& sink, const LayerOpContext& c, OpRole role, const std::string& name,
                 int64_t elements);
// repeat_kv: K and V expanded from the KV heads to the query heads and copied, because
// F.scaled_dot_product_attention takes equal head counts (backward: the sum over the copies).
void RepeatKv(OpSink& sink, const LayerOpContext& c);
// The loss on logits upcast to fp32 (train.py loss_fn: cross_entropy(pred.float())) over
// `tokens` x `vocab` local logits.
void TorchCrossEntropy(OpSink& sink, OpRole role, const std::string& name, int64_t tokens,
                       int64_t vocab);
// What torchtitan's op-level selective checkpointing replays in the backward of a dense
// attention + SwiGLU layer (parallelize_llama.py _apply_ac_to_transformer_block, option "op").
void TorchOpSacRecompute(OpSink& sink, const LayerOpContext& c);

// Appends the kernel `name` with role `role` and the given forward cost, or its backward (see
// the header note).
void Kernel(OpSink& sink, OpRole role, const std::string& name, int64_t flops, int64_t bytes);
// `elements` elements at `cost` per element.
void Elementwise(OpSink& sink, OpRole role, const std::string& name, int64_t elements,
                 ElementwiseCost cost);

// Tokens of a hidden-size activation between blocks: s_c·b/t under SP (the sequence shard the
// norms and residual adds run on), else s_c·b.
[[nodiscard]] int64_t ShardTokens(const LayerOpContext& c);
// The model's norm (RMSNorm, or LayerNorm for a plain GPT) over h on ShardTokens(c): the input
// norms, the final norm and MTP's enorm/hnorm. Under SP it runs before the column linear's
// all-gather. Role: kNorm, module kPreNorm in `block`.
void HiddenNorm(OpSink& sink, const LayerOpContext& c, OpBlock block, const std::string& name);
// The residual add closing a decoder layer's mixer or FFN block in `block`, on ShardTokens(c)
// tokens of h (transformer_layer.py self_attn_bda / mlp_bda): `name` forward and in recompute,
// `name.backward` (the gradient sum, same cost) backward. Role: kElementwise, module
// kResidualAdd.
void ResidualAdd(OpSink& sink, const LayerOpContext& c, OpBlock block, const std::string& name);
// SwiGLU from `rows` × 2·`width` fc1 outputs to `rows` × `width` (width already divided by the
// TP or ETP size); `weighted` for the expert activation that scales by the routing probs.
void SwiGlu(OpSink& sink, OpRole role, const std::string& name, int64_t rows, int64_t width,
            bool weighted);
// GeLU on `rows` × `width` fc1 outputs (width already divided by the TP size).
void Gelu(OpSink& sink, OpRole role, const std::string& name, int64_t rows, int64_t width);
// `rows` rows of h gathered into another order (MoE permute, sort_chunks_by_idxs); `kind` is
// kPermute or kSortChunks, block kMoeRouted.
void PermuteRows(OpSink& sink, const LayerOpContext& c, OpKind kind, const std::string& name,
                 int64_t rows);
// MoE unpermute: scatter-add `in_rows` rows of h into `out_rows` rows (one add per input
// element; read the inputs, write the outputs).
void Unpermute(OpSink& sink, const LayerOpContext& c, int64_t in_rows, int64_t out_rows);
// Shared-expert gate sigmoid(x·w)·y with w: 1×h (shared_experts.py), on the SP-sharded tokens
// after the row linear's RS.
void SharedExpertGate(OpSink& sink, const LayerOpContext& c);

}  // namespace trainscope::graph::internal

#endif  // TRAINSCOPE_GRAPH_ELEMENTWISE_OPS_H_
