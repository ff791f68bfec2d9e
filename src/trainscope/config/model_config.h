// The internal model description: one value type that captures everything later stages need
// about a Qwen3 / Qwen3-Next / Qwen3.5 / Llama / Mixtral / GPT-OSS / DeepSeek-V3 decoder (per-layer
// mixer and FFN kind, GQA with explicit head_dim, gated attention, multi-latent attention, Gated
// DeltaNet, MoE with shared experts, MTP, vision tower). Built by io/hf_config_loader from a
// Hugging Face config.json, or in code by tests. Plain value: copyable, comparable, no hidden
// state.
#ifndef TRAINSCOPE_CONFIG_MODEL_CONFIG_H_
#define TRAINSCOPE_CONFIG_MODEL_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

namespace trainscope::config {

enum class ModelFamily {
  kQwen3,
  kQwen3Moe,
  kQwen3Next,
  kQwen35,
  kQwen35Moe,
  kLlama,
  kMixtral,
  kGptOss,
  kDeepSeekV3,  // deepseek_v3 and kimi_k2 (DeepSeek-V3 architecture: Kimi-K2, Moonlight)
  kGpt,         // gpt2: plain GPT (Megatron GPT, NeMo 2.0 GPTConfig, GPT-3)
};

// The token mixer of one decoder layer.
enum class MixerKind {
  kAttention,             // softmax attention, GQA (Qwen3, Llama, Mixtral)
  kGatedAttention,        // softmax attention with a sigmoid output gate (Qwen3-Next / Qwen3.5)
  kGatedDeltaNet,         // Gated DeltaNet linear attention (Qwen3-Next / Qwen3.5)
  kMultiLatentAttention,  // multi-latent attention, low-rank q and kv (DeepSeek-V3)
};

// The feed-forward block of one decoder layer.
enum class FfnKind { kDense, kMoe };

// Norm flavour: RMSNorm x̂·w (standard) or x̂·(1+w) (zero-centred, Qwen3-Next / Qwen3.5), one
// weight of the normalised width; or LayerNorm (plain GPT: Megatron --normalization LayerNorm),
// a weight and a bias.
enum class NormKind { kRmsNorm, kZeroCenteredRmsNorm, kLayerNorm };

// Activation of the dense MLP: SwiGLU (Megatron --swiglu; fc1 of width 2F) or GeLU (Megatron's
// default, the plain GPT MLP; fc1 of width F).
enum class MlpActivation { kSwiGlu, kGelu };

// Position encoding: RoPE inside attention, or a learned absolute table of
// max_position_embeddings × H added to the word embedding (Megatron
// --position-embedding-type learned_absolute; GPT-2/GPT-3 wpe).
enum class PositionEmbedding { kRope, kLearnedAbsolute };

// The dense MLP block (plain GPT: GeLU with biases, NeMo 2.0 GPTConfig add_bias_linear).
struct DenseMlpConfig {
  MlpActivation activation = MlpActivation::kSwiGlu;
  bool bias = false;  // biased linear_fc1 and linear_fc2
  // fc1 output width per unit of ffn_hidden_size: 2 for SwiGLU (gate and up), 1 for GeLU.
  [[nodiscard]] int64_t Fc1WidthFactor() const {
    return activation == MlpActivation::kSwiGlu ? 2 : 1;
  }
  friend bool operator==(const DenseMlpConfig&, const DenseMlpConfig&) = default;
};

struct AttentionConfig {
  int64_t num_heads = 0;     // query heads (n)
  int64_t num_kv_heads = 0;  // key/value heads = query groups (g)
  int64_t head_dim = 0;      // kv_channels (d_h); explicit, may differ from hidden/heads
  // Value head dim when it differs from the query/key head_dim (MLA: v_head_dim); 0 = head_dim.
  int64_t value_head_dim = 0;
  bool qk_norm = false;          // RMSNorm over head_dim on q and k
  bool output_gate = false;      // gated attention: q_proj also produces a per-head sigmoid gate
  double rotary_fraction = 1.0;  // share of head_dim that RoPE rotates
  double rope_theta = 10000.0;
  bool bias = false;           // biased linear_qkv and linear_proj (GPT-OSS attention_bias)
  bool softmax_sinks = false;  // one learned sink logit per head in the softmax (GPT-OSS)
  int64_t sliding_window = 0;  // keys a sliding-window layer attends to (LayerSpec::sliding)
  // YaRN concentration factor ("attention factor", Megatron's mscale) multiplying RoPE's sin and
  // cos (yarn_rotary_pos_embedding.py _yarn_get_concentration_factor); 1 without YaRN. Megatron
  // runs the unfused RoPE whenever it is not 1 (rope_utils.py apply_rotary_pos_emb).
  double rope_concentration = 1.0;

