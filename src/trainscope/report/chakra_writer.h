// Chakra execution traces for ASTRA-sim (reference/workload-formats.md §3): one rank's step graph
// as a length-delimited stream of ChakraProtoMsg messages (GlobalMetadata, then one Node per op
// in the graph's issue order, which is topological), hand-encoded in field-number order so the
// bytes are deterministic; and the communicator-group JSON that maps each COMM_COLL_NODE's
// pg_name to its ranks. Compute nodes carry the simulator's own per-op times through the
// roofline-as-timer trick (§3.6). Pure: returns bytes; the caller owns everything it passes.
#ifndef TRAINSCOPE_REPORT_CHAKRA_WRITER_H_
#define TRAINSCOPE_REPORT_CHAKRA_WRITER_H_

#include <cstdint>
#include <string>

#include "trainscope/config/cluster.h"
#include "trainscope/config/rank_mapping.h"
#include "trainscope/config/training_config.h"
#include "trainscope/graph/step_graph.h"
#include "trainscope/report/simai_rows.h"

namespace trainscope::report {

// Chakra's CollectiveCommType values ASTRA-sim simulates natively.
inline constexpr int64_t kChakraAllReduce = 0;
inline constexpr int64_t kChakraAllGather = 2;
inline constexpr int64_t kChakraAllToAll = 6;
inline constexpr int64_t kChakraReduceScatter = 7;

// The pg_name of the group of `kind` that holds `rank`: groups are numbered from 1 in the order
// of config::AllGroupKinds() and, within a kind, RankMapping::AllGroups(). 0 (ASTRA-sim: all
// ranks) for the world group and when the rank is in no such group.
[[nodiscard]] int64_t ChakraGroupId(const config::RankMapping& mapping, config::GroupKind kind,
                                    int64_t rank);

// {"1": [ranks], "2": [ranks], ...}: every group of every kind, numbered as ChakraGroupId.
[[nodiscard]] std::string RenderChakraCommGroups(const config::RankMapping& mapping);

// The ET file of the rank whose step graph is `graph`. Node ids are op ids and data_deps the
// ops' dependencies. Collectives become COMM_COLL_NODEs with comm_size in ASTRA-sim's
// convention (ALL_GATHER: the per-rank input shard, message / group size; the others: the whole
// buffer); sends and receives COMM_SEND_NODE / COMM_RECV_NODE with a tag both peers derive from
// (micro-batch, pipeline edge, direction); broadcasts, which ASTRA-sim cannot simulate, become
// 1 ns compute nodes. A compute node of t = round(compute_seconds(op) · 1e9) ns has
// tensor_size = 1 and num_ops = round((t + 0.5) · peak_tflops · 1000), so ASTRA-sim with
// "roofline-enabled": 1 and "peak-perf": peak_tflops times it at exactly t ns.
// Precondition: `graph` is graph::BuildStepGraph under `training`; peak_tflops > 0.
[[nodiscard]] std::string RenderChakraEt(const graph::StepGraph& graph,
                                         const config::TrainingConfig& training,
                                         const config::RankMapping& mapping,
                                         const ComputeTime& compute_seconds, double peak_tflops);

// ASTRA-sim's other inputs for the cluster (reference/workload-formats.md §4).
struct AstraInputs {
  std::string network_yaml;
  std::string system_json;
  std::string remote_memory_json;
};

// The network: one Switch dimension of the NVLink domain (W ≤ domain) or two, NVLink domain ×
// nodes of it, with effective bandwidths (peak × the cluster's bus efficiency, GB/s) and per-step
// latencies (ns); the system: ring collectives (direct all-to-all) per dimension, roofline on with
// peak-perf = the GPU's BF16 TFLOPS (so compute nodes replay the simulator's times), local-mem-bw
// = its HBM GB/s. Precondition: the world size is a multiple of the NVLink domain when it exceeds
// it (config::Validate accepted the layout on this cluster).
[[nodiscard]] AstraInputs RenderAstraInputs(const config::ClusterSpec& cluster,
                                            const config::TrainingConfig& training);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_CHAKRA_WRITER_H_
