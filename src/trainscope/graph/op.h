// One operation of a training step on one rank: a compute kernel (with FLOPs and bytes moved)
// or a collective / point-to-point transfer (with group, group size and message size). Plain
// value; the step graph owns a vector of them and refers to dependencies by id.
//
// Message-size convention (nccl-tests doc/PERFORMANCE.md, used everywhere): all_gather and
// reduce_scatter count the full (unsharded) buffer, all_reduce the buffer, all_to_all the bytes
// one rank sends in total, send/recv the bytes sent.
#ifndef TRAINSCOPE_GRAPH_OP_H_
#define TRAINSCOPE_GRAPH_OP_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/config/rank_mapping.h"

namespace trainscope::graph {

enum class Phase { kForward, kBackward, kRecompute, kGradSync, kOptimizer };

enum class Collective {
  kNone,  // a compute op
  kAllGather,
  kReduceScatter,
  kAllReduce,
  kAllToAll,
  kSend,
  kRecv,
  kBroadcast,
};

// What an op computes or moves. Consumers (cost/, sim/, report/) branch on roles, never on the
// op's name, which is for display and export only.
enum class OpKind {
  kUnset,
  kGemm,            // dense or grouped GEMM; OpPass tells forward, dgrad or wgrad
  kAttentionCore,   // flash / fused core attention
  kGdnKernel,       // chunked gated delta rule (FLA or FlashQLA kernels)
  kGdnTorchKernel,  // the torch-native chunked delta rule of --deterministic-mode (fp32)
  kNorm,            // RMSNorm and its variants
  kElementwise,     // activations, RoPE, gates, GDN conv1d and gates
  kRouterTopK,      // MoE router softmax + top-k
  kPermute,         // MoE permute of the routed tokens
  kSortChunks,      // MoE sort / unsort of the received rows by local expert
  kUnpermute,       // MoE unpermute (scatter-add back to token order)
  kEmbedding,       // word-embedding lookup and its wgrad
  kLoss,            // cross-entropy
  kOptimizer,       // Adam or SGD step on the GPU
  kHostTransfer,    // pinned D2H / H2D copy of the CPU-offloaded optimizer (grads down, params up)
  kCpuOptimizer,    // CPU Adam of the offloaded share; `bytes` = PCIe bytes it overlaps
  kActivationOffload,  // --cpu-offloading: the pinned D2H copy of one decoder layer's saved
                       // activations after its forward (OpPass::kForward) and their H2D reload
                       // before its backward (OpPass::kBackward), on a copy stream; the bytes
                       // are the layer's activations (cost::OffloadedLayerBytes)
  kFp8Quantize,        // FP8 cast of one GEMM operand (amax pass, column-wise copy, scales) or the
                       // MXFP8 scale swizzle of one GEMM; Op::role.operand says which (fp8_ops.h)
  kFp8ScaleUpdate,     // delayed scaling's amax-history and scale update after a pass
  kHostSync,           // host code that reads GPU values back (.item(), a GPU tensor as a slice
                       // bound, a D2H copy it waits on): Op::num_host_syncs blocking round trips
  kCollective,         // every communication op
};

// The part of the model or step an op belongs to. FamilyName() maps it to the breakdown key.
enum class OpBlock {
  kUnset,
  kInput,      // input / label broadcasts
  kEmbedding,  // word embedding (and its grad all-reduce)
  kAttention,
  kGdn,
  kMlp,
  kMoeRouter,  // the MoE pre-MLP norm, router, top-k, load-balancing and expert-bias reductions
  kMoeRouted,  // token dispatch and combine, permutes, routed experts
  kMoeShared,  // the shared expert and its gate
  kLmHead,     // final norm, output layer, cross-entropy
  kMtp,        // MTP embedding, norms, eh_proj and LM head (its decoder layer has its own blocks)
  kVision,     // the vision tower: patch embedding, ViT blocks, merger
  kPipeline,   // pipeline send / recv
  kDataParallel,        // DDP gradient / parameter buckets over the (dense) DP group
  kExpertDataParallel,  // the same over the expert-DP group
  kTensorParallel,      // the replicated-gradient TP all-reduce
  kOptimizer,           // grad-norm reductions and the optimizer step
  kFsdp,                // Megatron-FSDP parameter gathers and gradient reductions
  kFp8Scaling,          // FP8 scaling state outside the layers (delayed scaling's scale update)
  kActivationOffload,   // --cpu-offloading copies of a layer's saved activations
};

// Which module of its block an op belongs to, where consumers need to tell them apart.
enum class OpModule {
  kNone,
  kPreNorm,       // the RMSNorm on the block input (input / pre-MLP / final layernorm)
  kColumnLinear,  // the column-parallel linear (qkv, in_proj, fc1, output layer, eh_proj)
  kRowLinear,     // the row-parallel linear (proj, out_proj, fc2)
  kOutputGate,    // a sigmoid output gate after the block's last linear
  kResidualAdd,   // the residual add after the block (bias-dropout-add) and, backward, the sum
                  // of the block input's two gradients
};

// The pass of a kernel: forward (also when replayed by recompute) or its backward; GEMM
// backwards split into dgrad and wgrad. Collectives: forward or backward direction.
enum class OpPass { kForward, kBackward, kDgrad, kWgrad };

// Why a communication op exists.
enum class CommPurpose {
  kNone,             // compute ops
  kBroadcast,        // input tokens / positions / labels / loss mask to the TP group
  kSpGather,         // sequence-parallel all-gather of an activation or its gradient
  kSpScatter,        // sequence-parallel reduce-scatter
  kTpReduce,         // TP all-reduce of an activation or its gradient (no SP)
  kTpGather,         // TP last-dimension gather (MTP eh_proj output)
  kHeadGather,       // attention's mixed-QKV gather when t exceeds the KV heads (and its RS)
  kLossReduce,       // vocab-parallel cross-entropy all-reduces (max, target logit, exp sum)
  kCpExchange,       // context-parallel ring send / recv
  kCpGather,         // context-parallel K/V all-gather and dK/dV reduce-scatter
  kCpAllToAll,       // context-parallel head/sequence all-to-alls (attention and GDN)
  kAuxLoss,          // MoE load-balancing statistics all-reduce
  kEpTokenCounts,    // MoE alltoall dispatcher's token-count (metadata) all-gather
  kEpDispatch,       // MoE token dispatch (all-to-all or all-gather) and its backward
  kEpDispatchProbs,  // routing probs / routing map that travel with the dispatched tokens
  kEpCombine,        // MoE token combine (all-to-all or reduce-scatter) and its backward
  kEpFlexDispatch,   // DeepEP / HybridEP dispatch (custom kernel)
  kEpFlexCombine,    // DeepEP / HybridEP combine (custom kernel)
  kPipeline,         // pipeline send / recv
  kFsdpGather,       // Megatron-FSDP parameter all-gather
  kFsdpReduce,       // Megatron-FSDP gradient reduce-scatter / all-reduce
  kGradBucket,       // DDP gradient reduction of one bucket
  kParamBucket,      // distributed optimizer's parameter all-gather of one bucket
  kReplicatedGrad,   // TP all-reduce of replicated (norm, router) gradients
  kEmbeddingGrad,    // shared word-embedding gradient all-reduce
  kExpertBias,       // MoE expert-bias token-count all-reduce
  kGradNorm,         // grad-norm all-reduce
};

// The GEMM operand an FP8 overhead op (OpKind::kFp8Quantize) works on.
enum class Fp8Operand {
  kNone,          // not an FP8 quantize op
  kInput,         // the forward input (activation), row- and column-wise
  kWeight,        // the weight, quantized again by every forward (no FP8 weight cache)
  kCachedWeight,  // the weight, quantized on the first micro-batch of its chunk only
  kGradOutput,    // the output gradient in the backward, row- and column-wise
  kGemmScales,    // the MXFP8 scale swizzle of both operands of one GEMM
  kGemmOutput,    // torchao row-wise: the rescale of a backward GEMM's output by the row scales
};

// The number format a core-attention kernel computes in (--fp8-dot-product-attention): BF16, FP8
// with per-tensor scales (the delayed and tensorwise recipes) or MXFP8.
enum class AttentionPrecision { kBf16, kFp8PerTensor, kMxfp8 };

// The library a core-attention kernel comes from: Transformer Engine's fused attention (cuDNN;
// Megatron-Core's frameworks) or PyTorch's F.scaled_dot_product_attention, whose flash backend is
// FlashAttention-2 (torchtitan).
enum class AttentionKernel { kTeFused, kTorchSdpaFlash };
// A sliding-window attention kernel's band: keys per query, the query rows it tiles and the
// tokens of the sequence each row belongs to (Op::attention_window, Op::attention_query_rows,
// Op::attention_sequence_tokens); zeros for causal or full attention.
struct AttentionBand {
  int64_t window = 0;
  int64_t query_rows = 0;
  int64_t sequence_tokens = 0;
};

// What an op is, set by the graph builders next to its name.
struct OpRole {
  OpKind kind = OpKind::kUnset;
  OpBlock block = OpBlock::kUnset;
  OpModule module = OpModule::kNone;
  OpPass pass = OpPass::kForward;
  CommPurpose purpose = CommPurpose::kNone;
  Fp8Operand operand = Fp8Operand::kNone;
  friend bool operator==(const OpRole&, const OpRole&) = default;
};

// The extent of a grouped GEMM that holds the tokens and is summed over the groups: m for the
// forward and dgrad GEMMs, k for wgrad (graph/op_sink.h). Ignored when groups == 1.
enum class GroupedAxis { kM, kK };

struct GemmShape {
  int64_t m = 0;       // rows of the activation (tokens)
  int64_t n = 0;       // output features
  int64_t k = 0;       // input features (reduction)
  int64_t groups = 1;  // grouped GEMM: number of local experts sharing the shape
  // Which of m and k is the sum of the per-group token counts (groups > 1).
  GroupedAxis grouped_axis = GroupedAxis::kM;
  friend bool operator==(const GemmShape&, const GemmShape&) = default;
};

struct Op {
  int64_t id = 0;
  Phase phase = Phase::kForward;
  int64_t micro_batch = -1;  // -1 for once-per-step ops
  int64_t model_chunk = 0;
  int64_t layer = -1;  // global decoder layer index; -1 outside decoder layers
  std::string name;    // display and export only, e.g. "attention.linear_qkv"
  OpRole role;         // what the op is; consumers branch on this, never on `name`

