// Per-layer operation builders. Section numbers refer to reference/megatron-semantics.md; the
// op catalogue with sizes and sources is docs/workload.md.
#include "trainscope/graph/layer_ops.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "trainscope/config/validate.h"
#include "trainscope/error.h"
#include "trainscope/units.h"

namespace trainscope::graph {
namespace {

using config::CpCommType;
using config::GroupKind;
using config::LayerSpec;
using config::MixerKind;

// Collects the ops of one block in emission order. Collectives over a group of one rank move
// nothing and are not emitted.
class OpSink {
 public:
  OpSink(Phase phase, int64_t layer) : phase_(phase), layer_(layer) {}

  void Compute(std::string name, int64_t flops, int64_t bytes) {
    Op op = NewOp(std::move(name));
    op.flops = flops;
    op.bytes = bytes;
    ops_.push_back(std::move(op));
  }
  // A GEMM [rows x in] · [in x out]; with groups > 1, `rows` is summed over the groups.
  // Bytes: input, weights and output, bf16 (§11 compute ops).
  void Gemm(std::string name, int64_t rows, int64_t out, int64_t in, int64_t groups = 1) {
    Op op = NewOp(std::move(name));
    op.gemm = GemmShape{.m = rows, .n = out, .k = in, .groups = groups};
    op.flops = 2 * rows * out * in;
    op.bytes = (rows * in + groups * in * out + rows * out) * kBf16Bytes;
    ops_.push_back(std::move(op));
  }
  // Backward of the forward GEMM (rows, out, in): dgrad [rows x out]·[out x in] ...
  void Dgrad(const std::string& name, int64_t rows, int64_t out, int64_t in, int64_t groups = 1) {
    Gemm(name + ".dgrad", rows, in, out, groups);
  }
  // ... and wgrad [out x rows]·[rows x in]; each costs 2·rows·out·in, together 2x forward.
  void Wgrad(const std::string& name, int64_t rows, int64_t out, int64_t in, int64_t groups = 1) {
    Op op = NewOp(name + ".wgrad");
    op.gemm = GemmShape{.m = out, .n = in, .k = rows, .groups = groups};
    op.flops = 2 * rows * out * in;
    op.bytes = (rows * in + groups * in * out + rows * out) * kBf16Bytes;
    ops_.push_back(std::move(op));
  }
  void Comm(std::string name, Collective collective, GroupKind group, int64_t group_size,
            int64_t message_bytes) {
    if (group_size <= 1) return;
    Op op = NewOp(std::move(name));
    op.collective = collective;
    op.group = group;
    op.group_size = group_size;
    op.message_bytes = message_bytes;
    ops_.push_back(std::move(op));
  }
  void Append(const std::vector<Op>& ops) { ops_.insert(ops_.end(), ops.begin(), ops.end()); }
  [[nodiscard]] Phase phase() const { return phase_; }
  [[nodiscard]] int64_t layer() const { return layer_; }
  [[nodiscard]] std::vector<Op> Take() { return std::move(ops_); }

