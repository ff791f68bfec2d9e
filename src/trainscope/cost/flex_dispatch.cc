#include "trainscope/cost/flex_dispatch.h"

#include <algorithm>
#include <map>
#include <string>

#include "trainscope/error.h"

namespace trainscope::cost {
namespace {

void CheckExchange(const FlexExchange& x) {
  TRAINSCOPE_CHECK(x.token_bytes >= 0, "token bytes must be >= 0");
  TRAINSCOPE_CHECK(x.top_k >= 1 && x.top_k <= x.num_experts, "need 1 <= top_k <= num_experts");
  const auto n = static_cast<int64_t>(x.rank_domain.size());
  TRAINSCOPE_CHECK(n >= 1 && x.num_experts % n == 0, "experts must divide over the group ranks");
  TRAINSCOPE_CHECK(
      x.expert_shares.empty() || static_cast<int64_t>(x.expert_shares.size()) == x.num_experts,
      "one share per expert");
  TRAINSCOPE_CHECK(x.max_domains_per_token >= 0, "max_domains_per_token must be >= 0");
}

// Where the experts sit: the share of the assignments (or expert count) of each rank.
struct Layout {
  std::vector<double> rank_share;           // group-rank order
  std::map<int64_t, double> domain_share;   // by domain label (ordered)
  std::map<int64_t, int64_t> domain_ranks;  // g_d
};

Layout LayoutOf(const FlexExchange& x) {
  const auto n = static_cast<int64_t>(x.rank_domain.size());
  const int64_t per_rank = x.num_experts / n;
  Layout layout;
  for (int64_t r = 0; r < n; ++r) {
    double share = 0;
    for (int64_t i = r * per_rank; i < (r + 1) * per_rank; ++i) {
      share += x.expert_shares.empty() ? 1.0 / static_cast<double>(x.num_experts)
                                       : x.expert_shares[static_cast<size_t>(i)];
    }
    layout.rank_share.push_back(share);
    const int64_t domain = x.rank_domain[static_cast<size_t>(r)];
    layout.domain_share[domain] += share;
    ++layout.domain_ranks[domain];
  }
  return layout;
}

// Probability that a token reaches a set holding `share` of the assignments, with node-limited
// routing when the exchange asks for it: the token picks M of the N domains uniformly, then its
// experts among the M·E/N experts of those (DeepEP test_internode.py's group-limited scores).
double SetHit(const FlexExchange& x, double share, int64_t num_domains) {
  const int64_t limit = x.max_domains_per_token;
  if (limit <= 0 || limit >= num_domains) {
    return HitProbability(share * static_cast<double>(x.num_experts), x.num_experts, x.top_k);
  }
  const int64_t pool = limit * x.num_experts / num_domains;
  const double picked = static_cast<double>(limit) / static_cast<double>(num_domains);
  return picked *
         HitProbability(share * static_cast<double>(x.num_experts), pool, std::min(x.top_k, pool));
}

}  // namespace

double HitProbability(double subset, int64_t num_experts, int64_t top_k) {
  TRAINSCOPE_CHECK(top_k >= 1 && top_k <= num_experts, "need 1 <= top_k <= num_experts");
  const double e = static_cast<double>(num_experts);
  TRAINSCOPE_CHECK(subset >= 0 && subset <= e * (1 + 1e-12), "subset must lie in [0, E]");
  double miss = 1;  // Π_{i<k} (E − m − i)/(E − i), a factor clamped at 0 once m + i >= E
  for (int64_t i = 0; i < top_k; ++i) {
    const double left = e - static_cast<double>(i);
    miss *= std::max(0.0, (left - subset) / left);
  }
  return 1 - miss;
}

int64_t GroupLimitedDomains(int64_t num_groups, int64_t group_top_k, int64_t num_domains) {
  if (num_groups <= 0 || group_top_k <= 0 || num_domains <= 0) return 0;
  if (num_domains % num_groups != 0) return 0;
  return group_top_k * (num_domains / num_groups);
}

FlexLegBytes FlexExchangeBytes(const FlexExchange& exchange) {
  CheckExchange(exchange);
  const Layout layout = LayoutOf(exchange);
  const auto n = static_cast<double>(exchange.rank_domain.size());
  const auto num_domains = static_cast<int64_t>(layout.domain_ranks.size());
  std::map<int64_t, double> domain_hit;
  double total_hit = 0;
  for (const auto& [domain, share] : layout.domain_share) {
    domain_hit[domain] = SetHit(exchange, share, num_domains);
    total_hit += domain_hit[domain];
  }
  // RDMA: each rank sends one row per remote domain its token reaches (to the rank on its rail)
  // and receives the rows of the remote ranks on its rail that reach its domain.
  double rdma_rows = 0;
  for (const auto& [domain, hit] : domain_hit) {
    const double g = static_cast<double>(layout.domain_ranks.at(domain));
    rdma_rows = std::max({rdma_rows, total_hit - hit, (n - g) / g * hit});
  }
  // NVLink: every rank forwards the rows reaching its domain (from the n/g_d ranks on its rail,
  // its own included) to each other rank of the domain its token reaches.
  double nvlink_rows = 0;
  for (size_t r = 0; r < layout.rank_share.size(); ++r) {
    const int64_t domain = exchange.rank_domain[r];
    const double g = static_cast<double>(layout.domain_ranks.at(domain));
    const double hit = SetHit(exchange, layout.rank_share[r], num_domains);
    nvlink_rows = std::max(nvlink_rows, (g - 1) * n / g * hit);
  }
  return {.rdma_bytes = exchange.token_bytes * rdma_rows,
          .nvlink_bytes = exchange.token_bytes * nvlink_rows};
}

double FlexExchangeSeconds(const FlexExchange& exchange, const config::ClusterSpec& cluster,
                           const FlexDispatchConstants& constants) {
  const FlexLegBytes legs = FlexExchangeBytes(exchange);
  if (exchange.token_bytes == 0 || exchange.rank_domain.size() == 1) return 0;
  TRAINSCOPE_CHECK(constants.nvlink_efficiency > 0 && constants.rdma_efficiency > 0,
                   "flex efficiencies must be > 0");
  const double nvlink_seconds =
      legs.nvlink_bytes / (cluster.gpu.nvlink_bytes_per_second * constants.nvlink_efficiency);
  double seconds = cluster.link.nvlink_latency_seconds + nvlink_seconds;
  if (legs.rdma_bytes > 0) {
    if (cluster.scale_out_bytes_per_second <= 0) {
      throw InputError("gpu " + cluster.gpu.name +
                       ": scale_out_bytes_per_second: the flex dispatcher's group spans NVLink "
                       "domains but the cluster has no scale-out figure (got 0, expected > 0; set "
                       "scale_out_gbps in the cluster file or --scale-out-gbps)");
    }
    const double rdma_seconds =
        legs.rdma_bytes / (cluster.scale_out_bytes_per_second * constants.rdma_efficiency);
    seconds = cluster.link.nvlink_latency_seconds + cluster.link.scale_out_latency_seconds +
              std::max(nvlink_seconds, rdma_seconds);
  }
  return seconds;
}

double FlexComputeSlowdown(const FlexDispatchConstants& constants) {
  TRAINSCOPE_CHECK(constants.sm_fraction >= 0 && constants.sm_fraction < 1,
                   "sm_fraction must lie in [0, 1)");
  return 1 / (1 - constants.sm_fraction) - 1;
}

}  // namespace trainscope::cost