  // Compute ops (collective == kNone).
  int64_t flops = 0;
  int64_t bytes = 0;  // bytes read + written by the kernel
  GemmShape gemm;     // set for GEMMs (m == 0 otherwise)
  // GEMMs: true when it runs in the run's FP8 or FP4 recipe (a Transformer Engine linear of a
  // layer under the quantization autocast), false when it stays BF16 (the MoE router, the LM
  // head's output layer) or the run has no FP8/FP4. Selects the tensor-core peak (cost/).
  bool gemm_quantized = false;
  // OpKind::kAttentionCore: (query, key) pairs the kernel computes, summed over its batch and
  // local heads, after the causal or window mask (b·h·Σ keys per query); 0 otherwise. Sets the
  // kernel's occupancy (cost/attention_efficiency.h).
  int64_t attention_pairs = 0;
  // OpKind::kAttentionCore: the kernel's query/key and value head dims (0 otherwise); they scale
  // its throughput against head dim 128 (cost/attention_efficiency.h AttentionHeadDimFactor).
  int64_t attention_qk_head_dim = 0;
  int64_t attention_v_head_dim = 0;
  // OpKind::kAttentionCore of a sliding-window layer: keys each query attends (the band width
  // w), and the query rows the kernel tiles (b·h_local·s_local); 0 for causal or full attention.
  // They set the tiles the kernel visits (cost/attention_efficiency.h AttentionWindowFactor).
  int64_t attention_window = 0;
  int64_t attention_query_rows = 0;
  // OpKind::kAttentionCore of a sliding-window layer: the tokens s of the sequence a query row
  // belongs to, so the causal triangle over it is query_rows·s/2 pairs (a kernel that does not
  // skip the tiles outside the band computes those; cost/attention_efficiency.h
  // AttentionUnskippedWindowFactor); 0 otherwise.
  int64_t attention_sequence_tokens = 0;
  AttentionPrecision attention_precision = AttentionPrecision::kBf16;
  AttentionKernel attention_kernel = AttentionKernel::kTeFused;
  // Host launches the op issues, in units of one eager PyTorch kernel launch (graph/op_sink.h
  // sets them per op kind; docs/cost-model.md "Launch and host overhead"). 0 for communication
  // ops (their host cost is inside their latency) and host-side ops.
  int64_t num_launches = 0;
  // Blocking device-to-host round trips the op's host code waits on (OpKind::kHostSync): the
  // host stops issuing until the GPU has drained its queue and the value has arrived.
  int64_t num_host_syncs = 0;
  // kFp8Quantize ops: the part of `bytes` that writes a separate column-wise (transposed) FP8
  // copy, which GPUs with non-TN FP8 GEMMs do not write (cost/compute_cost.h).
  int64_t fp8_columnwise_bytes = 0;

  // Communication ops.
  Collective collective = Collective::kNone;
  config::GroupKind group = config::GroupKind::kTp;
  int64_t group_size = 1;
  int64_t message_bytes = 0;
  int64_t peer = -1;  // global peer rank for send / recv

  std::vector<int64_t> deps;  // ids of ops that must finish first

  [[nodiscard]] bool IsComm() const { return collective != Collective::kNone; }
  friend bool operator==(const Op&, const Op&) = default;
};

[[nodiscard]] std::string ToString(Phase phase);
[[nodiscard]] std::string ToString(Collective collective);
// The op family of a block as reported in the simulator's breakdown (a JSON contract key):
// "input", "embedding", "attention", "gdn", "mlp", "moe" (all three MoE blocks), "lm_head",
// "mtp", "pp", "dp", "edp", "tp", "optimizer", "fsdp", "fp8"; "unknown" for kUnset.
[[nodiscard]] std::string_view FamilyName(OpBlock block);

}  // namespace trainscope::graph

#endif  // TRAINSCOPE_GRAPH_OP_H_
