// How far a core-attention kernel is from its plateau efficiency because of its size: a kernel
// of few heads and short sequences has too few query tiles to fill the GPU and too little work
// per tile to hide its pipeline start. Pure functions over plain values; the table and its
// source are in docs/cost-model.md ("Attention occupancy").
#ifndef TRAINSCOPE_COST_ATTENTION_EFFICIENCY_H_
#define TRAINSCOPE_COST_ATTENTION_EFFICIENCY_H_

#include <cstdint>

#include "trainscope/config/hardware.h"
#include "trainscope/graph/op.h"

namespace trainscope::cost {

// The fraction of the plateau efficiency (ComputeEfficiency::attention_forward_efficiency /
// attention_backward_efficiency) that a causal attention kernel computing `pairs` (query, key)
// pairs over its batch and local heads reaches: piecewise linear in log(pairs) through the
// measured points, constant beyond the first and last. 1 at the best measured point.
// Precondition (checked): pairs >= 1.
[[nodiscard]] double AttentionOccupancy(int64_t pairs, bool forward);

// The GPU generation a measured attention factor belongs to, from the compute capability:
// SM 10.3 (B300, GB300) Blackwell Ultra, SM 10.x Blackwell, anything else (Hopper, Ampere,
// unknown) Hopper or older.
enum class AttentionArch { kHopperOrOlder, kBlackwell, kBlackwellUltra };
[[nodiscard]] AttentionArch AttentionArchOf(config::ComputeCapability capability);

// The throughput of an attention kernel of query/key head dim `qk_head_dim` and value head dim
// `v_head_dim` on `arch`, relative to head dim 128 at the same (query, key) pairs (the occupancy
// curve and the plateaus were measured at 128): fewer FLOPs per loaded tile at 64; at 256 more
// register and shared-memory pressure on Hopper, more work per tile on Blackwell. Equal dims:
// piecewise linear in log2(d) through the measured 64 / 128 / 256, constant beyond. Unequal dims:
// the MLA kernel (d_qk 192, d_v 128) as measured; other unequal pairs use the mean of the two
// dims on the equal-dim curve. The measurements and their sources are in attention_efficiency.cc
// and docs/cost-model.md ("Attention head dim"). Precondition (checked): both dims >= 1.
[[nodiscard]] double AttentionHeadDimFactor(int64_t qk_head_dim, int64_t v_head_dim, bool forward,
                                            AttentionArch arch);

// Whether a kernel's head dims are MLA's (d_qk 192, d_v 128), the shape its measured factors
// belong to.
[[nodiscard]] constexpr bool IsMlaHeadDims(int64_t qk_head_dim, int64_t v_head_dim) {
  return qk_head_dim == 192 && v_head_dim == 128;
}

// Throughput of the FP8 core attention (--fp8-dot-product-attention) against the same kernel in
// BF16 on the same GPU generation, per direction: cuDNN's measured FP8 / BF16 ratios for the
// grouped-query shape (head dim 128) or, for MLA (`mla`: d_qk 192, d_v 128), the DeepSeek-V3
// shape, with per-tensor scales (delayed, tensorwise) or MXFP8. Hopper has only per-tensor
// grouped-query measurements, which stand for the rest there. 1 for kBf16. Sources in
// attention_efficiency.cc and docs/cost-model.md ("FP8 attention").
[[nodiscard]] double AttentionFp8Factor(AttentionArch arch, graph::AttentionPrecision precision,
                                        bool mla, bool forward);

// Throughput of a sliding-window kernel on the `pairs` inside its band, against a causal kernel on
// the same GPU at its plateau (occupancy 1, which the many query tiles of a windowed kernel
// reach). The kernel walks each tile of kWindowTileRows query rows across the key tiles the band
// touches, ceil((w − 1)/B) + 1 of B keys each, with the band's edges masked inside them, and pays
// a fixed cost per query tile measured in tile-times per generation and direction (prologue,
// epilogue, the output and softmax-statistics writes):
//   factor = pairs / (ceil(query_rows / B) · (ceil((w − 1)/B) + 1 + k0) · B²), at most 1.
// The measurements behind k0 and their sources are in attention_efficiency.cc and
// docs/cost-model.md ("Sliding-window attention"). Preconditions (checked): all counts >= 1.
inline constexpr int64_t kWindowTileRows = 128;
[[nodiscard]] double AttentionWindowFactor(int64_t pairs, int64_t query_rows, int64_t window,
                                           AttentionArch arch, bool forward);

// Throughput of a sliding-window kernel that does not skip the key tiles outside its band, on the
// `pairs` inside the band, against a causal kernel at its plateau: it computes the whole causal
// triangle of its sequence, causal = query_rows · sequence_tokens / 2 pairs, at that triangle's
// occupancy (when `occupancy`; else 1):
//   factor = min(1, pairs / causal) · AttentionOccupancy(causal, forward).
// cuDNN's FP8 and MXFP8 backward on Blackwell runs this way (its time grows with the square of
// the sequence at a fixed window; docs/cost-model.md "FP8 attention"). Preconditions (checked):
// all counts >= 1.
[[nodiscard]] double AttentionUnskippedWindowFactor(int64_t pairs, int64_t query_rows,
                                                    int64_t sequence_tokens, bool forward,
                                                    bool occupancy);

// Throughput of the FP8 forward of a sliding-window kernel against the same band in BF16 on the
// same GPU: cuDNN's measured ratio on GPT-OSS's band (128-token window, head dim 64) on Blackwell
// and Blackwell Ultra, per-tensor or MXFP8, where the fixed cost per query tile dominates and FP8
// gains less than on a causal kernel. Hopper, the backward and BF16 take AttentionFp8Factor
// (`mla` false). Sources in attention_efficiency.cc and docs/cost-model.md ("FP8 attention").
[[nodiscard]] double AttentionWindowFp8Factor(AttentionArch arch,
                                              graph::AttentionPrecision precision, bool forward);

// Whether a sliding-window kernel of `precision` on `arch` walks every key tile of the causal
// triangle in direction `forward`: the FP8 and MXFP8 backward on Blackwell and Blackwell Ultra
// (cuDNN 9.22, NVIDIA/cudnn-frontend sdpa_benchmark_training results gpt_oss: 1.73 / 6.18 / 23.2
// ms at 4k / 8k / 16k tokens per-tensor against 0.47 / 0.91 / 1.82 ms in BF16 on GB200). Hopper
// has no FP8 sliding-window kernel (TE disables FusedAttention there; the run falls back to
// another backend the model does not price separately).
[[nodiscard]] bool WindowKernelWalksCausalTriangle(AttentionArch arch,
                                                   graph::AttentionPrecision precision,
                                                   bool forward);

// Attention throughput of `arch` against Blackwell at the same peak: > 1 on Blackwell Ultra,
// whose doubled exponential rate speeds the softmax (forward more than backward); 1 otherwise.
[[nodiscard]] double AttentionArchFactor(AttentionArch arch, bool forward);

// Throughput of the kernel library `kernel` against Transformer Engine's fused (cuDNN) attention
// on a GPU of compute capability `capability`: PyTorch SDPA's FlashAttention-2 backend on SM 9.0
// and newer (measured on H100; Blackwell takes Hopper's ratio, unmeasured); 1 for TE and below
// SM 9.0, where FlashAttention-2 is the reference kernel.
[[nodiscard]] double AttentionKernelFactor(graph::AttentionKernel kernel,
                                           config::ComputeCapability capability, bool forward);

}  // namespace trainscope::cost

#endif  // TRAINSCOPE_COST_ATTENTION_EFFICIENCY_H_
