#include "trainscope/io/hf_config_loader.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainscope/error.h"
#include "trainscope/io/input_ranges.h"
#include "trainscope/io/input_text.h"
#include "trainscope/io/presets.h"
#include "trainscope/io/suggest.h"

namespace trainscope::io {
namespace {

using config::FfnKind;
using config::MixerKind;
using config::ModelConfig;
using config::ModelFamily;
using Json = nlohmann::json;

// Largest accepted value of any size field: Hugging Face stores them as int32.
constexpr int64_t kMaxDimension = std::numeric_limits<int32_t>::max();

// A JSON object together with its path, for error messages ("text_config.hidden_size").
struct Node {
  const Json& json;
  std::string path;  // "" at top level
  const std::string& source;

  [[nodiscard]] std::string KeyPath(std::string_view key) const {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
  }
  [[nodiscard]] bool Has(std::string_view key) const {
    const auto it = json.find(std::string(key));
    return it != json.end() && !it->is_null();
  }
  [[noreturn]] void Fail(std::string_view key, const std::string& problem) const {
    throw InputError(fmt::format("{}: {}: {}", source, KeyPath(key), problem));
  }
  [[nodiscard]] const Json& At(std::string_view key) const { return json.at(std::string(key)); }

  // A positive integer field at most `maximum`. Throws if missing, mistyped or out of range.
  [[nodiscard]] int64_t PositiveInt(std::string_view key, int64_t maximum = kMaxDimension) const {
    if (!Has(key)) Fail(key, "missing required field (expected a positive integer)");
    return CheckedInt(key, /*minimum=*/1, maximum);
  }
  [[nodiscard]] int64_t IntOr(std::string_view key, int64_t fallback, int64_t minimum,
                              int64_t maximum = kMaxDimension) const {
    return Has(key) ? CheckedInt(key, minimum, maximum) : fallback;
  }
  [[nodiscard]] int64_t CheckedInt(std::string_view key, int64_t minimum, int64_t maximum) const {
    const Json& value = At(key);
    if (!value.is_number_integer()) {
      Fail(key, fmt::format("expected an integer (got {})", QuoteJson(value)));
    }
    if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(maximum)) {
      Fail(key,
           fmt::format("absurd value (got {}, expected at most {})", QuoteJson(value), maximum));
    }
    const int64_t number = value.get<int64_t>();
    if (number < minimum) {
      Fail(key, fmt::format("must be at least {} (got {})", minimum, number));
    }
    if (number > maximum) {
      Fail(key, fmt::format("absurd value (got {}, expected at most {})", number, maximum));
    }
    return number;
  }
  [[nodiscard]] double NumberOr(std::string_view key, double fallback) const {
    if (!Has(key)) return fallback;
    const Json& value = At(key);
    if (!value.is_number()) Fail(key, fmt::format("expected a number (got {})", QuoteJson(value)));
    return value.get<double>();
  }
  [[nodiscard]] std::optional<bool> OptionalBool(std::string_view key) const {
    if (!Has(key)) return std::nullopt;
    const Json& value = At(key);
    if (!value.is_boolean())
      Fail(key, fmt::format("expected true or false (got {})", QuoteJson(value)));
    return value.get<bool>();
  }
  [[nodiscard]] std::string String(std::string_view key) const {
    if (!Has(key)) Fail(key, "missing required field (expected a string)");
    const Json& value = At(key);
    if (!value.is_string()) Fail(key, fmt::format("expected a string (got {})", QuoteJson(value)));
    return value.get<std::string>();
  }
  [[nodiscard]] Node Child(std::string_view key) const {
    if (!Has(key)) Fail(key, "missing required object");
    if (!At(key).is_object())
      Fail(key, fmt::format("expected an object (got {})", QuoteJson(At(key))));
    return Node{At(key), KeyPath(key), source};
  }
};

std::optional<ModelFamily> FamilyOf(const std::string& model_type) {
  if (model_type == "qwen3") return ModelFamily::kQwen3;
  if (model_type == "qwen3_moe") return ModelFamily::kQwen3Moe;
  if (model_type == "qwen3_next") return ModelFamily::kQwen3Next;
  if (model_type == "qwen3_5") return ModelFamily::kQwen35;
  if (model_type == "qwen3_5_moe") return ModelFamily::kQwen35Moe;
  if (model_type == "llama") return ModelFamily::kLlama;
  if (model_type == "mixtral") return ModelFamily::kMixtral;
  if (model_type == "gpt_oss") return ModelFamily::kGptOss;
  // Kimi-K2 ships model_type kimi_k2 with the DeepseekV3ForCausalLM architecture.
  if (model_type == "deepseek_v3" || model_type == "kimi_k2") return ModelFamily::kDeepSeekV3;
  if (model_type == "gpt2") return ModelFamily::kGpt;
  return std::nullopt;
}

bool IsHybrid(ModelFamily family) {
  return family == ModelFamily::kQwen3Next || family == ModelFamily::kQwen35 ||
         family == ModelFamily::kQwen35Moe;
}

// YaRN's mscale at scaling factor `scale` (yarn_rotary_pos_embedding.py _yarn_get_mscale).
double YarnMscale(double scale, double mscale) {
  return scale <= 1.0 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

// The concentration factor Megatron multiplies RoPE's sin and cos by under YaRN
// (_yarn_get_concentration_factor): mscale(factor) when rope_scaling gives no mscale /
// mscale_all_dim pair, else their ratio; 1 without YaRN scaling.
double YarnConcentration(const Node& text) {
  if (!text.Has("rope_scaling") || !text.At("rope_scaling").is_object()) return 1.0;
  const Node rope = text.Child("rope_scaling");
  const std::string type = rope.Has("rope_type") ? rope.String("rope_type")
                           : rope.Has("type")    ? rope.String("type")
                                                 : std::string();
  if (type != "yarn") return 1.0;
  const double factor = rope.NumberOr("factor", 1.0);
  if (!(factor > 0)) rope.Fail("factor", fmt::format("must be positive (got {})", factor));
  if (!rope.Has("mscale") || !rope.Has("mscale_all_dim")) return YarnMscale(factor, 1.0);
  return YarnMscale(factor, rope.NumberOr("mscale", 1.0)) /
         YarnMscale(factor, rope.NumberOr("mscale_all_dim", 1.0));
}

void LoadAttention(const Node& text, ModelFamily family, ModelConfig& model) {
  config::AttentionConfig& attention = model.attention;
  attention.num_heads = text.PositiveInt("num_attention_heads");
  attention.num_kv_heads = text.IntOr("num_key_value_heads", attention.num_heads, 1);
  if (attention.num_heads % attention.num_kv_heads != 0) {
    text.Fail("num_key_value_heads", fmt::format("must divide num_attention_heads (got {} and {})",
                                                 attention.num_kv_heads, attention.num_heads));
  }
  if (family == ModelFamily::kDeepSeekV3) {
    attention.head_dim = 0;  // MLA: set from qk_nope_head_dim + qk_rope_head_dim by LoadMla
  } else if (text.Has("head_dim")) {
    attention.head_dim = text.PositiveInt("head_dim");
  } else {
    if (model.hidden_size % attention.num_heads != 0) {
      text.Fail("head_dim", fmt::format("missing, and hidden_size {} is not divisible by "
                                        "num_attention_heads {}",
                                        model.hidden_size, attention.num_heads));
    }
    attention.head_dim = model.hidden_size / attention.num_heads;
  }
  const bool qwen = family != ModelFamily::kLlama && family != ModelFamily::kMixtral &&
                    family != ModelFamily::kGptOss && family != ModelFamily::kDeepSeekV3;
  attention.qk_norm = qwen;
  // Qwen3-Next and Qwen3.5 always apply the sigmoid output gate; attn_output_gate records it.
  attention.output_gate = IsHybrid(family);
  if (const std::optional<bool> gate = text.OptionalBool("attn_output_gate");
      gate.has_value() && *gate != attention.output_gate) {
    text.Fail("attn_output_gate", fmt::format("contradicts model_type (got {}, expected {})", *gate,
                                              attention.output_gate));
  }
  // GPT-OSS: biased q/k/v/o projections and a learned sink logit per head.
  attention.bias = family == ModelFamily::kGptOss;
  attention.softmax_sinks = family == ModelFamily::kGptOss;
  if (const std::optional<bool> bias = text.OptionalBool("attention_bias");
      bias.has_value() && *bias != attention.bias) {
    text.Fail("attention_bias",
              fmt::format("{} (got {}, expected {})",
                          attention.bias ? "contradicts model_type"
                                         : "biased attention projections are only supported for "
                                           "gpt_oss",
                          *bias, attention.bias));
  }
  // RoPE: flat fields (Qwen3, Qwen3-Next, Llama) or rope_parameters (Qwen3.5).
  attention.rope_theta = text.NumberOr("rope_theta", attention.rope_theta);
  attention.rotary_fraction = text.NumberOr("partial_rotary_factor", 1.0);
  if (text.Has("rope_parameters")) {
    const Node rope = text.Child("rope_parameters");
    attention.rope_theta = rope.NumberOr("rope_theta", attention.rope_theta);
    attention.rotary_fraction = rope.NumberOr("partial_rotary_factor", attention.rotary_fraction);
  }
  attention.rope_concentration = YarnConcentration(text);
  if (!(attention.rotary_fraction > 0.0 && attention.rotary_fraction <= 1.0)) {
    text.Fail("partial_rotary_factor",
              fmt::format("must be in (0, 1] (got {})", attention.rotary_fraction));
  }
}

// Multi-latent attention (transformers DeepseekV3Attention; Megatron MLATransformerConfig):
// q_lora_rank (null = no q bottleneck, Moonlight), kv_lora_rank, qk_nope_head_dim,
// qk_rope_head_dim, v_head_dim. Every head has its own k and v after kv_b_proj, so the GQA view
// is num_kv_heads = num_heads with head_dim = nope + rope and a separate value_head_dim;
// num_key_value_heads, if given, must say so. RoPE covers rope / (nope + rope) of head_dim.
void LoadMla(const Node& text, ModelConfig& model) {
  config::MlaConfig& mla = model.mla;
  mla.q_lora_rank = text.IntOr("q_lora_rank", 0, 1);
  mla.kv_lora_rank = text.PositiveInt("kv_lora_rank");
  mla.qk_nope_head_dim = text.PositiveInt("qk_nope_head_dim");
  mla.qk_rope_head_dim = text.PositiveInt("qk_rope_head_dim");
  mla.v_head_dim = text.PositiveInt("v_head_dim");
  config::AttentionConfig& attention = model.attention;
  if (attention.num_kv_heads != attention.num_heads) {
    text.Fail("num_key_value_heads",
              fmt::format("multi-latent attention has one k and v per head (got {}, expected "
                          "num_attention_heads = {})",
                          attention.num_kv_heads, attention.num_heads));
  }
  attention.head_dim = mla.QkHeadDim();
  attention.value_head_dim = mla.v_head_dim;
  attention.rotary_fraction =
      static_cast<double>(mla.qk_rope_head_dim) / static_cast<double>(mla.QkHeadDim());
}

// DeepSeek-V3 router (transformers DeepseekV3TopkRouter / MoEGate): scoring_func softmax or
// sigmoid; topk_method noaux_tc adds e_score_correction_bias; n_group / topk_group limit the
// groups a token may pick from (node-limited routing when a group is one node's experts).
void LoadDeepSeekRouter(const Node& text, config::MoeConfig& moe) {
  const std::string score = text.Has("scoring_func") ? text.String("scoring_func") : "softmax";
  if (score != "softmax" && score != "sigmoid") {
    text.Fail("scoring_func", fmt::format("unsupported router score (got \"{}\", expected "
                                          "softmax or sigmoid)",
                                          Abbreviated(score)));
  }
  moe.score = score == "sigmoid" ? config::RouterScore::kSigmoid : config::RouterScore::kSoftmax;
  const std::string method = text.Has("topk_method") ? text.String("topk_method") : "greedy";
  if (method != "noaux_tc" && method != "greedy" && method != "group_limited_greedy") {
    text.Fail("topk_method",
              fmt::format("unsupported top-k method (got \"{}\", expected noaux_tc, greedy or "
                          "group_limited_greedy)",
                          Abbreviated(method)));
  }
  moe.router_score_bias = method == "noaux_tc";
  // The complementary sequence-wise balance loss (arXiv:2412.19437 §2.1.2): aux_loss_alpha.
  moe.aux_loss_coef = text.NumberOr("aux_loss_alpha", moe.aux_loss_coef);
  moe.num_groups = text.IntOr("n_group", 1, 1);
  moe.group_top_k = text.IntOr("topk_group", moe.num_groups, 1);
  if (moe.num_experts % moe.num_groups != 0) {
    text.Fail("n_group", fmt::format("must divide n_routed_experts (got {} and {})", moe.num_groups,
                                     moe.num_experts));
  }
  if (moe.group_top_k > moe.num_groups) {
    text.Fail("topk_group", fmt::format("exceeds n_group (got {}, expected at most {})",
                                        moe.group_top_k, moe.num_groups));
  }
  if (moe.num_groups == 1) moe.num_groups = moe.group_top_k = 0;  // one group: no limit
  // Each of the n_shared_experts is a moe_intermediate_size SwiGLU; Megatron fuses them into one
  // shared expert of n·F (moe_shared_expert_intermediate_size).
  const int64_t shared = text.IntOr("n_shared_experts", 0, 0);
  moe.shared_expert_ffn_hidden_size = shared * moe.expert_ffn_hidden_size;
}

// layer_types: one entry per layer, each `other_kind` or "full_attention" (Qwen3.5:
// linear_attention; GPT-OSS: sliding_attention). Fails naming the entry otherwise.
std::vector<std::string> LayerTypes(const Node& text, int64_t num_layers,
                                    std::string_view other_kind) {
  const Json& types = text.At("layer_types");
  if (!types.is_array() || static_cast<int64_t>(types.size()) != num_layers) {
    text.Fail("layer_types",
              fmt::format("expected a list of num_hidden_layers = {} entries", num_layers));
  }
  std::vector<std::string> kinds;
  for (int64_t i = 0; i < num_layers; ++i) {
    const Json& entry = types[static_cast<size_t>(i)];
    std::string kind = entry.is_string() ? entry.get<std::string>() : QuoteJson(entry);
    if (kind != other_kind && kind != "full_attention") {
      text.Fail(fmt::format("layer_types[{}]", i),
                fmt::format("unknown layer type (got {}, expected {} or full_attention)", kind,
                            other_kind));
    }
    kinds.push_back(std::move(kind));
  }
  return kinds;
}

// Mixer kind per layer: layer_types when given (checked against full_attention_interval),
// otherwise layer i is full attention iff (i+1) % full_attention_interval == 0.
std::vector<MixerKind> LoadMixers(const Node& text, ModelFamily family, int64_t num_layers) {
  if (family == ModelFamily::kDeepSeekV3) {
    return std::vector<MixerKind>(static_cast<size_t>(num_layers),
                                  MixerKind::kMultiLatentAttention);
  }
  if (!IsHybrid(family))
    return std::vector<MixerKind>(static_cast<size_t>(num_layers), MixerKind::kAttention);
  const int64_t interval = text.IntOr("full_attention_interval", 4, 1);
  std::vector<MixerKind> mixers;
  for (int64_t i = 0; i < num_layers; ++i) {
    mixers.push_back((i + 1) % interval == 0 ? MixerKind::kGatedAttention
                                             : MixerKind::kGatedDeltaNet);
  }
  if (!text.Has("layer_types")) return mixers;
  const std::vector<std::string> types = LayerTypes(text, num_layers, "linear_attention");
  for (int64_t i = 0; i < num_layers; ++i) {
    const std::string& kind = types[static_cast<size_t>(i)];
    const MixerKind mixer =
        kind == "linear_attention" ? MixerKind::kGatedDeltaNet : MixerKind::kGatedAttention;
    if (text.Has("full_attention_interval") && mixer != mixers[static_cast<size_t>(i)]) {
      text.Fail(fmt::format("layer_types[{}]", i),
                fmt::format("contradicts full_attention_interval {} (got {})", interval, kind));
    }
    mixers[static_cast<size_t>(i)] = mixer;
  }
  return mixers;
}

// GPT-OSS: which layers attend through a sliding window (layer_types "sliding_attention";
// without layer_types, even layers as in transformers' GptOssConfig), and the window.
std::vector<bool> LoadSlidingLayers(const Node& text, ModelFamily family, int64_t num_layers,
                                    ModelConfig& model) {
  std::vector<bool> sliding(static_cast<size_t>(num_layers), false);
  if (family != ModelFamily::kGptOss) return sliding;
  model.attention.sliding_window = text.PositiveInt("sliding_window");
  for (int64_t i = 0; i < num_layers; ++i) sliding[static_cast<size_t>(i)] = i % 2 == 0;
  if (!text.Has("layer_types")) return sliding;
  const std::vector<std::string> types = LayerTypes(text, num_layers, "sliding_attention");
  for (int64_t i = 0; i < num_layers; ++i) {
    sliding[static_cast<size_t>(i)] = types[static_cast<size_t>(i)] == "sliding_attention";
  }
  return sliding;
}

void LoadMoe(const Node& text, ModelFamily family, ModelConfig& model) {
  config::MoeConfig& moe = model.moe;
  if (family == ModelFamily::kMixtral || family == ModelFamily::kGptOss) {
    moe.num_experts = text.PositiveInt("num_local_experts", kMaxExperts);
    moe.expert_ffn_hidden_size = text.PositiveInt("intermediate_size");
  } else if (family == ModelFamily::kDeepSeekV3) {
    moe.num_experts = text.PositiveInt("n_routed_experts", kMaxExperts);
    moe.expert_ffn_hidden_size = text.PositiveInt("moe_intermediate_size");
  } else {
    moe.num_experts = text.PositiveInt("num_experts", kMaxExperts);
    moe.expert_ffn_hidden_size = text.PositiveInt("moe_intermediate_size");
  }
  moe.top_k = text.PositiveInt("num_experts_per_tok");
  if (moe.top_k > moe.num_experts) {
    text.Fail("num_experts_per_tok", fmt::format("exceeds the number of experts (got {}, expected "
                                                 "at most {})",
                                                 moe.top_k, moe.num_experts));
  }
  if (family == ModelFamily::kQwen3Next || family == ModelFamily::kQwen35Moe) {
    moe.shared_expert_ffn_hidden_size = text.PositiveInt("shared_expert_intermediate_size");
    moe.shared_expert_gate = true;
  }
  // Qwen3.5 MoE always renormalises; the others record it in norm_topk_prob.
  moe.norm_topk_prob = text.OptionalBool("norm_topk_prob").value_or(true);
  moe.aux_loss_coef = text.NumberOr("router_aux_loss_coef", 0.0);
  moe.router_bias = family == ModelFamily::kGptOss;
  moe.expert_bias = family == ModelFamily::kGptOss;
  moe.activation_clamp = text.NumberOr("swiglu_limit", 0.0);
  if (moe.activation_clamp < 0) {
    text.Fail("swiglu_limit", fmt::format("must be at least 0 (got {})", moe.activation_clamp));
  }
  if (family == ModelFamily::kDeepSeekV3) LoadDeepSeekRouter(text, moe);
}

// DeepSeek-V3 (transformers DeepseekV3DecoderLayer): layer i is MoE iff
// i >= first_k_dense_replace and i % moe_layer_freq == 0.
std::vector<FfnKind> LoadDeepSeekFfns(const Node& text, int64_t num_layers) {
  const int64_t first_dense = text.IntOr("first_k_dense_replace", 0, 0, num_layers);
  const int64_t frequency = text.IntOr("moe_layer_freq", 1, 1);
  std::vector<FfnKind> ffns;
  for (int64_t i = 0; i < num_layers; ++i) {
    ffns.push_back(i >= first_dense && i % frequency == 0 ? FfnKind::kMoe : FfnKind::kDense);
  }
  return ffns;
}

// FFN kind per layer (transformers Qwen3MoeDecoderLayer): MoE iff not in mlp_only_layers and
// (i+1) % decoder_sparse_step == 0. Qwen3.5 MoE and Mixtral: every layer is MoE.
std::vector<FfnKind> LoadFfns(const Node& text, ModelFamily family, int64_t num_layers) {
  if (family == ModelFamily::kDeepSeekV3) return LoadDeepSeekFfns(text, num_layers);
  const bool moe_family = family == ModelFamily::kQwen3Moe || family == ModelFamily::kQwen3Next ||
                          family == ModelFamily::kQwen35Moe || family == ModelFamily::kMixtral ||
                          family == ModelFamily::kGptOss;
  std::vector<FfnKind> ffns(static_cast<size_t>(num_layers),
                            moe_family ? FfnKind::kMoe : FfnKind::kDense);
  if (family != ModelFamily::kQwen3Moe && family != ModelFamily::kQwen3Next) return ffns;
  const int64_t step = text.IntOr("decoder_sparse_step", 1, 1);
  std::set<int64_t> mlp_only;
  if (text.Has("mlp_only_layers")) {
    const Json& list = text.At("mlp_only_layers");
    if (!list.is_array()) text.Fail("mlp_only_layers", "expected a list of layer indices");
    for (const Json& entry : list) {
      if (!entry.is_number_integer() || entry.get<int64_t>() < 0 ||
          entry.get<int64_t>() >= num_layers) {
        text.Fail("mlp_only_layers", fmt::format("expected layer indices in [0, {}) (got {})",
                                                 num_layers, QuoteJson(entry)));
      }
      mlp_only.insert(entry.get<int64_t>());
    }
  }
  for (int64_t i = 0; i < num_layers; ++i) {
    const bool is_moe = !mlp_only.contains(i) && (i + 1) % step == 0;
    ffns[static_cast<size_t>(i)] = is_moe ? FfnKind::kMoe : FfnKind::kDense;
  }
  return ffns;
}

void LoadGdn(const Node& text, ModelConfig& model) {
  config::GdnConfig& gdn = model.gdn;
  gdn.num_key_heads = text.PositiveInt("linear_num_key_heads");
  gdn.key_head_dim = text.PositiveInt("linear_key_head_dim");
  gdn.num_value_heads = text.PositiveInt("linear_num_value_heads");
  gdn.value_head_dim = text.PositiveInt("linear_value_head_dim");
  gdn.conv_kernel = text.PositiveInt("linear_conv_kernel_dim");
  if (gdn.num_value_heads % gdn.num_key_heads != 0) {
    text.Fail("linear_num_value_heads",
              fmt::format("must be a multiple of linear_num_key_heads (got {} and {})",
                          gdn.num_value_heads, gdn.num_key_heads));
  }
}

void LoadVision(const Node& vision_node, ModelConfig& model) {
  config::VisionConfig& vision = model.vision;
  vision.depth = vision_node.PositiveInt("depth", kMaxLayers);
  vision.hidden_size = vision_node.PositiveInt("hidden_size");
  vision.intermediate_size = vision_node.PositiveInt("intermediate_size");
  vision.num_heads = vision_node.PositiveInt("num_heads");
  vision.out_hidden_size = vision_node.PositiveInt("out_hidden_size");
  vision.patch_size = vision_node.PositiveInt("patch_size");
  vision.temporal_patch_size = vision_node.PositiveInt("temporal_patch_size");
  vision.spatial_merge_size = vision_node.PositiveInt("spatial_merge_size");
  vision.in_channels = vision_node.PositiveInt("in_channels");
  vision.num_position_embeddings = vision_node.PositiveInt("num_position_embeddings");
  if (vision.out_hidden_size != model.hidden_size) {
    vision_node.Fail("out_hidden_size",
                     fmt::format("must equal text hidden_size (got {}, expected {})",
                                 vision.out_hidden_size, model.hidden_size));
  }
}

// Qwen3.5 repeats tie_word_embeddings inside text_config in some files: read text_config first,
// then top level, and reject a disagreement.
bool LoadTiedEmbeddings(const Node& top, const Node& text) {
  const std::optional<bool> inner = text.OptionalBool("tie_word_embeddings");
  const std::optional<bool> outer =
      &top.json == &text.json ? inner : top.OptionalBool("tie_word_embeddings");
  if (inner && outer && *inner != *outer) {
    text.Fail("tie_word_embeddings",
              fmt::format("contradicts top-level tie_word_embeddings (got {}, top level {})",
                          *inner, *outer));
  }
  return inner.value_or(outer.value_or(false));
}

// A plain GPT in Hugging Face's gpt2 spelling (GPT2Config: n_embd, n_layer, n_head, n_positions,
// n_inner, activation_function): Megatron GPT / NeMo 2.0 GPTConfig with LayerNorm, a GeLU MLP
// of n_inner (default 4·n_embd), learned absolute positions, biases on every linear and the
// output layer tied to the word embedding (GPT2Config's tie_word_embeddings default).
ModelConfig BuildGpt2(const Node& top) {
  ModelConfig model;
  model.family = ModelFamily::kGpt;
  model.hidden_size = top.PositiveInt("n_embd");
  model.vocab_size = top.PositiveInt("vocab_size");
  model.max_position_embeddings = top.PositiveInt("n_positions");
  model.tied_embeddings = top.OptionalBool("tie_word_embeddings").value_or(true);
  model.norm = config::NormKind::kLayerNorm;
  model.position_embedding = config::PositionEmbedding::kLearnedAbsolute;
  model.mlp = {.activation = config::MlpActivation::kGelu, .bias = true};
  if (top.Has("activation_function")) {
    const std::string activation = top.String("activation_function");
    if (activation != "gelu" && activation != "gelu_new" && activation != "gelu_pytorch_tanh") {
      top.Fail("activation_function",
               fmt::format("unsupported activation (got \"{}\", expected gelu, gelu_new or "
                           "gelu_pytorch_tanh)",
                           Abbreviated(activation)));
    }
  }
  config::AttentionConfig& attention = model.attention;
  attention.num_heads = top.PositiveInt("n_head");
  attention.num_kv_heads = attention.num_heads;
  if (model.hidden_size % attention.num_heads != 0) {
    top.Fail("n_head", fmt::format("must divide n_embd (got {} and {})", attention.num_heads,
                                   model.hidden_size));
  }
  attention.head_dim = model.hidden_size / attention.num_heads;
  attention.bias = true;
  attention.rotary_fraction = 0.0;  // learned absolute positions, no RoPE
  model.ffn_hidden_size = top.Has("n_inner") ? top.PositiveInt("n_inner") : 4 * model.hidden_size;
  const int64_t num_layers = top.PositiveInt("n_layer", kMaxLayers);
  model.layers.assign(static_cast<size_t>(num_layers), config::LayerSpec{});
  return model;
}

ModelConfig BuildModel(const Node& top) {
  const std::string model_type = top.String("model_type");
  const std::optional<ModelFamily> family = FamilyOf(model_type);
  if (!family) {
    top.Fail("model_type", fmt::format("unsupported model type (got \"{}\", expected one of qwen3, "
                                       "qwen3_moe, qwen3_next, qwen3_5, qwen3_5_moe, llama, "
                                       "mixtral, gpt_oss, deepseek_v3, kimi_k2, gpt2)",
                                       Abbreviated(model_type)));
  }
  if (*family == ModelFamily::kGpt) return BuildGpt2(top);
  const bool wrapped = *family == ModelFamily::kQwen35 || *family == ModelFamily::kQwen35Moe;
  const Node text = wrapped ? top.Child("text_config") : top;
  if (wrapped && text.Has("model_type") && text.String("model_type") != model_type + "_text") {
    text.Fail("model_type", fmt::format("contradicts top-level model_type (got \"{}\", expected "
                                        "\"{}_text\")",
                                        text.String("model_type"), model_type));
  }
  ModelConfig model;
  model.family = *family;
  model.hidden_size = text.PositiveInt("hidden_size");
  model.vocab_size = text.PositiveInt("vocab_size");
  model.max_position_embeddings = text.IntOr("max_position_embeddings", 0, 1);
  model.tied_embeddings = LoadTiedEmbeddings(top, text);
  model.norm =
      IsHybrid(*family) ? config::NormKind::kZeroCenteredRmsNorm : config::NormKind::kRmsNorm;
  const int64_t num_layers = text.PositiveInt("num_hidden_layers", kMaxLayers);
  LoadAttention(text, *family, model);
  if (*family == ModelFamily::kDeepSeekV3) LoadMla(text, model);
  const std::vector<MixerKind> mixers = LoadMixers(text, *family, num_layers);
  const std::vector<FfnKind> ffns = LoadFfns(text, *family, num_layers);
  const std::vector<bool> sliding = LoadSlidingLayers(text, *family, num_layers, model);
  for (int64_t i = 0; i < num_layers; ++i) {
    const auto at = static_cast<size_t>(i);
    model.layers.push_back({.mixer = mixers[at], .ffn = ffns[at], .sliding = sliding[at]});
  }
  if (model.HasMoe()) LoadMoe(text, *family, model);
  if (model.CountLayers(FfnKind::kDense) > 0) {
    model.ffn_hidden_size = text.PositiveInt("intermediate_size");
  }
  if (model.HasGdn()) LoadGdn(text, model);
  // DeepSeek-V3 spells the MTP depth num_nextn_predict_layers.
  model.num_mtp_layers = text.IntOr(
      *family == ModelFamily::kDeepSeekV3 ? "num_nextn_predict_layers" : "mtp_num_hidden_layers", 0,
      0, kMaxLayers);
  if (wrapped && top.Has("vision_config")) LoadVision(top.Child("vision_config"), model);
  return model;
}

}  // namespace

ModelConfig ParseHfConfig(std::string_view json_text, const std::string& source) {
  const Json json = ParseJsonObject(json_text, source);
  ModelConfig model = BuildModel(Node{json, "", source});
  model.name = source;
  return model;
}

ModelConfig LoadModelConfigFile(const std::string& path) {
  return ParseHfConfig(ReadInputFile(path, "--model-config file"), path);
}

ModelConfig LoadPreset(std::string_view name) {
  const std::optional<PresetText> preset = FindPreset(name);
  if (!preset) {
    std::string names;
    for (const std::string& known : PresetNames()) names += (names.empty() ? "" : ", ") + known;
    throw InputError(
        fmt::format("--model: unknown model \"{}\" (expected one of {}, or use "
                    "--model-config PATH)",
                    Abbreviated(name), names));
  }
  return ParseHfConfig(preset->json, std::string(preset->name));
}

}  // namespace trainscope::io
