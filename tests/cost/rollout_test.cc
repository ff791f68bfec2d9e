// The rollout decode model (cost/rollout.h): the response-length distribution, the per-GPU KV
// cache and Gated DeltaNet state of Qwen3.5-35B-A3B derived by hand from its config.json, the
// KV-capacity limit on running requests, and the decode time of one request against the
// roofline written out by hand.
#include "trainscope/cost/rollout.h"

#include <gtest/gtest.h>

#include "trainscope/error.h"
#include "trainscope/graph/param_count.h"
#include "trainscope/io/cluster_file.h"
#include "trainscope/io/hf_config_loader.h"

namespace trainscope::cost {
namespace {

TEST(RolloutTest, UniformResponseLengthsAboveHalfTheMaximum) {
  // mean 6000 of max 8000: uniform on [2·6000 − 8000, 8000] = [4000, 8000].
  EXPECT_DOUBLE_EQ(ResponseSurvival(6000, 8000, 3000), 1.0);
  EXPECT_DOUBLE_EQ(ResponseSurvival(6000, 8000, 5000), 0.75);  // (8000 − 5000) / 4000
  EXPECT_DOUBLE_EQ(ResponseSurvival(6000, 8000, 8000), 0.0);
}

TEST(RolloutTest, TruncatedExponentialHasTheRequestedMean) {
  // The mean of a non-negative length is the integral of its survival function; integrate it
  // numerically (midpoint rule, 1-token steps) for a mean well below max/2.
  double integral = 0;
  for (int i = 0; i < 8192; ++i) integral += ResponseSurvival(1500, 8192, i + 0.5);
  EXPECT_NEAR(integral, 1500, 1.0);
  EXPECT_GT(ResponseSurvival(1500, 8192, 100), ResponseSurvival(1500, 8192, 4000));
}

TEST(RolloutTest, Qwen35KvCacheAndGdnStatePerGpu) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  const config::ClusterSpec cluster = io::ResolveCluster({.gpu = std::string("H20")});
  const RolloutOptions options{.num_prompts = 16,
                               .samples_per_prompt = 8,
                               .prompt_tokens = 1024,
                               .max_response_tokens = 8192,
                               .mean_response_tokens = 4096.5,
                               .engine_gpus = 8,
                               .engine_tp = 8};
  const RolloutEstimate r = EstimateRollout(model, cluster, ComputeEfficiency{}, options);
  // 10 full-attention layers x (K + V) x 1 KV head per GPU (2 heads over TP 8: one replicated
  // head each) x head dim 256 x 2 bytes.
  EXPECT_DOUBLE_EQ(r.kv_bytes_per_token, 10.0 * 2 * 1 * 256 * 2);
  // 30 GDN layers x (fp32 state 32 value heads x 128 x 128 x 4 bytes + bf16 conv state of
  // (2·16·128 + 32·128) channels x (kernel 4 − 1) x 2 bytes), over TP 8.
  EXPECT_DOUBLE_EQ(r.state_bytes_per_request,
                   30.0 * (32.0 * 128 * 128 * 4 + (2.0 * 16 * 128 + 32 * 128) * 3 * 2) / 8);
  EXPECT_EQ(r.num_engines, 1);
  EXPECT_EQ(r.requests_per_engine, 128);
  // Capacity: 0.8 of 96 GB minus the weight shard; one request at most 1024 + 8192 tokens.
  const graph::ParamCounts counts = graph::CountParams(model);
  const double weights = static_cast<double>(counts.text_total + counts.vision) * 2 / 8;
  EXPECT_DOUBLE_EQ(r.weight_bytes_per_gpu, weights);
  const double per_request = 9216.0 * 10240 + r.state_bytes_per_request;
  EXPECT_EQ(r.max_running_requests,
            std::min<int64_t>(128, static_cast<int64_t>((0.8 * 96e9 - weights) / per_request)));
  EXPECT_DOUBLE_EQ(r.generated_tokens, 128 * 4096.5);
}

// SGLang caches MLA's compressed latent, kv_lora_rank + qk_rope_head_dim = 576 values per token
// and layer, whole on every TP rank: DeepSeek-V3's 61 layers x 576 x 2 bytes.
TEST(RolloutTest, MlaCachesTheLatentOncePerLayerOnEveryTensorRank) {
  const config::ModelConfig model = io::LoadPreset("DeepSeek-V3");
  const config::ClusterSpec cluster = io::ResolveCluster({.gpu = std::string("H200")});
  const RolloutOptions options{.num_prompts = 16,
                               .samples_per_prompt = 8,
                               .prompt_tokens = 1024,
                               .max_response_tokens = 8192,
                               .mean_response_tokens = 4096.5,
                               .engine_gpus = 16,
                               .engine_tp = 16};
  const RolloutEstimate r = EstimateRollout(model, cluster, ComputeEfficiency{}, options);
  EXPECT_DOUBLE_EQ(r.kv_bytes_per_token, 61.0 * 576 * 2);
  EXPECT_DOUBLE_EQ(r.state_bytes_per_request, 0.0);
}

TEST(RolloutTest, OneDenseRequestDecodesAtTheMemoryRoofline) {
  // Qwen3-8B on one H100 (TP 1), one request, no prompt, every response 2 tokens: two decode
  // steps (context 0.5 and 1.5 at the segment midpoints), each reading every weight except the
  // (untied) embedding rows plus the KV cache, at 0.666 of 3.35 TB/s, plus 1 ms of host time.
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  const config::ClusterSpec cluster = io::ResolveCluster({.gpu = std::string("H100")});
  const RolloutOptions options{.num_prompts = 1,
                               .samples_per_prompt = 1,
                               .prompt_tokens = 0,
                               .max_response_tokens = 2,
                               .mean_response_tokens = 2,
                               .engine_gpus = 1,
                               .engine_tp = 1};
  const RolloutEstimate r = EstimateRollout(model, cluster, ComputeEfficiency{}, options);
  const graph::ParamCounts counts = graph::CountParams(model);
  const double read = static_cast<double>(counts.text_total - counts.embedding) * 2;
  // 36 layers x 2 x 8 KV heads x 128 x 2 bytes per token.
  const double kv = 36.0 * 2 * 8 * 128 * 2;
  const double bandwidth = 3.35e12 * 0.666;
  const double expected =
      (read + 0.5 * kv) / bandwidth + 1e-3 + (read + 1.5 * kv) / bandwidth + 1e-3;
  EXPECT_NEAR(r.decode_seconds, expected, expected * 1e-12);
}

TEST(RolloutTest, AnEngineWhoseWeightsDoNotFitNamesRolloutTp) {
  // Qwen3.5-397B-A17B in bf16 over TP 8: about 99 GB of weights per GPU, more than 0.8 of an
  // H100's 80 GiB.
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-397B-A17B");
  const config::ClusterSpec cluster = io::ResolveCluster({.gpu = std::string("H100")});
  const RolloutOptions options{.num_prompts = 1,
                               .max_response_tokens = 1024,
                               .mean_response_tokens = 512,
                               .engine_gpus = 8,
                               .engine_tp = 8};
  try {
    (void)EstimateRollout(model, cluster, ComputeEfficiency{}, options);
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("--rollout-tp"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace trainscope::cost
