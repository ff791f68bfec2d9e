// Communication cost of one collective or point-to-point transfer on a cluster: where a group's
// ranks sit (PlaceGroup), which link class it uses, and how long one operation takes under the
// ring, NVLS, hierarchical and pairwise algorithms of docs/cost-model.md ("Collectives"). Pure
// functions over plain values; nothing is cached, so callers place each group once and reuse the
// placement.
#ifndef TRAINSCOPE_COST_COLLECTIVE_COST_H_
#define TRAINSCOPE_COST_COLLECTIVE_COST_H_

#include <cstdint>
#include <vector>

#include "trainscope/config/cluster.h"
#include "trainscope/graph/op.h"

namespace trainscope::cost {

// The calibration constants live with the cluster description (config/cluster.h).
using LinkEfficiency = config::LinkEfficiency;

// How a group's ranks spread over NVLink domains and nodes. Ranks r and s share a node iff
// r / gpus_per_node is equal, and an NVLink domain iff r / nvlink_domain_gpus is equal.
struct GroupPlacement {
  int64_t num_ranks = 0;
  int64_t num_domains = 0;
  int64_t min_ranks_per_domain = 0;  // over the domains holding at least one rank of the group
  int64_t max_ranks_per_domain = 0;
  int64_t num_nodes = 0;
  friend bool operator==(const GroupPlacement&, const GroupPlacement&) = default;
};

// The placement of the group made of `global_ranks` (distinct, in any order; for send/recv pass
// the two endpoints). Preconditions (checked): global_ranks non-empty, every rank >= 0,
// cluster.gpus_per_node >= 1 and cluster.nvlink_domain_gpus >= 1.
[[nodiscard]] GroupPlacement PlaceGroup(const std::vector<int64_t>& global_ranks,
                                        const config::ClusterSpec& cluster);

enum class LinkClass {
  kNvlink,    // every rank in one NVLink domain
  kScaleOut,  // the group spans domains, so part of its traffic crosses the NICs
};

// kNvlink when the group sits in one NVLink domain, kScaleOut otherwise.
[[nodiscard]] LinkClass LinkOf(const GroupPlacement& placement);

// Seconds one collective takes, with `message_bytes` in the op.h convention (all_gather: the
// gathered output; reduce_scatter: the full input; all_reduce: the buffer; all_to_all: the
// per-rank send buffer including its local block; send/recv/broadcast: the tensor). Inside one
// domain: ring, or for all-reduce the faster of ring and NVLS (when cluster.nvls and the group
// has at least link.nvls_min_ranks ranks). Across domains: hierarchical (intra-domain phases on
// NVLink pipelined with an inter-domain ring or, for all-reduce, the faster of ring and tree on
// each NIC); all-to-all as a direct pairwise exchange; send/recv over one NIC. Collectives over
// one rank and empty messages take 0 seconds; a send/recv of a non-empty message does not.
// Throws InputError naming scale_out_bytes_per_second when the group spans domains and the
// cluster has no NIC figure. Preconditions (checked): collective != kNone, message_bytes >= 0,
// placement from PlaceGroup, cluster values positive and efficiencies in (0, 1].
[[nodiscard]] double CollectiveSeconds(graph::Collective collective, int64_t message_bytes,
                                       const GroupPlacement& placement,
                                       const config::ClusterSpec& cluster);

// Duration of a transfer that takes `solo_seconds` alone, when during the first
// `shared_seconds` after its start it shares its link class with num_sharers − 1 other
// transfers and each gets 1/num_sharers of the bandwidth. After the window it runs at full
// speed. An event-driven simulator applies the same rule piecewise: whenever the number of
// transfers on a link class changes, each remaining transfer's rate becomes 1/(transfers on it).
// Preconditions (checked): solo_seconds >= 0, shared_seconds >= 0, num_sharers >= 1.
[[nodiscard]] double SharedLinkSeconds(double solo_seconds, double shared_seconds,
                                       int64_t num_sharers);

}  // namespace trainscope::cost

#endif  // TRAINSCOPE_COST_COLLECTIVE_COST_H_
