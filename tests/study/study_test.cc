// The study function: it composes the simulator, the metrics and the memory model exactly as
// their own entry points do, is deterministic and re-entrant, and applies the routing skew.
#include "trainscope/study/study.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "tiny_study.h"
#include "trainscope/error.h"
#include "trainscope/graph/step_graph.h"
#include "trainscope/io/cluster_file.h"
#include "trainscope/io/hf_config_loader.h"
#include "trainscope/study/dynamic_batches.h"

namespace trainscope::study {
namespace {

using testing_configs::TinyStudy;

TEST(StudyTest, MatchesTheSimulatorAndMemoryModelCalledDirectly) {
  const Study study = TinyStudy();
  const StudyResult result = RunStudy(study);
  sim::HardwareCostOptions options;
  options.cluster = study.cluster;
  const sim::StepSimulation direct = sim::SimulateStep(
      study.model, study.training, sim::BindHardwareCosts(study.model, study.training, options));
  EXPECT_EQ(result.simulation.step_seconds, direct.step_seconds);
  EXPECT_EQ(result.memory, cost::EstimateMemory(study.model, study.training, {}));
  // tokens/s/GPU = GBS · s / step / W (the definition in sim/step_metrics.h).
  const config::TrainingConfig& t = study.training;
  const double tokens = static_cast<double>(t.batch.global_batch_size.value_or(
                            t.batch.micro_batch_size * t.parallel.Data())) *
                        static_cast<double>(t.batch.seq_length);
  EXPECT_DOUBLE_EQ(result.metrics.tokens_per_second_per_gpu,
                   tokens / direct.step_seconds / static_cast<double>(t.parallel.world_size));
  EXPECT_EQ(result.moe_load_factor, 1);
  EXPECT_FALSE(result.sequence_packing);
}

TEST(StudyTest, IsDeterministicAcrossThreads) {
  const Study study = TinyStudy();
  const double expected = RunStudy(study).simulation.step_seconds;
  double a = 0;
  double b = 0;
  std::thread first([&] { a = RunStudy(study).simulation.step_seconds; });
  std::thread second([&] { b = RunStudy(study).simulation.step_seconds; });
  first.join();
  second.join();
  EXPECT_EQ(a, expected);
  EXPECT_EQ(b, expected);
}

TEST(StudyTest, RoutingSkewRaisesTheLoadFactorOfMoeModelsOnly) {
  Study dense = TinyStudy();
  dense.routing_skew = cost::RoutingSkew{.zipf_exponent = 1.0};
  EXPECT_EQ(MoeLoadFactor(dense), 1);  // no MoE layers: nothing to skew

  Study moe{.model = io::LoadPreset("Qwen3-30B-A3B")};
  moe.training.parallel = {.world_size = 8, .expert = 8};
  moe.routing_skew = cost::RoutingSkew{.zipf_exponent = 0.0};
  EXPECT_DOUBLE_EQ(MoeLoadFactor(moe), 1.0);  // s = 0 is uniform routing
  moe.routing_skew = cost::RoutingSkew{.zipf_exponent = 1.0};
  EXPECT_GT(MoeLoadFactor(moe), 1.0);
  EXPECT_EQ(MemoryOverheads(moe).moe_load_factor, MoeLoadFactor(moe));
}

// HybridEP's rank budget drops the tokens over it, so the step's routed-expert load is capped
// at the budget; a busiest rank over it makes Megatron-Core's overflow runner run the step again
// without the budget (megatron/training/training.py), which the step's time includes.
TEST(StudyTest, RankBudgetCapsTheLoadAndAnOverflowRerunsTheStep) {
  Study study{.model = io::LoadPreset("Qwen3-30B-A3B"), .cluster = TinyStudy().cluster};
  study.training.parallel = {.world_size = 8, .expert = 8};
  study.training.moe.dispatcher = config::TokenDispatcher::kFlex;
  study.training.moe.flex_backend = config::FlexBackend::kHybridEp;
  study.training.moe.te_op_fuser = true;
  study.training.moe.rank_capacity_factor = 1.5;
  study.routing_skew = cost::RoutingSkew{.load_factor = 1.2};
  EXPECT_DOUBLE_EQ(SimulatedMoeLoadFactor(study), 1.2);
  const StudyResult within = RunStudy(study);
  EXPECT_FALSE(within.overflow_rerun_seconds.has_value());
  EXPECT_EQ(within.metrics.step_seconds, within.simulation.step_seconds);

  study.routing_skew = cost::RoutingSkew{.load_factor = 2.0};
  EXPECT_DOUBLE_EQ(MoeLoadFactor(study), 2.0);
  EXPECT_DOUBLE_EQ(SimulatedMoeLoadFactor(study), 1.5);
  const StudyResult over = RunStudy(study);
  Study eager = study;
  eager.training.moe.rank_capacity_factor.reset();
  const double eager_seconds = RunStudy(eager).simulation.step_seconds;
  ASSERT_TRUE(over.overflow_rerun_seconds.has_value());
  EXPECT_EQ(*over.overflow_rerun_seconds, eager_seconds);
  EXPECT_EQ(over.metrics.step_seconds, over.simulation.step_seconds + eager_seconds);
  // The capped attempt carries less routed work than the uncapped rerun.
  EXPECT_LT(over.simulation.step_seconds, eager_seconds);
}

TEST(StudyTest, CommGuardAddsItsCostPerGuardedCall) {
  Study study = TinyStudy();
  const double without = RunStudy(study).simulation.step_seconds;
  study.comm_guard = {.mode = sim::CommGuardMode::kAll, .seconds_per_call = 1e-3};
  EXPECT_GT(RunStudy(study).simulation.step_seconds, without);
}

TEST(StudyTest, CommGuardClearsOnTheShareOfCallsAboveTheFreeMemoryLine) {
  Study study = TinyStudy();
  study.comm_guard = {.mode = sim::CommGuardMode::kAll};
  const cost::RankMemory rank = [&] {
    const cost::MemoryEstimate memory = EstimateStudyMemory(study);
    return memory.stages.at(static_cast<size_t>(memory.max_peak_pipeline_rank));
  }();
  // Put the 3 GiB line halfway through the activations: half the calls clear.
  const double threshold = 3.0 * 1024 * 1024 * 1024;
  study.cluster.gpu.memory_bytes =
      rank.peak_bytes - rank.activations_bytes / 2 + static_cast<int64_t>(threshold);
  const std::optional<CommGuardReport> report = EstimateCommGuard(study);
  ASSERT_TRUE(report.has_value());
  EXPECT_NEAR(report->clear_fraction, 0.5, 1e-9);
  // 50 µs check + 0.5 x (66 ms gc.collect + 4 ms empty_cache).
  EXPECT_NEAR(report->seconds_per_call, 50e-6 + 0.5 * 70e-3, 1e-12);
  // The count extrapolated from two small graphs equals the full graph's.
  const graph::StepGraph graph = graph::BuildStepGraph(study.model, study.training, 0);
  const auto direct = std::count_if(graph.ops.begin(), graph.ops.end(), [](const graph::Op& op) {
    return sim::GuardApplies(op, sim::CommGuardMode::kAll);
  });
  EXPECT_EQ(report->guarded_calls, direct);
  EXPECT_NEAR(report->seconds, static_cast<double>(direct) * report->seconds_per_call, 1e-9);
  // The guard is off: no report.
  study.comm_guard.mode = sim::CommGuardMode::kOff;
  EXPECT_FALSE(EstimateCommGuard(study).has_value());
}

// Dynamic batching packs the step's samples into bins; the simulated one-sequence micro-batch
// carries the bins' mean sample count for per-sample host work. 16 samples of 4096 tokens at a
// budget of 4096 x c 2 = 8192 tokens: two per bin, 8 bins (d = 2 ranks of 4), 16 / 8 = 2.
TEST(StudyTest, DynamicBinsCarryTheirMeanSampleCount) {
  Study study = TinyStudy();
  study.training.parallel = {.world_size = 8, .tensor = 2, .context = 2};
  study.training.sequence_parallel = true;
  study.training.framework.framework = config::Framework::kSlime;
  study.training.batch.global_batch_size = 16;
  study.training.batch.seq_length = 4096;
  study.training.batch.max_tokens_per_gpu = 4096;
  const std::optional<DynamicBatches> batches = PlanDynamicBatches(study);
  ASSERT_TRUE(batches.has_value());
  EXPECT_EQ(batches->step.num_bins, 8);
  EXPECT_DOUBLE_EQ(batches->simulated.batch.samples_per_micro_batch, 2.0);
  EXPECT_DOUBLE_EQ(batches->memory.batch.samples_per_micro_batch, 2.0);
}

// --moe-flex-dispatcher-num-sms N: compute that runs beside a flex exchange (here the combined
// 1F1B overlap) is slowed by 1/(1 − N/132) − 1 on Hopper's 132 SMs, so more SMs for the kernels
// is a longer step; N at or above the GPU's SM count is an input error naming the flag.
TEST(StudyTest, FlexSmCountSetsTheSlowdownOfComputeBesideTheExchange) {
  Study study{.model = io::LoadPreset("Qwen3-30B-A3B")};
  study.cluster = io::ResolveCluster({.gpu = std::string("H100")});
  study.training.parallel = {.world_size = 16, .expert = 16, .expert_tensor = 1};
  study.training.batch = {.micro_batch_size = 1, .global_batch_size = 64, .seq_length = 4096};
  study.training.moe.dispatcher = config::TokenDispatcher::kFlex;
  study.training.moe.grouped_gemm = true;
  study.training.moe.overlap_expert_parallel_comm = true;
  study.training.moe.flex_num_sms = 8;
  const double few = RunStudy(study).simulation.step_seconds;
  study.training.moe.flex_num_sms = 66;
  const double half = RunStudy(study).simulation.step_seconds;
  EXPECT_GT(half, few);
  study.training.moe.flex_num_sms = 132;
  EXPECT_THROW((void)RunStudy(study), trainscope::InputError);
}

}  // namespace
}  // namespace trainscope::study