  [[nodiscard]] int64_t ValueHeadDim() const {
    return value_head_dim > 0 ? value_head_dim : head_dim;
  }
  [[nodiscard]] int64_t QueryWidth() const { return num_heads * head_dim; }
  [[nodiscard]] int64_t KvWidth() const { return num_kv_heads * head_dim; }
  // Width of the gate projection: q width with the output gate, else 0.
  [[nodiscard]] int64_t GateWidth() const { return output_gate ? QueryWidth() : 0; }
  friend bool operator==(const AttentionConfig&, const AttentionConfig&) = default;
};

// Multi-latent attention (DeepSeek-V2/V3; Megatron-Core MLATransformerConfig). q is projected
// through a q_lora_rank bottleneck (or directly when q_lora_rank is 0), k and v through one
// kv_lora_rank latent plus a shared RoPE key of qk_rope_head_dim. AttentionConfig then holds
// num_kv_heads = num_heads, head_dim = nope + rope and value_head_dim = v_head_dim.
struct MlaConfig {
  int64_t q_lora_rank = 0;       // 0: q_proj straight from H (Moonlight's q_lora_rank: null)
  int64_t kv_lora_rank = 0;      // latent width of k and v
  int64_t qk_nope_head_dim = 0;  // per-head q/k width without RoPE (Megatron qk_head_dim)
  int64_t qk_rope_head_dim = 0;  // per-head RoPE width (Megatron qk_pos_emb_head_dim)
  int64_t v_head_dim = 0;

  [[nodiscard]] int64_t QkHeadDim() const { return qk_nope_head_dim + qk_rope_head_dim; }
  // Output width of linear_kv_down_proj: the latent plus the shared RoPE key.
  [[nodiscard]] int64_t KvDownWidth() const { return kv_lora_rank + qk_rope_head_dim; }
  friend bool operator==(const MlaConfig&, const MlaConfig&) = default;
};

// How the router turns logits into scores (Megatron --moe-router-score-function).
enum class RouterScore { kSoftmax, kSigmoid };

// Gated DeltaNet (linear attention) dimensions; meaningful only when a layer uses it.
struct GdnConfig {
  int64_t num_key_heads = 0;    // H_k
  int64_t key_head_dim = 0;     // d_k
  int64_t num_value_heads = 0;  // H_v
  int64_t value_head_dim = 0;   // d_v
  int64_t conv_kernel = 0;      // K, depthwise causal conv1d over q/k/v
  int64_t chunk_size = 64;      // chunked delta-rule kernel chunk (FLA)

  [[nodiscard]] int64_t KeyWidth() const { return num_key_heads * key_head_dim; }        // qk
  [[nodiscard]] int64_t ValueWidth() const { return num_value_heads * value_head_dim; }  // vd
  [[nodiscard]] int64_t ConvChannels() const { return 2 * KeyWidth() + ValueWidth(); }
  // Output width of Megatron's fused in_proj: [q, k, v, z, beta, alpha].
  [[nodiscard]] int64_t InProjWidth() const {
    return 2 * KeyWidth() + 2 * ValueWidth() + 2 * num_value_heads;
  }
  friend bool operator==(const GdnConfig&, const GdnConfig&) = default;
};

struct MoeConfig {
  int64_t num_experts = 0;                    // E
  int64_t top_k = 0;                          // k
  int64_t expert_ffn_hidden_size = 0;         // F_e
  int64_t shared_expert_ffn_hidden_size = 0;  // F_s, 0 without a shared expert
  bool shared_expert_gate = false;            // sigmoid gate [1, H] on the shared expert
  bool norm_topk_prob = true;
  double aux_loss_coef = 0.0;
  bool router_bias = false;  // biased router projection (GPT-OSS)
  bool expert_bias = false;  // biased expert fc1 and fc2 (GPT-OSS)
  // Clamp of the expert SwiGLU inputs (GPT-OSS swiglu_limit, Megatron activation_func_clamp_value):
  // the gate half to at most this, the linear half to ±this; 0 = none.
  double activation_clamp = 0.0;
  RouterScore score = RouterScore::kSoftmax;
  // Aux-loss-free balancing bias added to the scores for selection (DeepSeek-V3
  // e_score_correction_bias; Megatron --moe-router-enable-expert-bias, a [E] buffer).
  bool router_score_bias = false;
  // Group-limited routing (DeepSeek-V3 n_group / topk_group; Megatron --moe-router-num-groups,
  // --moe-router-group-topk): experts in num_groups groups, a token picks group_top_k groups
  // first. 0 = no grouping.
  int64_t num_groups = 0;
  int64_t group_top_k = 0;

