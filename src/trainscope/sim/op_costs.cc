#include "trainscope/sim/op_costs.h"

#include <algorithm>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "trainscope/config/rank_mapping.h"
#include "trainscope/cost/host_optimizer_cost.h"

namespace trainscope::sim {
namespace {

using config::GroupKind;
using graph::Collective;
using graph::Op;

// Group placements by (group kind, rank) and by endpoint pair, computed on first use.
class PlacementCache {
 public:
  PlacementCache(const config::TrainingConfig& training, const config::ClusterSpec& cluster)
      : mapping_(training.parallel), cluster_(cluster) {}

  const cost::GroupPlacement& Of(const Op& op, int64_t rank) {
    const bool p2p = op.collective == Collective::kSend || op.collective == Collective::kRecv;
    if (p2p) {
      int64_t peer = op.peer;
      if (peer < 0) {  // a CP ring step: the next rank of the ring
        const std::vector<int64_t> group = mapping_.GroupOf(op.group, rank);
        const auto at = std::find(group.begin(), group.end(), rank) - group.begin();
        peer = group[static_cast<size_t>((at + 1) % static_cast<int64_t>(group.size()))];
      }
      const std::pair<int64_t, int64_t> key{std::min(rank, peer), std::max(rank, peer)};
      auto it = pairs_.find(key);
      if (it == pairs_.end()) {
        it = pairs_.emplace(key, cost::PlaceGroup({key.first, key.second}, cluster_)).first;
      }
      return it->second;
    }
    const std::pair<GroupKind, int64_t> key{op.group, rank};
    auto it = groups_.find(key);
    if (it == groups_.end()) {
      std::vector<int64_t> ranks = mapping_.GroupOf(op.group, rank);
      if (ranks.empty()) ranks = {rank};
      it = groups_.emplace(key, cost::PlaceGroup(ranks, cluster_)).first;
    }
    return it->second;
  }

 private:
  config::RankMapping mapping_;
  const config::ClusterSpec& cluster_;
  std::map<std::pair<GroupKind, int64_t>, cost::GroupPlacement> groups_;
  std::map<std::pair<int64_t, int64_t>, cost::GroupPlacement> pairs_;
};

}  // namespace

cost::MathPrecision GemmPrecision(const config::TrainingConfig& training) {
  return training.precision.fp8 == config::Fp8Format::kNone ? cost::MathPrecision::kBf16
                                                            : cost::MathPrecision::kFp8;
}

OpCostModel BindHardwareCosts(const config::TrainingConfig& training,
                              const HardwareCostOptions& options) {
  auto shared = std::make_shared<const HardwareCostOptions>(options);
  auto cache = std::make_shared<PlacementCache>(training, shared->cluster);
  const cost::MathPrecision precision = GemmPrecision(training);
  OpCostModel costs;
  costs.compute_seconds = [shared, precision](const Op& op) {
    if (cost::IsHostOptimizerOp(op)) return cost::HostOptimizerSeconds(op, shared->cluster);
    double seconds = cost::ComputeSeconds(op, shared->cluster.gpu, shared->compute, precision,
                                          shared->gdn_backend);
    if (op.role.kind == graph::OpKind::kAttentionCore) seconds *= shared->attention_scale;
    return seconds;
  };
  costs.comm_cost = [shared, cache](const Op& op, int64_t rank) {
    const cost::GroupPlacement& placement = cache->Of(op, rank);
    CommCost result{.seconds = cost::CollectiveSeconds(op.collective, op.message_bytes, placement,
                                                       shared->cluster),
                    .link = cost::LinkOf(placement)};
    if (shared->guard_applies && shared->guard_applies(op)) result.seconds += shared->guard_seconds;
    return result;
  };
  return costs;
}

}  // namespace trainscope::sim
