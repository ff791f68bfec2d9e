// The generic element-wise kernel emitters of elementwise_ops.h; the block-specific ones (QK-norm,
// RoPE, gates, router top-k, permutes) live with their blocks in attention_ops.cc and moe_ops.cc.
#include "trainscope/graph/elementwise_ops.h"

namespace trainscope::graph::internal {

void Kernel(OpSink& sink, OpRole role, const std::string& name, int64_t flops, int64_t bytes) {
  if (sink.phase() == Phase::kBackward) {
    sink.Compute(name + ".backward", role, kElementwiseBackwardFactor * flops,
                 kElementwiseBackwardFactor * bytes);
    return;
  }
  sink.Compute(name, role, flops, bytes);
}

EagerChainCost Times(const EagerChainCost& per_element, int64_t elements) {
  return {.flops = per_element.flops * elements,
          .forward_bytes = per_element.forward_bytes * elements,
          .forward_launches = per_element.forward_launches,
          .backward_bytes = per_element.backward_bytes * elements,
          .backward_launches = per_element.backward_launches};
}

void EagerChain(OpSink& sink, OpRole role, const std::string& name, const EagerChainCost& cost) {
  if (sink.phase() == Phase::kBackward) {
    sink.Compute(name + ".backward", role, kElementwiseBackwardFactor * cost.flops,
                 cost.backward_bytes, cost.backward_launches);
    return;
  }
  sink.Compute(name, role, cost.flops, cost.forward_bytes, cost.forward_launches);
}

void Elementwise(OpSink& sink, OpRole role, const std::string& name, int64_t elements,
                 ElementwiseCost cost) {
  Kernel(sink, role, name, elements * cost.flops, elements * cost.bytes);
}

int64_t ShardTokens(const LayerOpContext& c) {
  return c.TokensPerRank() / (c.SequenceParallel() ? Tp(c) : 1);
}

void HiddenNorm(OpSink& sink, const LayerOpContext& c, OpBlock block, const std::string& name) {
  const OpRole role = KernelRole(OpKind::kNorm, block, OpModule::kPreNorm);
  const int64_t elements = ShardTokens(c) * c.model.hidden_size;
  if (c.training.framework.TorchNative() && c.model.norm == config::NormKind::kRmsNorm) {
    // torchtitan compiles the TransformerBlocks only: the final norm stays eager.
    TorchRmsNorm(sink, role, name, elements,
                 c.training.framework.torch_compile && block != OpBlock::kLmHead);
    return;
  }
  Elementwise(sink, role, name, elements,
              c.model.norm == config::NormKind::kLayerNorm ? kLayerNorm : kRmsNorm);
}

void ResidualAdd(OpSink& sink, const LayerOpContext& c, OpBlock block, const std::string& name) {
  const int64_t elements = ShardTokens(c) * c.model.hidden_size;
  const bool backward = sink.phase() == Phase::kBackward;
  sink.Compute(backward ? name + ".backward" : name,
               KernelRole(OpKind::kElementwise, block, OpModule::kResidualAdd),
               elements * kResidualAdd.flops, elements * kResidualAdd.bytes);
}

void SwiGlu(OpSink& sink, OpRole role, const std::string& name, int64_t rows, int64_t width,
            bool weighted) {
  Elementwise(sink, role, name, rows * width, weighted ? kWeightedSwiGlu : kSwiGlu);
}

void Gelu(OpSink& sink, OpRole role, const std::string& name, int64_t rows, int64_t width) {
  Elementwise(sink, role, name, rows * width, kGelu);
}

void PermuteRows(OpSink& sink, const LayerOpContext& c, OpKind kind, const std::string& name,
                 int64_t rows) {
  Elementwise(sink, KernelRole(kind, OpBlock::kMoeRouted), name, rows * c.model.hidden_size,
              kRowGather);
}

// moe_utils.py unpermute: zeros [out_rows, h], then index_add of the input rows.
void Unpermute(OpSink& sink, const LayerOpContext& c, int64_t in_rows, int64_t out_rows) {
  const int64_t h = c.model.hidden_size;
  Kernel(sink, KernelRole(OpKind::kUnpermute, OpBlock::kMoeRouted), "moe.unpermute", in_rows * h,
         (in_rows + out_rows) * h * kBf16Bytes);
}

// Per token 2h (dot with w) + 4 (sigmoid) + h (scale) FLOPs; read x and y, write y.
void SharedExpertGate(OpSink& sink, const LayerOpContext& c) {
  const int64_t tokens = ShardTokens(c), h = c.model.hidden_size;
  Kernel(sink, KernelRole(OpKind::kElementwise, OpBlock::kMoeShared, OpModule::kOutputGate),
         "moe.shared_experts.gate", tokens * (3 * h + 4), tokens * 3 * h * kBf16Bytes);
}

}  // namespace trainscope::graph::internal
