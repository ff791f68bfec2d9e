// Internal to the layer-op builders: the mixer and MoE blocks that layer_ops.cc assembles into
// decoder layers. attention_ops.cc holds attention and context parallelism, gdn_ops.cc Gated
// DeltaNet, moe_ops.cc the router, the three token dispatchers and the experts. Each appends to a
// borrowed OpSink in emission order.
#ifndef TRAINSCOPE_GRAPH_LAYER_OPS_INTERNAL_H_
#define TRAINSCOPE_GRAPH_LAYER_OPS_INTERNAL_H_

#include <cstdint>

#include "trainscope/graph/layer_ops.h"
#include "trainscope/graph/op_sink.h"

namespace trainscope::graph::internal {

// Attention block (attention.py, TE), forward and backward (reverse order, with the backward
// collectives).
void AttentionForward(OpSink& sink, const LayerOpContext& c);
void AttentionBackward(OpSink& sink, const LayerOpContext& c);
// CP traffic before and after the core-attention kernel of decoder layer `layer`, forward or
// (with `backward`) backward; nothing when c = 1.
void CpBeforeCore(OpSink& sink, const LayerOpContext& c, int64_t layer, bool backward);
void CpAfterCore(OpSink& sink, const LayerOpContext& c, int64_t layer, bool backward);
// KV heads per rank g_l = max(1, g/t) (attention.py:353-367).
int64_t LocalKvHeads(const LayerOpContext& c);
// RoPE on q and k, forward or backward by the sink's phase.
void Rope(OpSink& sink, const LayerOpContext& c);
// Causal core attention (TE DotProductAttention); `multiplier` 1 for forward, 2 for backward.
void CoreAttention(OpSink& sink, const LayerOpContext& c, int64_t multiplier);

// Multi-latent attention block (multi_latent_attention.py, TE spec), forward and backward.
void MlaForward(OpSink& sink, const LayerOpContext& c);
void MlaBackward(OpSink& sink, const LayerOpContext& c);
// The forward ops the selective `mla_up_proj` recompute replays: the latent norms, the up
// projections with their SP gathers, and RoPE (multi_latent_attention.py:983-988).
void MlaUpProjRecompute(OpSink& sink, const LayerOpContext& c);
// Gated DeltaNet block (ssm/gated_delta_net/; gdn_ops.cc), forward and backward.
void GdnForward(OpSink& sink, const LayerOpContext& c);
void GdnBackward(OpSink& sink, const LayerOpContext& c);
// The GDN output norm and, with CP, its head-to-sequence all-to-all.
void GdnOutNorm(OpSink& sink, const LayerOpContext& c);

// The whole MoE layer (moe/): router, dispatcher and experts, then the shared expert; backward in
// reverse. The pre-MLP norm is not part of it (the caller emits moe.input_norm).
void MoeForward(OpSink& sink, const LayerOpContext& c);
void MoeBackward(OpSink& sink, const LayerOpContext& c);
// The shared expert's TP MLP and its gate, forward; nothing without a shared expert.
void SharedExpertForward(OpSink& sink, const LayerOpContext& c);
// The routed experts' SwiGLU alone (selective `moe_act` recompute).
void ExpertActivation(OpSink& sink, const LayerOpContext& c);

}  // namespace trainscope::graph::internal

#endif  // TRAINSCOPE_GRAPH_LAYER_OPS_INTERNAL_H_
