// Internal to the layer-op builders: OpSink, which collects one block's ops in emission order,
// and the tensor-parallel column/row-linear and MLP helpers that append a GEMM with its TP
// collectives (tensor_parallel/layers.py). Each helper borrows the sink and the context.
#ifndef TRAINSCOPE_GRAPH_OP_SINK_H_
#define TRAINSCOPE_GRAPH_OP_SINK_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/config/rank_mapping.h"
#include "trainscope/graph/fp8_ops.h"
#include "trainscope/graph/layer_ops.h"
#include "trainscope/graph/op.h"
#include "trainscope/units.h"

namespace trainscope::graph::internal {

// Host launches of one compute op, in units of one eager PyTorch kernel launch
// (docs/cost-model.md, "Launch and host overhead"). A Transformer Engine module call (a GEMM,
// core attention) counts 3: TE's Linear forward takes 90.5 / 99.7 µs of CPU on GH200 / GB200
// against 33.2 / 37.1 µs for torch.nn.Linear, 2.7x (NVIDIA/TransformerEngine#2053). FLA's
// chunked delta rule launches 6 Triton kernels forward (chunk_local_cumsum,
// chunk_scaled_dot_kkt_fwd, solve_tril, recompute_w_u_fwd, chunk_gated_delta_rule_fwd_h,
// chunk_fwd_o) and 9 backward (fla/ops/gated_delta_rule/chunk.py). Counted from Megatron-Core's
// code: the unfused router 6 (score function, top-k, scatter, aux-loss statistics; router.py),
// a token permutation 3 (index, sort, gather; moe_utils.py), the vocab-parallel cross-entropy 6
// (max, subtract, exp, sum, target gather, log; cross_entropy.py). Anything else one kernel.
inline int64_t KernelLaunches(const OpRole& role) {
  const bool backward = role.pass != OpPass::kForward;
  switch (role.kind) {
    case OpKind::kGemm:
    case OpKind::kAttentionCore:
      return 3;
    case OpKind::kGdnKernel:
      return backward ? 9 : 6;
    case OpKind::kRouterTopK:
    case OpKind::kLoss:
      return 6;
    case OpKind::kPermute:
    case OpKind::kUnpermute:
    case OpKind::kSortChunks:
      return 3;
    case OpKind::kHostTransfer:
    case OpKind::kCpuOptimizer:
    case OpKind::kActivationOffload:
    case OpKind::kCollective:
      return 0;
    default:
      return 1;
  }
}

// A (grouped) GEMM: one TE module call (3) plus one cuBLAS launch per extra group. TE's
// GroupedLinear issues one GEMM per local expert on multiple streams, with two torch.empty calls
// per GEMM on the host (NVIDIA/TransformerEngine#1499); on SM100 the per-call host setup of an
// 8-expert grouped GEMM measured 0.11 ms (NVIDIA/TransformerEngine PR #3134).
inline int64_t GemmLaunches(int64_t groups) { return 3 + (groups > 1 ? groups : 0); }

// Collects the ops of one block in emission order. Collectives over a group of one rank move
// nothing and are not emitted. Every op gets the role it is given; its pass is kBackward when the
// sink's phase is backward and the role does not say dgrad or wgrad; collectives get kind
// kCollective. With `fp8.enabled`, every GEMM outside the MoE router (Transformer Engine
// modules; the router is a plain torch linear) and outside a high-precision section (the LM
// head's output layer) runs quantized (Op::gemm_quantized) and is preceded by its FP8 overhead ops
// (graph/fp8_ops.h): forward, the input and (unless stored in FP8) the weight casts, each row-
// and column-wise; dgrad, the output-gradient cast; every GEMM, the MXFP8 scale swizzle.
// Recompute replays the input cast but not a cached weight's.
class OpSink {
 public:
  OpSink(Phase phase, int64_t layer, Fp8Settings fp8 = {})
      : phase_(phase), layer_(layer), fp8_(fp8) {}

