// The rollout (generation) phase of an RL step: a decode model of the rollout engines (SGLang /
// vLLM). Decode is bound by memory bandwidth: every decode step of an engine reads its weight
// shard (for MoE layers only the experts the step's tokens touch) and the KV cache (and Gated
// DeltaNet recurrent state) of every running request; its FLOPs are checked against the tensor
// peak too. Requests finish at different lengths, so the running batch shrinks over the steps
// and the longest response sets the tail. Pure functions; formulas, defaults and omissions are
// in docs/rl.md ("Rollout").
#ifndef TRAINSCOPE_COST_ROLLOUT_H_
#define TRAINSCOPE_COST_ROLLOUT_H_

#include <cstdint>
#include <vector>

#include "trainscope/config/cluster.h"
#include "trainscope/config/model_config.h"
#include "trainscope/cost/compute_cost.h"

namespace trainscope::cost {

struct RolloutOptions {
  int64_t num_prompts = 1;            // slime --rollout-batch-size
  int64_t samples_per_prompt = 1;     // slime --n-samples-per-prompt
  int64_t prompt_tokens = 512;        // tokens of every prompt
  int64_t max_response_tokens = 1;    // slime --rollout-max-response-len: the longest response
  double mean_response_tokens = 0.5;  // mean response length, in (0, max]
  int64_t engine_gpus = 1;            // GPUs of all rollout engines
  int64_t engine_tp = 1;              // GPUs of one engine (its TP size)
  // Share of a GPU's memory the engine takes for weights + KV cache (SGLang
  // --mem-fraction-static; slime's examples pass 0.7-0.8).
  double memory_fraction = 0.8;
  int64_t weight_bytes_per_param = 2;  // bf16 rollout weights (1 with --rollout-dtype fp8)
  friend bool operator==(const RolloutOptions&, const RolloutOptions&) = default;
};

// Response lengths as a survival function: running(j) = share of responses longer than j
// tokens. With mean >= max/2: uniform on [2·mean − max, max]; below: an exponential truncated at
// max with that mean (docs/rl.md). Exposed for tests.
[[nodiscard]] double ResponseSurvival(double mean_tokens, int64_t max_tokens, double tokens);

struct RolloutEstimate {
  int64_t num_engines = 0;
  int64_t requests_per_engine = 0;     // ceil(prompts·samples / engines)
  int64_t max_running_requests = 0;    // per engine, limited by the KV cache
  int64_t num_waves = 0;               // ceil(requests / max running)
  double weight_bytes_per_gpu = 0;     // the engine's weight shard on one GPU
  double kv_bytes_per_token = 0;       // KV of one context token on one GPU (full-attention layers)
  double state_bytes_per_request = 0;  // Gated DeltaNet recurrent + conv state per request, per GPU
  double kv_capacity_bytes_per_gpu = 0;
  double prefill_seconds = 0;
  double decode_seconds = 0;
  double seconds = 0;             // prefill + decode
  double generated_tokens = 0;    // over all engines
  double peak_bytes_per_gpu = 0;  // memory_fraction of the GPU
  friend bool operator==(const RolloutEstimate&, const RolloutEstimate&) = default;
};

// The rollout of one RL step. Preconditions (checked): counts >= 1, engine_tp divides
// engine_gpus, 0 < mean <= max, 0 < memory_fraction <= 1. Throws InputError when the engine's
// weight shard leaves no room for one request's KV cache (naming --sglang-mem-fraction-static).
[[nodiscard]] RolloutEstimate EstimateRollout(const config::ModelConfig& model,
                                              const config::ClusterSpec& cluster,
                                              const ComputeEfficiency& efficiency,
                                              const RolloutOptions& options);

}  // namespace trainscope::cost

#endif  // TRAINSCOPE_COST_ROLLOUT_H_
