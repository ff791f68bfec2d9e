#include "trainscope/sim/op_costs.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "trainscope/config/rank_mapping.h"
#include "trainscope/cost/host_optimizer_cost.h"
#include "trainscope/cost/launch_overhead.h"
#include "trainscope/cost/memory.h"
#include "trainscope/error.h"

namespace trainscope::sim {
namespace {

using config::GroupKind;
using graph::Collective;
using graph::Op;

// GPUs that reach each other over NVLink in the flex kernels: HybridEP spans the NVLink domain;
// DeepEP's normal kernels only the ranks of one node (Megatron-Core's
// moe_flex_dispatcher_backend: "Currently only 'hybridep' backend supports the MNNVL case").
int64_t FlexNvlinkDomainGpus(const config::MoeRunConfig& moe, const config::ClusterSpec& cluster) {
  return moe.EffectiveFlexBackend() == config::FlexBackend::kHybridEp
             ? cluster.nvlink_domain_gpus
             : std::min(cluster.gpus_per_node, cluster.nvlink_domain_gpus);
}

// Group placements by (group kind, rank) and by endpoint pair, computed on first use.
class PlacementCache {
 public:
  PlacementCache(const config::TrainingConfig& training, const config::ClusterSpec& cluster)
      : mapping_(training.parallel),
        cluster_(cluster),
        flex_domain_gpus_(FlexNvlinkDomainGpus(training.moe, cluster)) {}

