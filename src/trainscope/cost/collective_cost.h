// Communication cost of one collective or point-to-point transfer: the ring formulas in the
// nccl-tests bus-bandwidth convention plus a latency per algorithm step, and the choice of link
// (NVLink or the scale-out NIC) from where a group's ranks sit. Pure functions over plain values;
// formulas, calibrated constants and omissions are listed in docs/cost-model.md.
#ifndef TRAINSCOPE_COST_COLLECTIVE_COST_H_
#define TRAINSCOPE_COST_COLLECTIVE_COST_H_

#include <cstdint>
#include <vector>

#include "trainscope/config/hardware.h"
#include "trainscope/graph/op.h"

namespace trainscope::cost {

// The link a collective runs over, as the cost model sees it.
struct LinkSpec {
  // Achievable bus bandwidth per GPU and direction (nccl-tests busbw), not the link peak.
  double bandwidth_bytes_per_second = 0;
  double latency_seconds = 0;  // per algorithm step (one ring hop)
  friend bool operator==(const LinkSpec&, const LinkSpec&) = default;
};

// Calibration of the links, from the measured NCCL figures of reference/hardware.md §2.
struct LinkEfficiency {
  // Ring busbw / NVLink peak: mean of nccl-tests all-gather 361.4, reduce-scatter 362.9 and
  // all-reduce (NVLS off) 367.2 GB/s on 8 x H200 at 16 GiB (§2.1) = 363.8 / 450 = 0.81.
  double nvlink_bus_efficiency = 0.81;
  // 8 x H200 all-reduce, 32 KiB, busbw 1.44 GB/s (§2.1): 2·(7/8)·32 KiB / 1.44 GB/s = 39.8 µs,
  // less the bandwidth term 0.16 µs, over 2·(8−1) = 14 ring steps = 2.8 µs per step. The
  // measurement includes Python and launch overhead, so this is an upper bound (§2.3).
  double nvlink_latency_seconds = 2.8e-6;
  // Busbw per GPU NIC / NIC peak: 4 x 8 B200 on EFA v4, all-reduce at 16 GiB, busbw 381.8 GB/s,
  // per NIC 381.8 · 3/31 = 36.9 GB/s of 50 (§2.2) = 0.739.
  double scale_out_bus_efficiency = 0.739;
  // Same sweep at 16 MiB, busbw 64.4 GB/s: 2·(31/32)·16 MiB / 64.4 GB/s = 504.7 µs, less the
  // bandwidth term at 382.3 GB/s (85.0 µs), over 2·(32−1) = 62 ring steps = 6.8 µs per step.
  // It folds EFA's slow ramp-up into latency; InfiniBand is lower (no measured source, §2.3).
  double scale_out_latency_seconds = 6.8e-6;
  friend bool operator==(const LinkEfficiency&, const LinkEfficiency&) = default;
};

// Seconds one collective over `group_size` ranks takes, `message_bytes` in the op.h convention
// (all_gather: gathered output; reduce_scatter: full input; all_reduce: the buffer; all_to_all:
// the per-rank send buffer including its local block; send/recv/broadcast: the tensor):
//   all_gather, reduce_scatter, all_to_all: (n−1)·α + S·(n−1)/n / B
//   all_reduce (ring):                      2(n−1)·α + 2·S·(n−1)/n / B
//   broadcast (pipelined ring):             (n−1)·α + S / B
//   send, recv:                             α + S / B
// with B = link.bandwidth_bytes_per_second and α = link.latency_seconds. Collectives over one
// rank and empty messages take 0 seconds. Preconditions (checked): collective != kNone,
// group_size >= 1, message_bytes >= 0, bandwidth > 0, latency >= 0.
[[nodiscard]] double CollectiveSeconds(graph::Collective collective, int64_t group_size,
                                       int64_t message_bytes, const LinkSpec& link);

// The link of a group of global ranks. Ranks r and s share NVLink iff
// r / gpus_per_nvlink_domain == s / gpus_per_nvlink_domain (8 for HGX nodes, 72 for GB200
// NVL72). A group inside one domain gets NVLink: B = nvlink · nvlink_bus_efficiency,
// α = nvlink_latency_seconds. A group spanning k domains gets the scale-out NICs of all its
// ranks, hierarchically: with g the fewest group ranks in any one domain and N the NIC busbw
// (scale_out · scale_out_bus_efficiency), B = min(N · g·(n−1)/(n−g), NVLink B) (for g = n/k this
// is N·(n−1)/(k−1), hardware.md §2.2) and α = scale_out_latency_seconds. Throws InputError when
// the group spans domains and the preset has no scale-out figure. Preconditions (checked):
// group_ranks non-empty, ranks >= 0, gpus_per_nvlink_domain >= 1, efficiencies in (0, 1].
[[nodiscard]] LinkSpec GroupLink(const std::vector<int64_t>& group_ranks,
                                 int64_t gpus_per_nvlink_domain, const config::GpuSpec& gpu,
                                 const LinkEfficiency& eff = {});

}  // namespace trainscope::cost

#endif  // TRAINSCOPE_COST_COLLECTIVE_COST_H_
