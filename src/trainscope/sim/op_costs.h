// Binds the hardware cost models to the simulator: compute ops through the roofline of
// cost/compute_cost (precision from the FP8 flags, the GDN kernel backend), collectives through
// cost/collective_cost on the placement of the issuing rank's group in the cluster, plus the
// optional per-call communication memory guard; the flex dispatcher's dispatch and combine through
// the hierarchical DeepEP model of cost/flex_dispatch; the host launch floor of compute ops
// through cost/launch_overhead. Group placements are computed once per
// (group kind, rank) and cached inside the returned closures.
#ifndef TRAINSCOPE_SIM_OP_COSTS_H_
#define TRAINSCOPE_SIM_OP_COSTS_H_

#include <functional>
#include <vector>

#include "trainscope/config/cluster.h"
#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"
#include "trainscope/cost/compute_cost.h"
#include "trainscope/cost/flex_dispatch.h"
#include "trainscope/sim/step_simulator.h"

namespace trainscope::sim {

struct HardwareCostOptions {
  config::ClusterSpec cluster;
  cost::ComputeEfficiency compute;
  cost::GdnBackend gdn_backend = cost::GdnBackend::kFla;
  // Communication memory guard: seconds added to each collective for which `guard_applies`
  // returns true (unset = no guard).
  std::function<bool(const graph::Op&)> guard_applies;
  double guard_seconds = 0;
  // Multiplies the time of core attention (forward and backward): THD packing of short
  // sequences does less attention work than one dense causal sequence of the packed length.
  double attention_scale = 1;
  // The flex dispatcher (DeepEP normal kernels): its constants, and the share of the
  // token-expert assignments per expert (size E, summing to 1; empty = balanced routing).
  cost::FlexDispatchConstants flex;
  std::vector<double> expert_shares;
};

// The number format of the run's quantized GEMMs (Op::gemm_quantized): FP4 with --fp4-format,
// FP8 with --fp8-format, else BF16. GEMMs that are not quantized run in BF16 whatever it is.
[[nodiscard]] cost::MathPrecision GemmPrecision(const config::TrainingConfig& training);

// The cost model of `model` trained as `training` on options.cluster. Flex dispatch and combine
// ops are priced by cost::FlexExchangeSeconds over the rank's tp_ep group (DeepEP's view: u·E
// experts, top u·k); every other collective by cost::CollectiveSeconds. Compute ops get their host
// launch floor (cost::HostFloorSeconds; 0 inside the CUDA graphs of training.cuda_graph).
[[nodiscard]] OpCostModel BindHardwareCosts(const config::ModelConfig& model,
                                            const config::TrainingConfig& training,
                                            const HardwareCostOptions& options);

// The seconds a compute op runs as the simulator times it in isolation: max(device seconds,
// host launch floor), for exports that replay compute as fixed durations (Chakra ET, SimAI).
// `costs` is copied into the returned function.
[[nodiscard]] std::function<double(const graph::Op&)> ComputeWithHostFloor(OpCostModel costs);

}  // namespace trainscope::sim

#endif  // TRAINSCOPE_SIM_OP_COSTS_H_