  void Compute(std::string name, OpRole role, int64_t flops, int64_t bytes) {
    Op op = NewOp(std::move(name), role);
    op.flops = flops;
    op.bytes = bytes;
    ops_.push_back(std::move(op));
  }
  // A compute op whose host launches are counted by the caller (a chain of small kernels).
  void Compute(std::string name, OpRole role, int64_t flops, int64_t bytes, int64_t num_launches) {
    Compute(std::move(name), role, flops, bytes);
    ops_.back().num_launches = num_launches;
  }
  // Host code that reads GPU values back: `num_syncs` blocking device-to-host round trips with
  // `num_launches` small kernels between them, no device work worth counting.
  void HostSync(std::string name, OpBlock block, int64_t num_syncs, int64_t num_launches) {
    Compute(std::move(name), OpRole{.kind = OpKind::kHostSync, .block = block}, 0, 0, num_launches);
    ops_.back().num_host_syncs = num_syncs;
  }
  // A core-attention kernel computing `pairs` (query, key) pairs over its batch and heads, of
  // query/key head dim `qk_head_dim` and value head dim `v_head_dim`; `band` is its sliding
  // window, default none (causal or full).
  void Attention(std::string name, OpRole role, int64_t flops, int64_t bytes, int64_t pairs,
                 int64_t qk_head_dim, int64_t v_head_dim,
                 AttentionKernel kernel = AttentionKernel::kTeFused, AttentionBand band = {}) {
    Compute(std::move(name), role, flops, bytes);
    ops_.back().attention_kernel = kernel;
    ops_.back().attention_pairs = pairs;
    ops_.back().attention_qk_head_dim = qk_head_dim;
    ops_.back().attention_v_head_dim = v_head_dim;
    ops_.back().attention_window = band.window;
    ops_.back().attention_query_rows = band.query_rows;
    ops_.back().attention_sequence_tokens = band.sequence_tokens;
    ops_.back().attention_precision = AttentionPrecisionOf(fp8_);
  }
  // A GEMM [rows x in] · [in x out]; with groups > 1, `rows` is summed over the groups.
  // Bytes: input, weights and output, bf16 (docs/workload.md). `role` names block and module.
  // torchao's row-wise recipe (fp8_.recipe kRowwise) casts each operand along the axis its GEMM
  // reduces, when that GEMM runs: the forward the input and weight row-wise, dgrad the output
  // gradient (both axes: wgrad reads its column-wise copy) and the weight column-wise, wgrad the
  // saved bf16 input column-wise; the backward GEMMs' outputs are rescaled (fp8_ops.h).
  void Gemm(const std::string& name, OpRole role, int64_t rows, int64_t out, int64_t in,
            int64_t groups = 1) {
    if (QuantizesFp8(role)) {
      Fp8Cast(name + ".fp8_cast_input", role, Fp8Operand::kInput, rows * in, 1, ForwardUsage());
      if (!fp8_.weights_in_fp8) {
        const Fp8Operand weight =
            fp8_.cache_weights ? Fp8Operand::kCachedWeight : Fp8Operand::kWeight;
        // A recompute reuses the first forward's cached weight (is_first_microbatch is False).
        if (!(phase_ == Phase::kRecompute && weight == Fp8Operand::kCachedWeight)) {
          Fp8Cast(name + ".fp8_cast_weight", role, weight, out * in, groups, ForwardUsage());
        }
      }
      Fp8Swizzle(name, role, rows * in, groups * out * in);
    }
    role.kind = OpKind::kGemm;
    AppendGemm(name, role, GemmShape{.m = rows, .n = out, .k = in, .groups = groups},
               (rows * in + groups * in * out + rows * out) * kBf16Bytes);
  }
  // Backward of the forward GEMM (rows, out, in): dgrad [rows x out]·[out x in] ...
  void Dgrad(const std::string& name, OpRole role, int64_t rows, int64_t out, int64_t in,
             int64_t groups = 1) {
    // The FP8 ops keep the backward pass: only GEMMs are dgrad or wgrad.
    if (QuantizesFp8(role)) {
      Fp8Cast(name + ".fp8_cast_grad_output", role, Fp8Operand::kGradOutput, rows * out, 1);
      if (RowwiseCasts()) {
        Fp8Cast(name + ".fp8_cast_weight_t", role, Fp8Operand::kWeight, out * in, groups,
                Fp8Usage{.rowwise = false, .columnwise = true});
      }
      Fp8Swizzle(name + ".dgrad", role, rows * out, groups * out * in);
    }
    const OpRole quantized = role;
    role.kind = OpKind::kGemm;
    role.pass = OpPass::kDgrad;
    AppendGemm(name + ".dgrad", role, GemmShape{.m = rows, .n = in, .k = out, .groups = groups},
               (rows * in + groups * in * out + rows * out) * kBf16Bytes);
    OutputRescale(name + ".dgrad", quantized, rows * in);
  }
  // ... and wgrad [out x rows]·[rows x in]; each costs 2·rows·out·in, together 2x forward.
  // The token rows are wgrad's reduction extent, so a grouped wgrad sums k over the groups.
  // Its FP8 operands are the column-wise copies the forward and dgrad casts wrote.
  void Wgrad(const std::string& name, OpRole role, int64_t rows, int64_t out, int64_t in,
             int64_t groups = 1) {
    if (QuantizesFp8(role)) {
      if (RowwiseCasts()) {
        Fp8Cast(name + ".fp8_cast_input_t", role, Fp8Operand::kInput, rows * in, 1,
                Fp8Usage{.rowwise = false, .columnwise = true});
      }
      Fp8Swizzle(name + ".wgrad", role, rows * out, rows * in);
    }
    const OpRole quantized = role;
    role.kind = OpKind::kGemm;
    role.pass = OpPass::kWgrad;
    AppendGemm(
        name + ".wgrad", role,
        GemmShape{.m = out, .n = in, .k = rows, .groups = groups, .grouped_axis = GroupedAxis::kK},
        (rows * in + groups * in * out + rows * out) * kBf16Bytes);
    OutputRescale(name + ".wgrad", quantized, groups * out * in);
  }
  void Comm(std::string name, OpRole role, Collective collective, config::GroupKind group,
            int64_t group_size, int64_t message_bytes) {
    if (group_size <= 1) return;
    role.kind = OpKind::kCollective;
    Op op = NewOp(std::move(name), role);
    op.collective = collective;
    op.group = group;
    op.group_size = group_size;
    op.message_bytes = message_bytes;
    op.num_launches = 0;
    ops_.push_back(std::move(op));
  }
  void Append(const std::vector<Op>& ops) { ops_.insert(ops_.end(), ops.begin(), ops.end()); }
  [[nodiscard]] Phase phase() const { return phase_; }
  [[nodiscard]] const Fp8Settings& fp8() const { return fp8_; }
  // The FP8 quantize of `num_tensors` core-attention operands of `num_elements` each that FP8
  // attention runs before its kernel: row-wise copies only, since no GEMM transposes them.
  void AttentionFp8Cast(std::string name, Fp8Operand operand, int64_t num_elements,
                        int64_t num_tensors) {
    Fp8Cast(std::move(name), OpRole{.kind = OpKind::kFp8Quantize, .block = OpBlock::kAttention},
            operand, num_elements, num_tensors, Fp8Usage{.rowwise = true});
  }
  [[nodiscard]] int64_t layer() const { return layer_; }
  [[nodiscard]] std::vector<Op> Take() { return std::move(ops_); }
  // While set, GEMMs run in BF16 with no quantize ops even in an FP8/FP4 run: Megatron's output
  // layer is a plain ColumnParallelLinear outside TE's autocast (megatron/core/models/gpt/
  // gpt_model.py; TE's only with fp8_output_proj under MXFP8, fp8_utils.py
  // is_mxfp8_output_proj_active: Fp8Settings::output_proj).
  void set_high_precision_gemms(bool on) { high_precision_gemms_ = on; }

