// Cost of one dispatch or combine of the flex token dispatcher (DeepEP normal kernels, Megatron's
// default flex backend): hierarchical, as DeepEP moves the tokens. A token crosses RDMA once per
// destination NVLink domain that hosts at least one of its experts and is fanned out over NVLink
// inside that domain; the two legs are chunked and pipelined. Pure functions over plain values;
// the model and its sources are in docs/cost-model.md ("Flex dispatcher").
#ifndef TRAINSCOPE_COST_FLEX_DISPATCH_H_
#define TRAINSCOPE_COST_FLEX_DISPATCH_H_

#include <cstdint>
#include <vector>

#include "trainscope/config/cluster.h"

namespace trainscope::cost {

// Constants of the DeepEP normal kernels (deepseek-ai/DeepEP README, H800 + CX-7 400 Gb/s;
// ../shared/reference/kernel-benchmarks.md §5.1).
struct FlexDispatchConstants {
  // Achieved NVLink rate / NVLink peak per direction: intranode EP8 dispatch 153 GB/s counted
  // over all received rows, 7/8 of which cross NVLink, on H800's 200 GB/s: 153 · 7/8 / 200.
  double nvlink_efficiency = 0.67;
  // Achieved remote RDMA rate / NIC peak: the internode table after DeepEP PR #130 (EP32 58,
  // EP64 51 GB/s "bottleneck RDMA", which counts the local node's pairs too) reproduced within
  // 5 % at 0.85 of a 50 GB/s CX-7; tests/cost/flex_dispatch_test.cc.
  double rdma_efficiency = 0.85;
  // SMs the normal kernels occupy while they run: Buffer.num_sms = 20 by default, 24 in
  // DeepEP's training usage and its internode test (kernel-benchmarks.md §5.1), of 132 (H100/H800).
  double sm_fraction = 24.0 / 132.0;
  friend bool operator==(const FlexDispatchConstants&, const FlexDispatchConstants&) = default;
};

// One dispatch (or combine) as DeepEP sees it: num_experts = u·E and top_k = u·k for expert
// tensor parallelism u (Megatron builds DeepEP that way, token_dispatcher.py:1836-1842); group
// rank r holds experts [r·E/n, (r+1)·E/n).
struct FlexExchange {
  double token_bytes = 0;  // T · bytes of one row: one copy of every token of the rank
  int64_t num_experts = 0;
  int64_t top_k = 0;
  // NVLink domain of each group rank (any integer labels), in group-rank order; size n >= 1.
  std::vector<int64_t> rank_domain;
  // Share of the token-expert assignments per expert (size num_experts, sum 1); empty = uniform.
  std::vector<double> expert_shares;
  // Node-limited routing (DeepSeek-V3 group-limited gating): a token reaches at most this many
  // domains, chosen uniformly, then top_k experts among theirs. 0 = no limit. Uniform only.
  int64_t max_domains_per_token = 0;
};

// Bytes per rank on the bottleneck of each leg.
struct FlexLegBytes {
  double rdma_bytes = 0;    // the busiest NIC: max over ranks of bytes sent or received
  double nvlink_bytes = 0;  // the busiest NVLink port: rows forwarded to it inside its domain
};

// Probability that a token (top_k distinct experts out of num_experts, uniformly) reaches at
// least one of `subset` experts: 1 − C(E − m, k) / C(E, k) = 1 − Π_{i<k} (E − m − i)/(E − i).
// With a share q of the assignments instead of a count, m = q·E (exact for uniform routing).
// Preconditions (checked): 1 <= top_k <= num_experts, 0 <= subset <= num_experts.
[[nodiscard]] double HitProbability(double subset, int64_t num_experts, int64_t top_k);

// Bytes of both legs (docs/cost-model.md): per domain d with g_d ranks, hit probability h_d,
// RDMA = T·b · max(max_d (n − g_d)/g_d · h_d, max_d Σ_{d' ≠ d} h_d') and NVLink = T·b ·
// max_r (g_d − 1) · n/g_d · h_r. Preconditions (checked): valid exchange.
[[nodiscard]] FlexLegBytes FlexExchangeBytes(const FlexExchange& exchange);

// Seconds of one exchange: the legs pipelined, max(RDMA / (NIC · rdma_efficiency), NVLink /
// (NVLink · nvlink_efficiency)), plus one step latency per leg used (the pipeline fill). Throws
// InputError naming scale_out_bytes_per_second when the group spans domains and the cluster has
// no NIC figure.
[[nodiscard]] double FlexExchangeSeconds(const FlexExchange& exchange,
                                         const config::ClusterSpec& cluster,
                                         const FlexDispatchConstants& constants = {});

// Domains a token may reach under group-limited routing (Megatron --moe-router-num-groups G,
// --moe-router-group-topk M; DeepSeek-V3 n_group / topk_group): the E experts form G contiguous
// groups and a token picks its experts among M groups. When every group fills whole domains
// (num_domains % G == 0), a token reaches at most M·num_domains/G of them, and with uniform
// scores those are a uniform choice: FlexExchange::max_domains_per_token. Otherwise a group
// shares domains with others and the limit does not map onto domains: 0 (no limit).
[[nodiscard]] int64_t GroupLimitedDomains(int64_t num_groups, int64_t group_top_k,
                                          int64_t num_domains);

// Fractional slowdown of a compute kernel running beside the exchange: the kernels hold
// sm_fraction of the SMs, so compute proceeds at 1 − sm_fraction of its rate.
[[nodiscard]] double FlexComputeSlowdown(const FlexDispatchConstants& constants = {});

}  // namespace trainscope::cost

#endif  // TRAINSCOPE_COST_FLEX_DISPATCH_H_
