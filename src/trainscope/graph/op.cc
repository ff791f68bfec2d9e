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

std::string_view FamilyName(OpBlock block) {
  switch (block) {
    case OpBlock::kUnset:
      return "unknown";
    case OpBlock::kInput:
      return "input";
    case OpBlock::kEmbedding:
      return "embedding";
    case OpBlock::kAttention:
      return "attention";
    case OpBlock::kGdn:
      return "gdn";
    case OpBlock::kMlp:
      return "mlp";
    case OpBlock::kMoeRouter:
    case OpBlock::kMoeRouted:
    case OpBlock::kMoeShared:
      return "moe";
    case OpBlock::kLmHead:
      return "lm_head";
    case OpBlock::kMtp:
      return "mtp";
    case OpBlock::kVision:
      return "vision";
    case OpBlock::kPipeline:
      return "pp";
    case OpBlock::kDataParallel:
      return "dp";
    case OpBlock::kExpertDataParallel:
      return "edp";
    case OpBlock::kTensorParallel:
      return "tp";
    case OpBlock::kOptimizer:
      return "optimizer";
    case OpBlock::kFsdp:
      return "fsdp";
    case OpBlock::kFp8Scaling:
      return "fp8";
    case OpBlock::kActivationOffload:
      return "offload";
  }
  return "unknown";
}

}  // namespace trainscope::graph
