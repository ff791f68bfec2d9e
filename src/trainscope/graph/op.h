// One operation of a training step on one rank: a compute kernel (with FLOPs and bytes moved)
// or a collective / point-to-point transfer (with group, group size and message size). Plain
// value; the step graph owns a vector of them and refers to dependencies by id.
//
// Message-size convention (nccl-tests doc/PERFORMANCE.md, used everywhere): all_gather and
// reduce_scatter count the full (unsharded) buffer, all_reduce the buffer, all_to_all the bytes
// one rank sends in total, send/recv the bytes sent.
#ifndef TRAINSCOPE_GRAPH_OP_H_
#define TRAINSCOPE_GRAPH_OP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "trainscope/config/rank_mapping.h"

namespace trainscope::graph {

enum class Phase { kForward, kBackward, kRecompute, kGradSync, kOptimizer };

enum class Collective {
  kNone,  // a compute op
  kAllGather,
  kReduceScatter,
  kAllReduce,
  kAllToAll,
  kSend,
  kRecv,
  kBroadcast,
};

// The extent of a grouped GEMM that holds the tokens and is summed over the groups: m for the
// forward and dgrad GEMMs, k for wgrad (graph/op_sink.h). Ignored when groups == 1.
enum class GroupedAxis { kM, kK };

struct GemmShape {
  int64_t m = 0;       // rows of the activation (tokens)
  int64_t n = 0;       // output features
  int64_t k = 0;       // input features (reduction)
  int64_t groups = 1;  // grouped GEMM: number of local experts sharing the shape
  // Which of m and k is the sum of the per-group token counts (groups > 1).
  GroupedAxis grouped_axis = GroupedAxis::kM;
  friend bool operator==(const GemmShape&, const GemmShape&) = default;
};

struct Op {
  int64_t id = 0;
  Phase phase = Phase::kForward;
  int64_t micro_batch = -1;  // -1 for once-per-step ops
  int64_t model_chunk = 0;
  int64_t layer = -1;  // global decoder layer index; -1 outside decoder layers
  std::string name;    // e.g. "attention.linear_qkv", "moe.dispatch"

  // Compute ops (collective == kNone).
  int64_t flops = 0;
  int64_t bytes = 0;  // bytes read + written by the kernel
  GemmShape gemm;     // set for GEMMs (m == 0 otherwise)

  // Communication ops.
  Collective collective = Collective::kNone;
  config::GroupKind group = config::GroupKind::kTp;
  int64_t group_size = 1;
  int64_t message_bytes = 0;
  int64_t peer = -1;  // global peer rank for send / recv

  std::vector<int64_t> deps;  // ids of ops that must finish first

  [[nodiscard]] bool IsComm() const { return collective != Collective::kNone; }
  friend bool operator==(const Op&, const Op&) = default;
};

[[nodiscard]] std::string ToString(Phase phase);
[[nodiscard]] std::string ToString(Collective collective);

}  // namespace trainscope::graph

#endif  // TRAINSCOPE_GRAPH_OP_H_
