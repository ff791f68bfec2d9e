// Parameter counts against published figures and against the formulas of
// docs/params.md, written out here independently of graph/weights.
#include "trainscope/graph/param_count.h"

#include <gtest/gtest.h>

#include <string>

#include "trainscope/config/pipeline_layout.h"
#include "trainscope/io/hf_config_loader.h"

namespace trainscope::graph {
namespace {

struct PublishedCount {
  std::string model;
  int64_t total;
  int64_t embedding;
  int64_t lm_head;
  int64_t non_embedding;
  int64_t active;
};

// KerasHub presets `params` (qwen3_presets.py, qwen3_moe_presets.py); HF safetensors for 235B.
const PublishedCount kQwen3Counts[] = {
    {"Qwen3-0.6B", 596'049'920, 155'582'464, 0, 440'467'456, 596'049'920},
    {"Qwen3-1.7B", 1'720'574'976, 311'164'928, 0, 1'409'410'048, 1'720'574'976},
    {"Qwen3-4B", 4'022'468'096, 388'956'160, 0, 3'633'511'936, 4'022'468'096},
    {"Qwen3-8B", 8'190'735'360, 622'329'856, 622'329'856, 6'946'075'648, 8'190'735'360},
    {"Qwen3-14B", 14'768'307'200, 777'912'320, 777'912'320, 13'212'482'560, 14'768'307'200},
    {"Qwen3-32B", 32'762'123'264, 777'912'320, 777'912'320, 31'206'298'624, 32'762'123'264},
    {"Qwen3-30B-A3B", 30'532'122'624, 311'164'928, 311'164'928, 29'909'792'768, 3'353'032'704},
    {"Qwen3-235B-A22B", 235'093'634'560, 622'329'856, 622'329'856, 233'848'974'848, 22'190'763'520},
};

TEST(ParamCountTest, ReproducesAllEightOfficialQwen3Counts) {
  for (const PublishedCount& expected : kQwen3Counts) {
    SCOPED_TRACE(expected.model);
    const ParamCounts counts = CountParams(io::LoadPreset(expected.model));
    EXPECT_EQ(counts.total, expected.total);
    EXPECT_EQ(counts.text_total, expected.total);
    EXPECT_EQ(counts.embedding, expected.embedding);
    EXPECT_EQ(counts.lm_head, expected.lm_head);
    EXPECT_EQ(counts.non_embedding, expected.non_embedding);
    EXPECT_EQ(counts.active, expected.active);
    EXPECT_EQ(counts.mtp, 0);
    EXPECT_EQ(counts.vision, 0);
  }
}

// Safetensors totals published on the Hugging Face Hub for the calibration models.
TEST(ParamCountTest, ReproducesPublishedLlamaAndMixtralCounts) {
  EXPECT_EQ(CountParams(io::LoadPreset("Llama-2-7B")).total, 6'738'415'616);
  EXPECT_EQ(CountParams(io::LoadPreset("meta-llama/Llama-3-8B")).total, 8'030'261'248);
  EXPECT_EQ(CountParams(io::LoadPreset("Llama-3-70B")).total, 70'553'706'496);
  EXPECT_EQ(CountParams(io::LoadPreset("Llama-3.1-405B")).total, 405'853'388'800);
  EXPECT_EQ(CountParams(io::LoadPreset("mistralai/Mixtral-8x7B")).total, 46'702'792'704);
  // Mixtral active: 2 of 8 experts; 12.9B per Mistral's announcement, exactly
  // 46,702,792,704 - 32 layers x 6 experts x 3 x 4096 x 14336.
  EXPECT_EQ(CountParams(io::LoadPreset("Mixtral-8x7B")).active,
            46'702'792'704 - 32LL * 6 * 3 * 4096 * 14336);
}

// Plain GPT (LayerNorm, GeLU 4h MLP, learned positions, biases, tied output layer). Per layer
// 12h² + 13h: qkv 3h² + 3h, proj h² + h, fc1 4h² + 4h, fc2 4h² + h, two LayerNorms 4h; plus the
// word and position tables (V + s)·h and the final LayerNorm 2h. Narayanan et al. 2021 (SC21),
// Table 1, counts P = 12lh²(1 + 13/(12h) + (V + s)/(12lh)), i.e. all but the final LayerNorm,
// with V = 51200 and s = 2048; each preset equals that plus 2h and rounds to the table's value.
int64_t PlainGptCount(int64_t layers, int64_t h, int64_t vocab) {
  return layers * (12 * h * h + 13 * h) + (vocab + 2048) * h + 2 * h;
}

TEST(ParamCountTest, ReproducesMegatronPaperGptCounts) {
  const struct {
    const char* preset;
    int64_t layers;
    int64_t hidden;
    double published_billions;  // Table 1, "Number of parameters (billion)"
  } kTable1[] = {{"GPT-1.7B", 24, 2304, 1.7},     {"GPT-3.6B", 30, 3072, 3.6},
                 {"GPT-7.5B", 36, 4096, 7.5},     {"GPT-18B", 40, 6144, 18.4},
                 {"GPT-39B", 48, 8192, 39.1},     {"GPT-76B", 60, 10240, 76.1},
                 {"GPT-145B", 80, 12288, 145.6},  {"GPT-310B", 96, 16384, 310.1},
                 {"GPT-530B", 105, 20480, 529.6}, {"GPT-1T", 128, 25600, 1008.0}};
  for (const auto& row : kTable1) {
    SCOPED_TRACE(row.preset);
    const ParamCounts counts = CountParams(io::LoadPreset(row.preset));
    EXPECT_EQ(counts.total, PlainGptCount(row.layers, row.hidden, 51200));
    EXPECT_EQ(counts.lm_head, 0);  // tied
    EXPECT_NEAR(static_cast<double>(counts.total) / 1e9, row.published_billions, 0.05);
  }
  // Korthikanti et al. 2022, Table 3: GPT-3 175B and the 22B model.
  EXPECT_EQ(CountParams(io::LoadPreset("GPT-175B")).total, PlainGptCount(96, 12288, 51200));
  EXPECT_EQ(CountParams(io::LoadPreset("GPT-22B")).total, PlainGptCount(48, 6144, 51200));
}

// Brown et al. 2020, Table 2.1: GPT-3 175B ("175.0B"): 96 layers, d_model 12288, context 2048,
// BPE vocabulary 50257 (the NeMo 2.0 GPTConfig175B layout). Exactly 174,604,259,328.
TEST(ParamCountTest, ReproducesGpt3Count) {
  const ParamCounts counts = CountParams(io::LoadPreset("GPT3-175B"));
  EXPECT_EQ(counts.total, 174'604'259'328);
  EXPECT_EQ(counts.total, PlainGptCount(96, 12288, 50257));
  EXPECT_EQ(counts.embedding, (50257 + 2048) * 12288LL);
  EXPECT_NEAR(static_cast<double>(counts.total) / 1e9, 175.0, 0.5);
  EXPECT_EQ(CountParams(io::LoadPreset("GPT3-5B")).total, PlainGptCount(24, 4096, 50257));
  EXPECT_EQ(CountParams(io::LoadPreset("GPT3-20B")).total, PlainGptCount(44, 6144, 50257));
}

// gpt-oss model card (arXiv:2508.10925, Table 1): 116.83B total / 5.13B active (120b) and
// 20.91B / 3.61B (20b). By hand, h = 2880, 64 heads of 64, 8 KV heads, F = 2880, V = 201088:
// attention 2880·5120 + 5120 (qkv + bias) + 4096·2880 + 2880 (proj + bias) + 64 (sinks)
// = 26,550,144; router 2880·E + E; one expert 2880·5760 + 5760 + 2880·2880 + 2880 = 24,891,840;
// norms 2·2880 per layer; embedding and unembedding 201088·2880 each, final norm 2880.
// The card's active count excludes the input embedding (a lookup); ours includes it.
TEST(ParamCountTest, ReproducesPublishedGptOssCounts) {
  const auto total = [](int64_t layers, int64_t experts) {
    const int64_t layer = 26'550'144 + (2880 * experts + experts) + experts * 24'891'840 + 5760;
    return layers * layer + 2 * 201'088LL * 2880 + 2880;
  };
  const graph::ParamCounts big = CountParams(io::LoadPreset("openai/GPT-OSS-120B"));
  EXPECT_EQ(big.total, total(36, 128));
  EXPECT_EQ(big.total, 116'829'156'672);  // 116.83B
  EXPECT_EQ(big.active, big.total - 36LL * 124 * 24'891'840);
  EXPECT_EQ(big.active - 201'088LL * 2880, 5'132'849'472);  // 5.13B
  const graph::ParamCounts small = CountParams(io::LoadPreset("GPT-OSS-20B"));
  EXPECT_EQ(small.total, total(24, 32));
  EXPECT_EQ(small.total, 20'914'757'184);                     // 20.91B
  EXPECT_EQ(small.active - 201'088LL * 2880, 3'608'307'264);  // 3.61B
}

// DeepSeek-V3-architecture dimensions, for the hand counts below.
struct MlaMoeDims {
  int64_t h, vocab, layers, dense_layers, ffn, experts, expert_ffn, shared, heads, q_lora, kv_lora,
      nope, rope, v, top_k;
};

// One MLA block, tensor by tensor (transformers DeepseekV3Attention): q_a_proj [q_lora, H],
// q_a_layernorm [q_lora], q_b_proj [n·(nope+rope), q_lora] (or q_proj [n·(nope+rope), H] without
// q_lora), kv_a_proj_with_mqa [kv_lora+rope, H], kv_a_layernorm [kv_lora],
// kv_b_proj [n·(nope+v), kv_lora], o_proj [H, n·v].
int64_t Mla(const MlaMoeDims& d) {
  const int64_t q = d.q_lora > 0
                        ? d.q_lora * d.h + d.q_lora + d.heads * (d.nope + d.rope) * d.q_lora
                        : d.heads * (d.nope + d.rope) * d.h;
  return q + (d.kv_lora + d.rope) * d.h + d.kv_lora + d.heads * (d.nope + d.v) * d.kv_lora +
         d.h * d.heads * d.v;
}

// MoE block without its routed experts: gate [E, H], e_score_correction_bias [E], and the
// shared experts (gate/up/down of moe_intermediate_size each).
int64_t MoeRest(const MlaMoeDims& d) {
  return d.experts * d.h + d.experts + d.shared * 3 * d.h * d.expert_ffn;
}

int64_t RoutedExperts(const MlaMoeDims& d, int64_t count) { return count * 3 * d.h * d.expert_ffn; }

// Decoder layers, final norm, embedding and LM head; `experts_per_token` 0 counts all experts.
int64_t MainModel(const MlaMoeDims& d, int64_t experts) {
  const int64_t dense = d.dense_layers * (Mla(d) + 2 * d.h + 3 * d.h * d.ffn);
  const int64_t moe =
      (d.layers - d.dense_layers) * (Mla(d) + 2 * d.h + MoeRest(d) + RoutedExperts(d, experts));
  return dense + moe + d.h + 2 * d.vocab * d.h;
}

constexpr MlaMoeDims kDeepSeekV3{7168, 129280, 61,  3,   18432, 256, 2048, 1,
                                 128,  1536,   512, 128, 64,    128, 8};

// Number of 128x128 FP8 blocks of a [rows, cols] weight: one fp32 weight_scale_inv each.
int64_t Fp8Scales(int64_t rows, int64_t cols) {
  return ((rows + 127) / 128) * ((cols + 127) / 128);
}

TEST(ParamCountTest, ReproducesPublishedDeepSeekV3Counts) {
  const MlaMoeDims& d = kDeepSeekV3;
  const ParamCounts counts = CountParams(io::LoadPreset("deepseek-ai/DeepSeek-V3"));
  // Main model: 671B (arXiv:2412.19437 §4.2, Table 1 of the HF card: 671B total, 37B activated).
  EXPECT_EQ(counts.text_total, MainModel(d, d.experts));
  EXPECT_EQ(counts.text_total, 671'026'419'200);
  EXPECT_EQ(counts.text_total / 1'000'000'000, 671);
  // MTP module (multi_token_prediction.py): enorm, hnorm, eh_proj [H, 2H], one MoE decoder layer,
  // and the shared-head norm. Megatron shares the embedding and output layer with the main model.
  const int64_t mtp =
      2 * d.h + 2 * d.h * d.h + Mla(d) + 2 * d.h + MoeRest(d) + RoutedExperts(d, d.experts) + d.h;
  EXPECT_EQ(counts.mtp, mtp);
  EXPECT_EQ(counts.mtp, 11'610'068'224);
  EXPECT_EQ(counts.total, counts.text_total + counts.mtp);
  // The HF checkpoint stores the MTP layer's own embed_tokens and shared_head.head (2·V·H) and one
  // fp32 weight_scale_inv per 128x128 block of every FP8 linear (all attention and MLP linears;
  // not the embeddings, the gates or eh_proj). Its safetensors total is 684,531,386,000 ("685B" =
  // 671B + 14B MTP; huggingface.co/api/models/deepseek-ai/DeepSeek-V3?expand[]=safetensors).
  const int64_t attention_scales =
      Fp8Scales(d.q_lora, d.h) + Fp8Scales(d.heads * (d.nope + d.rope), d.q_lora) +
      Fp8Scales(d.kv_lora + d.rope, d.h) + Fp8Scales(d.heads * (d.nope + d.v), d.kv_lora) +
      Fp8Scales(d.h, d.heads * d.v);
  const auto mlp_scales = [&](int64_t f) { return 2 * Fp8Scales(f, d.h) + Fp8Scales(d.h, f); };
  const int64_t moe_layer_scales =
      attention_scales + (d.experts + d.shared) * mlp_scales(d.expert_ffn);
  const int64_t scales = d.dense_layers * (attention_scales + mlp_scales(d.ffn)) +
                         (d.layers - d.dense_layers + 1) * moe_layer_scales;
  EXPECT_EQ(counts.total + 2 * d.vocab * d.h + scales, 684'531'386'000);
  // Activated: 8 of 256 routed experts per MoE layer, MTP excluded (37.55B; "37B").
  EXPECT_EQ(counts.active, MainModel(d, d.top_k));
  EXPECT_EQ(counts.active, 37'552'297'472);
  EXPECT_EQ(counts.active / 1'000'000'000, 37);
}

TEST(ParamCountTest, KimiK2AndMoonlightFollowTheDeepSeekV3Formulas) {
  // Kimi-K2 (moonshotai/Kimi-K2-Instruct): 64 heads, 384 experts, one dense layer, no MTP. The
  // card's "1T total, 32B activated" (32B without the input embedding); 1,026,408,232,448 is the
  // logical parameter count recomputed from the checkpoint's safetensors headers (FP8 scales
  // excluded) as public checkpoint audits and provider listings quote it.
  constexpr MlaMoeDims kimi{7168, 163840, 61,  1,   18432, 384, 2048, 1,
                            64,   1536,   512, 128, 64,    128, 8};
  const ParamCounts k2 = CountParams(io::LoadPreset("moonshotai/Kimi-K2"));
  EXPECT_EQ(k2.total, MainModel(kimi, kimi.experts));
  EXPECT_EQ(k2.total, 1'026'408'232'448);
  EXPECT_EQ(k2.mtp, 0);
  EXPECT_EQ(k2.active, MainModel(kimi, kimi.top_k));
  EXPECT_EQ((k2.active - kimi.vocab * kimi.h) / 1'000'000'000, 31);  // 31.69B, "32B"
  // Moonlight-16B-A3B: q_lora_rank null (q_proj from H), two shared experts, 64 experts top-6.
  // The Moonlight README: 16B total, 3B activated; 2.24B activated without both embeddings.
  constexpr MlaMoeDims moon{2048, 163840, 27, 1, 11264, 64, 1408, 2, 16, 0, 512, 128, 64, 128, 6};
  const ParamCounts moonlight = CountParams(io::LoadPreset("Moonlight-16B-A3B"));
  EXPECT_EQ(moonlight.total, MainModel(moon, moon.experts));
  EXPECT_EQ(moonlight.total, 15'960'110'208);
  EXPECT_EQ(moonlight.active, MainModel(moon, moon.top_k));
  EXPECT_EQ(moonlight.active - 2 * moon.vocab * moon.h, 2'243'687'552);
}

TEST(ParamCountTest, MlaDownProjectionsAreReplicatedOverTensorParallel) {
  // Megatron's TE spec builds linear_q_down_proj / linear_kv_down_proj as TELinear 'duplicated':
  // every TP rank holds them whole, and their fused layer norms; the up projections and
  // linear_proj are split.
  const config::ModelConfig model = io::LoadPreset("DeepSeek-V3");
  const std::vector<WeightTensor> layer = DecoderLayerWeights(model, model.layers.front());
  const config::ParallelSizes tp8{.tensor = 8};
  int64_t replicated = 0;
  int64_t split = 0;
  for (const WeightTensor& tensor : layer) {
    if (tensor.component == Component::kDenseMlp) continue;
    const int64_t shard = ShardNumel(tensor, tp8, /*padded_vocab=*/0);
    (tensor.split == Split::kReplicated ? replicated : split) += shard;
  }
  const MlaMoeDims& d = kDeepSeekV3;
  EXPECT_EQ(replicated,
            d.q_lora * d.h + d.q_lora + (d.kv_lora + d.rope) * d.h + d.kv_lora + 2 * d.h);
  EXPECT_EQ(split, (d.heads * (d.nope + d.rope) * d.q_lora + d.heads * (d.nope + d.v) * d.kv_lora +
                    d.h * d.heads * d.v) /
                       8);
}

// The hybrid formulas of docs/params.md, evaluated by hand for one model.
struct HybridDims {
  int64_t h, nh, nkv, hd, nk, dk, nv, dv, kernel, layers, vocab;
  bool tied;
};

int64_t GatedAttention(const HybridDims& d) {
  return 2 * d.h * d.nh * d.hd + 2 * d.h * d.nkv * d.hd + d.nh * d.hd * d.h + 2 * d.hd;
}

int64_t Gdn(const HybridDims& d) {
  const int64_t cd = 2 * d.nk * d.dk + d.nv * d.dv;
  return d.h * cd + d.h * d.nv * d.dv + 2 * d.h * d.nv + d.kernel * cd + 2 * d.nv + d.dv +
         d.nv * d.dv * d.h;
}

int64_t Vision(int64_t hv, int64_t iv, int64_t depth, int64_t out) {
  const int64_t hm = 4 * hv;
  return (3 * 2 * 16 * 16 * hv + hv) + 2304 * hv +
         depth * (4 * hv + 3 * hv * hv + 3 * hv + hv * hv + hv + 2 * hv * iv + iv + hv) + 2 * hv +
         (hm * hm + hm) + (hm * out + out);
}

TEST(ParamCountTest, Qwen35DenseFollowsGdnGatedAttentionMtpAndVisionFormulas) {
  // Qwen3.5-27B: H 5120, I 17408, 64 layers (48 GDN + 16 gated attention), 24/4 heads of 256,
  // GDN 48 value / 16 key heads of 128, kernel 4, vocab 248320, untied, 1 MTP layer,
  // vision depth 27, Hv 1152, Iv 4304, out 5120.
  const HybridDims d{5120, 24, 4, 256, 16, 128, 48, 128, 4, 64, 248320, false};
  const int64_t mlp = 3 * d.h * 17408;
  const int64_t gdn_layer = Gdn(d) + mlp + 2 * d.h;
  const int64_t attn_layer = GatedAttention(d) + mlp + 2 * d.h;
  const int64_t non_embedding = 48 * gdn_layer + 16 * attn_layer + d.h;
  const int64_t embedding = d.vocab * d.h;
  const int64_t mtp = 2 * d.h * d.h + 3 * d.h + attn_layer;
  const int64_t vision = Vision(1152, 4304, 27, 5120);
  const ParamCounts counts = CountParams(io::LoadPreset("Qwen/Qwen3.5-27B"));
  EXPECT_EQ(counts.non_embedding, non_embedding);
  EXPECT_EQ(counts.embedding, embedding);
  EXPECT_EQ(counts.lm_head, embedding);
  EXPECT_EQ(counts.text_total, non_embedding + 2 * embedding);
  EXPECT_EQ(counts.mtp, mtp);
  EXPECT_EQ(counts.vision, vision);
  EXPECT_EQ(counts.total, non_embedding + 2 * embedding + mtp + vision);
  EXPECT_EQ(counts.active, counts.text_total);
}

TEST(ParamCountTest, Qwen35MoeFollowsSharedExpertAndActiveFormulas) {
  // Qwen3.5-35B-A3B: H 2048, 40 layers (30 GDN + 10 gated attention), 16/2 heads of 256,
  // GDN 32/16 heads of 128, E 256, k 8, Fe 512, Fs 512, vocab 248320, untied.
  const HybridDims d{2048, 16, 2, 256, 16, 128, 32, 128, 4, 40, 248320, false};
  const int64_t e = 256, k = 8, fe = 512, fs = 512;
  const int64_t moe = 3 * e * d.h * fe + d.h * e + 3 * d.h * fs + d.h;
  const int64_t moe_active = 3 * k * d.h * fe + d.h * e + 3 * d.h * fs + d.h;
  const int64_t non_embedding =
      30 * (Gdn(d) + moe + 2 * d.h) + 10 * (GatedAttention(d) + moe + 2 * d.h) + d.h;
  const int64_t active_non_embedding =
      30 * (Gdn(d) + moe_active + 2 * d.h) + 10 * (GatedAttention(d) + moe_active + 2 * d.h) + d.h;
  const int64_t embedding = d.vocab * d.h;
  const ParamCounts counts = CountParams(io::LoadPreset("qwen3.5-35b-a3b"));
  EXPECT_EQ(counts.non_embedding, non_embedding);
  EXPECT_EQ(counts.active, active_non_embedding + 2 * embedding);
  EXPECT_EQ(counts.mtp, 2 * d.h * d.h + 3 * d.h + GatedAttention(d) + moe + 2 * d.h);
  EXPECT_EQ(counts.vision, Vision(1152, 4304, 27, 2048));
  // Card: 35B total, 3B active (text only, without MTP and vision).
  EXPECT_NEAR(static_cast<double>(counts.text_total) / 1e9, 35.0, 1.0);
  EXPECT_NEAR(static_cast<double>(counts.active) / 1e9, 3.0, 0.5);
}

// slime's HF GDN holds plain nn.Linear weights on every TP rank (slime_plugins/models/
// hf_attention.py): at t = 2 each of Qwen3.5-35B-A3B's 30 GDN layers keeps its whole in_proj,
// conv1d, A_log, dt_bias and out_proj instead of half; only out_norm (d_v = 128) was replicated.
TEST(ParamCountTest, SlimeReplicatesTheGatedDeltaNetWeightsOverTensorParallel) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  const HybridDims d{2048, 16, 2, 256, 16, 128, 32, 128, 4, 40, 248320, false};
  config::TrainingConfig core;
  core.parallel = {.world_size = 2, .tensor = 2};
  core.sequence_parallel = true;
  config::TrainingConfig slime = core;
  slime.framework.framework = config::Framework::kSlime;
  const config::PipelineLayout layout = config::BuildPipelineLayout(model, core);
  const int64_t sharded = CountParamsPerStage(model, core, layout)[0].total;
  const int64_t replicated = CountParamsPerStage(model, slime, layout)[0].total;
  EXPECT_EQ(replicated - sharded, 30 * (Gdn(d) - d.dv) / 2);
}

TEST(ParamCountTest, ComponentsSumToTotal) {
  for (const char* name : {"Qwen3-30B-A3B", "Qwen3.5-397B-A17B", "Qwen3-Next-80B-A3B",
                           "Qwen3.5-0.8B", "Mixtral-8x7B"}) {
    SCOPED_TRACE(name);
    const ParamCounts counts = CountParams(io::LoadPreset(name));
    int64_t sum = 0;
    for (int64_t value : counts.by_component) sum += value;
    EXPECT_EQ(sum, counts.total);
  }
}

TEST(ParamCountTest, TiedEmbeddingsDropTheHeadButNotTheEmbedding) {
  config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  const ParamCounts untied = CountParams(model);
  model.tied_embeddings = true;
  const ParamCounts tied = CountParams(model);
  EXPECT_EQ(tied.lm_head, 0);
  EXPECT_EQ(tied.embedding, untied.embedding);
  EXPECT_EQ(untied.total - tied.total, 151936LL * 4096);
}

TEST(ParamCountTest, PadsVocabToMultipleOf128TimesTp) {
  // vocab_utils.py: ceil(151936 / 256) * 256 = 152064 (divisor 128 · t).
  EXPECT_EQ(PaddedVocabSize(151936, 2, 128), 152064);
  EXPECT_EQ(PaddedVocabSize(248320, 1, 128), 248320);  // 1940 x 128
  EXPECT_EQ(PaddedVocabSize(248320, 8, 128), 248832);  // ceil(248320/1024) = 243 -> 248832
}

TEST(ParamCountTest, PerStageShardsOfQwen3DenseAtTp2) {
  // Qwen3-8B, t = 2, p = 2: 18 layers per stage. Per layer and rank (hand-derived):
  // linear_qkv (4096 + 2*1024) * 4096 / 2, linear_proj 4096 * 4096 / 2, fc1 2*12288*4096/2,
  // fc2 4096*12288/2, replicated: 2 norms of 4096 and q/k norms of 128.
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training;
  training.parallel = {.world_size = 8, .tensor = 2, .pipeline = 2};
  training.sequence_parallel = true;
  const config::PipelineLayout layout = config::BuildPipelineLayout(model, training);
  const std::vector<StageParams> stages = CountParamsPerStage(model, training, layout);
  ASSERT_EQ(stages.size(), 2u);
  const int64_t sharded = (6144LL * 4096 + 4096LL * 4096 + 2 * 12288LL * 4096 + 4096LL * 12288) / 2;
  const int64_t replicated = 2 * 4096 + 2 * 128;
  const int64_t padded_vocab_shard = 152064LL / 2 * 4096;
  EXPECT_EQ(stages[0].num_ranks, 4);
  EXPECT_EQ(stages[0].total, 18 * (sharded + replicated) + padded_vocab_shard);
  EXPECT_EQ(stages[1].total, 18 * (sharded + replicated) + 4096 + padded_vocab_shard);
  EXPECT_EQ(stages[0].replicated, 18 * replicated);
  EXPECT_EQ(stages[0].expert, 0);
}

TEST(ParamCountTest, PerStageExpertShardsFollowEpAndEtp) {
  // Qwen3-30B-A3B, W 16, t 2, e 8, u 1 (ETP), p 1: each rank holds 128/8 = 16 experts of
  // 3 * 2048 * 768 parameters, unsplit by TP because ETP = 1; the router (128 x 2048) is
  // replicated.
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  config::TrainingConfig training;
  training.parallel = {.world_size = 16, .tensor = 2, .expert = 8, .expert_tensor = 1};
  const config::PipelineLayout layout = config::BuildPipelineLayout(model, training);
  const std::vector<StageParams> stages = CountParamsPerStage(model, training, layout);
  ASSERT_EQ(stages.size(), 1u);
  EXPECT_EQ(stages[0].expert, 48LL * 16 * 3 * 2048 * 768);
  EXPECT_EQ(stages[0].by_component[static_cast<size_t>(Component::kRouter)], 48LL * 128 * 2048);
}

TEST(ParamCountTest, QueryGroupsBelowTpSplitTheQkvWeightWithoutReplication) {
  // Qwen3.5-35B-A3B has g = 2 < t = 4: Megatron still splits linear_qkv evenly
  // (attention.py:340-380): (2*16*256 + 2*2*256) * 2048 / 4 per rank.
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  const WeightTensor qkv =
      DecoderLayerWeights(model, {config::MixerKind::kGatedAttention, config::FfnKind::kMoe})[1];
  ASSERT_EQ(qkv.name, "self_attention.linear_qkv.weight");
  const config::ParallelSizes sizes{.world_size = 4, .tensor = 4};
  EXPECT_EQ(ShardNumel(qkv, sizes, 0), (2 * 16 * 256 + 2 * 2 * 256) * 2048 / 4);
}

TEST(ParamCountTest, LastStageHoldsEmbeddingCopyForMtp) {
  // Qwen3.5-9B (untied, MTP 1) at p = 2: the last stage holds the output layer and a
  // duplicate embedding for MTP, each V/t x H.
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-9B");
  config::TrainingConfig training;
  training.parallel = {.world_size = 2, .pipeline = 2};
  const config::PipelineLayout layout = config::BuildPipelineLayout(model, training);
  const std::vector<StageParams> stages = CountParamsPerStage(model, training, layout);
  EXPECT_EQ(stages[1].by_component[static_cast<size_t>(Component::kEmbedding)], 248320LL * 4096);
  EXPECT_EQ(stages[1].by_component[static_cast<size_t>(Component::kLmHead)], 248320LL * 4096);
  EXPECT_EQ(stages[1].by_component[static_cast<size_t>(Component::kMtp)], CountParams(model).mtp);
}

}  // namespace
}  // namespace trainscope::graph
