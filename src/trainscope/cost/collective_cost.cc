#include "trainscope/cost/collective_cost.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "trainscope/error.h"

namespace trainscope::cost {
namespace {

using graph::Collective;

// One link class as the cost model sees it: peak busbw per GPU and direction, latency per
// algorithm step, and the ramp of the achieved busbw with the message size of a phase.
struct Tier {
  double bytes_per_second = 0;
  double latency_seconds = 0;
  double half_bytes = 0;
  double ramp_exponent = 1;
};

Tier NvlinkTier(const config::ClusterSpec& cluster) {
  return {
      .bytes_per_second = cluster.gpu.nvlink_bytes_per_second * cluster.link.nvlink_bus_efficiency,
      .latency_seconds = cluster.link.nvlink_latency_seconds,
      .half_bytes = cluster.link.nvlink_half_bytes,
      .ramp_exponent = cluster.link.nvlink_ramp_exponent};
}

Tier ScaleOutTier(const config::ClusterSpec& cluster) {
  if (cluster.scale_out_bytes_per_second <= 0) {
    throw InputError("gpu " + cluster.gpu.name +
                     ": scale_out_bytes_per_second: a group spans NVLink domains but the cluster "
                     "has no scale-out figure (got 0, expected > 0; set scale_out_gbps in the "
                     "cluster file or --scale-out-gbps)");
  }
  return {.bytes_per_second =
              cluster.scale_out_bytes_per_second * cluster.link.scale_out_bus_efficiency,
          .latency_seconds = cluster.link.scale_out_latency_seconds,
          .half_bytes = cluster.link.scale_out_half_bytes,
          .ramp_exponent = cluster.link.scale_out_ramp_exponent};
}

// Seconds to put `wire_bytes` per rank on `tier` in a phase whose per-rank message is
// `phase_bytes`: busbw(S) = peak / (1 + (half / S)^p) (docs/cost-model.md). With p in (0, 1]
// this never decreases when bytes grow.
double BandwidthSeconds(const Tier& tier, double wire_bytes, double phase_bytes) {
  if (wire_bytes <= 0) return 0;
  const double ramp = 1 + std::pow(tier.half_bytes / phase_bytes, tier.ramp_exponent);
  return wire_bytes / tier.bytes_per_second * ramp;
}

// One domain, n ranks: the nccl-tests ring (bus factors of nccl-tests doc/PERFORMANCE.md) and NVLS.
double IntraDomainSeconds(Collective collective, double s, double n,
                          const config::ClusterSpec& cluster) {
  const Tier nv = NvlinkTier(cluster);
  switch (collective) {
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return (n - 1) * nv.latency_seconds + BandwidthSeconds(nv, (n - 1) / n * s, s);
    case Collective::kAllReduce: {
      const double ring =
          2 * (n - 1) * nv.latency_seconds + BandwidthSeconds(nv, 2 * (n - 1) / n * s, s);
      if (!cluster.nvls || n < static_cast<double>(cluster.link.nvls_min_ranks)) return ring;
      // NVLS: algbw = nvls_efficiency · NVLink peak, independent of n (8 x H200 sweep,
      // stas00/ml-engineering).
      const double nvls = cluster.link.nvls_latency_seconds +
                          s / (cluster.gpu.nvlink_bytes_per_second * cluster.link.nvls_efficiency);
      return std::min(ring, nvls);
    }
    case Collective::kBroadcast:
      return (n - 1) * nv.latency_seconds + BandwidthSeconds(nv, s, s);
    case Collective::kSend:
    case Collective::kRecv:
      return nv.latency_seconds + BandwidthSeconds(nv, s, s);
    case Collective::kNone:
      break;
  }
  TRAINSCOPE_CHECK(false, "CollectiveSeconds called on a compute op");
  return 0;
}

// Hierarchical all-reduce over k domains: intra-domain reduce-scatter, an all-reduce of the
// 1/g shard on each NIC (ring or double binary tree, whichever is faster, as NCCL's tuner
// picks), intra-domain all-gather. The NVLink and NIC phases are pipelined, so the bandwidth
// term is the larger of the two; latencies add. g_hi (the fullest domain) sets the NVLink
// phases, g_lo (the domain with the fewest NICs) the NIC phase.
double HierarchicalAllReduceSeconds(double s, double k, double g_lo, double g_hi, const Tier& nv,
                                    const Tier& nic) {
  const double intra_latency = 2 * (g_hi - 1) * nv.latency_seconds;
  const double intra = BandwidthSeconds(nv, 2 * (g_hi - 1) / g_hi * s, s);
  const double shard = s / g_lo;
  // Ring: 2(k−1) steps, 2(k−1)/k of the shard per NIC. Tree: 2·⌈log2 k⌉ steps; in a double
  // binary tree each node sends and receives the whole shard once up and once down.
  const double ring = 2 * (k - 1) * nic.latency_seconds +
                      std::max(intra, BandwidthSeconds(nic, 2 * (k - 1) / k * shard, shard));
  const double tree = 2 * std::ceil(std::log2(k)) * nic.latency_seconds +
                      std::max(intra, BandwidthSeconds(nic, 2 * shard, shard));
  return intra_latency + std::min(ring, tree);
}

// Across domains (k >= 2). See HierarchicalAllReduceSeconds for g_lo and g_hi.
double InterDomainSeconds(Collective collective, double s, const GroupPlacement& placement,
                          const config::ClusterSpec& cluster) {
  const Tier nv = NvlinkTier(cluster);
  const Tier nic = ScaleOutTier(cluster);
  const double n = static_cast<double>(placement.num_ranks);
  const double k = static_cast<double>(placement.num_domains);
  const double g_lo = static_cast<double>(placement.min_ranks_per_domain);
  const double g_hi = static_cast<double>(placement.max_ranks_per_domain);
  const double shard = s / g_lo;
  switch (collective) {
    case Collective::kAllReduce:
      return HierarchicalAllReduceSeconds(s, k, g_lo, g_hi, nv, nic);
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      // One rail ring per NIC over k domains ((k−1)/k of the shard) and an intra-domain ring.
      return (g_hi - 1) * nv.latency_seconds + (k - 1) * nic.latency_seconds +
             std::max(BandwidthSeconds(nv, (g_hi - 1) / g_hi * s, s),
                      BandwidthSeconds(nic, (k - 1) / k * shard, shard));
    case Collective::kBroadcast:
      // Scatter inside the root's domain, a pipelined chain per NIC, all-gather in each domain.
      return 2 * (g_hi - 1) * nv.latency_seconds + (k - 1) * nic.latency_seconds +
             std::max(BandwidthSeconds(nv, 2 * (g_hi - 1) / g_hi * s, s),
                      BandwidthSeconds(nic, shard, shard));
    case Collective::kAllToAll: {
      // Direct pairwise exchange, S/n to each peer: remote peers through the rank's own NIC,
      // same-domain peers over NVLink, both at once.
      const double remote_bytes = (n - g_lo) / n * s;
      const double local_bytes = (g_hi - 1) / n * s;
      return std::max(
          (n - g_lo) * nic.latency_seconds + BandwidthSeconds(nic, remote_bytes, remote_bytes),
          (g_hi - 1) * nv.latency_seconds + BandwidthSeconds(nv, local_bytes, s));
    }
    case Collective::kSend:
    case Collective::kRecv:
      return nic.latency_seconds + BandwidthSeconds(nic, s, s);
    case Collective::kNone:
      break;
  }
  TRAINSCOPE_CHECK(false, "CollectiveSeconds called on a compute op");
  return 0;
}

bool IsFraction(double value) { return value > 0 && value <= 1; }

void CheckCluster(const config::ClusterSpec& cluster) {
  const config::LinkEfficiency& link = cluster.link;
  TRAINSCOPE_CHECK(cluster.gpu.nvlink_bytes_per_second > 0, "NVLink bandwidth must be > 0");
  TRAINSCOPE_CHECK(IsFraction(link.nvlink_bus_efficiency) &&
                       IsFraction(link.scale_out_bus_efficiency) && link.nvls_efficiency > 0,
                   "bus efficiencies must lie in (0, 1]");
  TRAINSCOPE_CHECK(
      IsFraction(link.nvlink_ramp_exponent) && IsFraction(link.scale_out_ramp_exponent),
      "ramp exponents must lie in (0, 1]");
  TRAINSCOPE_CHECK(link.nvlink_half_bytes >= 0 && link.scale_out_half_bytes >= 0,
                   "half-bandwidth sizes must be >= 0");
  TRAINSCOPE_CHECK(link.nvlink_latency_seconds >= 0 && link.nvls_latency_seconds >= 0 &&
                       link.scale_out_latency_seconds >= 0,
                   "latencies must be >= 0");
}

// Calls visit(count) once for each run of consecutive ranks with the same rank / divisor, with
// the run's length. Precondition: `ranks` ascending, so each quotient forms one run.
template <typename Visit>
void ForEachRun(const std::vector<int64_t>& ranks, int64_t divisor, Visit visit) {
  std::size_t begin = 0;
  while (begin < ranks.size()) {
    const int64_t quotient = ranks[begin] / divisor;
    std::size_t end = begin + 1;
    while (end < ranks.size() && ranks[end] / divisor == quotient) ++end;
    visit(static_cast<int64_t>(end - begin));
    begin = end;
  }
}

}  // namespace

GroupPlacement PlaceGroup(const std::vector<int64_t>& global_ranks,
                          const config::ClusterSpec& cluster) {
  TRAINSCOPE_CHECK(!global_ranks.empty(), "PlaceGroup needs at least one rank");
  TRAINSCOPE_CHECK(cluster.gpus_per_node >= 1 && cluster.nvlink_domain_gpus >= 1,
                   "gpus_per_node and nvlink_domain_gpus must be >= 1");
  for (const int64_t rank : global_ranks) TRAINSCOPE_CHECK(rank >= 0, "ranks must be >= 0");
  // Ranks in ascending order put each domain's and node's ranks next to each other, so both are
  // counted in one pass. RankMapping's groups are ascending already; a 10^7-rank data-parallel
  // group is then placed in linear time and without a per-domain tree.
  std::vector<int64_t> sorted;
  const std::vector<int64_t>* ranks = &global_ranks;
  if (!std::is_sorted(global_ranks.begin(), global_ranks.end())) {
    sorted = global_ranks;
    std::sort(sorted.begin(), sorted.end());
    ranks = &sorted;
  }
  const int64_t num_ranks = static_cast<int64_t>(ranks->size());
  GroupPlacement placement{.num_ranks = num_ranks,
                           .num_domains = 0,
                           .min_ranks_per_domain = num_ranks,
                           .max_ranks_per_domain = 0,
                           .num_nodes = 0};
  ForEachRun(*ranks, cluster.nvlink_domain_gpus, [&](int64_t count) {
    ++placement.num_domains;
    placement.min_ranks_per_domain = std::min(placement.min_ranks_per_domain, count);
    placement.max_ranks_per_domain = std::max(placement.max_ranks_per_domain, count);
  });
  ForEachRun(*ranks, cluster.gpus_per_node, [&](int64_t) { ++placement.num_nodes; });
  return placement;
}

LinkClass LinkOf(const GroupPlacement& placement) {
  return placement.num_domains <= 1 ? LinkClass::kNvlink : LinkClass::kScaleOut;
}

double CollectiveSeconds(graph::Collective collective, int64_t message_bytes,
                         const GroupPlacement& placement, const config::ClusterSpec& cluster) {
  TRAINSCOPE_CHECK(collective != Collective::kNone, "CollectiveSeconds on a compute op");
  TRAINSCOPE_CHECK(message_bytes >= 0, "message size must be >= 0");
  TRAINSCOPE_CHECK(placement.num_ranks >= 1 && placement.num_domains >= 1 &&
                       placement.min_ranks_per_domain >= 1 &&
                       placement.min_ranks_per_domain <= placement.max_ranks_per_domain,
                   "placement must come from PlaceGroup");
  CheckCluster(cluster);
  const bool point_to_point = collective == Collective::kSend || collective == Collective::kRecv;
  if (message_bytes == 0 || (placement.num_ranks == 1 && !point_to_point)) return 0;
  const double s = static_cast<double>(message_bytes);
  if (LinkOf(placement) == LinkClass::kNvlink) {
    return IntraDomainSeconds(collective, s, static_cast<double>(placement.num_ranks), cluster);
  }
  return InterDomainSeconds(collective, s, placement, cluster);
}

double SharedLinkSeconds(double solo_seconds, double shared_seconds, int64_t num_sharers) {
  TRAINSCOPE_CHECK(solo_seconds >= 0 && shared_seconds >= 0, "durations must be >= 0");
  TRAINSCOPE_CHECK(num_sharers >= 1, "num_sharers must be >= 1");
  const double sharers = static_cast<double>(num_sharers);
  // At rate 1/m the window completes shared_seconds / m of the solo work.
  if (shared_seconds / sharers >= solo_seconds) return solo_seconds * sharers;
  return shared_seconds + (solo_seconds - shared_seconds / sharers);
}

}  // namespace trainscope::cost
