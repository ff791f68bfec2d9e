// The accepted range of every numeric input: command-line flags, cluster and calibration file
// fields, config.json sizes. One table, so the loaders, the help text and docs/cli.md ("Input
// contract") agree. Values outside a range are rejected (exit 2) naming the flag or field and
// the bound, never clamped. The bounds keep every later product and cost finite and small.
#ifndef TRAINSCOPE_IO_INPUT_RANGES_H_
#define TRAINSCOPE_IO_INPUT_RANGES_H_

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <string>

namespace trainscope::io {

// A closed interval [min, max] of finite doubles.
struct NumberRange {
  double min = 0;
  double max = 0;
};

// True when `value` is finite and inside `range`.
[[nodiscard]] inline bool InRange(double value, NumberRange range) {
  return std::isfinite(value) && value >= range.min && value <= range.max;
}

// "a number in [0.001, 1e+06]" for messages.
[[nodiscard]] inline std::string DescribeRange(NumberRange range) {
  return fmt::format("a number in [{:g}, {:g}]", range.min, range.max);
}

// Efficiencies, bus efficiencies, ramp exponents, GPU throughput fractions.
inline constexpr NumberRange kEfficiencyRange{1e-3, 1.0};
// Per-step latencies in seconds (calibration and cluster `links`).
inline constexpr NumberRange kLatencySecondsRange{0.0, 1.0};
// Latencies in microseconds (--scale-out-latency-us, scale_out_latency_us).
inline constexpr NumberRange kLatencyMicrosecondsRange{0.0, 1e6};
// Ramp half sizes in bytes.
inline constexpr NumberRange kHalfBytesRange{0.0, 1e12};
// Link bandwidths: Gbit/s (scale_out_gbps) and GB/s (nvlink_gbps).
inline constexpr NumberRange kLinkBandwidthRange{1e-3, 1e6};
// HBM bandwidth in TB/s.
inline constexpr NumberRange kHbmTbpsRange{1e-3, 1e3};
// Peak dense throughput in TFLOPS.
inline constexpr NumberRange kTflopsRange{1e-3, 1e6};
// GPU memory in GiB.
inline constexpr NumberRange kMemoryGibRange{1e-3, 1e6};

// World size, every parallel size, GPUs per node and per NVLink domain, ranks.
inline constexpr int64_t kMaxWorldSize = 10'000'000;
// Decoder layers (num_hidden_layers, --num-layers-per-virtual-pipeline-stage, ...).
inline constexpr int64_t kMaxLayers = 10'000;
// SMs a flex dispatcher's kernels hold (--moe-flex-dispatcher-num-sms); the GPU's own count
// bounds it further (rule C57).
inline constexpr int64_t kMaxFlexSms = 1'000;
// Routed experts (num_experts, num_local_experts).
inline constexpr int64_t kMaxExperts = 100'000;
// Sequence length in tokens.
inline constexpr int64_t kMaxSeqLength = 100'000'000;
// Micro-batch size in samples.
inline constexpr int64_t kMaxMicroBatchSize = 1'000'000;
// Global batch size in samples.
inline constexpr int64_t kMaxGlobalBatchSize = 1'000'000'000;
// Any other integer flag (bucket sizes, padding multiples).
inline constexpr int64_t kMaxInteger = int64_t{1} << 31;

}  // namespace trainscope::io

#endif  // TRAINSCOPE_IO_INPUT_RANGES_H_
