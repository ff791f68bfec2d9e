// The Hugging Face loader: every family, aliases and nesting, and one test per bad field.
#include "trainscope/io/hf_config_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "trainscope/error.h"
#include "trainscope/io/presets.h"

namespace trainscope::io {
namespace {

using config::FfnKind;
using config::MixerKind;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(HfConfigLoaderTest, LoadsEveryBuiltInPreset) {
  for (const std::string& name : PresetNames()) {
    SCOPED_TRACE(name);
    EXPECT_NO_THROW((void)LoadPreset(name));
  }
  // 17 Qwen + 8 Llama + 2 Mixtral + 2 GPT-OSS + DeepSeek-V3, Kimi-K2, Moonlight-16B-A3B
  // + 15 plain GPT
  EXPECT_EQ(PresetNames().size(), 47u);
}

// A plain GPT in GPT-2 spelling: LayerNorm, GeLU MLP of n_inner (default 4h), learned positions,
// biased attention, tied output layer, no RoPE.
TEST(HfConfigLoaderTest, ReadsPlainGptInGpt2Spelling) {
  const config::ModelConfig model = ParseHfConfig(
      R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 3, "n_head": 4, "n_positions": 128,
      "vocab_size": 100, "activation_function": "gelu_new"})",
      "g.json");
  EXPECT_EQ(model.family, config::ModelFamily::kGpt);
  EXPECT_EQ(model.NumLayers(), 3);
  EXPECT_EQ(model.ffn_hidden_size, 256);
  EXPECT_EQ(model.attention.head_dim, 16);
  EXPECT_EQ(model.attention.num_kv_heads, 4);
  EXPECT_TRUE(model.attention.bias);
  EXPECT_EQ(model.attention.rotary_fraction, 0.0);
  EXPECT_EQ(model.norm, config::NormKind::kLayerNorm);
  EXPECT_EQ(model.mlp.activation, config::MlpActivation::kGelu);
  EXPECT_TRUE(model.mlp.bias);
  EXPECT_EQ(model.position_embedding, config::PositionEmbedding::kLearnedAbsolute);
  EXPECT_EQ(model.max_position_embeddings, 128);
  EXPECT_TRUE(model.tied_embeddings);
  EXPECT_EQ(LoadPreset("GPT3-175B").ffn_hidden_size, 4 * 12288);
}

TEST(HfConfigLoaderTest, RejectsGpt2ActivationThatIsNotGelu) {
  EXPECT_THAT(
      [] {
        (void)ParseHfConfig(R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 1, "n_head": 4,
        "n_positions": 8, "vocab_size": 10, "activation_function": "relu"})",
                            "g.json");
      },
      ThrowsMessage<InputError>(HasSubstr("g.json: activation_function: unsupported activation")));
}

TEST(HfConfigLoaderTest, RejectsGpt2HeadsThatDoNotDivideTheWidth) {
  EXPECT_THAT(
      [] {
        (void)ParseHfConfig(R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 1, "n_head": 5,
        "n_positions": 8, "vocab_size": 10})",
                            "g.json");
      },
      ThrowsMessage<InputError>(HasSubstr("g.json: n_head: must divide n_embd")));
}