 private:
  void AppendGemm(std::string name, const OpRole& role, GemmShape shape, int64_t bytes) {
    Op op = NewOp(std::move(name), role);
    op.gemm = shape;
    op.flops = 2 * shape.m * shape.n * shape.k;
    op.bytes = bytes;
    op.num_launches = GemmLaunches(shape.groups);
    op.gemm_quantized = QuantizesFp8(role);
    ops_.push_back(std::move(op));
  }
  [[nodiscard]] bool QuantizesFp8(const OpRole& role) const {
    return fp8_.enabled && !high_precision_gemms_ && role.block != OpBlock::kMoeRouter;
  }
  // torchao's row-wise recipe: one axis-wise cast per GEMM that reads the operand.
  [[nodiscard]] bool RowwiseCasts() const { return fp8_.recipe == config::Fp8Recipe::kRowwise; }
  // The copies a forward cast writes: both usages (TE), or row-wise only (torchao row-wise).
  [[nodiscard]] Fp8Usage ForwardUsage() const {
    return Fp8Usage{.rowwise = true, .columnwise = !RowwiseCasts()};
  }
  // torchao row-wise: the rescale of a quantized backward GEMM's `output_elements` outputs.
  void OutputRescale(const std::string& gemm_name, OpRole role, int64_t output_elements) {
    if (!QuantizesFp8(role)) return;
    GemmSideOp(gemm_name + ".fp8_rescale", role, Fp8Operand::kGemmOutput,
               OutputRescaleTraffic(fp8_.recipe, output_elements));
  }
  // One cast of `num_tensors` bf16 tensors of `num_elements` each, row- and column-wise.
  void Fp8Cast(std::string name, OpRole role, Fp8Operand operand, int64_t num_elements,
               int64_t num_tensors, Fp8Usage usage = {.rowwise = true, .columnwise = true}) {
    role.operand = operand;
    Op op = Fp8QuantizeOp(std::move(name), role, fp8_.recipe, num_elements, usage, num_tensors);
    Op placed = NewOp(op.name, op.role);
    placed.bytes = op.bytes;
    placed.fp8_columnwise_bytes = op.fp8_columnwise_bytes;
    placed.num_launches = op.num_launches;
    ops_.push_back(std::move(placed));
  }
  // The MXFP8 scale swizzle of one GEMM's operands; nothing for the other recipes.
  void Fp8Swizzle(const std::string& gemm_name, OpRole role, int64_t a_elements,
                  int64_t b_elements) {
    GemmSideOp(gemm_name + ".fp8_scale_swizzle", role, Fp8Operand::kGemmScales,
               ScaleSwizzleTraffic(fp8_.recipe, a_elements, b_elements));
  }
  // A recipe's kernel beside a GEMM (`traffic`; nothing when it launches none) on `operand`.
  void GemmSideOp(std::string name, OpRole role, Fp8Operand operand,
                  const Fp8QuantizeTraffic& traffic) {
    if (traffic.num_launches == 0) return;
    role.kind = OpKind::kFp8Quantize;
    role.operand = operand;
    Op op = NewOp(std::move(name), role);
    op.bytes = traffic.bytes;
    op.num_launches = traffic.num_launches;
    ops_.push_back(std::move(op));
  }
  Op NewOp(std::string name, OpRole role) const {
    Op op;
    op.phase = phase_;
    op.layer = layer_;
    op.name = std::move(name);
    if (phase_ == Phase::kBackward && role.pass == OpPass::kForward) role.pass = OpPass::kBackward;
    op.role = role;
    op.num_launches = KernelLaunches(op.role);
    return op;
  }
  Phase phase_;
  int64_t layer_;
  Fp8Settings fp8_;
  bool high_precision_gemms_ = false;
  std::vector<Op> ops_;
};

// Shorthands for the roles the builders set.
inline OpRole CommRole(OpBlock block, CommPurpose purpose, OpModule module = OpModule::kNone) {
  return OpRole{.block = block, .module = module, .purpose = purpose};
}
inline OpRole KernelRole(OpKind kind, OpBlock block, OpModule module = OpModule::kNone) {
  return OpRole{.kind = kind, .block = block, .module = module};
}

inline int64_t Tp(const LayerOpContext& c) { return c.training.parallel.tensor; }
inline int64_t Cp(const LayerOpContext& c) { return c.training.parallel.context; }

// Column-parallel linear [rows x in] -> [rows x out] with `out` already divided by t: AG of the
// input under SP, AR of the dgrad without (layers.py). `input_bytes` is the full activation (A,
// or 2A for MTP's eh_proj).
// `block` is the role block of the emitted ops (module kColumnLinear / kRowLinear).
void ColumnForward(OpSink& sink, const LayerOpContext& c, OpBlock block, const std::string& name,
                   int64_t out, int64_t in, int64_t input_bytes);
void ColumnBackward(OpSink& sink, const LayerOpContext& c, OpBlock block, const std::string& name,
                    int64_t out, int64_t in, int64_t input_bytes);
// Row-parallel linear with `in` already divided by t: RS of the output under SP, AR without.
void RowForward(OpSink& sink, const LayerOpContext& c, OpBlock block, const std::string& name,
                int64_t out, int64_t in);
void RowBackward(OpSink& sink, const LayerOpContext& c, OpBlock block, const std::string& name,
                 int64_t out, int64_t in);
// A TP MLP of width `ffn` (gated fc1 h -> 2F/t, SwiGLU 2F/t -> F/t, fc2 F/t -> h): the dense MLP
// and the MoE shared expert (layers.py); op names start with `prefix`. The input norm is not
// included (the dense MLP emits it separately; the shared expert has none of its own).
void MlpForward(OpSink& sink, const LayerOpContext& c, OpBlock block, const std::string& prefix,
                int64_t ffn);
void MlpBackward(OpSink& sink, const LayerOpContext& c, OpBlock block, const std::string& prefix,
                 int64_t ffn);

}  // namespace trainscope::graph::internal

#endif  // TRAINSCOPE_GRAPH_OP_SINK_H_
