// The periodic extension of long steps (sim/periodic_extension.h): extending the simulations at
// m1 = G + r and m2 = 2G + r micro-batches must reproduce the simulation of every micro-batch.
// The expected values come from simulating every micro-batch (extend_periodically = false), an
// independent path through the same event engine; the hardware cost model (H100 cluster, with
// interference and link sharing) makes the timelines realistic rather than hand-shaped.
#include "trainscope/sim/periodic_extension.h"

#include <gtest/gtest.h>

#include <string>

#include "tiny_configs.h"
#include "trainscope/io/cluster_file.h"
#include "trainscope/io/hf_config_loader.h"
#include "trainscope/sim/op_costs.h"
#include "trainscope/sim/step_simulator.h"

namespace trainscope::sim {
namespace {

using testing_configs::TinyModel;
using testing_configs::Training;

struct Pair {
  StepSimulation extended;
  StepSimulation full;
};

Pair Simulate(const config::ModelConfig& model, const config::TrainingConfig& training) {
  HardwareCostOptions options;
  options.cluster = io::ResolveCluster({.gpu = std::string("H100")});
  const OpCostModel costs = BindHardwareCosts(model, training, options);
  SimulationOptions full_options;
  full_options.extend_periodically = false;
  return {SimulateStep(model, training, costs), SimulateStep(model, training, costs, full_options)};
}

void ExpectSameStep(const Pair& p, int64_t m) {
  EXPECT_EQ(p.full.num_micro_batches, m);
  EXPECT_EQ(p.extended.num_micro_batches, m);
  EXPECT_LT(p.extended.simulated_micro_batches, m);
  EXPECT_NEAR(p.extended.step_seconds, p.full.step_seconds, 1e-9 * p.full.step_seconds);
  EXPECT_EQ(p.extended.busiest_pipeline_rank, p.full.busiest_pipeline_rank);
  const Breakdown& e = p.extended.breakdown;
  const Breakdown& f = p.full.breakdown;
  EXPECT_NEAR(e.total_compute_seconds, f.total_compute_seconds, 1e-9 * p.full.step_seconds);
  EXPECT_NEAR(e.bubble_seconds, f.bubble_seconds, 1e-6 * p.full.step_seconds);
  for (const auto& [family, seconds] : f.compute_seconds) {
    EXPECT_NEAR(e.compute_seconds.at(family), seconds, 1e-9 * p.full.step_seconds) << family;
  }
}

TEST(PeriodicExtensionTest, PlansOneAndTwoPeriodsPlusTheRemainder) {
  // 1F1B with p = 4: G = 4; m = 23 gives r = 3, m1 = 7, m2 = 11.
  const internal::ExtensionPlan plan = internal::PlanExtension(Training(1, 4, 1, 23));
  EXPECT_EQ(plan.period, 4);
  EXPECT_EQ(plan.first, 7);
  EXPECT_EQ(plan.second, 11);
  EXPECT_TRUE(plan.Extends());
  EXPECT_FALSE(internal::PlanExtension(Training(1, 4, 1, 19)).Extends());  // 19 <= 11 + 2G
}

TEST(PeriodicExtensionTest, OneFOneBMatchesTheFullSimulation) {
  for (const int64_t m : {16, 23, 40}) {
    ExpectSameStep(Simulate(TinyModel(), Training(2, 2, 2, m)), m);
  }
}

TEST(PeriodicExtensionTest, DeepPipelineWithDataParallelOverlapMatches) {
  config::TrainingConfig training = Training(1, 4, 2, 37);
  training.data_parallel.distributed_optimizer = true;
  training.data_parallel.overlap_grad_reduce = true;
  training.data_parallel.overlap_param_gather = true;
  ExpectSameStep(Simulate(TinyModel(), training), 37);
}

TEST(PeriodicExtensionTest, InterleavedScheduleMatches) {
  config::TrainingConfig training = Training(1, 2, 1, 26);
  training.parallel.virtual_stages = 2;
  ExpectSameStep(Simulate(TinyModel(), training), 26);
}

// FP8 delayed scaling: the cached weight casts of micro-batch 0 are a constant of the step and
// the scale updates repeat per pass, so the extension reproduces the FP8 overhead too.
TEST(PeriodicExtensionTest, Fp8OverheadMatches) {
  config::TrainingConfig training = Training(2, 2, 2, 23);
  training.precision.fp8 = config::Fp8Format::kHybrid;
  training.precision.fp8_recipe = config::Fp8Recipe::kDelayed;
  const Pair p = Simulate(TinyModel(), training);
  ExpectSameStep(p, 23);
  EXPECT_GT(p.full.breakdown.fp8_overhead_seconds, 0);
  EXPECT_NEAR(p.extended.breakdown.fp8_overhead_seconds, p.full.breakdown.fp8_overhead_seconds,
              1e-9 * p.full.step_seconds);
}

TEST(PeriodicExtensionTest, SingleStageMatches) {
  ExpectSameStep(Simulate(TinyModel(), Training(2, 1, 1, 9)), 9);
}

TEST(PeriodicExtensionTest, MoeWithExpertParallelMatches) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  config::TrainingConfig training = Training(1, 2, 4, 20);
  training.parallel.expert = 4;
  training.batch.seq_length = 1024;
  training.moe.dispatcher = config::TokenDispatcher::kAllToAll;
  training.moe.grouped_gemm = true;
  const Pair p = Simulate(model, training);
  ExpectSameStep(p, 20);
  // One token-count read-back per MoE layer and forward (docs/cost-model.md "Host syncs"): 24
  // layers a stage x 20 micro-batches, each 32.21 µs plus 4 D2H copies at 13.48 µs (x86 host,
  // 128 / 4 = 32 local experts, no permute fusion): 480 x 86.13 µs = 41.3424 ms.
  EXPECT_NEAR(p.full.breakdown.host_sync_seconds, 480 * 86.13e-6, 1e-9);
  EXPECT_NEAR(p.extended.breakdown.host_sync_seconds, 480 * 86.13e-6, 1e-9);
}

}  // namespace
}  // namespace trainscope::sim