// openai/gpt-oss-120b config.json: alternating sliding_attention / full_attention layers with a
// 128-token window, biased attention with sinks, 128 biased experts of width 2880, top-4.
TEST(HfConfigLoaderTest, ReadsGptOssSlidingLayersBiasesAndExperts) {
  const config::ModelConfig model = LoadPreset("openai/gpt-oss-120b");
  EXPECT_EQ(model.family, config::ModelFamily::kGptOss);
  EXPECT_EQ(model.attention.sliding_window, 128);
  EXPECT_TRUE(model.attention.bias);
  EXPECT_TRUE(model.attention.softmax_sinks);
  EXPECT_FALSE(model.attention.qk_norm);
  EXPECT_EQ(model.NumLayers(), 36);
  for (int64_t i = 0; i < model.NumLayers(); ++i) {
    EXPECT_EQ(model.layers[static_cast<size_t>(i)].sliding, i % 2 == 0) << i;
    EXPECT_EQ(model.layers[static_cast<size_t>(i)].ffn, config::FfnKind::kMoe);
  }
  EXPECT_EQ(model.moe.num_experts, 128);
  EXPECT_EQ(model.moe.top_k, 4);
  EXPECT_EQ(model.moe.expert_ffn_hidden_size, 2880);
  EXPECT_TRUE(model.moe.router_bias && model.moe.expert_bias);
  EXPECT_DOUBLE_EQ(model.moe.activation_clamp, 7.0);  // swiglu_limit
  // YaRN factor 32 with no mscale pair: 0.1·ln 32 + 1 (_yarn_get_mscale) = 1.346574.
  EXPECT_NEAR(model.attention.rope_concentration, 1.346574, 1e-6);
  EXPECT_FALSE(model.tied_embeddings);
  EXPECT_THAT(
      [] {
        (void)ParseHfConfig(R"({"model_type": "qwen3", "hidden_size": 64,
      "vocab_size": 10, "num_hidden_layers": 1, "num_attention_heads": 4,
      "intermediate_size": 8, "attention_bias": true})",
                            "x.json");
      },
      ThrowsMessage<InputError>(HasSubstr("attention_bias")));
}

TEST(HfConfigLoaderTest, ReadsDeepSeekV3MlaRouterDenseLayersAndMtp) {
  const config::ModelConfig model = LoadPreset("deepseek-ai/DeepSeek-V3");
  EXPECT_EQ(model.family, config::ModelFamily::kDeepSeekV3);
  EXPECT_EQ(model.mla, (config::MlaConfig{.q_lora_rank = 1536,
                                          .kv_lora_rank = 512,
                                          .qk_nope_head_dim = 128,
                                          .qk_rope_head_dim = 64,
                                          .v_head_dim = 128}));
  EXPECT_EQ(model.attention.num_heads, 128);
  EXPECT_EQ(model.attention.num_kv_heads, 128);
  EXPECT_EQ(model.attention.head_dim, 192);
  EXPECT_EQ(model.attention.ValueHeadDim(), 128);
  EXPECT_DOUBLE_EQ(model.attention.rotary_fraction, 64.0 / 192.0);
  // YaRN factor 40 with mscale = mscale_all_dim = 1: the ratio of equal mscales is 1.
  EXPECT_DOUBLE_EQ(model.attention.rope_concentration, 1.0);
  EXPECT_DOUBLE_EQ(model.moe.activation_clamp, 0.0);
  EXPECT_FALSE(model.attention.qk_norm);
  ASSERT_EQ(model.NumLayers(), 61);
  for (int64_t i = 0; i < 61; ++i) {  // first_k_dense_replace = 3
    const config::LayerSpec& layer = model.layers[static_cast<size_t>(i)];
    EXPECT_EQ(layer.mixer, config::MixerKind::kMultiLatentAttention) << i;
    EXPECT_EQ(layer.ffn, i < 3 ? config::FfnKind::kDense : config::FfnKind::kMoe) << i;
  }
  EXPECT_EQ(model.ffn_hidden_size, 18432);
  EXPECT_EQ(model.moe.num_experts, 256);
  EXPECT_EQ(model.moe.top_k, 8);
  EXPECT_EQ(model.moe.expert_ffn_hidden_size, 2048);
  EXPECT_EQ(model.moe.shared_expert_ffn_hidden_size, 2048);
  EXPECT_FALSE(model.moe.shared_expert_gate);
  EXPECT_EQ(model.moe.score, config::RouterScore::kSigmoid);
  EXPECT_TRUE(model.moe.router_score_bias);
  EXPECT_EQ(model.moe.num_groups, 8);
  EXPECT_EQ(model.moe.group_top_k, 4);
  EXPECT_DOUBLE_EQ(model.moe.aux_loss_coef, 0.001);  // aux_loss_alpha
  EXPECT_EQ(model.num_mtp_layers, 1);
  EXPECT_EQ(model.MtpLayerSpec().mixer, config::MixerKind::kMultiLatentAttention);
  EXPECT_EQ(model.MtpLayerSpec().ffn, config::FfnKind::kMoe);
}

