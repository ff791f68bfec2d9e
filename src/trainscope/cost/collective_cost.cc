#include "trainscope/cost/collective_cost.h"

#include <algorithm>
#include <map>
#include <string>

#include "trainscope/error.h"

namespace trainscope::cost {
namespace {

// Ring steps and bytes each rank puts on its link, in units of the message (nccl-tests
// performance docs: busbw = algbw · factor, with the same factor here).
struct RingCost {
  double num_steps = 0;
  double bus_factor = 0;  // bytes on the wire per rank / message_bytes
};

RingCost RingCostOf(graph::Collective collective, int64_t group_size) {
  const double n = static_cast<double>(group_size);
  switch (collective) {
    case graph::Collective::kAllGather:
    case graph::Collective::kReduceScatter:
    case graph::Collective::kAllToAll:
      return {n - 1, (n - 1) / n};
    case graph::Collective::kAllReduce:
      return {2 * (n - 1), 2 * (n - 1) / n};  // reduce-scatter then all-gather
    case graph::Collective::kBroadcast:
      return {n - 1, 1};
    case graph::Collective::kSend:
    case graph::Collective::kRecv:
      return {1, 1};
    case graph::Collective::kNone:
      break;
  }
  TRAINSCOPE_CHECK(false, "CollectiveSeconds called on a compute op");
  return {};
}

bool IsFraction(double value) { return value > 0 && value <= 1; }

}  // namespace

double CollectiveSeconds(graph::Collective collective, int64_t group_size, int64_t message_bytes,
                         const LinkSpec& link) {
  TRAINSCOPE_CHECK(collective != graph::Collective::kNone, "CollectiveSeconds on a compute op");
  TRAINSCOPE_CHECK(group_size >= 1, "group size must be >= 1");
  TRAINSCOPE_CHECK(message_bytes >= 0, "message size must be >= 0");
  TRAINSCOPE_CHECK(link.bandwidth_bytes_per_second > 0, "link bandwidth must be > 0");
  TRAINSCOPE_CHECK(link.latency_seconds >= 0, "link latency must be >= 0");
  const bool point_to_point =
      collective == graph::Collective::kSend || collective == graph::Collective::kRecv;
  if (message_bytes == 0 || (group_size == 1 && !point_to_point)) return 0;
  const RingCost ring = RingCostOf(collective, group_size);
  return ring.num_steps * link.latency_seconds +
         ring.bus_factor * static_cast<double>(message_bytes) / link.bandwidth_bytes_per_second;
}

LinkSpec GroupLink(const std::vector<int64_t>& group_ranks, int64_t gpus_per_nvlink_domain,
                   const config::GpuSpec& gpu, const LinkEfficiency& eff) {
  TRAINSCOPE_CHECK(!group_ranks.empty(), "GroupLink needs at least one rank");
  TRAINSCOPE_CHECK(gpus_per_nvlink_domain >= 1, "gpus_per_nvlink_domain must be >= 1");
  TRAINSCOPE_CHECK(
      IsFraction(eff.nvlink_bus_efficiency) && IsFraction(eff.scale_out_bus_efficiency),
      "bus efficiencies must lie in (0, 1]");
  // Group ranks per NVLink domain, in domain order.
  std::map<int64_t, int64_t> ranks_per_domain;
  for (const int64_t rank : group_ranks) {
    TRAINSCOPE_CHECK(rank >= 0, "ranks must be >= 0");
    ++ranks_per_domain[rank / gpus_per_nvlink_domain];
  }
  const LinkSpec nvlink{
      .bandwidth_bytes_per_second = gpu.nvlink_bytes_per_second * eff.nvlink_bus_efficiency,
      .latency_seconds = eff.nvlink_latency_seconds};
  if (ranks_per_domain.size() == 1) return nvlink;
  if (gpu.scale_out_bytes_per_second <= 0) {
    throw InputError("gpu " + gpu.name +
                     ": scale_out_bytes_per_second: a group spans NVLink domains but the preset "
                     "has no scale-out figure (got 0, expected > 0; set it in the hardware "
                     "profile)");
  }
  // The domain with the fewest group ranks g moves the most data per NIC: it must receive
  // (n−g)/n of the message over g NICs, i.e. busbw = NIC · g·(n−1)/(n−g) (hardware.md §2.2).
  // The intra-domain part of the hierarchical algorithm caps it at the NVLink busbw.
  const double n = static_cast<double>(group_ranks.size());
  const double g =
      static_cast<double>(std::ranges::min_element(ranks_per_domain, {}, [](const auto& entry) {
                            return entry.second;
                          })->second);
  const double nic_bytes_per_second = gpu.scale_out_bytes_per_second * eff.scale_out_bus_efficiency;
  return LinkSpec{
      .bandwidth_bytes_per_second =
          std::min(nic_bytes_per_second * g * (n - 1) / (n - g), nvlink.bandwidth_bytes_per_second),
      .latency_seconds = eff.scale_out_latency_seconds};
}

}  // namespace trainscope::cost