  // The flex kernels' NVLink domain of each rank of `rank`'s tp_ep group, in group order.
  const std::vector<int64_t>& TpEpDomains(int64_t rank) {
    auto it = tp_ep_domains_.find(rank);
    if (it == tp_ep_domains_.end()) {
      std::vector<int64_t> domains;
      for (const int64_t r : mapping_.GroupOf(GroupKind::kTpEp, rank)) {
        domains.push_back(r / flex_domain_gpus_);
      }
      if (domains.empty()) domains = {rank / flex_domain_gpus_};
      it = tp_ep_domains_.emplace(rank, std::move(domains)).first;
    }
    return it->second;
  }

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
  int64_t flex_domain_gpus_;
  std::map<std::pair<GroupKind, int64_t>, cost::GroupPlacement> groups_;
  std::map<std::pair<int64_t, int64_t>, cost::GroupPlacement> pairs_;
  std::map<int64_t, std::vector<int64_t>> tp_ep_domains_;
};

bool IsFlexExchange(const Op& op) {
  return op.role.purpose == graph::CommPurpose::kEpFlexDispatch ||
         op.role.purpose == graph::CommPurpose::kEpFlexCombine;
}

// What the flex dispatcher's ops need of the model and layout, in DeepEP's view: u·E experts
// and top u·k (token_dispatcher.py:1836-1842), the shares of the real experts spread over the
// u ETP shards of each (tp_ep group order: ETP fastest).
struct FlexRouting {
  int64_t num_experts = 0;  // E
  int64_t top_k = 0;        // k
  int64_t expert_parallel = 1;
  int64_t expert_tensor_parallel = 1;
  std::vector<double> virtual_shares;  // size u·E, or empty for balanced routing
  int64_t num_groups = 0;              // group-limited routing (MoeConfig), 0 = none
  int64_t group_top_k = 0;
};

FlexRouting FlexRoutingOf(const config::ModelConfig& model, const config::TrainingConfig& training,
                          const std::vector<double>& expert_shares) {
  FlexRouting routing{.num_experts = model.moe.num_experts,
                      .top_k = model.moe.top_k,
                      .expert_parallel = training.parallel.expert,
                      .expert_tensor_parallel = training.parallel.ExpertTensor(),
                      .num_groups = model.moe.num_groups,
                      .group_top_k = model.moe.group_top_k};
  if (expert_shares.empty() || routing.num_experts == 0) return routing;
  TRAINSCOPE_CHECK(static_cast<int64_t>(expert_shares.size()) == routing.num_experts,
                   "one expert share per expert");
  const int64_t u = routing.expert_tensor_parallel;
  const int64_t local = routing.num_experts / routing.expert_parallel;
  for (int64_t ep_rank = 0; ep_rank < routing.expert_parallel; ++ep_rank) {
    for (int64_t shard = 0; shard < u; ++shard) {
      for (int64_t i = 0; i < local; ++i) {
        routing.virtual_shares.push_back(expert_shares[static_cast<size_t>(ep_rank * local + i)] /
                                         static_cast<double>(u));
      }
    }
  }
  return routing;
}

// The exchange behind one flex op. The graph sizes the op as T·D·u rows (graph/moe_ops.cc
// FlexRows, D = e·[1 − C(E − E/e, k)/C(E, k)] distinct EP destinations per token), so one copy
// of the rank's tokens is message_bytes / (D·u).
cost::FlexExchange FlexExchangeOf(const Op& op, const FlexRouting& routing,
                                  const std::vector<int64_t>& domains) {
  TRAINSCOPE_CHECK(routing.num_experts > 0, "a flex op needs a MoE model");
  const double e = static_cast<double>(routing.expert_parallel);
  const double destinations = e * cost::HitProbability(static_cast<double>(routing.num_experts) / e,
                                                       routing.num_experts, routing.top_k);
  const int64_t u = routing.expert_tensor_parallel;
  // Node-limited routing is modelled for uniform scores only (FlexExchange contract).
  const auto num_domains =
      static_cast<int64_t>(std::set<int64_t>(domains.begin(), domains.end()).size());
  const int64_t max_domains =
      routing.virtual_shares.empty()
          ? cost::GroupLimitedDomains(routing.num_groups, routing.group_top_k, num_domains)
          : 0;
  return cost::FlexExchange{.token_bytes = static_cast<double>(op.message_bytes) /
                                           (destinations * static_cast<double>(u)),
                            .num_experts = u * routing.num_experts,
                            .top_k = u * routing.top_k,
                            .rank_domain = domains,
                            .expert_shares = routing.virtual_shares,
                            .max_domains_per_token = max_domains};
}

}  // namespace

cost::MathPrecision GemmPrecision(const config::TrainingConfig& training) {
  if (training.precision.fp4 != config::Fp4Format::kNone) return cost::MathPrecision::kFp4;
  return training.precision.fp8 == config::Fp8Format::kNone ? cost::MathPrecision::kBf16
                                                            : cost::MathPrecision::kFp8;
}

OpCostModel BindHardwareCosts(const config::ModelConfig& model,
                              const config::TrainingConfig& training,
                              const HardwareCostOptions& options) {
  auto shared = std::make_shared<const HardwareCostOptions>(options);
  auto cache = std::make_shared<PlacementCache>(training, shared->cluster);
  auto routing =
      std::make_shared<const FlexRouting>(FlexRoutingOf(model, training, options.expert_shares));
  const cost::MathPrecision precision = GemmPrecision(training);
  // The saved activations of each offloaded layer (--cpu-offloading-num-layers), at balanced
  // routing: what its D2H copy and H2D reload move over the host link.
  auto offloaded_bytes = std::make_shared<std::vector<int64_t>>();
  for (int64_t layer = 0; layer < training.OffloadedLayers(); ++layer) {
    offloaded_bytes->push_back(cost::OffloadedLayerBytes(model, training, layer));
  }
  OpCostModel costs;
  costs.compute_seconds = [shared, precision, offloaded_bytes](const Op& op) {
    if (cost::IsHostOptimizerOp(op)) return cost::HostOptimizerSeconds(op, shared->cluster);
    if (op.role.kind == graph::OpKind::kActivationOffload) {
      return static_cast<double>(offloaded_bytes->at(static_cast<size_t>(op.layer))) /
             shared->cluster.pcie_bytes_per_second;
    }
    // Only the quantized GEMMs run at the recipe's peak; the router and LM head stay BF16.
    const cost::MathPrecision op_precision =
        op.gemm_quantized ? precision : cost::MathPrecision::kBf16;
    double seconds = cost::ComputeSeconds(op, shared->cluster.gpu, shared->compute, op_precision,
                                          shared->gdn_backend);
    if (op.role.kind == graph::OpKind::kAttentionCore) seconds *= shared->attention_scale;
    return seconds;
  };
  auto run = std::make_shared<const config::TrainingConfig>(training);
  costs.host_seconds = [shared, run](const Op& op) {
    return cost::HostFloorSeconds(op, shared->cluster.gpu, shared->compute,
                                  cost::CapturedByCudaGraph(op, *run));
  };
  costs.comm_cost = [shared, cache, routing](const Op& op, int64_t rank) {
    const cost::GroupPlacement& placement = cache->Of(op, rank);
    if (IsFlexExchange(op)) {
      // DeepEP kernels: never guarded (not torch.distributed). The normal dispatch's host wait
      // for the received-token counts is a graph op of its own (OpKind::kHostSync).
      return CommCost{.seconds = cost::FlexExchangeSeconds(
                          FlexExchangeOf(op, *routing, cache->TpEpDomains(rank)), shared->cluster,
                          shared->flex),
                      .link = cost::LinkOf(placement)};
    }
    CommCost result{.seconds = cost::CollectiveSeconds(op.collective, op.message_bytes, placement,
                                                       shared->cluster),
                    .link = cost::LinkOf(placement)};
    if (shared->guard_applies && shared->guard_applies(op))
      result.host_seconds = shared->guard_seconds;
    return result;
  };
  return costs;
}

std::function<double(const graph::Op&)> ComputeWithHostFloor(OpCostModel costs) {
  return [costs = std::move(costs)](const graph::Op& op) {
    const double device = costs.compute_seconds(op);
    return costs.host_seconds ? std::max(device, costs.host_seconds(op)) : device;
  };
}

}  // namespace trainscope::sim