TEST(HfConfigLoaderTest, ReadsKimiK2AndMoonlightWithTheDeepSeekV3Loader) {
  const config::ModelConfig kimi = LoadPreset("moonshotai/Kimi-K2");
  EXPECT_EQ(kimi.family, config::ModelFamily::kDeepSeekV3);  // model_type kimi_k2
  EXPECT_EQ(kimi.moe.num_experts, 384);
  EXPECT_EQ(kimi.moe.num_groups, 0);  // n_group 1: no group limit
  EXPECT_EQ(kimi.layers[0].ffn, config::FfnKind::kDense);
  EXPECT_EQ(kimi.layers[1].ffn, config::FfnKind::kMoe);
  const config::ModelConfig moonlight = LoadPreset("Moonlight-16B-A3B");
  EXPECT_EQ(moonlight.mla.q_lora_rank, 0);  // "q_lora_rank": null
  EXPECT_EQ(moonlight.moe.shared_expert_ffn_hidden_size, 2 * 1408);
}

TEST(HfConfigLoaderTest, RejectsDeepSeekV3FieldsThatContradictMla) {
  const std::string base = R"("model_type": "deepseek_v3", "hidden_size": 64, "vocab_size": 10,
      "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 8,
      "first_k_dense_replace": 1, "n_routed_experts": 8, "num_experts_per_tok": 2,
      "moe_intermediate_size": 4, "kv_lora_rank": 16, "qk_nope_head_dim": 8,
      "qk_rope_head_dim": 4, "v_head_dim": 8)";
  EXPECT_NO_THROW((void)ParseHfConfig("{" + base + "}", "x.json"));
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"("num_key_value_heads": 2)", "num_key_value_heads"},
      {R"("n_group": 3)", "n_group"},
      {R"("n_group": 2, "topk_group": 4)", "topk_group"},
      {R"("scoring_func": "sqrtsoftplus")", "scoring_func"},
      {R"("topk_method": "random")", "topk_method"},
  };
  for (const auto& [field, key] : bad) {
    const std::string json = "{" + base + ", " + field + "}";
    EXPECT_THAT([&] { (void)ParseHfConfig(json, "x.json"); },
                ThrowsMessage<InputError>(HasSubstr(key)))
        << field;
  }
  std::string zero_rank = "{" + base + "}";
  zero_rank.replace(zero_rank.find("\"kv_lora_rank\": 16"), 18, "\"kv_lora_rank\": 0");
  EXPECT_THAT([&] { (void)ParseHfConfig(zero_rank, "x.json"); },
              ThrowsMessage<InputError>(HasSubstr("kv_lora_rank")));
}

TEST(HfConfigLoaderTest, ReadsQwen35HybridLayoutFromTextConfig) {
  const config::ModelConfig model = LoadPreset("Qwen3.5-35B-A3B");
  EXPECT_EQ(model.family, config::ModelFamily::kQwen35Moe);
  EXPECT_EQ(model.NumLayers(), 40);
  // layer_types: full attention at 3, 7, ..., 39; GDN elsewhere (3:1).
  EXPECT_EQ(model.CountLayers(MixerKind::kGatedDeltaNet), 30);
  EXPECT_EQ(model.CountLayers(MixerKind::kGatedAttention), 10);
  EXPECT_EQ(model.layers[3].mixer, MixerKind::kGatedAttention);
  EXPECT_EQ(model.layers[4].mixer, MixerKind::kGatedDeltaNet);
  EXPECT_EQ(model.CountLayers(FfnKind::kMoe), 40);
  EXPECT_EQ(model.attention.head_dim, 256);
  EXPECT_TRUE(model.attention.output_gate);
  EXPECT_DOUBLE_EQ(model.attention.rotary_fraction, 0.25);
  EXPECT_EQ(model.gdn.num_value_heads, 32);
  EXPECT_EQ(model.moe.shared_expert_ffn_hidden_size, 512);
  EXPECT_EQ(model.num_mtp_layers, 1);
  EXPECT_EQ(model.vision.depth, 27);
  EXPECT_FALSE(model.tied_embeddings);
}

TEST(HfConfigLoaderTest, DerivesQwen3NextLayersFromFullAttentionInterval) {
  const config::ModelConfig model = LoadPreset("Qwen/Qwen3-Next-80B-A3B");
  EXPECT_EQ(model.CountLayers(MixerKind::kGatedAttention), 12);
  EXPECT_EQ(model.layers[11].mixer, MixerKind::kGatedAttention);
  EXPECT_EQ(model.num_mtp_layers, 0);
  EXPECT_FALSE(model.vision.Present());
}