 private:
  Op NewOp(std::string name) const {
    Op op;
    op.phase = phase_;
    op.layer = layer_;
    op.name = std::move(name);
    return op;
  }
  Phase phase_;
  int64_t layer_;
  std::vector<Op> ops_;
};

int64_t Tp(const LayerOpContext& c) { return c.training.parallel.tensor; }
int64_t Cp(const LayerOpContext& c) { return c.training.parallel.context; }

// Sharding of the activation entering a TP linear: AG under SP, AR of dgrad without (§2.1-2.2).
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

// ---- Attention (§2.2, §2.3, §6) ----

int64_t QkvWidth(const config::AttentionConfig& a) {
  return a.QueryWidth() + 2 * a.KvWidth() + a.GateWidth();
}

// KV heads per rank g_l = max(1, g/t) (attention.py:353-367).
int64_t LocalKvHeads(const LayerOpContext& c) {
  return std::max<int64_t>(1, c.model.attention.num_kv_heads / Tp(c));
}

CpCommType CpTypeOfLayer(const LayerOpContext& c, int64_t layer) {
  const std::vector<CpCommType>& types = c.training.context.comm_types;
  if (types.empty()) return CpCommType::kP2p;
  if (types.size() > 1 && layer >= 0 && layer < static_cast<int64_t>(types.size())) {
    return types[static_cast<size_t>(layer)];
  }
  return types.front();
}

// p2p ring (§6): `steps` sends and receives of the given sizes to the ring neighbours.
void CpRing(OpSink& sink, const std::string& name, int64_t group_size,
            const std::vector<int64_t>& step_bytes) {
  for (size_t i = 0; i < step_bytes.size(); ++i) {
    const std::string step = name + ".step" + std::to_string(i);
    sink.Comm(step + ".send", Collective::kSend, GroupKind::kCp, group_size, step_bytes[i]);
    sink.Comm(step + ".recv", Collective::kRecv, GroupKind::kCp, group_size, step_bytes[i]);
  }
}

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

CpSizes AttentionCpSizes(const LayerOpContext& c) {
  const config::AttentionConfig& a = c.model.attention;
  const int64_t tokens = c.TokensPerRank();
  return CpSizes{.q_bytes = tokens * (a.num_heads / Tp(c)) * a.head_dim * kBf16Bytes,
                 .kv_bytes = tokens * LocalKvHeads(c) * a.head_dim * kBf16Bytes};
}

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
      sink.Comm(base + ".ag_k", Collective::kAllGather, GroupKind::kCp, cp, cp * sz.kv_bytes);
      sink.Comm(base + ".ag_v", Collective::kAllGather, GroupKind::kCp, cp, cp * sz.kv_bytes);
      return;
    case CpCommType::kA2a:
      if (backward) {  // dO (:4677)
        sink.Comm(base + ".a2a_do", Collective::kAllToAll, GroupKind::kCp, cp, sz.q_bytes);
        return;
      }
      sink.Comm(base + ".a2a_q", Collective::kAllToAll, GroupKind::kCp, cp, sz.q_bytes);
      sink.Comm(base + ".a2a_k", Collective::kAllToAll, GroupKind::kCp, cp, sz.kv_bytes);
      sink.Comm(base + ".a2a_v", Collective::kAllToAll, GroupKind::kCp, cp, sz.kv_bytes);
      return;
    case CpCommType::kA2aP2p: {
      // Hierarchical [c1, c2]: a2a within c1 ranks, ring over c2 with KV' = 2·(s/c2)·b·(g_l/c1)·
      // d_h·2 = the local K+V (§6 table, last row). Both reported on the CP group kind.
      const std::vector<int64_t>& h = c.training.context.hierarchical_sizes;
      const int64_t c1 = h.size() == 2 ? h[0] : cp;
      const int64_t c2 = h.size() == 2 ? h[1] : 1;
      if (backward) {
        sink.Comm(base + ".a2a_do", Collective::kAllToAll, GroupKind::kCp, c1, sz.q_bytes);
      } else {
        sink.Comm(base + ".a2a_q", Collective::kAllToAll, GroupKind::kCp, c1, sz.q_bytes);
        sink.Comm(base + ".a2a_k", Collective::kAllToAll, GroupKind::kCp, c1, sz.kv_bytes);
        sink.Comm(base + ".a2a_v", Collective::kAllToAll, GroupKind::kCp, c1, sz.kv_bytes);
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
    sink.Comm(base + ".rs_dk", Collective::kReduceScatter, GroupKind::kCp, cp, cp * sz.kv_bytes);
    sink.Comm(base + ".rs_dv", Collective::kReduceScatter, GroupKind::kCp, cp, cp * sz.kv_bytes);
  }
  if (type != CpCommType::kA2a && type != CpCommType::kA2aP2p) return;
  const std::vector<int64_t>& h = c.training.context.hierarchical_sizes;
  const int64_t group = (type == CpCommType::kA2aP2p && h.size() == 2) ? h[0] : cp;
  if (!backward) {  // O back to sequence sharding (:4485)
    sink.Comm(base + ".a2a_o", Collective::kAllToAll, GroupKind::kCp, group, sz.q_bytes);
    return;
  }
  sink.Comm(base + ".a2a_dq", Collective::kAllToAll, GroupKind::kCp, group, sz.q_bytes);  // :4837
  sink.Comm(base + ".a2a_dk", Collective::kAllToAll, GroupKind::kCp, group, sz.kv_bytes);
  sink.Comm(base + ".a2a_dv", Collective::kAllToAll, GroupKind::kCp, group, sz.kv_bytes);
}

// Causal core attention (§11): 2·b·(n/t)·d_h·s²/c = 2·b·(n/t)·d_h·s·s_c forward (QKᵀ and PV,
// each 2·s²·d_h per head, halved by the causal mask). THD counts Σ s_i² per packed sequence;
// without a length distribution a micro-batch is b sequences of length s, which equals BSHD.
// Bytes: read Q, K, V, write O (local heads).
void CoreAttention(OpSink& sink, const LayerOpContext& c, int64_t multiplier) {
  const config::AttentionConfig& a = c.model.attention;
  const int64_t local_heads = a.num_heads / Tp(c);
  const int64_t s = c.training.batch.seq_length;
  const int64_t flops =
      2 * c.training.batch.micro_batch_size * local_heads * a.head_dim * s * (s / Cp(c));
  const CpSizes sz = AttentionCpSizes(c);
  const std::string name = multiplier == 1 ? "attention.core" : "attention.core.backward";
  sink.Compute(name, multiplier * flops, multiplier * (2 * sz.q_bytes + 2 * sz.kv_bytes));
}

void AttentionForward(OpSink& sink, const LayerOpContext& c) {
  const config::AttentionConfig& a = c.model.attention;
  const int64_t h = c.model.hidden_size;
  ColumnForward(sink, c, "attention.linear_qkv", QkvWidth(a) / Tp(c), h, c.ActivationBytes());
  if (Tp(c) > a.num_kv_heads) {  // §2.3: last-dim AG of mixed_qkv (attention.py:340-380)
    sink.Comm("attention.qkv_gather", Collective::kAllGather, GroupKind::kTp, Tp(c),
              c.TokensPerRank() * QkvWidth(a) * kBf16Bytes);
  }
  CpBeforeCore(sink, c, sink.layer(), /*backward=*/false);
  CoreAttention(sink, c, 1);
  CpAfterCore(sink, c, sink.layer(), /*backward=*/false);
  RowForward(sink, c, "attention.linear_proj", h, a.QueryWidth() / Tp(c));
}

void AttentionBackward(OpSink& sink, const LayerOpContext& c) {
  const config::AttentionConfig& a = c.model.attention;
  const int64_t h = c.model.hidden_size;
  RowBackward(sink, c, "attention.linear_proj", h, a.QueryWidth() / Tp(c));
  CpBeforeCore(sink, c, sink.layer(), /*backward=*/true);
  CoreAttention(sink, c, 2);
  CpAfterCore(sink, c, sink.layer(), /*backward=*/true);
  if (Tp(c) > a.num_kv_heads) {  // §2.3: RS of the same size in backward
    sink.Comm("attention.qkv_gather.rs_grad", Collective::kReduceScatter, GroupKind::kTp, Tp(c),
              c.TokensPerRank() * QkvWidth(a) * kBf16Bytes);
  }
  ColumnBackward(sink, c, "attention.linear_qkv", QkvWidth(a) / Tp(c), h, c.ActivationBytes());
}

// ---- Gated DeltaNet (§7) ----

// Head-parallel CP all-to-alls exist from core 0.18 (§7.3, §7.5).
bool GdnUsesCp(const LayerOpContext& c) {
  return Cp(c) > 1 && c.training.core_version >= config::CoreVersion::kV0_18;
}

// Chunked delta-rule kernel (qwen-architectures.md §8.2, dense count), per token and value head:
// 6C·d_k + 4C·d_v + 6·d_k·d_v + (2/3)C², over s_c·b tokens and H_v/t heads per rank.
int64_t GdnKernelFlops(const LayerOpContext& c) {
  const config::GdnConfig& g = c.model.gdn;
  const int64_t chunk = g.chunk_size;
  const int64_t thrice_per_head = 18 * chunk * g.key_head_dim + 12 * chunk * g.value_head_dim +
                                  18 * g.key_head_dim * g.value_head_dim + 2 * chunk * chunk;
  return c.TokensPerRank() * (g.num_value_heads / Tp(c)) * thrice_per_head / 3;
}

void GdnCpA2a(OpSink& sink, const LayerOpContext& c, const std::string& name, int64_t width) {
  if (!GdnUsesCp(c)) return;
  sink.Comm(name, Collective::kAllToAll, GroupKind::kCp, Cp(c),
            c.TokensPerRank() * width / Tp(c) * kBf16Bytes);
}

// GDN work between in_proj and out_proj; `multiplier` 2 for backward.
void GdnCore(OpSink& sink, const LayerOpContext& c, int64_t multiplier) {
  const config::GdnConfig& g = c.model.gdn;
  const int64_t tokens = c.TokensPerRank();
  const std::string suffix = multiplier == 1 ? "" : ".backward";
  const int64_t conv_channels = g.ConvChannels() / Tp(c);
  sink.Compute("gdn.conv1d" + suffix, multiplier * 2 * tokens * g.conv_kernel * conv_channels,
               multiplier * 2 * tokens * conv_channels * kBf16Bytes);
  sink.Compute("gdn.kernel" + suffix, multiplier * GdnKernelFlops(c),
               multiplier * tokens * (g.InProjWidth() + g.ValueWidth()) / Tp(c) * kBf16Bytes);
}

void GdnOutNorm(OpSink& sink, const LayerOpContext& c) {
  const int64_t width = c.model.gdn.ValueWidth() / Tp(c);
  sink.Compute("gdn.out_norm", 0, 3 * c.TokensPerRank() * width * kBf16Bytes);
  GdnCpA2a(sink, c, "gdn.cp.a2a_out", c.model.gdn.ValueWidth());  // head -> sequence
}

void GdnForward(OpSink& sink, const LayerOpContext& c) {
  const config::GdnConfig& g = c.model.gdn;
  const int64_t h = c.model.hidden_size;
  ColumnForward(sink, c, "gdn.in_proj", g.InProjWidth() / Tp(c), h, c.ActivationBytes());
  GdnCpA2a(sink, c, "gdn.cp.a2a_in", g.InProjWidth());  // sequence -> head (common.py:819-900)
  GdnCore(sink, c, 1);
  GdnOutNorm(sink, c);
  RowForward(sink, c, "gdn.out_proj", h, g.ValueWidth() / Tp(c));
}

void GdnBackward(OpSink& sink, const LayerOpContext& c) {
  const config::GdnConfig& g = c.model.gdn;
  const int64_t h = c.model.hidden_size;
  RowBackward(sink, c, "gdn.out_proj", h, g.ValueWidth() / Tp(c));
  GdnCpA2a(sink, c, "gdn.cp.a2a_out.grad", g.ValueWidth());
  GdnCore(sink, c, 2);
  GdnCpA2a(sink, c, "gdn.cp.a2a_in.grad", g.InProjWidth());
  ColumnBackward(sink, c, "gdn.in_proj", g.InProjWidth() / Tp(c), h, c.ActivationBytes());
}

// ---- Dense MLP and shared experts (§2.2, §3.1) ----

void MlpForward(OpSink& sink, const LayerOpContext& c, const std::string& prefix, int64_t ffn) {
  const int64_t h = c.model.hidden_size;
  ColumnForward(sink, c, prefix + ".linear_fc1", 2 * ffn / Tp(c), h, c.ActivationBytes());
  RowForward(sink, c, prefix + ".linear_fc2", h, ffn / Tp(c));
}

void MlpBackward(OpSink& sink, const LayerOpContext& c, const std::string& prefix, int64_t ffn) {
  const int64_t h = c.model.hidden_size;
  RowBackward(sink, c, prefix + ".linear_fc2", h, ffn / Tp(c));
  ColumnBackward(sink, c, prefix + ".linear_fc1", 2 * ffn / Tp(c), h, c.ActivationBytes());
}

// ---- MoE (§3) ----

// Bytes per router-prob element β_p (router.py:105-112).
int64_t ProbBytes(const LayerOpContext& c) {
  switch (c.training.moe.router_dtype) {
    case config::RouterDtype::kFp32:
      return kFp32Bytes;
    case config::RouterDtype::kFp64:
      return 2 * kFp32Bytes;
    case config::RouterDtype::kActivation:
      return kBf16Bytes;
  }
  return kBf16Bytes;
}

struct MoeSizes {
  int64_t tokens = 0;     // T = b·s_c/t, SP-sharded tokens entering the layer
  int64_t rows_sent = 0;  // (token, expert) rows one rank sends: T·k, or C·E when padded
  int64_t etp = 1;        // u
  int64_t ep = 1;         // e
  int64_t local_experts = 1;
};

// Capacity C = ceil(T·k/E·cf) (moe_utils.py:248-266); padded splits send C·E rows, unpadded at
// most min(T·k, C·E).
MoeSizes ComputeMoeSizes(const LayerOpContext& c) {
  const config::MoeConfig& moe = c.model.moe;
  MoeSizes sz;
  sz.tokens = c.TokensPerRank() / (c.SequenceParallel() ? Tp(c) : 1);
  sz.etp = c.training.parallel.ExpertTensor();
  sz.ep = c.training.parallel.expert;
  sz.local_experts = moe.num_experts / sz.ep;
  sz.rows_sent = sz.tokens * moe.top_k;
  if (c.training.moe.capacity_factor.has_value()) {
    const int64_t capacity = static_cast<int64_t>(
        std::ceil(static_cast<double>(sz.rows_sent) / static_cast<double>(moe.num_experts) *
                  *c.training.moe.capacity_factor));
    const int64_t padded = capacity * moe.num_experts;
    sz.rows_sent =
        c.training.moe.pad_expert_input_to_capacity ? padded : std::min(sz.rows_sent, padded);
  }
  return sz;
}

// Router GEMM and load-balancing statistics AR (§3.1), forward.
void RouterForward(OpSink& sink, const LayerOpContext& c, const MoeSizes& sz) {
  const config::MoeConfig& moe = c.model.moe;
  sink.Gemm("moe.router", sz.tokens, moe.num_experts, c.model.hidden_size);
  if (moe.aux_loss_coef <= 0.0) return;
  const int64_t counts_bytes = moe.num_experts * kInt64Bytes;
  const int64_t tp_cp = Tp(c) * Cp(c);
  switch (c.training.moe.load_balancing) {
    case config::LoadBalancing::kAuxLoss:  // moe_utils.py:278-281, over tp×cp
      sink.Comm("moe.router.aux_loss_ar", Collective::kAllReduce, GroupKind::kTpCp, tp_cp,
                counts_bytes);
      return;
    case config::LoadBalancing::kSeqAuxLoss:  // b·E counts
      sink.Comm("moe.router.aux_loss_ar", Collective::kAllReduce, GroupKind::kTpCp, tp_cp,
                c.training.batch.micro_batch_size * counts_bytes);
      return;
    case config::LoadBalancing::kGlobalAuxLoss:
      // router.py:515-523 reduces over tp×dp×cp. There is no such GroupKind; kDpCp with group
      // size t·d·c stands for it.
      sink.Comm("moe.router.global_aux_loss_ar", Collective::kAllReduce, GroupKind::kDpCp,
                tp_cp * c.training.parallel.Data(), counts_bytes);
      return;
    case config::LoadBalancing::kSinkhorn:
    case config::LoadBalancing::kNone:
      return;
  }
}

// Expert fc1 (h -> 2F_e/u) and fc2 (F_e/u -> h) over `rows` rows as grouped GEMMs over the local
// experts; no communication inside (explicit_expert_comm, §3.1).
void ExpertsForward(OpSink& sink, const LayerOpContext& c, const MoeSizes& sz, int64_t rows) {
  const int64_t ffn = c.model.moe.expert_ffn_hidden_size / sz.etp;
  sink.Gemm("moe.experts.linear_fc1", rows, 2 * ffn, c.model.hidden_size, sz.local_experts);
  sink.Gemm("moe.experts.linear_fc2", rows, c.model.hidden_size, ffn, sz.local_experts);
}

void ExpertsBackward(OpSink& sink, const LayerOpContext& c, const MoeSizes& sz, int64_t rows) {
  const int64_t ffn = c.model.moe.expert_ffn_hidden_size / sz.etp;
  const int64_t h = c.model.hidden_size;
  sink.Dgrad("moe.experts.linear_fc2", rows, h, ffn, sz.local_experts);
  sink.Wgrad("moe.experts.linear_fc2", rows, h, ffn, sz.local_experts);
  sink.Dgrad("moe.experts.linear_fc1", rows, 2 * ffn, h, sz.local_experts);
  sink.Wgrad("moe.experts.linear_fc1", rows, 2 * ffn, h, sz.local_experts);
}

// alltoall dispatcher forward (§3.2, token_dispatcher.py:375-910). Balanced routing: each rank
// receives R = rows_sent rows.
void AllToAllForward(OpSink& sink, const LayerOpContext& c, const MoeSizes& sz) {
  const int64_t h = c.model.hidden_size, bp = ProbBytes(c), r = sz.rows_sent, u = sz.etp;
  const int64_t tp_ep = u * sz.ep;
  if (!c.training.moe.pad_expert_input_to_capacity) {  // :557-575
    sink.Comm("moe.dispatch.metadata_ag", Collective::kAllGather, GroupKind::kTpEp, tp_ep,
              tp_ep * c.model.moe.num_experts * kInt64Bytes);
  }
  sink.Comm("moe.dispatch.a2a_tokens", Collective::kAllToAll, GroupKind::kEp, sz.ep,
            r * h * kBf16Bytes);
  sink.Comm("moe.dispatch.a2a_probs", Collective::kAllToAll, GroupKind::kEp, sz.ep, r * bp);
  sink.Comm("moe.dispatch.ag_tokens", Collective::kAllGather, GroupKind::kEtp, u,
            u * r * h * kBf16Bytes);
  sink.Comm("moe.dispatch.ag_probs", Collective::kAllGather, GroupKind::kEtp, u, u * r * bp);
  ExpertsForward(sink, c, sz, u * r);
  sink.Comm("moe.combine.rs_output", Collective::kReduceScatter, GroupKind::kEtp, u,
            u * r * h * bp);  // in the probs dtype, :824-832
  sink.Comm("moe.combine.a2a_tokens", Collective::kAllToAll, GroupKind::kEp, sz.ep,
            r * h * kBf16Bytes);
}

void AllToAllBackward(OpSink& sink, const LayerOpContext& c, const MoeSizes& sz) {
  const int64_t h = c.model.hidden_size, bp = ProbBytes(c), r = sz.rows_sent, u = sz.etp;
  sink.Comm("moe.combine.a2a_tokens.grad", Collective::kAllToAll, GroupKind::kEp, sz.ep,
            r * h * kBf16Bytes);  // _AllToAll.backward, mappings.py:470-489
  sink.Comm("moe.combine.rs_output.grad", Collective::kAllGather, GroupKind::kEtp, u,
            u * r * h * bp);
  ExpertsBackward(sink, c, sz, u * r);
  sink.Comm("moe.dispatch.ag_tokens.grad", Collective::kReduceScatter, GroupKind::kEtp, u,
            u * r * h * kBf16Bytes);
  sink.Comm("moe.dispatch.ag_probs.grad", Collective::kReduceScatter, GroupKind::kEtp, u,
            u * r * bp);
  sink.Comm("moe.dispatch.a2a_probs.grad", Collective::kAllToAll, GroupKind::kEp, sz.ep, r * bp);
  sink.Comm("moe.dispatch.a2a_tokens.grad", Collective::kAllToAll, GroupKind::kEp, sz.ep,
            r * h * kBf16Bytes);
}

// allgather dispatcher (§3.3, token_dispatcher.py:233-372) over tp_ep, G = u·e.
void AllGatherForward(OpSink& sink, const LayerOpContext& c, const MoeSizes& sz) {
  const int64_t h = c.model.hidden_size, e = c.model.moe.num_experts, bp = ProbBytes(c);
  const int64_t g = sz.etp * sz.ep, t = sz.tokens;
  sink.Comm("moe.dispatch.ag_routing_map", Collective::kAllGather, GroupKind::kTpEp, g,
            g * t * e * kBoolBytes);
  sink.Comm("moe.dispatch.ag_probs", Collective::kAllGather, GroupKind::kTpEp, g, g * t * e * bp);
  sink.Comm("moe.dispatch.ag_tokens", Collective::kAllGather, GroupKind::kTpEp, g,
            g * t * h * kBf16Bytes);
  ExpertsForward(sink, c, sz, sz.etp * t * c.model.moe.top_k);
  sink.Comm("moe.combine.rs_output", Collective::kReduceScatter, GroupKind::kTpEp, g,
            g * t * h * bp);
}

void AllGatherBackward(OpSink& sink, const LayerOpContext& c, const MoeSizes& sz) {
  const int64_t h = c.model.hidden_size, e = c.model.moe.num_experts, bp = ProbBytes(c);
  const int64_t g = sz.etp * sz.ep, t = sz.tokens;
  sink.Comm("moe.combine.rs_output.grad", Collective::kAllGather, GroupKind::kTpEp, g,
            g * t * h * bp);
  ExpertsBackward(sink, c, sz, sz.etp * t * c.model.moe.top_k);
  sink.Comm("moe.dispatch.ag_tokens.grad", Collective::kReduceScatter, GroupKind::kTpEp, g,
            g * t * h * kBf16Bytes);
  sink.Comm("moe.dispatch.ag_probs.grad", Collective::kReduceScatter, GroupKind::kTpEp, g,
            g * t * e * bp);
}

// flex (§3.4): rows ≈ T·D·u with D = e·[1 − C(E−E_loc, k)/C(E, k)] distinct EP destinations.
int64_t FlexRows(const LayerOpContext& c, const MoeSizes& sz) {
  const int64_t experts = c.model.moe.num_experts;
  double miss = 1.0;  // C(E−E_loc, k)/C(E, k) = Π_{i<k} (E−E_loc−i)/(E−i)
  for (int64_t i = 0; i < c.model.moe.top_k; ++i) {
    miss *= static_cast<double>(std::max<int64_t>(0, experts - sz.local_experts - i)) /
            static_cast<double>(experts - i);
  }
  const double destinations = static_cast<double>(sz.ep) * (1.0 - miss);
  return std::llround(static_cast<double>(sz.tokens) * destinations * static_cast<double>(sz.etp));
}

// Dispatch rows carry h·2 bytes plus top-(u·k) fp32 probs and int64 indices (DeepEP casts the
// probs to fp32, :1313-1319); combine rows carry h·2 bytes.
void FlexComm(OpSink& sink, const LayerOpContext& c, const MoeSizes& sz, bool dispatch,
              const std::string& name) {
  const int64_t rows = FlexRows(c, sz), uk = sz.etp * c.model.moe.top_k;
  const int64_t row_bytes =
      c.model.hidden_size * kBf16Bytes + (dispatch ? uk * (kFp32Bytes + kInt64Bytes) : 0);
  sink.Comm(name, Collective::kAllToAll, GroupKind::kTpEp, sz.etp * sz.ep, rows * row_bytes);
}

void FlexForward(OpSink& sink, const LayerOpContext& c, const MoeSizes& sz) {
  FlexComm(sink, c, sz, /*dispatch=*/true, "moe.dispatch.flex");
  ExpertsForward(sink, c, sz, sz.etp * sz.tokens * c.model.moe.top_k);
  FlexComm(sink, c, sz, /*dispatch=*/false, "moe.combine.flex");
}

// Combine-backward is a dispatch of the combine's size; dispatch-backward a combine.
void FlexBackward(OpSink& sink, const LayerOpContext& c, const MoeSizes& sz) {
  FlexComm(sink, c, sz, /*dispatch=*/false, "moe.combine.flex.grad");
  ExpertsBackward(sink, c, sz, sz.etp * sz.tokens * c.model.moe.top_k);
  FlexComm(sink, c, sz, /*dispatch=*/false, "moe.dispatch.flex.grad");
}

// The routed part of a MoE layer: router, statistics, dispatcher, experts.
void RoutedForward(OpSink& sink, const LayerOpContext& c) {
  const MoeSizes sz = ComputeMoeSizes(c);
  RouterForward(sink, c, sz);
  switch (c.training.moe.dispatcher) {
    case config::TokenDispatcher::kAllToAll:
      AllToAllForward(sink, c, sz);
      return;
    case config::TokenDispatcher::kAllGather:
      AllGatherForward(sink, c, sz);
      return;
    case config::TokenDispatcher::kFlex:
      FlexForward(sink, c, sz);
      return;
  }
}

void RoutedBackward(OpSink& sink, const LayerOpContext& c) {
  const MoeSizes sz = ComputeMoeSizes(c);
  switch (c.training.moe.dispatcher) {
    case config::TokenDispatcher::kAllToAll:
      AllToAllBackward(sink, c, sz);
      break;
    case config::TokenDispatcher::kAllGather:
      AllGatherBackward(sink, c, sz);
      break;
    case config::TokenDispatcher::kFlex:
      FlexBackward(sink, c, sz);
      break;
  }
  const int64_t experts = c.model.moe.num_experts, h = c.model.hidden_size;
  sink.Dgrad("moe.router", sz.tokens, experts, h);
  sink.Wgrad("moe.router", sz.tokens, experts, h);
}

// The whole MoE layer forward: routed path, then the shared expert (a TP MLP of width F_s).
void MoeForward(OpSink& sink, const LayerOpContext& c) {
  RoutedForward(sink, c);
  if (c.model.moe.HasSharedExpert()) {
    MlpForward(sink, c, "moe.shared_experts", c.model.moe.shared_expert_ffn_hidden_size);
  }
}

void MoeBackward(OpSink& sink, const LayerOpContext& c) {
  if (c.model.moe.HasSharedExpert()) {
    MlpBackward(sink, c, "moe.shared_experts", c.model.moe.shared_expert_ffn_hidden_size);
  }
  RoutedBackward(sink, c);
}

// ---- Layer assembly ----

void MixerForward(OpSink& sink, const LayerOpContext& c, LayerSpec spec) {
  if (spec.mixer == MixerKind::kGatedDeltaNet) {
    GdnForward(sink, c);
  } else {
    AttentionForward(sink, c);
  }
}

void FfnForward(OpSink& sink, const LayerOpContext& c, LayerSpec spec) {
  if (spec.ffn == config::FfnKind::kMoe) {
    MoeForward(sink, c);
  } else {
    MlpForward(sink, c, "mlp", c.model.ffn_hidden_size);
  }
}

std::vector<Op> LayerForward(const LayerOpContext& c, LayerSpec spec, int64_t layer) {
  OpSink sink(Phase::kForward, layer);
  MixerForward(sink, c, spec);
  FfnForward(sink, c, spec);
  return sink.Take();
}

std::vector<Op> LayerBackward(const LayerOpContext& c, LayerSpec spec, int64_t layer) {
  OpSink sink(Phase::kBackward, layer);
  if (spec.ffn == config::FfnKind::kMoe) {
    MoeBackward(sink, c);
  } else {
    MlpBackward(sink, c, "mlp", c.model.ffn_hidden_size);
  }
  if (spec.mixer == MixerKind::kGatedDeltaNet) {
    GdnBackward(sink, c);
  } else {
    AttentionBackward(sink, c);
  }
  return sink.Take();
}

std::vector<Op> Rephase(std::vector<Op> ops, Phase phase) {
  for (Op& op : ops) op.phase = phase;
  return ops;
}

bool Recomputes(const LayerOpContext& c, const std::string& module) {
  const std::vector<std::string>& modules = c.training.recompute.modules;
  return std::find(modules.begin(), modules.end(), module) != modules.end();
}

// Selective recompute (§11 item 3): the forward ops of each checkpointed module of this layer.
// "moe" checkpoints the whole MoELayer (moe_layer.py), so the shared expert is replayed too;
// "layernorm" and "moe_act" replay no communication and are not listed.
void SelectiveRecompute(OpSink& sink, const LayerOpContext& c, LayerSpec spec) {
  const bool attention = spec.mixer != MixerKind::kGatedDeltaNet;
  const bool moe = spec.ffn == config::FfnKind::kMoe;
  if (attention && Recomputes(c, "core_attn")) {  // attention.py:392-395, 446-490
    CpBeforeCore(sink, c, sink.layer(), /*backward=*/false);
    CoreAttention(sink, c, 1);
    CpAfterCore(sink, c, sink.layer(), /*backward=*/false);
  }
  if (!attention && Recomputes(c, "gdn_norm_out")) GdnOutNorm(sink, c);  // gdn.py:266-287
  if (!moe && Recomputes(c, "mlp")) MlpForward(sink, c, "mlp", c.model.ffn_hidden_size);
  if (moe && Recomputes(c, "moe")) {
    MoeForward(sink, c);
  } else if (moe && c.model.moe.HasSharedExpert() && Recomputes(c, "shared_experts")) {
    MlpForward(sink, c, "moe.shared_experts", c.model.moe.shared_expert_ffn_hidden_size);
  }
}

// ---- Embedding, LM head, loss, MTP (§2.5, §2.7, §11 item 4) ----

void EmbeddingForwardInto(OpSink& sink, const LayerOpContext& c, const std::string& prefix) {
  const int64_t a = c.ActivationBytes();
  sink.Compute(prefix + ".lookup", 0, 2 * a);  // read the rows, write [s_c, b, h]
  if (c.SequenceParallel()) {                  // reduce_scatter_embeddings (layers.py:367-380)
    sink.Comm(prefix + ".rs_output", Collective::kReduceScatter, GroupKind::kTp, Tp(c), a);
  } else {  // layers.py:381-383
    sink.Comm(prefix + ".ar_output", Collective::kAllReduce, GroupKind::kTp, Tp(c), a);
  }
}

void EmbeddingBackwardInto(OpSink& sink, const LayerOpContext& c, const std::string& prefix) {
  const int64_t a = c.ActivationBytes();
  if (c.SequenceParallel()) {
    sink.Comm(prefix + ".rs_output.grad", Collective::kAllGather, GroupKind::kTp, Tp(c), a);
  }
  sink.Compute(prefix + ".wgrad", 0, 2 * a);  // scatter-add of the output grad into V/t rows
}

// Output layer (ColumnParallelLinear, gather_output=False) and the unfused vocab-parallel
// cross-entropy: 3 AR(tp) of s_c·b·4 bytes (cross_entropy.py:130, 146, 150).
void LmHeadForwardInto(OpSink& sink, const LayerOpContext& c, const std::string& prefix) {
  const int64_t vocab = c.PaddedVocab() / Tp(c), tokens = c.TokensPerRank();
  if (c.SequenceParallel()) {
    sink.Comm(prefix + ".output_layer.ag_input", Collective::kAllGather, GroupKind::kTp, Tp(c),
              c.ActivationBytes());
  }
  sink.Gemm(prefix + ".output_layer", tokens, vocab, c.model.hidden_size);
  sink.Compute(prefix + ".cross_entropy", 5 * tokens * vocab, tokens * vocab * kFp32Bytes);
  for (const char* what : {"max", "target_logit", "exp_sum"}) {
    sink.Comm(prefix + ".cross_entropy.ar_" + what, Collective::kAllReduce, GroupKind::kTp, Tp(c),
              tokens * kFp32Bytes);
  }
}

void LmHeadBackwardInto(OpSink& sink, const LayerOpContext& c, const std::string& prefix) {
  const int64_t vocab = c.PaddedVocab() / Tp(c), tokens = c.TokensPerRank();
  sink.Compute(prefix + ".cross_entropy.backward", 2 * tokens * vocab,
               2 * tokens * vocab * kFp32Bytes);
  ColumnBackward(sink, c, prefix + ".output_layer", vocab, c.model.hidden_size,
                 c.ActivationBytes());
}

// eh_proj (multi_token_prediction.py:1331-1359): column-parallel over the concatenated 2h input,
// then a last-dim AG of A; under SP a local split back to the sequence shard.
void EhProjForward(OpSink& sink, const LayerOpContext& c) {
  const int64_t h = c.model.hidden_size, a = c.ActivationBytes();
  ColumnForward(sink, c, "mtp.eh_proj", h / Tp(c), 2 * h, 2 * a);
  sink.Comm("mtp.eh_proj.ag_output", Collective::kAllGather, GroupKind::kTp, Tp(c), a);
}

void EhProjBackward(OpSink& sink, const LayerOpContext& c) {
  const int64_t h = c.model.hidden_size, a = c.ActivationBytes();
  if (c.SequenceParallel()) {  // gradient of the SP split
    sink.Comm("mtp.eh_proj.split.grad", Collective::kAllGather, GroupKind::kTp, Tp(c), a);
  }
  ColumnBackward(sink, c, "mtp.eh_proj", h / Tp(c), 2 * h, 2 * a);
}

}  // namespace

int64_t LayerOpContext::TokensPerRank() const {
  return training.batch.seq_length / training.parallel.context * training.batch.micro_batch_size;
}

int64_t LayerOpContext::ActivationBytes() const {
  return TokensPerRank() * model.hidden_size * kBf16Bytes;
}

bool LayerOpContext::SequenceParallel() const {
  return training.sequence_parallel && training.parallel.tensor > 1;
}

int64_t LayerOpContext::PaddedVocab() const {
  return RoundUp(model.vocab_size,
                 training.make_vocab_size_divisible_by * training.parallel.tensor);
}

LayerOpContext MakeLayerOpContext(const config::ModelConfig& model,
                                  const config::TrainingConfig& training) {
  return LayerOpContext{.model = model,
                        .training = training,
                        .layout = config::ResolveSequenceLayout(model, training)};
}

std::vector<Op> DecoderLayerForward(const LayerOpContext& context, int64_t layer) {
  TRAINSCOPE_CHECK(layer >= 0 && layer < context.model.NumLayers(), "layer out of range");
  return LayerForward(context, context.model.layers[static_cast<size_t>(layer)], layer);
}

std::vector<Op> DecoderLayerBackward(const LayerOpContext& context, int64_t layer) {
  TRAINSCOPE_CHECK(layer >= 0 && layer < context.model.NumLayers(), "layer out of range");
  return LayerBackward(context, context.model.layers[static_cast<size_t>(layer)], layer);
}

std::vector<Op> DecoderLayerRecompute(const LayerOpContext& context, int64_t layer,
                                      bool recompute_full_layer) {
  if (recompute_full_layer) {
    return Rephase(DecoderLayerForward(context, layer), Phase::kRecompute);
  }
  if (context.training.recompute.granularity != config::RecomputeGranularity::kSelective) {
    return {};
  }
  TRAINSCOPE_CHECK(layer >= 0 && layer < context.model.NumLayers(), "layer out of range");
  OpSink sink(Phase::kRecompute, layer);
  SelectiveRecompute(sink, context, context.model.layers[static_cast<size_t>(layer)]);
  return sink.Take();
}

std::vector<Op> EmbeddingForward(const LayerOpContext& context) {
  OpSink sink(Phase::kForward, -1);
  const int64_t tokens =
      context.training.batch.micro_batch_size * context.training.batch.seq_length;
  // §2.7: TP rank 0 broadcasts tokens and position_ids (int64, full b×s) to its TP group.
  for (const char* what : {"tokens", "position_ids"}) {
    sink.Comm(std::string("input.broadcast_") + what, Collective::kBroadcast, GroupKind::kTp,
              Tp(context), tokens * kInt64Bytes);
  }
  EmbeddingForwardInto(sink, context, "embedding");
  return sink.Take();
}

std::vector<Op> EmbeddingBackward(const LayerOpContext& context) {
  OpSink sink(Phase::kBackward, -1);
  EmbeddingBackwardInto(sink, context, "embedding");
  return sink.Take();
}

std::vector<Op> LmHeadAndLossForward(const LayerOpContext& context) {
  OpSink sink(Phase::kForward, -1);
  const int64_t tokens =
      context.training.batch.micro_batch_size * context.training.batch.seq_length;
  // §2.7: labels (int64) and loss_mask (fp32) go to the last stage.
  sink.Comm("input.broadcast_labels", Collective::kBroadcast, GroupKind::kTp, Tp(context),
            tokens * kInt64Bytes);
  sink.Comm("input.broadcast_loss_mask", Collective::kBroadcast, GroupKind::kTp, Tp(context),
            tokens * kFp32Bytes);
  LmHeadForwardInto(sink, context, "lm_head");
  return sink.Take();
}

std::vector<Op> LmHeadAndLossBackward(const LayerOpContext& context) {
  OpSink sink(Phase::kBackward, -1);
  LmHeadBackwardInto(sink, context, "lm_head");
  return sink.Take();
}

std::vector<Op> MtpForward(const LayerOpContext& context) {
  std::vector<Op> ops;
  const config::LayerSpec spec = context.model.MtpLayerSpec();
  for (int64_t i = 0; i < context.model.num_mtp_layers; ++i) {
    const int64_t layer = context.model.NumLayers() + i;
    OpSink head(Phase::kForward, layer);
    EmbeddingForwardInto(head, context, "mtp.embedding");
    EhProjForward(head, context);
    head.Append(LayerForward(context, spec, layer));
    LmHeadForwardInto(head, context, "mtp.lm_head");
    const std::vector<Op> layer_ops = head.Take();
    ops.insert(ops.end(), layer_ops.begin(), layer_ops.end());
  }
  return ops;
}

std::vector<Op> MtpBackward(const LayerOpContext& context) {
  std::vector<Op> ops;
  const config::LayerSpec spec = context.model.MtpLayerSpec();
  for (int64_t i = context.model.num_mtp_layers - 1; i >= 0; --i) {
    const int64_t layer = context.model.NumLayers() + i;
    OpSink sink(Phase::kBackward, layer);
    LmHeadBackwardInto(sink, context, "mtp.lm_head");
    sink.Append(LayerBackward(context, spec, layer));
    EhProjBackward(sink, context);
    EmbeddingBackwardInto(sink, context, "mtp.embedding");
    const std::vector<Op> layer_ops = sink.Take();
    ops.insert(ops.end(), layer_ops.begin(), layer_ops.end());
  }
  return ops;
}

}  // namespace trainscope::graph
