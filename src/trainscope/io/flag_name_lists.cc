#include <algorithm>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/io/megatron_flags.h"

namespace trainscope::io::internal {
namespace {

// Megatron architecture flags: checked against the model, never applied over it.
constexpr std::string_view kArchitectureFlags[] = {
    "--num-layers",
    "--hidden-size",
    "--ffn-hidden-size",
    "--num-attention-heads",
    "--num-query-groups",
    "--kv-channels",
    "--num-experts",
    "--moe-router-topk",
    "--moe-ffn-hidden-size",
    "--moe-shared-expert-intermediate-size",
    "--mtp-num-layers",
    "--max-position-embeddings",
    // Gated DeltaNet dimensions (Megatron-LM arguments.py, --experimental-attention-variant).
    "--linear-conv-kernel-dim",
    "--linear-key-head-dim",
    "--linear-value-head-dim",
    "--linear-num-key-heads",
    "--linear-num-value-heads",
    // Multi-latent attention and group-limited routing (Megatron-LM arguments.py, MLA group).
    "--q-lora-rank",
    "--kv-lora-rank",
    "--qk-head-dim",
    "--qk-pos-emb-head-dim",
    "--v-head-dim",
    "--moe-router-num-groups",
    "--moe-router-group-topk",
};

// Model-describing flags that are switches or names, as slime / Megatron-Bridge launch scripts
// paste them: checked against the model (megatron_args.cc), never applied.
constexpr std::string_view kModelFeatureSwitches[] = {
    "--attention-output-gate", "--moe-shared-expert-gate", "--multi-latent-attention"};
constexpr std::string_view kModelFeatureValues[] = {"--experimental-attention-variant",
                                                    "--linear-attention-freq"};

// Megatron-LM flags that do not change what trainscope models: accepted, reported as ignored.
// Their values (any tokens up to the next "--" flag) are skipped.
constexpr std::string_view kIgnoredFlags[] = {
    "--spec",  // slime's model-spec module and function (--spec slime_plugins.models.qwen3_5 ...)
    "--lr",
    "--min-lr",
    "--lr-decay-style",
    "--lr-warmup-iters",
    "--lr-warmup-fraction",
    "--lr-decay-iters",
    "--lr-warmup-init",
    "--train-iters",
    "--train-samples",
    "--weight-decay",
    "--start-weight-decay",
    "--end-weight-decay",
    "--weight-decay-incr-style",
    "--clip-grad",
    "--adam-beta1",
    "--adam-beta2",
    "--adam-eps",
    "--init-method-std",
    "--save",
    "--load",
    "--save-interval",
    "--eval-interval",
    "--eval-iters",
    "--log-interval",
    "--data-path",
    "--split",
    "--tokenizer-type",
    "--tokenizer-model",
    "--vocab-file",
    "--merge-file",
    "--seed",
    "--tensorboard-dir",
    "--wandb-project",
    "--wandb-exp-name",
    "--exit-interval",
    "--exit-duration-in-mins",
    "--attention-dropout",
    "--hidden-dropout",
    "--position-embedding-type",
    "--rotary-base",
    "--rotary-percent",
    "--norm-epsilon",
    "--normalization",
    "--distributed-backend",
    "--distributed-timeout-minutes",
    "--transformer-impl",
    "--attention-backend",
    "--moe-router-topk-scaling-factor",
    "--moe-aux-loss-coeff",
    "--moe-z-loss-coeff",
    "--moe-router-score-function",
    "--moe-layer-freq",
    "--moe-token-drop-policy",
    "--moe-router-pre-softmax",
    "--moe-router-fusion",
    "--num-workers",
    "--data-cache-path",
    "--dataloader-type",
    "--qk-layernorm",
    "--swiglu",
    "--untie-embeddings-and-output-weights",
    "--disable-bias-linear",
    "--use-flash-attn",
    "--use-mcore-models",
    "--group-query-attention",
    "--no-masked-softmax-fusion",
    "--no-bias-gelu-fusion",
    "--no-bias-dropout-fusion",
    "--no-bias-swiglu-fusion",
    "--use-rotary-position-embeddings",
    "--no-position-embedding",
    "--manual-gc",
    "--manual-gc-interval",
    "--no-gradient-accumulation-fusion",
    "--no-rope-fusion",
    "--log-throughput",
    "--timing-log-level",
    "--ckpt-format",
    "--auto-detect-ckpt-format",
    "--no-save-optim",
    "--no-load-optim",
    "--no-save-rng",
    "--no-load-rng",
    "--finetune",
    "--mock-data",
    "--use-checkpoint-args",
    "--no-create-attention-mask-in-dataloader",
    "--eod-mask-loss",
    "--rotary-seq-len-interpolation-factor",
    "--attention-softmax-in-fp32",
    "--tokenizer-path",
    "--log-timers-to-tensorboard",
    "--log-memory-to-tensorboard",
    "--log-params-norm",
    "--log-num-zeros-in-grad",
    "--tensorboard-log-interval",
    "--profile",
    "--profile-step-start",
    "--profile-step-end",
    "--use-pytorch-profiler",
    "--calculate-per-token-loss",
    "--qk-layernorm-weight-decay",
    "--vocab-size",
    "--num-dataset-builder-threads",
    "--exit-signal-handler",
    "--use-dist-ckpt",
    "--dist-ckpt-strictness",
    "--no-check-for-nan-in-loss-and-grad",
    "--async-save",
    "--ckpt-fully-parallel-save",
    "--ckpt-fully-parallel-load",
    "--moe-per-layer-logging",
    "--no-async-tensor-model-parallel-allreduce",
    "--apply-layernorm-1p",
    "--rotary-interleaved",
    "--no-persist-layer-norm",
    "--init-method-xavier-uniform",
};

bool Contains(std::span<const std::string_view> names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

std::vector<std::string> KnownFlagNames() {
  std::vector<std::string> names;
  for (const FlagSpec& spec : AllFlags()) {
    for (const std::string_view name : spec.names) names.emplace_back(name);
  }
  for (const std::string_view name : kArchitectureFlags) names.emplace_back(name);
  for (const std::string_view name : kIgnoredFlags) names.emplace_back(name);
  for (const std::string_view name : kModelFeatureSwitches) names.emplace_back(name);
  for (const std::string_view name : kModelFeatureValues) names.emplace_back(name);
  return names;
}

bool IsArchitectureFlag(std::string_view name) { return Contains(kArchitectureFlags, name); }

bool IsIgnoredFlag(std::string_view name) { return Contains(kIgnoredFlags, name); }

bool IsModelFeatureSwitch(std::string_view name) { return Contains(kModelFeatureSwitches, name); }

bool IsModelFeatureValue(std::string_view name) { return Contains(kModelFeatureValues, name); }

}  // namespace trainscope::io::internal