TEST(HfConfigLoaderTest, LlamaHasNoQkNormAndDefaultsHeadDim) {
  const config::ModelConfig model = LoadPreset("LLAMA-3-70B");
  EXPECT_FALSE(model.attention.qk_norm);
  EXPECT_EQ(model.attention.head_dim, 128);  // 8192 / 64
  EXPECT_EQ(model.attention.num_kv_heads, 8);
}

TEST(HfConfigLoaderTest, MixtralUsesLocalExpertsAndIntermediateSize) {
  const config::ModelConfig model = LoadPreset("Mixtral-8x7B");
  EXPECT_EQ(model.moe.num_experts, 8);
  EXPECT_EQ(model.moe.top_k, 2);
  EXPECT_EQ(model.moe.expert_ffn_hidden_size, 14336);
  EXPECT_FALSE(model.moe.HasSharedExpert());
}

TEST(HfConfigLoaderTest, LoadsAFileByPath) {
  const config::ModelConfig model =
      LoadModelConfigFile(std::string(TRAINSCOPE_TEST_DATA_DIR) + "/qwen3_tiny.json");
  EXPECT_EQ(model.hidden_size, 64);
  EXPECT_TRUE(model.tied_embeddings);
}

TEST(HfConfigLoaderTest, RejectsTruncatedJson) {
  EXPECT_THAT(
      [] { (void)LoadModelConfigFile(std::string(TRAINSCOPE_TEST_DATA_DIR) + "/truncated.json"); },
      ThrowsMessage<InputError>(HasSubstr("malformed JSON")));
}

TEST(HfConfigLoaderTest, RejectsMissingFile) {
  EXPECT_THAT([] { (void)LoadModelConfigFile("/nonexistent/config.json"); },
              ThrowsMessage<InputError>(HasSubstr("cannot open")));
}

TEST(HfConfigLoaderTest, RejectsUnknownPresetListingKnownOnes) {
  EXPECT_THAT([] { (void)LoadPreset("Qwen4-1T"); },
              ThrowsMessage<InputError>(HasSubstr("unknown model \"Qwen4-1T\"")));
}

// One test per invalid field: each mutation of a valid config names the offending key.
struct BadField {
  const char* json;
  const char* expected;
};

const BadField kBadFields[] = {
    {R"({"model_type": "gpt_neox"})", "model_type: unsupported model type"},
    {R"({"model_type": "gpt2"})", "n_embd: missing required field"},
    {R"({"hidden_size": 64})", "model_type: missing required field"},
    {R"({"model_type": "qwen3", "vocab_size": 10, "num_hidden_layers": 2,
         "num_attention_heads": 4, "intermediate_size": 8})",
     "hidden_size: missing"},
    {R"({"model_type": "qwen3", "hidden_size": -64, "vocab_size": 10, "num_hidden_layers": 2,
         "num_attention_heads": 4, "intermediate_size": 8})",
     "hidden_size: must be at least 1"},
    {R"({"model_type": "qwen3", "hidden_size": "64", "vocab_size": 10, "num_hidden_layers": 2,
         "num_attention_heads": 4, "intermediate_size": 8})",
     "hidden_size: expected an integer"},
    {R"({"model_type": "qwen3", "hidden_size": 99999999999999, "vocab_size": 10,
         "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 8})",
     "hidden_size: absurd value"},
    {R"({"model_type": "qwen3", "hidden_size": 64, "vocab_size": 10, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 3, "intermediate_size": 8})",
     "num_key_value_heads: must divide num_attention_heads"},
    {R"({"model_type": "qwen3", "hidden_size": 64, "vocab_size": 10, "num_hidden_layers": 2,
         "num_attention_heads": 5, "intermediate_size": 8})",
     "head_dim: missing, and hidden_size 64 is not divisible"},
    {R"({"model_type": "qwen3_moe", "hidden_size": 64, "vocab_size": 10, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_experts": 4, "num_experts_per_tok": 8,
         "moe_intermediate_size": 8})",
     "num_experts_per_tok: exceeds the number of experts"},
    {R"({"model_type": "qwen3_5", "tie_word_embeddings": true, "text_config": {
         "model_type": "qwen3_5_text", "hidden_size": 64, "vocab_size": 10,
         "num_hidden_layers": 4, "num_attention_heads": 4, "head_dim": 16,
         "intermediate_size": 8, "tie_word_embeddings": false, "linear_num_key_heads": 2,
         "linear_key_head_dim": 8, "linear_num_value_heads": 4, "linear_value_head_dim": 8,
         "linear_conv_kernel_dim": 4}})",
     "text_config.tie_word_embeddings: contradicts top-level"},
    {R"({"model_type": "qwen3_5", "text_config": {
         "hidden_size": 64, "vocab_size": 10, "num_hidden_layers": 4, "num_attention_heads": 4,
         "head_dim": 16, "intermediate_size": 8, "full_attention_interval": 4,
         "layer_types": ["linear_attention", "full_attention", "linear_attention",
                         "full_attention"],
         "linear_num_key_heads": 2, "linear_key_head_dim": 8, "linear_num_value_heads": 4,
         "linear_value_head_dim": 8, "linear_conv_kernel_dim": 4}})",
     "text_config.layer_types[1]: contradicts full_attention_interval"},
    {R"({"model_type": "qwen3_5", "text_config": {
         "hidden_size": 64, "vocab_size": 10, "num_hidden_layers": 4, "num_attention_heads": 4,
         "head_dim": 16, "intermediate_size": 8, "linear_key_head_dim": 8,
         "linear_num_value_heads": 4, "linear_value_head_dim": 8,
         "linear_conv_kernel_dim": 4}})",
     "text_config.linear_num_key_heads: missing"},
    {R"({"model_type": "qwen3_5_moe"})", "text_config: missing required object"},
    {R"([1, 2])", "expected a JSON object"},
};