  [[nodiscard]] bool HasSharedExpert() const { return shared_expert_ffn_hidden_size > 0; }
  friend bool operator==(const MoeConfig&, const MoeConfig&) = default;
};

// Qwen3.5 vision tower (Qwen3-VL design without deepstack). Absent when depth == 0.
struct VisionConfig {
  int64_t depth = 0;
  int64_t hidden_size = 0;        // Hv
  int64_t intermediate_size = 0;  // Iv
  int64_t num_heads = 0;
  int64_t out_hidden_size = 0;  // merger output width
  int64_t patch_size = 0;
  int64_t temporal_patch_size = 0;
  int64_t spatial_merge_size = 0;
  int64_t in_channels = 0;
  int64_t num_position_embeddings = 0;

  [[nodiscard]] bool Present() const { return depth > 0; }
  friend bool operator==(const VisionConfig&, const VisionConfig&) = default;
};

struct LayerSpec {
  MixerKind mixer = MixerKind::kAttention;
  FfnKind ffn = FfnKind::kDense;
  // Softmax attention over the last attention.sliding_window keys only (GPT-OSS's
  // sliding_attention layers); false = full causal attention.
  bool sliding = false;
  friend bool operator==(const LayerSpec&, const LayerSpec&) = default;
};

struct ModelConfig {
  std::string name;  // preset name or the path it was loaded from
  ModelFamily family = ModelFamily::kQwen3;
  int64_t hidden_size = 0;      // H
  int64_t vocab_size = 0;       // V0, unpadded
  int64_t ffn_hidden_size = 0;  // I, dense MLP width (0 when no layer is dense)
  bool tied_embeddings = false;
  NormKind norm = NormKind::kRmsNorm;
  DenseMlpConfig mlp;  // the dense MLP layers' activation and biases
  PositionEmbedding position_embedding = PositionEmbedding::kRope;
  int64_t max_position_embeddings = 0;
  AttentionConfig attention;
  MlaConfig mla;  // meaningful only when a layer uses MixerKind::kMultiLatentAttention
  GdnConfig gdn;
  MoeConfig moe;
  std::vector<LayerSpec> layers;  // one entry per decoder layer, in order
  int64_t num_mtp_layers = 0;     // multi-token prediction depth (Qwen3.5, DeepSeek-V3)
  VisionConfig vision;

  [[nodiscard]] int64_t NumLayers() const { return static_cast<int64_t>(layers.size()); }
  [[nodiscard]] int64_t CountLayers(MixerKind mixer) const;
  [[nodiscard]] int64_t CountLayers(FfnKind ffn) const;
  [[nodiscard]] bool HasMoe() const { return CountLayers(FfnKind::kMoe) > 0; }
  [[nodiscard]] bool HasGdn() const { return CountLayers(MixerKind::kGatedDeltaNet) > 0; }
  [[nodiscard]] bool HasMla() const { return CountLayers(MixerKind::kMultiLatentAttention) > 0; }
  // The mixer/FFN of an MTP layer: Qwen3.5 builds it as full (gated) attention, DeepSeek-V3 as
  // MLA, with the model's FFN kind (that of the last decoder layer).
  [[nodiscard]] LayerSpec MtpLayerSpec() const;
  friend bool operator==(const ModelConfig&, const ModelConfig&) = default;
};

[[nodiscard]] std::string ToString(ModelFamily family);
[[nodiscard]] std::string ToString(MixerKind mixer);
[[nodiscard]] std::string ToString(FfnKind ffn);

}  // namespace trainscope::config

#endif  // TRAINSCOPE_CONFIG_MODEL_CONFIG_H_
