#include "trainscope/graph/op.h"

namespace trainscope::graph {

std::string ToString(Phase phase) {
  switch (phase) {
    case Phase::kForward:
      return "forward";
    case Phase::kBackward:
      return "backward";
    case Phase::kRecompute:
      return "recompute";
    case Phase::kGradSync:
      return "grad_sync";
    case Phase::kOptimizer:
      return "optimizer";
  }
  return "unknown";
}

std::string ToString(Collective collective) {
  switch (collective) {
    case Collective::kNone:
      return "none";
    case Collective::kAllGather:
      return "all_gather";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kAllReduce:
      return "all_reduce";
    case Collective::kAllToAll:
      return "all_to_all";
    case Collective::kSend:
      return "send";
    case Collective::kRecv:
      return "recv";
    case Collective::kBroadcast:
      return "broadcast";
  }
  return "unknown";
}

}  // namespace trainscope::graph
