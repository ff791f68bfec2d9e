// Multi-latent attention op builder (Megatron-Core MLASelfAttention with the TE spec,
// megatron/core/transformer/multi_latent_attention.py and models/gpt/gpt_layer_specs.py:104-131):
// replicated down projections on the sequence shard, latent norms, column-parallel up projections
// that gather the latents, RoPE, the core-attention kernel with q/k head dim nope + rope and v head
// dim v, and the row-parallel output projection. Forward and backward.
#include <string>
#include <vector>

#include "trainscope/graph/elementwise_ops.h"
#include "trainscope/graph/layer_ops_internal.h"
#include "trainscope/units.h"

namespace trainscope::graph::internal {

using config::GroupKind;

namespace {

constexpr OpRole kDownProj{.kind = OpKind::kGemm, .block = OpBlock::kAttention};

// The down projections are TELinear in 'duplicated' mode (multi_latent_attention.py:526-555,
// 573-602): each TP rank multiplies its own tokens, the s_c·b/t sequence shard under SP, by the
// whole [H -> width] weight; no communication. The dims of one down projection.
struct DownProj {
  std::string name;
  int64_t width = 0;
};

std::vector<DownProj> DownProjections(const config::MlaConfig& mla) {
  std::vector<DownProj> out;
  if (mla.q_lora_rank > 0) out.push_back({"attention.linear_q_down_proj", mla.q_lora_rank});
  out.push_back({"attention.linear_kv_down_proj", mla.KvDownWidth()});
  return out;
}

// Bytes of an all-gathered [s_c·b, width] bf16 activation.
int64_t GatheredBytes(const LayerOpContext& c, int64_t width) {
  return c.TokensPerRank() * width * kBf16Bytes;
}

// The q and kv latent RMSNorms (fused into the up projections' TELayerNormColumnParallelLinear,
// priced as norms) on the sequence shard, and under SP the all-gather of the shared RoPE key
// k_pos_emb (multi_latent_attention.py:757-761); its backward is a reduce-scatter.
void LatentNorms(OpSink& sink, const LayerOpContext& c) {
  const config::MlaConfig& mla = c.model.mla;
  const OpRole norm = KernelRole(OpKind::kNorm, OpBlock::kAttention);
  if (mla.q_lora_rank > 0) {
    Elementwise(sink, norm, "attention.q_layernorm", ShardTokens(c) * mla.q_lora_rank, kRmsNorm);
  }
  Elementwise(sink, norm, "attention.kv_layernorm", ShardTokens(c) * mla.kv_lora_rank, kRmsNorm);
}

void RopeKeyGather(OpSink& sink, const LayerOpContext& c, bool backward) {
  if (!c.SequenceParallel()) return;
  const int64_t bytes = GatheredBytes(c, c.model.mla.qk_rope_head_dim);
  if (backward) {
    sink.Comm("attention.k_pos_emb.rs_grad", CommRole(OpBlock::kAttention, CommPurpose::kSpScatter),
              Collective::kReduceScatter, GroupKind::kTp, Tp(c), bytes);
    return;
  }
  sink.Comm("attention.k_pos_emb.ag", CommRole(OpBlock::kAttention, CommPurpose::kSpGather),
            Collective::kAllGather, GroupKind::kTp, Tp(c), bytes);
}

// RoPE on the rope part of the n/t local q heads and on the one shared k_pos_emb
// (apply_rotary_pos_emb in get_query_key_value_tensors): 2·3 FLOPs and 2 reads + 1 write per
// rotated element, as the GQA RoPE op.
void MlaRope(OpSink& sink, const LayerOpContext& c) {
  const int64_t vectors = c.TokensPerRank() * (c.model.attention.num_heads / Tp(c) + 1);
  const int64_t rotated = vectors * c.model.mla.qk_rope_head_dim;
  sink.Compute("attention.rope", KernelRole(OpKind::kElementwise, OpBlock::kAttention),
               rotated * kRope.flops, rotated * kRope.bytes);
}

int64_t QueryOut(const LayerOpContext& c) {
  return c.model.attention.num_heads * c.model.mla.QkHeadDim() / Tp(c);
}

int64_t KvUpOut(const LayerOpContext& c) {
  const config::MlaConfig& mla = c.model.mla;
  return c.model.attention.num_heads * (mla.qk_nope_head_dim + mla.v_head_dim) / Tp(c);
}

int64_t ProjIn(const LayerOpContext& c) {
  return c.model.attention.num_heads * c.model.mla.v_head_dim / Tp(c);
}

// The q and kv up projections (latent norms fused in) and RoPE: the part of the block that
// qkv_up_proj_and_rope_apply computes, and the mla_up_proj recompute replays.
void UpProjections(OpSink& sink, const LayerOpContext& c) {
  const config::MlaConfig& mla = c.model.mla;
  LatentNorms(sink, c);
  if (mla.q_lora_rank > 0) {  // SP gathers the q latent, not the hidden states
    ColumnForward(sink, c, OpBlock::kAttention, "attention.linear_q_up_proj", QueryOut(c),
                  mla.q_lora_rank, GatheredBytes(c, mla.q_lora_rank));
  } else {
    ColumnForward(sink, c, OpBlock::kAttention, "attention.linear_q_proj", QueryOut(c),
                  c.model.hidden_size, c.ActivationBytes());
  }
  ColumnForward(sink, c, OpBlock::kAttention, "attention.linear_kv_up_proj", KvUpOut(c),
                mla.kv_lora_rank, GatheredBytes(c, mla.kv_lora_rank));
  MlaRope(sink, c);
}

}  // namespace

void MlaUpProjRecompute(OpSink& sink, const LayerOpContext& c) { UpProjections(sink, c); }

void MlaForward(OpSink& sink, const LayerOpContext& c) {
  const config::MlaConfig& mla = c.model.mla;
  const int64_t h = c.model.hidden_size;
  HiddenNorm(sink, c, OpBlock::kAttention, "attention.input_norm");  // a separate TENorm
  for (const DownProj& down : DownProjections(mla)) {
    sink.Gemm(down.name, kDownProj, ShardTokens(c), down.width, h);
  }
  RopeKeyGather(sink, c, /*backward=*/false);
  UpProjections(sink, c);
  CpBeforeCore(sink, c, sink.layer(), /*backward=*/false);
  CoreAttention(sink, c, 1);
  CpAfterCore(sink, c, sink.layer(), /*backward=*/false);
  RowForward(sink, c, OpBlock::kAttention, "attention.linear_proj", h, ProjIn(c));
}

void MlaBackward(OpSink& sink, const LayerOpContext& c) {
  const config::MlaConfig& mla = c.model.mla;
  const int64_t h = c.model.hidden_size;
  RowBackward(sink, c, OpBlock::kAttention, "attention.linear_proj", h, ProjIn(c));
  CpBeforeCore(sink, c, sink.layer(), /*backward=*/true);
  CoreAttention(sink, c, 2);
  CpAfterCore(sink, c, sink.layer(), /*backward=*/true);
  MlaRope(sink, c);
  ColumnBackward(sink, c, OpBlock::kAttention, "attention.linear_kv_up_proj", KvUpOut(c),
                 mla.kv_lora_rank, GatheredBytes(c, mla.kv_lora_rank));
  if (mla.q_lora_rank > 0) {
    ColumnBackward(sink, c, OpBlock::kAttention, "attention.linear_q_up_proj", QueryOut(c),
                   mla.q_lora_rank, GatheredBytes(c, mla.q_lora_rank));
  } else {
    ColumnBackward(sink, c, OpBlock::kAttention, "attention.linear_q_proj", QueryOut(c), h,
                   c.ActivationBytes());
  }
  LatentNorms(sink, c);
  RopeKeyGather(sink, c, /*backward=*/true);
  for (const DownProj& down : DownProjections(mla)) {
    sink.Dgrad(down.name, kDownProj, ShardTokens(c), down.width, h);
    sink.Wgrad(down.name, kDownProj, ShardTokens(c), down.width, h);
  }
  HiddenNorm(sink, c, OpBlock::kAttention, "attention.input_norm");
}

}  // namespace trainscope::graph::internal
