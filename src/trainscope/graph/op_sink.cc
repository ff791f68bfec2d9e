// The tensor-parallel column/row-linear and MLP helpers of op_sink.h; Megatron-LM citations are
// at commit d98e8a64 (short names expanded in docs/workload.md).
#include "trainscope/graph/op_sink.h"

#include <string>

#include "trainscope/graph/elementwise_ops.h"

namespace trainscope::graph::internal {

using config::GroupKind;

// Sharding of the activation entering a TP linear: AG under SP, AR of dgrad without (layers.py).
// `input_bytes` is the full activation (A, or 2A for MTP's eh_proj).
void ColumnForward(OpSink& sink, const LayerOpContext& c, OpBlock block, const std::string& name,
                   int64_t out, int64_t in, int64_t input_bytes) {
  constexpr OpModule kColumn = OpModule::kColumnLinear;
  if (c.SequenceParallel()) {
    sink.Comm(name + ".ag_input", CommRole(block, CommPurpose::kSpGather, kColumn),
              Collective::kAllGather, GroupKind::kTp, Tp(c), input_bytes);
  }
  sink.Gemm(name, KernelRole(OpKind::kGemm, block, kColumn), c.TokensPerRank(), out, in);
}

void ColumnBackward(OpSink& sink, const LayerOpContext& c, OpBlock block, const std::string& name,
                    int64_t out, int64_t in, int64_t input_bytes) {
  constexpr OpModule kColumn = OpModule::kColumnLinear;
  const int64_t rows = c.TokensPerRank();
  // TE re-gathers the saved 1/t input for wgrad, overlapped with dgrad (TE linear.py:979-1000).
  if (c.SequenceParallel()) {
    sink.Comm(name + ".ag_input_wgrad", CommRole(block, CommPurpose::kSpGather, kColumn),
              Collective::kAllGather, GroupKind::kTp, Tp(c), input_bytes);
  }
  const OpRole gemm = KernelRole(OpKind::kGemm, block, kColumn);
  sink.Dgrad(name, gemm, rows, out, in);
  if (c.SequenceParallel()) {  // layers.py:703-710
    sink.Comm(name + ".rs_dgrad", CommRole(block, CommPurpose::kSpScatter, kColumn),
              Collective::kReduceScatter, GroupKind::kTp, Tp(c), input_bytes);
  } else {  // allreduce_dgrad, layers.py:694-696, 1144-1146
    sink.Comm(name + ".ar_dgrad", CommRole(block, CommPurpose::kTpReduce, kColumn),
              Collective::kAllReduce, GroupKind::kTp, Tp(c), input_bytes);
  }
  sink.Wgrad(name, gemm, rows, out, in);
}

// Row-parallel linear: RS of the output under SP, AR without (layers.py:1561-1566).
void RowForward(OpSink& sink, const LayerOpContext& c, OpBlock block, const std::string& name,
                int64_t out, int64_t in) {
  constexpr OpModule kRow = OpModule::kRowLinear;
  sink.Gemm(name, KernelRole(OpKind::kGemm, block, kRow), c.TokensPerRank(), out, in);
  const int64_t bytes = c.ActivationBytes();
  if (c.SequenceParallel()) {
    sink.Comm(name + ".rs_output", CommRole(block, CommPurpose::kSpScatter, kRow),
              Collective::kReduceScatter, GroupKind::kTp, Tp(c), bytes);
  } else {
    sink.Comm(name + ".ar_output", CommRole(block, CommPurpose::kTpReduce, kRow),
              Collective::kAllReduce, GroupKind::kTp, Tp(c), bytes);
  }
}

void RowBackward(OpSink& sink, const LayerOpContext& c, OpBlock block, const std::string& name,
                 int64_t out, int64_t in) {
  constexpr OpModule kRow = OpModule::kRowLinear;
  if (c.SequenceParallel()) {  // AG of grad_output, TE base.py:1702-1709
    sink.Comm(name + ".ag_grad_output", CommRole(block, CommPurpose::kSpGather, kRow),
              Collective::kAllGather, GroupKind::kTp, Tp(c), c.ActivationBytes());
  }
  const OpRole gemm = KernelRole(OpKind::kGemm, block, kRow);
  sink.Dgrad(name, gemm, c.TokensPerRank(), out, in);
  sink.Wgrad(name, gemm, c.TokensPerRank(), out, in);
}

namespace {

// SwiGLU, or GeLU for a plain GPT's dense MLP (block kMlp only; shared experts are SwiGLU);
// torchtitan's F.silu(w1(x)) * w3(x) under --framework torchtitan.
void MlpActivationOp(OpSink& sink, const LayerOpContext& c, OpBlock block,
                     const std::string& prefix, int64_t ffn) {
  const OpRole role = KernelRole(OpKind::kElementwise, block);
  if (block == OpBlock::kMlp && c.model.mlp.activation == config::MlpActivation::kGelu) {
    Gelu(sink, role, prefix + ".activation", c.TokensPerRank(), ffn / Tp(c));
    return;
  }
  if (c.training.framework.TorchNative()) {
    TorchSwiGlu(sink, c, role, prefix + ".activation", c.TokensPerRank() * (ffn / Tp(c)));
    return;
  }
  SwiGlu(sink, role, prefix + ".activation", c.TokensPerRank(), ffn / Tp(c), /*weighted=*/false);
}

// fc1 output width: 2F for SwiGLU, F for a GeLU dense MLP.
int64_t Fc1Width(const LayerOpContext& c, OpBlock block, int64_t ffn) {
  return block == OpBlock::kMlp ? c.model.mlp.Fc1WidthFactor() * ffn : 2 * ffn;
}

}  // namespace

void MlpForward(OpSink& sink, const LayerOpContext& c, OpBlock block, const std::string& prefix,
                int64_t ffn) {
  const int64_t h = c.model.hidden_size;
  ColumnForward(sink, c, block, prefix + ".linear_fc1", Fc1Width(c, block, ffn) / Tp(c), h,
                c.ActivationBytes());
  MlpActivationOp(sink, c, block, prefix, ffn);
  RowForward(sink, c, block, prefix + ".linear_fc2", h, ffn / Tp(c));
}

void MlpBackward(OpSink& sink, const LayerOpContext& c, OpBlock block, const std::string& prefix,
                 int64_t ffn) {
  const int64_t h = c.model.hidden_size;
  RowBackward(sink, c, block, prefix + ".linear_fc2", h, ffn / Tp(c));
  MlpActivationOp(sink, c, block, prefix, ffn);
  ColumnBackward(sink, c, block, prefix + ".linear_fc1", Fc1Width(c, block, ffn) / Tp(c), h,
                 c.ActivationBytes());
}

}  // namespace trainscope::graph::internal
