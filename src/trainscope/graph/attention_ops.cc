// Attention and context-parallel op builders: the QKV/projection linears, the core-attention
// kernel with its CP traffic per communication type, and the input norm, QK-norm, RoPE and output
// gate around them (attention.py, TE context_parallel.py). Gated DeltaNet is in gdn_ops.cc.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "trainscope/graph/elementwise_ops.h"
#include "trainscope/graph/layer_ops_internal.h"
#include "trainscope/units.h"

namespace trainscope::graph::internal {

using config::CpCommType;
using config::GroupKind;

namespace {

int64_t QkvWidth(const config::AttentionConfig& a) {
  return a.QueryWidth() + 2 * a.KvWidth() + a.GateWidth();
}

CpCommType CpTypeOfLayer(const LayerOpContext& c, int64_t layer) {
  const std::vector<CpCommType>& types = c.training.context.comm_types;
  if (types.empty()) return CpCommType::kP2p;
  if (types.size() > 1 && layer >= 0 && layer < static_cast<int64_t>(types.size())) {
    return types[static_cast<size_t>(layer)];
  }
  return types.front();
}

// p2p ring (TE): `steps` sends and receives of the given sizes to the ring neighbours.
void CpRing(OpSink& sink, const std::string& name, int64_t group_size,
            const std::vector<int64_t>& step_bytes) {
  const OpRole role = CommRole(OpBlock::kAttention, CommPurpose::kCpExchange);
  for (size_t i = 0; i < step_bytes.size(); ++i) {
    const std::string step = name + ".step" + std::to_string(i);
    sink.Comm(step + ".send", role, Collective::kSend, GroupKind::kCp, group_size, step_bytes[i]);
    sink.Comm(step + ".recv", role, Collective::kRecv, GroupKind::kCp, group_size, step_bytes[i]);
  }
}

// Role of the CP gathers / reduce-scatters and of the CP all-to-alls.
constexpr OpRole kCpGatherRole{.block = OpBlock::kAttention, .purpose = CommPurpose::kCpGather};
constexpr OpRole kCpA2aRole{.block = OpBlock::kAttention, .purpose = CommPurpose::kCpAllToAll};
constexpr OpRole kAttentionKernel{.kind = OpKind::kElementwise, .block = OpBlock::kAttention};

// Ring step sizes: forward c-1 steps of KV; backward KV, then 2·KV for steps 1..c-2, then KV
// (TE context_parallel.py:2459-2495).
std::vector<int64_t> RingSteps(int64_t ring_size, int64_t kv_bytes, bool backward) {
  if (ring_size <= 1) return {};
  if (!backward) return std::vector<int64_t>(static_cast<size_t>(ring_size - 1), kv_bytes);
  std::vector<int64_t> steps(static_cast<size_t>(ring_size), 2 * kv_bytes);
  steps.front() = kv_bytes;
  steps.back() = kv_bytes;
  return steps;
}

struct CpSizes {
  int64_t q_bytes = 0;   // s_c·b·n_l·d_h·2 (also O)
  int64_t kv_bytes = 0;  // one of K or V locally: s_c·b·g_l·d_h·2
};

// MLA (value head dim d_v ≠ d_h): K has d_h and V d_v per head, so one of K or V is taken at
// their mean width (d_h + d_v)/2, which keeps K + V = 2·kv_bytes exact; Q and O at d_h.
CpSizes AttentionCpSizes(const LayerOpContext& c) {
  const config::AttentionConfig& a = c.model.attention;
  const int64_t tokens = c.TokensPerRank();
  const int64_t kv_width = (a.head_dim + c.CoreValueHeadDim()) / 2;
  return CpSizes{.q_bytes = tokens * (a.num_heads / Tp(c)) * a.head_dim * kBf16Bytes,
                 .kv_bytes = tokens * LocalKvHeads(c) * kv_width * kBf16Bytes};
}

// q_layernorm / k_layernorm, RMSNorm over d_h (attention.py get_query_key_value_tensors), on the
// s_c·b gathered tokens over this rank's n/t query and g_l KV heads.
void QkNorm(OpSink& sink, const LayerOpContext& c) {
  const config::AttentionConfig& a = c.model.attention;
  if (!a.qk_norm) return;
  const int64_t tokens = c.TokensPerRank();
  const OpRole norm = KernelRole(OpKind::kNorm, OpBlock::kAttention);
  Elementwise(sink, norm, "attention.q_norm", tokens * (a.num_heads / Tp(c)) * a.head_dim,
              kRmsNorm);
  Elementwise(sink, norm, "attention.k_norm", tokens * LocalKvHeads(c) * a.head_dim, kRmsNorm);
}

}  // namespace

int64_t LocalKvHeads(const LayerOpContext& c) {
  return std::max<int64_t>(1, c.model.attention.num_kv_heads / Tp(c));
}

// RoPE on q and k (apply_rotary_pos_emb in attention.py forward): FLOPs over the rotated
// rotary_fraction·d_h, bytes over the whole head. TE's fused kernel, except under a YaRN
// concentration factor other than 1 (GPT-OSS), where Megatron falls back to the unfused torch
// RoPE (rope_utils.py apply_rotary_pos_emb: "mscale ... is not supported by TE's fused RoPE";
// _apply_rotary_pos_emb_bshd), once for q and once for k. Per bf16 element of the head:
// forward rotate_half's negation of one half (2 B) and concatenation (4 B), x·cos (4 B),
// rotate_half(x)·sin (4 B), the sum (6 B) and the concatenation with the pass-through part
// (4 B) = 24 B in 6 kernels, plus 6 small ones for cos·mscale and sin·mscale; backward grad·sin
// (4 B), its negation (2 B) and concatenation (4 B), grad·cos (4 B) and the sum of the two paths
// (6 B) = 20 B in 5 kernels.
// Under --framework torchtitan, its complex-number RoPE (TorchRope).
void Rope(OpSink& sink, const LayerOpContext& c) {
  const config::AttentionConfig& a = c.model.attention;
  const int64_t rotated = std::llround(a.rotary_fraction * static_cast<double>(a.head_dim));
  if (rotated <= 0) return;
  const int64_t vectors = c.TokensPerRank() * (a.num_heads / Tp(c) + LocalKvHeads(c));
  if (c.training.framework.TorchNative()) {
    TorchRope(sink, c, vectors * a.head_dim, vectors * rotated);
    return;
  }
  if (a.rope_concentration == 1.0) {
    Kernel(sink, kAttentionKernel, "attention.rope", vectors * rotated * kRope.flops,
           vectors * a.head_dim * kRope.bytes);
    return;
  }
  const int64_t elements = vectors * a.head_dim;
  constexpr int64_t kCalls = 2;  // q and k
  EagerChain(sink, kAttentionKernel, "attention.rope",
             EagerChainCost{.flops = vectors * rotated * kRope.flops,
                            .forward_bytes = 24 * elements,
                            .forward_launches = kCalls * 12,
                            .backward_bytes = 20 * elements,
                            .backward_launches = kCalls * 5});
}

namespace {

// Gated attention: core output × sigmoid(gate) over the q/t local query width.
void OutputGate(OpSink& sink, const LayerOpContext& c) {
  if (!c.model.attention.output_gate) return;
  Elementwise(sink, KernelRole(OpKind::kElementwise, OpBlock::kAttention, OpModule::kOutputGate),
              "attention.output_gate", c.TokensPerRank() * c.model.attention.QueryWidth() / Tp(c),
              kSigmoidGate);
}

}  // namespace

// CP traffic before the core-attention kernel (forward, or backward when `backward`).
void CpBeforeCore(OpSink& sink, const LayerOpContext& c, int64_t layer, bool backward) {
  const int64_t cp = Cp(c);
  if (cp <= 1) return;
  const CpSizes sz = AttentionCpSizes(c);
  const std::string base = "attention.cp";
  switch (CpTypeOfLayer(c, layer)) {
    case CpCommType::kP2p:  // :1685-1716 forward, :2459-2495 backward
      CpRing(sink, base + ".p2p", cp, RingSteps(cp, 2 * sz.kv_bytes, backward));
      return;
    case CpCommType::kAllGather:  // K and V gathered to the full s (:3215-3216, :3788-3789)
      sink.Comm(base + ".ag_k", kCpGatherRole, Collective::kAllGather, GroupKind::kCp, cp,
                cp * sz.kv_bytes);
      sink.Comm(base + ".ag_v", kCpGatherRole, Collective::kAllGather, GroupKind::kCp, cp,
                cp * sz.kv_bytes);
      return;
    case CpCommType::kA2a:
      if (backward) {  // dO (:4677)
        sink.Comm(base + ".a2a_do", kCpA2aRole, Collective::kAllToAll, GroupKind::kCp, cp,
                  sz.q_bytes);
        return;
      }
      sink.Comm(base + ".a2a_q", kCpA2aRole, Collective::kAllToAll, GroupKind::kCp, cp, sz.q_bytes);
      sink.Comm(base + ".a2a_k", kCpA2aRole, Collective::kAllToAll, GroupKind::kCp, cp,
                sz.kv_bytes);
      sink.Comm(base + ".a2a_v", kCpA2aRole, Collective::kAllToAll, GroupKind::kCp, cp,
                sz.kv_bytes);
      return;
    case CpCommType::kA2aP2p: {
      // Hierarchical [c1, c2]: a2a within c1 ranks, ring over c2 with KV' = 2·(s/c2)·b·(g_l/c1)·
      // d_h·2 = the local K+V (hierarchical a2a+p2p). Both reported on the CP group kind.
      const std::vector<int64_t>& h = c.training.context.hierarchical_sizes;
      const int64_t c1 = h.size() == 2 ? h[0] : cp;
      const int64_t c2 = h.size() == 2 ? h[1] : 1;
      if (backward) {
        sink.Comm(base + ".a2a_do", kCpA2aRole, Collective::kAllToAll, GroupKind::kCp, c1,
                  sz.q_bytes);
      } else {
        sink.Comm(base + ".a2a_q", kCpA2aRole, Collective::kAllToAll, GroupKind::kCp, c1,
                  sz.q_bytes);
        sink.Comm(base + ".a2a_k", kCpA2aRole, Collective::kAllToAll, GroupKind::kCp, c1,
                  sz.kv_bytes);
        sink.Comm(base + ".a2a_v", kCpA2aRole, Collective::kAllToAll, GroupKind::kCp, c1,
                  sz.kv_bytes);
      }
      CpRing(sink, base + ".p2p", c2, RingSteps(c2, 2 * sz.kv_bytes, backward));
      return;
    }
  }
}

// CP traffic after the core-attention kernel.
void CpAfterCore(OpSink& sink, const LayerOpContext& c, int64_t layer, bool backward) {
  const int64_t cp = Cp(c);
  if (cp <= 1) return;
  const CpSizes sz = AttentionCpSizes(c);
  const std::string base = "attention.cp";
  const CpCommType type = CpTypeOfLayer(c, layer);
  if (type == CpCommType::kAllGather && backward) {  // RS of dK, dV (:4107-4108)
    sink.Comm(base + ".rs_dk", kCpGatherRole, Collective::kReduceScatter, GroupKind::kCp, cp,
              cp * sz.kv_bytes);
    sink.Comm(base + ".rs_dv", kCpGatherRole, Collective::kReduceScatter, GroupKind::kCp, cp,
              cp * sz.kv_bytes);
  }
  if (type != CpCommType::kA2a && type != CpCommType::kA2aP2p) return;
  const std::vector<int64_t>& h = c.training.context.hierarchical_sizes;
  const int64_t group = (type == CpCommType::kA2aP2p && h.size() == 2) ? h[0] : cp;
  if (!backward) {  // O back to sequence sharding (:4485)
    sink.Comm(base + ".a2a_o", kCpA2aRole, Collective::kAllToAll, GroupKind::kCp, group,
              sz.q_bytes);
    return;
  }
  sink.Comm(base + ".a2a_dq", kCpA2aRole, Collective::kAllToAll, GroupKind::kCp, group,
            sz.q_bytes);  // :4837
  sink.Comm(base + ".a2a_dk", kCpA2aRole, Collective::kAllToAll, GroupKind::kCp, group,
            sz.kv_bytes);
  sink.Comm(base + ".a2a_dv", kCpA2aRole, Collective::kAllToAll, GroupKind::kCp, group,
            sz.kv_bytes);
}

// Causal core attention (TE): 2·b·(n/t)·d_h·s²/c = 2·b·(n/t)·d_h·s·s_c forward (QKᵀ and PV,
// each 2·s²·d_h per head, halved by the causal mask). With a value head dim d_v ≠ d_h (MLA:
// d_h = nope + rope, d_v = v_head_dim), QKᵀ costs s²·d_h and PV s²·d_v per head after the mask:
// b·(n/t)·(d_h + d_v)·s·s_c, which is the first form when d_v = d_h. THD counts Σ s_i² per packed
// sequence; without a length distribution a micro-batch is b sequences of length s, which equals
// BSHD. A sliding-window layer (window w < s) attends Σ_i min(i+1, w) = w·s − w(w−1)/2 query-key
// pairs instead of the causal s²/2, and the kernel skips the masked blocks, so the FLOPs scale
// by that ratio: 4·b·(n/t)·d_h·(w·s − w(w−1)/2)/c. Its band (w and the b·(n/t)·s/c query rows)
// goes with the op: the tiles the kernel visits along the band cost more than those pairs
// (cost/attention_efficiency.h AttentionWindowFactor).
// Bytes: read Q, K, V, write O (local heads).
void CoreAttention(OpSink& sink, const LayerOpContext& c, int64_t multiplier) {
  const config::AttentionConfig& a = c.model.attention;
  const int64_t local_heads = a.num_heads / Tp(c);
  const int64_t s = c.training.batch.seq_length;
  const int64_t b = c.training.batch.micro_batch_size;
  // Under THD, MLA pads V to d_h for the kernel (LayerOpContext::CoreValueHeadDim).
  const int64_t qk_plus_v = a.head_dim + c.CoreValueHeadDim();
  // (query, key) pairs per head after the mask: s·s_c/2 causal, (w·s − w(w−1)/2)/c in a window.
  int64_t pairs = b * local_heads * s * (s / Cp(c)) / 2;
  const auto layer = static_cast<size_t>(sink.layer());
  const int64_t w = a.sliding_window;
  AttentionBand band;
  if (layer < c.model.layers.size() && c.model.layers[layer].sliding && w < s) {
    pairs = b * local_heads * (w * s - w * (w - 1) / 2) / Cp(c);
    band = {.window = w, .query_rows = b * local_heads * (s / Cp(c)), .sequence_tokens = s};
  }
  const int64_t flops = 2 * qk_plus_v * pairs;
  const CpSizes sz = AttentionCpSizes(c);
  const std::string name = multiplier == 1 ? "attention.core" : "attention.core.backward";
  if (sink.fp8().dot_product_attention) {
    // FP8 attention (TE fp8_dpa, fp8_mha off): the mixed Q, K, V buffer is quantized before
    // the forward kernel as one tensor, O and dO (one tensor each) before the backward one.
    if (multiplier == 1) {
      sink.AttentionFp8Cast("attention.dpa.fp8_cast_qkv", Fp8Operand::kInput,
                            (sz.q_bytes + 2 * sz.kv_bytes) / kBf16Bytes, 1);
    } else {
      sink.AttentionFp8Cast("attention.dpa.fp8_cast_o_do", Fp8Operand::kGradOutput,
                            sz.q_bytes / kBf16Bytes, 2);
    }
  }
  sink.Attention(name, KernelRole(OpKind::kAttentionCore, OpBlock::kAttention), multiplier * flops,
                 multiplier * (2 * sz.q_bytes + 2 * sz.kv_bytes), pairs, a.head_dim,
                 c.CoreValueHeadDim(),
                 c.training.framework.TorchNative() ? AttentionKernel::kTorchSdpaFlash
                                                    : AttentionKernel::kTeFused,
                 band);
}

void AttentionForward(OpSink& sink, const LayerOpContext& c) {
  const config::AttentionConfig& a = c.model.attention;
  const int64_t h = c.model.hidden_size;
  HiddenNorm(sink, c, OpBlock::kAttention, "attention.input_norm");  // fused into linear_qkv
  ColumnForward(sink, c, OpBlock::kAttention, "attention.linear_qkv", QkvWidth(a) / Tp(c), h,
                c.ActivationBytes());
  if (Tp(c) > a.num_kv_heads) {  // g < t: last-dim AG of mixed_qkv (attention.py:340-380)
    sink.Comm("attention.qkv_gather", CommRole(OpBlock::kAttention, CommPurpose::kHeadGather),
              Collective::kAllGather, GroupKind::kTp, Tp(c),
              c.TokensPerRank() * QkvWidth(a) * kBf16Bytes);
  }
  QkNorm(sink, c);
  Rope(sink, c);
  if (c.training.framework.TorchNative()) RepeatKv(sink, c);
  CpBeforeCore(sink, c, sink.layer(), /*backward=*/false);
  CoreAttention(sink, c, 1);
  CpAfterCore(sink, c, sink.layer(), /*backward=*/false);
  OutputGate(sink, c);
  RowForward(sink, c, OpBlock::kAttention, "attention.linear_proj", h, a.QueryWidth() / Tp(c));
}

void AttentionBackward(OpSink& sink, const LayerOpContext& c) {
  const config::AttentionConfig& a = c.model.attention;
  const int64_t h = c.model.hidden_size;
  RowBackward(sink, c, OpBlock::kAttention, "attention.linear_proj", h, a.QueryWidth() / Tp(c));
  OutputGate(sink, c);
  CpBeforeCore(sink, c, sink.layer(), /*backward=*/true);
  CoreAttention(sink, c, 2);
  CpAfterCore(sink, c, sink.layer(), /*backward=*/true);
  if (c.training.framework.TorchNative()) RepeatKv(sink, c);
  Rope(sink, c);
  QkNorm(sink, c);
  if (Tp(c) > a.num_kv_heads) {  // g < t: RS of the same size in backward
    sink.Comm("attention.qkv_gather.rs_grad",
              CommRole(OpBlock::kAttention, CommPurpose::kHeadGather), Collective::kReduceScatter,
              GroupKind::kTp, Tp(c), c.TokensPerRank() * QkvWidth(a) * kBf16Bytes);
  }
  ColumnBackward(sink, c, OpBlock::kAttention, "attention.linear_qkv", QkvWidth(a) / Tp(c), h,
                 c.ActivationBytes());
  HiddenNorm(sink, c, OpBlock::kAttention, "attention.input_norm");
}

}  // namespace trainscope::graph::internal