TEST(HfConfigLoaderTest, RejectsEachBadFieldNamingIt) {
  for (const BadField& bad : kBadFields) {
    SCOPED_TRACE(bad.json);
    EXPECT_THAT([&] { (void)ParseHfConfig(bad.json, "test.json"); },
                ThrowsMessage<InputError>(HasSubstr(bad.expected)));
  }
}

TEST(HfConfigLoaderTest, RejectsANumberThatOverflowsADoubleNamingTheFile) {
  EXPECT_THAT(
      [] { (void)ParseHfConfig(R"({"model_type": "qwen3", "rope_theta": 1e400})", "c.json"); },
      ThrowsMessage<InputError>(HasSubstr("c.json: number out of range")));
}

TEST(HfConfigLoaderTest, RejectsMoreLayersThanTheBound) {
  EXPECT_THAT(
      [] {
        (void)ParseHfConfig(R"({"model_type": "qwen3", "hidden_size": 64, "vocab_size": 10,
                                "num_hidden_layers": 2147483647, "num_attention_heads": 4})",
                            "c.json");
      },
      ThrowsMessage<InputError>(HasSubstr("num_hidden_layers: absurd value (got 2147483647, "
                                          "expected at most 10000)")));
}

TEST(HfConfigLoaderTest, RejectsMoreExpertsThanTheBound) {
  EXPECT_THAT(
      [] {
        (void)ParseHfConfig(R"({"model_type": "mixtral", "hidden_size": 64, "vocab_size": 10,
                                "num_hidden_layers": 2, "num_attention_heads": 4,
                                "num_local_experts": 2147483647, "intermediate_size": 8,
                                "num_experts_per_tok": 2})",
                            "c.json");
      },
      ThrowsMessage<InputError>(HasSubstr("num_local_experts: absurd value (got 2147483647, "
                                          "expected at most 100000)")));
}

TEST(HfConfigLoaderTest, QuotesAHugeWrongValueBriefly) {
  std::string list = "[";
  for (int i = 0; i < 100'000; ++i) list += (i ? ",[1]" : "[1]");
  list += "]";
  try {
    (void)ParseHfConfig(R"({"model_type": "qwen3", "hidden_size": )" + list + "}", "c.json");
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_THAT(error.what(), HasSubstr("hidden_size: expected an integer"));
    EXPECT_LT(std::string(error.what()).size(), 200u);
  }
}

}  // namespace
}  // namespace trainscope::io
