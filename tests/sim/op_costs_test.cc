// The hardware cost model's flex exchange (sim/op_costs.h): DeepSeek-V3's group-limited routing
// (n_group 8, topk_group 4) reaches the flex dispatcher as a node limit when every group fills
// whole NVLink domains. The expected seconds are cost::FlexExchangeSeconds of an exchange written
// out here by hand from the op's size.
#include "trainscope/sim/op_costs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/cost/flex_dispatch.h"
#include "trainscope/graph/layer_ops.h"
#include "trainscope/io/cluster_file.h"
#include "trainscope/io/hf_config_loader.h"

namespace trainscope::sim {
namespace {

// EP64 over 8 H100 nodes (8-GPU NVLink domains), t = 1, flex: one group of 32 experts per node,
// so a token reaches at most topk_group = 4 of the 8 nodes (arXiv:2412.19437 §2.1.2).
// The forward flex dispatch of decoder layer `layer`, if the layer has one.
std::optional<graph::Op> FlexDispatchOf(const config::ModelConfig& model,
                                        const config::TrainingConfig& training, int64_t layer) {
  for (graph::Op& op :
       graph::DecoderLayerForward(graph::MakeLayerOpContext(model, training), layer)) {
    if (op.role.purpose == graph::CommPurpose::kEpFlexDispatch) return std::move(op);
  }
  return std::nullopt;
}

// `experts` GPUs, one expert-parallel group, the flex dispatcher with grouped GEMMs, one sample of
// 4096 tokens per micro-batch.
config::TrainingConfig FlexTraining(int64_t experts) {
  config::TrainingConfig training;
  training.parallel = {.world_size = experts, .expert = experts, .expert_tensor = 1};
  training.batch = {.micro_batch_size = 1, .seq_length = 4096};
  training.moe.dispatcher = config::TokenDispatcher::kFlex;
  training.moe.grouped_gemm = true;
  return training;
}

TEST(OpCostsTest, DeepSeekV3GroupLimitedRoutingCapsTheFlexNodesATokenReaches) {
  const config::ModelConfig model = io::LoadPreset("DeepSeek-V3");
  config::TrainingConfig training = FlexTraining(64);
  HardwareCostOptions options;
  options.cluster = io::ResolveCluster({.gpu = std::string("H100")});
  const OpCostModel costs = BindHardwareCosts(model, training, options);
  const std::optional<graph::Op> dispatch = FlexDispatchOf(model, training, 3);  // a MoE layer
  ASSERT_TRUE(dispatch.has_value());
  // The graph sizes the op as T·D rows, D = e·[1 − C(E − E/e, k)/C(E, k)] (E/e = 4 experts a rank).
  double miss = 1;
  for (int i = 0; i < 8; ++i) miss *= (256.0 - 4 - i) / (256.0 - i);
  const double destinations = 64 * (1 - miss);
  cost::FlexExchange exchange{
      .token_bytes = static_cast<double>(dispatch->message_bytes) / destinations,
      .num_experts = 256,
      .top_k = 8,
      .max_domains_per_token = 4};
  for (int64_t r = 0; r < 64; ++r) exchange.rank_domain.push_back(r / 8);
  const double expected = cost::FlexExchangeSeconds(exchange, options.cluster, options.flex);
  const double seconds = costs.comm_cost(*dispatch, 0).seconds;
  EXPECT_NEAR(seconds, expected, 1e-9 * expected);
  exchange.max_domains_per_token = 0;  // unlimited routing costs more on the NICs
  EXPECT_LT(seconds, cost::FlexExchangeSeconds(exchange, options.cluster, options.flex));
}

// DeepEP's normal kernels reach NVLink peers only inside a node; HybridEP spans the NVLink
// domain (Megatron-Core: "only 'hybridep' backend supports the MNNVL case"). Qwen3-30B-A3B at
// EP 16 on GB200 (4 GPUs a tray, one NVL72 domain of 64): DeepEP's exchange is priced as the
// FlexExchange of 4 domains of 4 ranks (cross-tray traffic over RDMA), HybridEP's as one
// domain of 16.
TEST(OpCostsTest, DeepEpStaysInsideANodeWhileHybridEpSpansTheNvlinkDomain) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  config::TrainingConfig training = FlexTraining(16);
  HardwareCostOptions options;
  options.cluster = io::ResolveCluster({.gpu = std::string("GB200")});
  ASSERT_EQ(options.cluster.gpus_per_node, 4);
  ASSERT_GE(options.cluster.nvlink_domain_gpus, 16);
  const std::optional<graph::Op> dispatch = FlexDispatchOf(model, training, 0);
  ASSERT_TRUE(dispatch.has_value());
  const double deepep = BindHardwareCosts(model, training, options).comm_cost(*dispatch, 0).seconds;
  training.moe.flex_backend = config::FlexBackend::kHybridEp;
  const double hybridep =
      BindHardwareCosts(model, training, options).comm_cost(*dispatch, 0).seconds;
  // E/e = 8 experts a rank, top-8 of 128: D = 16·[1 − C(120, 8)/C(128, 8)].
  double miss = 1;
  for (int i = 0; i < 8; ++i) miss *= (128.0 - 8 - i) / (128.0 - i);
  cost::FlexExchange exchange{
      .token_bytes = static_cast<double>(dispatch->message_bytes) / (16 * (1 - miss)),
      .num_experts = 128,
      .top_k = 8};
  for (int64_t r = 0; r < 16; ++r) exchange.rank_domain.push_back(r / 4);
  const double by_node = cost::FlexExchangeSeconds(exchange, options.cluster, options.flex);
  EXPECT_NEAR(deepep, by_node, 1e-9 * by_node);
  exchange.rank_domain.assign(16, 0);
  const double one_domain = cost::FlexExchangeSeconds(exchange, options.cluster, options.flex);
  EXPECT_NEAR(hybridep, one_domain, 1e-9 * one_domain);
  EXPECT_GT(deepep, hybridep);
}

}  // namespace
}  // namespace trainscope::sim
