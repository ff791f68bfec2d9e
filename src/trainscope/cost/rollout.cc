#include "trainscope/cost/rollout.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "trainscope/error.h"
#include "trainscope/graph/param_count.h"

namespace trainscope::cost {
namespace {

// Segments the response-length axis is integrated over (midpoint rule); the running batch and
// the context change slowly, so 512 segments of a 8k-token tail are 16 steps each.
constexpr int64_t kDecodeSegments = 512;

// Fraction of the HBM bandwidth a decode step's weight and KV reads reach: the default
// memory-bound op efficiency of SimuMax's B200 system file (MooreThreads/SimuMax
// configs/system/b200.json, accelerator.bandwidth default 0.666).
constexpr double kDecodeMemoryEfficiency = 0.666;

// Host time of one decode step beyond its kernels (scheduler, sampling, CUDA-graph replay
// launch): 1 ms, an estimate (no published per-step figure for SGLang's scheduler).
constexpr double kDecodeStepOverheadSeconds = 1e-3;

// Bytes of one Gated DeltaNet recurrent-state element: SGLang keeps the state in fp32
// (its default --mamba-ssm-dtype float32).
constexpr double kGdnStateBytesPerElement = 4;
constexpr double kKvBytesPerElement = 2;  // bf16 KV cache

double CeilDiv(int64_t a, int64_t b) { return static_cast<double>((a + b - 1) / b); }

// Rate of the exponential truncated at `max` whose mean is `mean` (< max/2), by bisection on
// mean(λ) = 1/λ − max/(e^{λ·max} − 1), which falls from max/2 (λ → 0) to 0.
double TruncatedExponentialRate(double mean, double max) {
  double low = 1e-12 / max;
  double high = 1e3 / max;
  for (int i = 0; i < 200; ++i) {
    const double rate = std::sqrt(low * high);
    const double value = 1 / rate - max / std::expm1(rate * max);
    (value > mean ? low : high) = rate;
  }
  return std::sqrt(low * high);
}

// Per-GPU sizes of one engine of TP size `tp`.
struct EngineShape {
  double weight_bytes = 0;      // everything the engine loads (text + vision, no MTP)
  double dense_read_bytes = 0;  // read by every decode step (no embedding rows, no experts)
  double expert_bytes = 0;      // one routed expert
  int64_t moe_layers = 0;
  double kv_bytes_per_token = 0;  // full-attention layers
  double state_bytes = 0;         // Gated DeltaNet recurrent + conv state of one request
  double active_params = 0;
  double attention_width = 0;  // Σ over full-attention layers of heads·head_dim, per GPU
};

EngineShape ShapeOf(const config::ModelConfig& model, int64_t tp, double bytes_per_param) {
  const graph::ParamCounts counts = graph::CountParams(model);
  const auto component = [&](graph::Component c) {
    return static_cast<double>(counts.by_component[static_cast<size_t>(c)]);
  };
  const double routed = component(graph::Component::kRoutedExperts);
  // The LM head reads its whole matrix per step; a tied head is the embedding matrix.
  const double embedding_not_read =
      counts.lm_head == 0 ? 0 : component(graph::Component::kEmbedding);
  EngineShape shape;
  const double t = static_cast<double>(tp);
  shape.weight_bytes = static_cast<double>(counts.text_total + counts.vision) * bytes_per_param / t;
  shape.dense_read_bytes =
      (static_cast<double>(counts.text_total) - routed - embedding_not_read) * bytes_per_param / t;
  shape.moe_layers = model.CountLayers(config::FfnKind::kMoe);
  if (shape.moe_layers > 0) {
    shape.expert_bytes = routed * bytes_per_param /
                         static_cast<double>(shape.moe_layers * model.moe.num_experts) / t;
  }
  const int64_t attention_layers = model.CountLayers(config::MixerKind::kAttention) +
                                   model.CountLayers(config::MixerKind::kGatedAttention);
  // KV heads are divided over TP; below one head per GPU SGLang replicates a head.
  const double kv_heads = CeilDiv(model.attention.num_kv_heads, tp);
  shape.kv_bytes_per_token = static_cast<double>(attention_layers) * 2 * kv_heads *
                             static_cast<double>(model.attention.head_dim) * kKvBytesPerElement;
  shape.attention_width = static_cast<double>(attention_layers * model.attention.QueryWidth()) / t;
  // MLA (SGLang's absorbed decode): one latent of kv_lora + rope per token and layer, the same on
  // every TP rank; each of the n/t local heads scores it over kv_lora + rope and reads its
  // kv_lora values, 4·(kv_lora + rope/2) FLOPs per key.
  const int64_t mla_layers = model.CountLayers(config::MixerKind::kMultiLatentAttention);
  const config::MlaConfig& mla = model.mla;
  shape.kv_bytes_per_token +=
      static_cast<double>(mla_layers * mla.KvDownWidth()) * kKvBytesPerElement;
  shape.attention_width +=
      static_cast<double>(mla_layers) * CeilDiv(model.attention.num_heads, tp) *
      (static_cast<double>(mla.kv_lora_rank) + static_cast<double>(mla.qk_rope_head_dim) / 2);
  const int64_t gdn_layers = model.CountLayers(config::MixerKind::kGatedDeltaNet);
  const config::GdnConfig& g = model.gdn;
  const double recurrent =
      static_cast<double>(g.num_value_heads * g.key_head_dim * g.value_head_dim) *
      kGdnStateBytesPerElement;
  const double conv =
      static_cast<double>(g.ConvChannels() * std::max<int64_t>(g.conv_kernel - 1, 0)) *
      kKvBytesPerElement;
  shape.state_bytes = static_cast<double>(gdn_layers) * (recurrent + conv) / t;
  shape.active_params = static_cast<double>(counts.active);
  return shape;
}

struct DecodeContext {
  const EngineShape& shape;
  const config::ClusterSpec& cluster;
  const ComputeEfficiency& efficiency;
  const config::ModelConfig& model;
  int64_t tp = 1;
};

// One decode step of an engine with `running` requests whose contexts average `context` tokens.
double DecodeStepSeconds(const DecodeContext& c, double running, double context) {
  const EngineShape& s = c.shape;
  double expert_reads = 0;
  if (s.moe_layers > 0) {
    // Distinct experts the step's tokens route to, per MoE layer: E·(1 − (1 − k/E)^B).
    const double e = static_cast<double>(c.model.moe.num_experts);
    const double k = static_cast<double>(c.model.moe.top_k);
    expert_reads = static_cast<double>(s.moe_layers) * e *
                   -std::expm1(running * std::log1p(-k / e)) * s.expert_bytes;
  }
  const double bytes = s.dense_read_bytes + expert_reads +
                       running * context * s.kv_bytes_per_token + running * 2 * s.state_bytes;
  const double memory_seconds =
      bytes / (c.cluster.gpu.hbm_bytes_per_second * kDecodeMemoryEfficiency);
  const double t = static_cast<double>(c.tp);
  const double flops =
      2 * s.active_params * running / t + 4 * running * context * s.attention_width;
  const double compute_seconds =
      flops / (c.cluster.gpu.bf16_flops_per_second * c.efficiency.bf16_gemm_efficiency);
  // Two TP all-reduces of one token row per layer, latency-bound.
  const double tp_seconds = c.tp > 1 ? 2.0 * static_cast<double>(c.model.NumLayers()) *
                                           c.cluster.link.nvlink_latency_seconds
                                     : 0.0;
  return std::max(memory_seconds, compute_seconds) + tp_seconds + kDecodeStepOverheadSeconds;
}

// Decode of `requests` requests that start together and finish at their response lengths.
double TailSeconds(const DecodeContext& c, const RolloutOptions& o, double requests) {
  const double max = static_cast<double>(o.max_response_tokens);
  const int64_t segments = std::min<int64_t>(kDecodeSegments, o.max_response_tokens);
  const double width = max / static_cast<double>(segments);
  double seconds = 0;
  for (int64_t i = 0; i < segments; ++i) {
    const double position = (static_cast<double>(i) + 0.5) * width;
    const double running =
        requests * ResponseSurvival(o.mean_response_tokens, o.max_response_tokens, position);
    if (running <= 0) continue;
    seconds +=
        width * DecodeStepSeconds(c, running, static_cast<double>(o.prompt_tokens) + position);
  }
  return seconds;
}

}  // namespace

double ResponseSurvival(double mean_tokens, int64_t max_tokens, double tokens) {
  const double max = static_cast<double>(max_tokens);
  if (tokens >= max) return 0;
  if (tokens < 0) return 1;
  if (2 * mean_tokens >= max) {
    const double start = 2 * mean_tokens - max;  // uniform on [start, max]
    if (tokens < start) return 1;
    return (max - tokens) / (max - start);
  }
  const double rate = TruncatedExponentialRate(mean_tokens, max);
  return (std::exp(-rate * tokens) - std::exp(-rate * max)) / -std::expm1(-rate * max);
}

RolloutEstimate EstimateRollout(const config::ModelConfig& model,
                                const config::ClusterSpec& cluster,
                                const ComputeEfficiency& efficiency, const RolloutOptions& o) {
  TRAINSCOPE_CHECK(o.num_prompts >= 1 && o.samples_per_prompt >= 1 && o.prompt_tokens >= 0 &&
                       o.max_response_tokens >= 1 && o.engine_tp >= 1 &&
                       o.engine_gpus % o.engine_tp == 0 && o.engine_gpus >= o.engine_tp,
                   "rollout options out of range");
  TRAINSCOPE_CHECK(o.mean_response_tokens > 0 &&
                       o.mean_response_tokens <= static_cast<double>(o.max_response_tokens),
                   "mean response length out of range");
  TRAINSCOPE_CHECK(o.memory_fraction > 0 && o.memory_fraction <= 1, "memory fraction out of range");
  const EngineShape shape =
      ShapeOf(model, o.engine_tp, static_cast<double>(o.weight_bytes_per_param));
  RolloutEstimate r;
  r.num_engines = o.engine_gpus / o.engine_tp;
  const int64_t requests = o.num_prompts * o.samples_per_prompt;
  r.requests_per_engine = (requests + r.num_engines - 1) / r.num_engines;
  r.weight_bytes_per_gpu = shape.weight_bytes;
  r.kv_bytes_per_token = shape.kv_bytes_per_token;
  r.state_bytes_per_request = shape.state_bytes;
  r.peak_bytes_per_gpu = o.memory_fraction * static_cast<double>(cluster.gpu.memory_bytes);
  r.kv_capacity_bytes_per_gpu = r.peak_bytes_per_gpu - shape.weight_bytes;
  const double per_request =
      static_cast<double>(o.prompt_tokens + o.max_response_tokens) * shape.kv_bytes_per_token +
      shape.state_bytes;
  if (r.kv_capacity_bytes_per_gpu < per_request) {
    const double gib = 1024.0 * 1024 * 1024;
    if (shape.weight_bytes >= r.peak_bytes_per_gpu) {
      throw InputError(fmt::format(
          "--rollout-tp: an engine of TP {} holds {:.1f} GiB of weights per GPU, more than "
          "{:.2f} of the {}'s memory (--sglang-mem-fraction-static); raise --rollout-tp",
          o.engine_tp, shape.weight_bytes / gib, o.memory_fraction, cluster.gpu.name));
    }
    throw InputError(fmt::format(
        "--sglang-mem-fraction-static: {:.2f} of {} leaves {:.2f} GiB per GPU after {:.1f} GiB "
        "of weights, less than one request's KV cache ({:.2f} GiB); raise it or --rollout-tp",
        o.memory_fraction, cluster.gpu.name, r.kv_capacity_bytes_per_gpu / gib,
        shape.weight_bytes / gib, per_request / gib));
  }
  r.max_running_requests = std::min<int64_t>(
      r.requests_per_engine, static_cast<int64_t>(r.kv_capacity_bytes_per_gpu / per_request));
  r.num_waves = (r.requests_per_engine + r.max_running_requests - 1) / r.max_running_requests;
  const DecodeContext context{shape, cluster, efficiency, model, o.engine_tp};
  // Continuous batching: while requests queue, the cap M runs at the mean context; the last M
  // requests decode as one tail.
  const double cap = static_cast<double>(r.max_running_requests);
  const double queued = static_cast<double>(r.requests_per_engine) - cap;
  const double steady_steps = queued * o.mean_response_tokens / cap;
  r.decode_seconds = steady_steps * DecodeStepSeconds(context, cap,
                                                      static_cast<double>(o.prompt_tokens) +
                                                          o.mean_response_tokens) +
                     TailSeconds(context, o, cap);
  // Prefill once per prompt (the samples of a prompt share its prefix in the radix cache),
  // compute-bound, spread over every GPU of every engine.
  const double prefill_tokens = static_cast<double>(o.num_prompts * o.prompt_tokens);
  r.prefill_seconds = 2 * shape.active_params * prefill_tokens /
                      (static_cast<double>(o.engine_gpus) * cluster.gpu.bf16_flops_per_second *
                       efficiency.bf16_gemm_efficiency);
  r.seconds = r.prefill_seconds + r.decode_seconds;
  r.generated_tokens = static_cast<double>(requests) * o.mean_response_tokens;
  return r;
}

}  // namespace trainscope::cost
