// The tensor-parallel column/row-linear and MLP helpers of op_sink.h; Megatron-LM citations are
// at commit d98e8a64 (short names expanded in docs/workload.md).
#include "trainscope/graph/op_sink.h"

#include <string>

#include "trainscope/graph/elementwise_ops.h"

namespace trainscope::graph::internal {

using config::GroupKind;

// Sharding of the activation entering a TP linear: AG under SP, AR of dgrad without (layers.py).
// `input_bytes` is the full activation (A, or 2A for MTP's eh_proj).
void ColumnForward(OpSink& sink, const LayerOpContext& c, const std::string& name, int64_t out,
                   int64_t in, int64_t input_bytes) {
  if (c.SequenceParallel()) {
    sink.Comm(name + ".ag_input", Collective::kAllGather, GroupKind::kTp, Tp(c), input_bytes);
  }
  sink.Gemm(name, c.TokensPerRank(), out, in);
}

void ColumnBackward(OpSink& sink, const LayerOpContext& c, const std::string& name, int64_t out,
                    int64_t in, int64_t input_bytes) {
  const int64_t rows = c.TokensPerRank();
  // TE re-gathers the saved 1/t input for wgrad, overlapped with dgrad (TE linear.py:979-1000).
  if (c.SequenceParallel()) {
    sink.Comm(name + ".ag_input_wgrad", Collective::kAllGather, GroupKind::kTp, Tp(c), input_bytes);
  }
  sink.Dgrad(name, rows, out, in);
  if (c.SequenceParallel()) {  // layers.py:703-710
    sink.Comm(name + ".rs_dgrad", Collective::kReduceScatter, GroupKind::kTp, Tp(c), input_bytes);
  } else {  // allreduce_dgrad, layers.py:694-696, 1144-1146
    sink.Comm(name + ".ar_dgrad", Collective::kAllReduce, GroupKind::kTp, Tp(c), input_bytes);
  }
  sink.Wgrad(name, rows, out, in);
}

// Row-parallel linear: RS of the output under SP, AR without (layers.py:1561-1566).
void RowForward(OpSink& sink, const LayerOpContext& c, const std::string& name, int64_t out,
                int64_t in) {
  sink.Gemm(name, c.TokensPerRank(), out, in);
  const int64_t bytes = c.ActivationBytes();
  if (c.SequenceParallel()) {
    sink.Comm(name + ".rs_output", Collective::kReduceScatter, GroupKind::kTp, Tp(c), bytes);
  } else {
    sink.Comm(name + ".ar_output", Collective::kAllReduce, GroupKind::kTp, Tp(c), bytes);
  }
}

void RowBackward(OpSink& sink, const LayerOpContext& c, const std::string& name, int64_t out,
                 int64_t in) {
  if (c.SequenceParallel()) {  // AG of grad_output, TE base.py:1702-1709
    sink.Comm(name + ".ag_grad_output", Collective::kAllGather, GroupKind::kTp, Tp(c),
              c.ActivationBytes());
  }
  sink.Dgrad(name, c.TokensPerRank(), out, in);
  sink.Wgrad(name, c.TokensPerRank(), out, in);
}

void MlpForward(OpSink& sink, const LayerOpContext& c, const std::string& prefix, int64_t ffn) {
  const int64_t h = c.model.hidden_size;
  ColumnForward(sink, c, prefix + ".linear_fc1", 2 * ffn / Tp(c), h, c.ActivationBytes());
  SwiGlu(sink, prefix + ".activation", c.TokensPerRank(), ffn / Tp(c), /*weighted=*/false);
  RowForward(sink, c, prefix + ".linear_fc2", h, ffn / Tp(c));
}

void MlpBackward(OpSink& sink, const LayerOpContext& c, const std::string& prefix, int64_t ffn) {
  const int64_t h = c.model.hidden_size;
  RowBackward(sink, c, prefix + ".linear_fc2", h, ffn / Tp(c));
  SwiGlu(sink, prefix + ".activation", c.TokensPerRank(), ffn / Tp(c), /*weighted=*/false);
  ColumnBackward(sink, c, prefix + ".linear_fc1", 2 * ffn / Tp(c), h, c.ActivationBytes());
}

}  // namespace trainscope::graph::internal
