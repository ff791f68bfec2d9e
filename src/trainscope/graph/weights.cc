#include "trainscope/graph/weights.h"

#include "trainscope/units.h"

namespace trainscope::graph {
namespace {

using config::FfnKind;
using config::MixerKind;
using config::ModelConfig;

// A norm of width `width` named `name` (".weight", and ".bias" for LayerNorm).
void AppendNorm(const ModelConfig& model, const std::string& name, int64_t width,
                std::vector<WeightTensor>& out) {
  out.push_back({name + ".weight", Component::kNorms, width, 1, 1, Split::kReplicated, false});
  if (model.norm == config::NormKind::kLayerNorm) {
    out.push_back({name + ".bias", Component::kNorms, width, 1, 1, Split::kReplicated, false});
  }
}

// Softmax attention with Megatron's fused linear_qkv ([Q_g gate_g K_g V_g] per query group;
// Megatron-Bridge merge_qkv_weights) and the input norm fused into it.
void AppendAttention(const ModelConfig& model, std::vector<WeightTensor>& out) {
  const config::AttentionConfig& attention = model.attention;
  const int64_t h = model.hidden_size;
  const int64_t qkv_width =
      attention.QueryWidth() + attention.GateWidth() + 2 * attention.KvWidth();
  AppendNorm(model, "input_layernorm", h, out);
  out.push_back({"self_attention.linear_qkv.weight", Component::kAttention, qkv_width, h, 1,
                 Split::kColumn, false});
  if (attention.bias) {  // column-parallel bias: split with its rows
    out.push_back({"self_attention.linear_qkv.bias", Component::kAttention, qkv_width, 1, 1,
                   Split::kColumn, false});
  }
  if (attention.qk_norm) {
    out.push_back({"self_attention.q_layernorm.weight", Component::kNorms, attention.head_dim, 1, 1,
                   Split::kReplicated, false});
    out.push_back({"self_attention.k_layernorm.weight", Component::kNorms, attention.head_dim, 1, 1,
                   Split::kReplicated, false});
  }
  out.push_back({"self_attention.linear_proj.weight", Component::kAttention, h,
                 attention.QueryWidth(), 1, Split::kRow, false});
  if (attention.bias) {  // row-parallel bias: added once after the reduction, replicated
    out.push_back({"self_attention.linear_proj.bias", Component::kAttention, h, 1, 1,
                   Split::kReplicated, false});
  }
  if (attention.softmax_sinks) {  // one logit per head, split with the heads
    out.push_back({"self_attention.core_attention.softmax_offset", Component::kAttention,
                   attention.num_heads, 1, 1, Split::kColumn, false});
  }
}

// Multi-latent attention as Megatron-Core builds it with the TE spec (multi_latent_attention.py:
// 508-628; gpt_layer_specs.py:104-131): the down projections are TELinear in 'duplicated' mode,
// so every TP rank holds them whole; the q/kv layer norms are fused into the column-parallel up
// projections (layer_norm_weight); linear_proj is row-parallel over the n·v_head_dim heads.
// Without q_lora_rank, q comes from one column-parallel linear_q_proj.
void AppendMla(const ModelConfig& model, std::vector<WeightTensor>& out) {
  const config::MlaConfig& mla = model.mla;
  const int64_t h = model.hidden_size;
  const int64_t n = model.attention.num_heads;
  const Component a = Component::kAttention;
  AppendNorm(model, "input_layernorm", h, out);
  if (mla.q_lora_rank > 0) {
    out.push_back({"self_attention.linear_q_down_proj.weight", a, mla.q_lora_rank, h, 1,
                   Split::kReplicated, false});
    out.push_back({"self_attention.linear_q_up_proj.layer_norm_weight", Component::kNorms,
                   mla.q_lora_rank, 1, 1, Split::kReplicated, false});
    out.push_back({"self_attention.linear_q_up_proj.weight", a, n * mla.QkHeadDim(),
                   mla.q_lora_rank, 1, Split::kColumn, false});
  } else {
    out.push_back({"self_attention.linear_q_proj.weight", a, n * mla.QkHeadDim(), h, 1,
                   Split::kColumn, false});
  }
  out.push_back({"self_attention.linear_kv_down_proj.weight", a, mla.KvDownWidth(), h, 1,
                 Split::kReplicated, false});
  out.push_back({"self_attention.linear_kv_up_proj.layer_norm_weight", Component::kNorms,
                 mla.kv_lora_rank, 1, 1, Split::kReplicated, false});
  out.push_back({"self_attention.linear_kv_up_proj.weight", a,
                 n * (mla.qk_nope_head_dim + mla.v_head_dim), mla.kv_lora_rank, 1, Split::kColumn,
                 false});
  out.push_back(
      {"self_attention.linear_proj.weight", a, h, n * mla.v_head_dim, 1, Split::kRow, false});
}

// Gated DeltaNet (gated_delta_net/common.py:181-287): fused in_proj [q,k,v,z,beta,alpha], depthwise
// conv1d over q/k/v, A_log and dt_bias per value head, gated out_norm over d_v, out_proj.
void AppendGdn(const ModelConfig& model, std::vector<WeightTensor>& out) {
  const config::GdnConfig& gdn = model.gdn;
  const int64_t h = model.hidden_size;
  AppendNorm(model, "input_layernorm", h, out);
  out.push_back({"self_attention.in_proj.weight", Component::kGdn, gdn.InProjWidth(), h, 1,
                 Split::kColumn, false});
  out.push_back({"self_attention.conv1d.weight", Component::kGdn, gdn.ConvChannels(),
                 gdn.conv_kernel, 1, Split::kColumn, false});
  out.push_back(
      {"self_attention.A_log", Component::kGdn, gdn.num_value_heads, 1, 1, Split::kColumn, false});
  out.push_back({"self_attention.dt_bias", Component::kGdn, gdn.num_value_heads, 1, 1,
                 Split::kColumn, false});
  out.push_back({"self_attention.out_norm.weight", Component::kGdn, gdn.value_head_dim, 1, 1,
                 Split::kReplicated, false});
  out.push_back({"self_attention.out_proj.weight", Component::kGdn, h, gdn.ValueWidth(), 1,
                 Split::kRow, false});
}

// Dense MLP: fc1 of width 2F for SwiGLU (gate and up, stride 2) or F for GeLU, fc2 back to H;
// the pre-MLP norm fused. With biases (plain GPT): fc1's split with its rows, fc2's replicated
// (added once after the row-parallel reduction).
void AppendDenseMlp(const ModelConfig& model, std::vector<WeightTensor>& out) {
  const int64_t h = model.hidden_size;
  const int64_t f = model.ffn_hidden_size;
  const int64_t fc1 = model.mlp.Fc1WidthFactor() * f;
  AppendNorm(model, "pre_mlp_layernorm", h, out);
  out.push_back({"mlp.linear_fc1.weight", Component::kDenseMlp, fc1, h, 1, Split::kColumn, false});
  if (model.mlp.bias) {
    out.push_back({"mlp.linear_fc1.bias", Component::kDenseMlp, fc1, 1, 1, Split::kColumn, false});
  }
  out.push_back({"mlp.linear_fc2.weight", Component::kDenseMlp, h, f, 1, Split::kRow, false});
  if (model.mlp.bias) {
    out.push_back(
        {"mlp.linear_fc2.bias", Component::kDenseMlp, h, 1, 1, Split::kReplicated, false});
  }
}

// MoE block: replicated router, E routed SwiGLU experts (EP x ETP), optional shared expert
// (TP-split like a dense MLP) and its replicated sigmoid gate.
void AppendMoe(const ModelConfig& model, std::vector<WeightTensor>& out) {
  const config::MoeConfig& moe = model.moe;
  const int64_t h = model.hidden_size;
  AppendNorm(model, "pre_mlp_layernorm", h, out);
  out.push_back(
      {"mlp.router.weight", Component::kRouter, moe.num_experts, h, 1, Split::kReplicated, false});
  if (moe.router_bias) {
    out.push_back(
        {"mlp.router.bias", Component::kRouter, moe.num_experts, 1, 1, Split::kReplicated, false});
  }
  if (moe.router_score_bias) {
    // A buffer in Megatron (router.py, --moe-router-enable-expert-bias) updated from the load,
    // not by the optimizer; counted because the checkpoint stores it (e_score_correction_bias).
    out.push_back({"mlp.router.expert_bias", Component::kRouter, moe.num_experts, 1, 1,
                   Split::kReplicated, false});
  }
  out.push_back({"mlp.experts.linear_fc1.weight", Component::kRoutedExperts,
                 2 * moe.expert_ffn_hidden_size, h, moe.num_experts, Split::kColumn, true});
  if (moe.expert_bias) {
    out.push_back({"mlp.experts.linear_fc1.bias", Component::kRoutedExperts,
                   2 * moe.expert_ffn_hidden_size, 1, moe.num_experts, Split::kColumn, true});
  }
  out.push_back({"mlp.experts.linear_fc2.weight", Component::kRoutedExperts, h,
                 moe.expert_ffn_hidden_size, moe.num_experts, Split::kRow, true});
  if (moe.expert_bias) {  // row-parallel: replicated over ETP, one per expert
    out.push_back({"mlp.experts.linear_fc2.bias", Component::kRoutedExperts, h, 1, moe.num_experts,
                   Split::kReplicated, true});
  }
  if (!moe.HasSharedExpert()) return;
  const int64_t fs = moe.shared_expert_ffn_hidden_size;
  out.push_back({"mlp.shared_experts.linear_fc1.weight", Component::kSharedExperts, 2 * fs, h, 1,
                 Split::kColumn, false});
  out.push_back({"mlp.shared_experts.linear_fc2.weight", Component::kSharedExperts, h, fs, 1,
                 Split::kRow, false});
  if (moe.shared_expert_gate) {
    out.push_back({"mlp.shared_experts.gate_weight", Component::kSharedExperts, 1, h, 1,
                   Split::kReplicated, false});
  }
}

}  // namespace

int64_t WeightTensor::Numel() const {
  return CheckedMul(CheckedMul(rows, cols, "parameter count"), copies, "parameter count");
}

std::vector<WeightTensor> DecoderLayerWeights(const ModelConfig& model, config::LayerSpec layer) {
  std::vector<WeightTensor> out;
  if (layer.mixer == MixerKind::kGatedDeltaNet) {
    AppendGdn(model, out);
  } else if (layer.mixer == MixerKind::kMultiLatentAttention) {
    AppendMla(model, out);
  } else {
    AppendAttention(model, out);
  }
  if (layer.ffn == FfnKind::kMoe) {
    AppendMoe(model, out);
  } else {
    AppendDenseMlp(model, out);
  }
  return out;
}

std::vector<WeightTensor> EmbeddingWeights(const ModelConfig& model) {
  std::vector<WeightTensor> out = {{"embedding.word_embeddings.weight", Component::kEmbedding,
                                    model.vocab_size, model.hidden_size, 1, Split::kVocab, false}};
  if (model.position_embedding == config::PositionEmbedding::kLearnedAbsolute) {
    // Megatron's LanguageModelEmbedding: a plain torch.nn.Embedding, whole on every TP rank.
    out.push_back({"embedding.position_embeddings.weight", Component::kEmbedding,
                   model.max_position_embeddings, model.hidden_size, 1, Split::kReplicated, false});
  }
  return out;
}

std::vector<WeightTensor> LmHeadWeights(const ModelConfig& model) {
  if (model.tied_embeddings) return {};
  return {{"output_layer.weight", Component::kLmHead, model.vocab_size, model.hidden_size, 1,
           Split::kVocab, false}};
}

std::vector<WeightTensor> FinalNormWeights(const ModelConfig& model) {
  std::vector<WeightTensor> out;
  AppendNorm(model, "decoder.final_layernorm", model.hidden_size, out);
  return out;
}

std::vector<WeightTensor> TrainedLayerWeights(const ModelConfig& model,
                                              const config::TrainingConfig& training,
                                              config::LayerSpec layer) {
  std::vector<WeightTensor> tensors = DecoderLayerWeights(model, layer);
  if (!training.framework.DuplicatesGdn()) return tensors;
  for (WeightTensor& tensor : tensors) {
    if (tensor.component == Component::kGdn) tensor.split = Split::kReplicated;
  }
  return tensors;
}

std::vector<WeightTensor> MtpLayerWeights(const ModelConfig& model) {
  const int64_t h = model.hidden_size;
  // multi_token_prediction.py: enorm, hnorm, column-parallel eh_proj (2H -> H), final norm.
  std::vector<WeightTensor> out = {
      {"mtp.enorm.weight", Component::kMtp, h, 1, 1, Split::kReplicated, false},
      {"mtp.hnorm.weight", Component::kMtp, h, 1, 1, Split::kReplicated, false},
      {"mtp.eh_proj.weight", Component::kMtp, h, 2 * h, 1, Split::kColumn, false},
      {"mtp.final_layernorm.weight", Component::kMtp, h, 1, 1, Split::kReplicated, false},
  };
  for (WeightTensor tensor : DecoderLayerWeights(model, model.MtpLayerSpec())) {
    tensor.name = "mtp.mtp_model_layer." + tensor.name;
    tensor.component = Component::kMtp;
    out.push_back(tensor);
  }
  return out;
}

std::vector<WeightTensor> VisionWeights(const ModelConfig& model) {
  const config::VisionConfig& vision = model.vision;
  if (!vision.Present()) return {};
  const int64_t hv = vision.hidden_size;
  const int64_t iv = vision.intermediate_size;
  const int64_t merged = hv * vision.spatial_merge_size * vision.spatial_merge_size;
  const int64_t patch_inputs =
      vision.in_channels * vision.temporal_patch_size * vision.patch_size * vision.patch_size;
  const int64_t d = vision.depth;
  const Component c = Component::kVision;
  // transformers modular_qwen3_5.py; linears TP-split column/row with column biases split and row
  // biases, LayerNorms and the embeddings replicated.
  return {
      {"vision.patch_embed.proj.weight", c, hv, patch_inputs, 1, Split::kReplicated, false},
      {"vision.patch_embed.proj.bias", c, hv, 1, 1, Split::kReplicated, false},
      {"vision.pos_embed.weight", c, vision.num_position_embeddings, hv, 1, Split::kReplicated,
       false},
      {"vision.blocks.norm1", c, 2 * hv, 1, d, Split::kReplicated, false},
      {"vision.blocks.norm2", c, 2 * hv, 1, d, Split::kReplicated, false},
      {"vision.blocks.attn.qkv.weight", c, 3 * hv, hv, d, Split::kColumn, false},
      {"vision.blocks.attn.qkv.bias", c, 3 * hv, 1, d, Split::kColumn, false},
      {"vision.blocks.attn.proj.weight", c, hv, hv, d, Split::kRow, false},
      {"vision.blocks.attn.proj.bias", c, hv, 1, d, Split::kReplicated, false},
      {"vision.blocks.mlp.linear_fc1.weight", c, iv, hv, d, Split::kColumn, false},
      {"vision.blocks.mlp.linear_fc1.bias", c, iv, 1, d, Split::kColumn, false},
      {"vision.blocks.mlp.linear_fc2.weight", c, hv, iv, d, Split::kRow, false},
      {"vision.blocks.mlp.linear_fc2.bias", c, hv, 1, d, Split::kReplicated, false},
      {"vision.merger.norm", c, 2 * hv, 1, 1, Split::kReplicated, false},
      {"vision.merger.linear_fc1.weight", c, merged, merged, 1, Split::kColumn, false},
      {"vision.merger.linear_fc1.bias", c, merged, 1, 1, Split::kColumn, false},
      {"vision.merger.linear_fc2.weight", c, vision.out_hidden_size, merged, 1, Split::kRow, false},
      {"vision.merger.linear_fc2.bias", c, vision.out_hidden_size, 1, 1, Split::kReplicated, false},
  };
}

bool IsTeLinear(const WeightTensor& tensor) {
  if (tensor.component == Component::kVision || tensor.cols <= 1) return false;
  for (const char* name : {"linear_qkv.", "linear_proj.", "in_proj.", "out_proj.", "linear_fc1.",
                           "linear_fc2.", "eh_proj."}) {
    if (tensor.name.find(name) != std::string::npos) return true;
  }
  return false;
}

std::string ToString(Component component) {
  switch (component) {
    case Component::kEmbedding:
      return "embedding";
    case Component::kLmHead:
      return "lm_head";
    case Component::kAttention:
      return "attention";
    case Component::kGdn:
      return "gdn";
    case Component::kDenseMlp:
      return "dense_mlp";
    case Component::kRoutedExperts:
      return "routed_experts";
    case Component::kSharedExperts:
      return "shared_experts";
    case Component::kRouter:
      return "routers";
    case Component::kNorms:
      return "norms";
    case Component::kMtp:
      return "mtp";
    case Component::kVision:
      return "vision";
  }
  return "unknown";
}

}  // namespace trainscope::graph
