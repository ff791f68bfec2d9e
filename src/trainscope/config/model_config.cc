#include "trainscope/config/model_config.h"

#include <algorithm>

namespace trainscope::config {

int64_t ModelConfig::CountLayers(MixerKind mixer) const {
  return std::count_if(layers.begin(), layers.end(),
                       [mixer](const LayerSpec& layer) { return layer.mixer == mixer; });
}

int64_t ModelConfig::CountLayers(FfnKind ffn) const {
  return std::count_if(layers.begin(), layers.end(),
                       [ffn](const LayerSpec& layer) { return layer.ffn == ffn; });
}

LayerSpec ModelConfig::MtpLayerSpec() const {
  MixerKind mixer = attention.output_gate ? MixerKind::kGatedAttention : MixerKind::kAttention;
  if (HasMla()) mixer = MixerKind::kMultiLatentAttention;
  const FfnKind ffn = layers.empty() ? FfnKind::kDense : layers.back().ffn;
  return LayerSpec{.mixer = mixer, .ffn = ffn};
}

std::string ToString(ModelFamily family) {
  switch (family) {
    case ModelFamily::kQwen3:
      return "qwen3";
    case ModelFamily::kQwen3Moe:
      return "qwen3_moe";
    case ModelFamily::kQwen3Next:
      return "qwen3_next";
    case ModelFamily::kQwen35:
      return "qwen3_5";
    case ModelFamily::kQwen35Moe:
      return "qwen3_5_moe";
    case ModelFamily::kLlama:
      return "llama";
    case ModelFamily::kMixtral:
      return "mixtral";
    case ModelFamily::kGptOss:
      return "gpt_oss";
    case ModelFamily::kDeepSeekV3:
      return "deepseek_v3";
    case ModelFamily::kGpt:
      return "gpt2";
  }
  return "unknown";
}

std::string ToString(MixerKind mixer) {
  switch (mixer) {
    case MixerKind::kAttention:
      return "attention";
    case MixerKind::kGatedAttention:
      return "gated_attention";
    case MixerKind::kGatedDeltaNet:
      return "gated_deltanet";
    case MixerKind::kMultiLatentAttention:
      return "multi_latent_attention";
  }
  return "unknown";
}

std::string ToString(FfnKind ffn) {
  switch (ffn) {
    case FfnKind::kDense:
      return "dense_mlp";
    case FfnKind::kMoe:
      return "moe";
  }
  return "unknown";
}

}  // namespace trainscope::config
