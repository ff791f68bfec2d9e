// The discrete-event step simulator against hand-derived pipeline timelines. The cost models
// here are closed forms chosen so the expected step times can be worked out on paper (each
// derivation is in the test); the hardware cost models are tested in tests/cost.
#include "trainscope/sim/step_simulator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <utility>

#include "tiny_configs.h"
#include "trainscope/io/hf_config_loader.h"
#include "trainscope/sim/step_metrics.h"

namespace trainscope::sim {
namespace {

constexpr double kMs = 1e-3;

using testing_configs::TinyModel;
using testing_configs::Training;

// Only the QKV projection costs time: 1 ms forward, 1 ms each for its dgrad and wgrad, so a
// stage with k layers has F = k ms and B = 2k ms per micro-batch; communication is free.
OpCostModel QkvOnlyCosts() {
  return OpCostModel{.compute_seconds =
                         [](const graph::Op& op) {
                           return op.name.starts_with("attention.linear_qkv") ? kMs : 0.0;
                         },
                     .comm_cost = [](const graph::Op&, int64_t) { return CommCost{}; }};
}

// Compute from FLOPs and bytes at 1 TFLOP/s and 1 TB/s; communication at 1 GB/s.
OpCostModel LinearCosts() {
  return OpCostModel{.compute_seconds =
                         [](const graph::Op& op) {
                           return static_cast<double>(op.flops) * 1e-12 +
                                  static_cast<double>(op.bytes) * 1e-12;
                         },
                     .comm_cost =
                         [](const graph::Op& op, int64_t) {
                           return CommCost{.seconds = static_cast<double>(op.message_bytes) * 1e-9};
                         }};
}

TEST(StepSimulatorTest, SingleGpuStepEqualsSummedCompute) {
  const config::ModelConfig model = TinyModel();
  const config::TrainingConfig training = Training(1, 1, 1, 3);
  const OpCostModel costs = LinearCosts();
  const StepSimulation sim = SimulateStep(model, training, costs);
  // One rank, no collectives: every op runs back to back on the compute stream.
  double summed = 0;
  for (const graph::Op& op : sim.lanes.front().graph.ops) {
    ASSERT_FALSE(op.IsComm()) << op.name;
    summed += costs.compute_seconds(op);
  }
  EXPECT_NEAR(sim.step_seconds, summed, 1e-12);
  EXPECT_NEAR(sim.breakdown.total_compute_seconds, summed, 1e-12);
  EXPECT_NEAR(sim.breakdown.bubble_seconds, 0, 1e-12);
  EXPECT_TRUE(sim.breakdown.exposed_comm_seconds.empty());
}

TEST(StepSimulatorTest, OneFOneBMatchesHandTimeline) {
  // p = 2 stages of 2 layers, m = 4: F = 2 ms, B = 4 ms. Stage 0 runs F0 F1 B0 F2 B1 F3 B2 B3,
  // stage 1 F0 B0 F1 B1 F2 B2 F3 B3. Worked timeline (ms): s0 F0 0-2, F1 2-4; s1 F0 2-4, B0 4-8;
  // s0 B0 8-12, F2 12-14; s1 F1 8-10, B1 10-14; s0 B1 14-18, F3 18-20; s1 F2 14-16, B2 16-20;
  // s0 B2 20-24; s1 F3 20-22, B3 22-26; s0 B3 26-30. Step = 30 ms = (m + p − 1)(F + B).
  const StepSimulation sim = SimulateStep(TinyModel(), Training(1, 2, 1, 4), QkvOnlyCosts());
  EXPECT_NEAR(sim.step_seconds, 30 * kMs, 1e-12);
  ASSERT_EQ(sim.lanes.size(), 2u);
  EXPECT_NEAR(sim.lanes[1].end_seconds, 26 * kMs, 1e-12);
  EXPECT_EQ(sim.critical_pipeline_rank, 0);
  // Stage 0 computes 4·(2 + 4) = 24 ms; the other 6 ms is bubble (free communication).
  EXPECT_NEAR(sim.breakdown.total_compute_seconds, 24 * kMs, 1e-12);
  EXPECT_NEAR(sim.breakdown.bubble_seconds, 6 * kMs, 1e-12);
  // Stage 1 also computes 24 ms and waits 2 ms at the start and 4 ms at the end.
  EXPECT_NEAR(sim.stage_breakdowns[1].bubble_seconds, 6 * kMs, 1e-12);
}

// Host floor: the QKV GEMMs take 1 ms on the device; every compute op needs 3 ms of host time
// to launch. An op takes max(device, host), so each of the 3 QKV ops (forward, dgrad, wgrad) of
// each of the 2 layers takes 3 ms and every other compute op 3 ms too: on one GPU with m = 1 the
// step is 3 ms × (compute ops), of which 1 ms per QKV op is compute and the rest launch overhead.
TEST(StepSimulatorTest, HostFloorMakesLaunchBoundOpsWaitAndIsReportedApart) {
  const config::TrainingConfig training = Training(1, 1, 1, 1);
  OpCostModel costs = QkvOnlyCosts();
  costs.host_seconds = [](const graph::Op&) { return 3 * kMs; };
  const StepSimulation sim = SimulateStep(TinyModel(), training, costs);
  int64_t compute_ops = 0, qkv_ops = 0;
  for (const graph::Op& op : sim.lanes.front().graph.ops) {
    if (op.IsComm()) continue;
    ++compute_ops;
    if (op.name.starts_with("attention.linear_qkv")) ++qkv_ops;
  }
  ASSERT_GT(qkv_ops, 0);
  EXPECT_NEAR(sim.step_seconds, 3 * kMs * static_cast<double>(compute_ops), 1e-12);
  EXPECT_NEAR(sim.breakdown.total_compute_seconds, kMs * static_cast<double>(qkv_ops), 1e-12);
  EXPECT_NEAR(sim.breakdown.launch_overhead_seconds,
              sim.step_seconds - kMs * static_cast<double>(qkv_ops), 1e-12);
  EXPECT_NEAR(sim.breakdown.bubble_seconds, 0, 1e-12);
  // A device time above the host time hides it: 5 ms ops with a 3 ms floor report no overhead.
  costs.compute_seconds = [](const graph::Op&) { return 5 * kMs; };
  const StepSimulation device_bound = SimulateStep(TinyModel(), training, costs);
  EXPECT_NEAR(device_bound.breakdown.launch_overhead_seconds, 0, 1e-12);
}

// --cpu-offloading-num-layers 2 on the 4-layer model, m = 1, F = 1 ms and B = 2 ms per layer
// (QKV only), every host copy T ms. Copies run on their own stream; layer i+2's forward waits for
// layer i's D2H copy, and offloaded layer i's reload starts with layer i+1's backward, which layer
// i's backward waits for. T = 3 ms, worked timeline (ms): L0 0-1, D2H0 1-4, L1 1-2, D2H1 4-7,
// L2 4-5 (waits 2), L3 7-8 (waits 2); backward L3 8-10, L2 10-12, reload1 10-13, L1 13-15
// (waits 1), reload0 13-16, L0 16-18 (waits 1): 18 ms, 6 of them exposed copies. T = 0.5 ms hides
// every copy: 4·1 + 4·2 = 12 ms.
TEST(StepSimulatorTest, ActivationOffloadCopiesOverlapTheNextLayers) {
  config::TrainingConfig training = Training(1, 1, 1, 1);
  training.cpu_offloading = true;
  training.cpu_offloading_num_layers = 2;
  const auto costs = [](double copy_seconds) {
    OpCostModel model = QkvOnlyCosts();
    model.compute_seconds = [copy_seconds](const graph::Op& op) {
      if (op.role.kind == graph::OpKind::kActivationOffload) return copy_seconds;
      return op.name.starts_with("attention.linear_qkv") ? kMs : 0.0;
    };
    return model;
  };
  const StepSimulation slow = SimulateStep(TinyModel(), training, costs(3 * kMs));
  int64_t copies = 0;
  for (const graph::Op& op : slow.lanes.front().graph.ops) {
    if (op.role.kind == graph::OpKind::kActivationOffload) {
      ++copies;
      EXPECT_LT(op.layer, 2) << op.name;
      EXPECT_EQ(slow.lanes.front().timings[static_cast<size_t>(op.id)].stream, Stream::kHostCopy);
    }
  }
  EXPECT_EQ(copies, 4);  // a D2H copy and a reload for each of the 2 layers
  EXPECT_NEAR(slow.step_seconds, 18 * kMs, 1e-12);
  EXPECT_NEAR(slow.breakdown.exposed_comm_seconds.at("offload"), 6 * kMs, 1e-12);
  EXPECT_NEAR(slow.breakdown.total_compute_seconds, 12 * kMs, 1e-12);
  EXPECT_NEAR(SimulateStep(TinyModel(), training, costs(0.5 * kMs)).step_seconds, 12 * kMs, 1e-12);
}

TEST(StepSimulatorTest, InterleavingShrinksTheBubble) {
  // v = 2 chunks of one layer: F_c = 1 ms, B_c = 2 ms. Compute per stage is unchanged
  // (m·v·(F_c + B_c) = 24 ms) and the bubble is (p − 1)(F_c + B_c) = 3 ms, half of 1F1B's.
  config::TrainingConfig training = Training(1, 2, 1, 4);
  training.parallel.virtual_stages = 2;
  const StepSimulation sim = SimulateStep(TinyModel(), training, QkvOnlyCosts());
  EXPECT_NEAR(sim.breakdown.total_compute_seconds, 24 * kMs, 1e-12);
  EXPECT_NEAR(sim.step_seconds, 27 * kMs, 1e-12);
}

TEST(StepSimulatorTest, BreakdownPartitionsEveryStage) {
  config::TrainingConfig training = Training(2, 2, 2, 4);
  training.sequence_parallel = true;
  training.data_parallel.distributed_optimizer = true;
  const StepSimulation sim = SimulateStep(TinyModel(), training, LinearCosts());
  for (const Breakdown& stage : sim.stage_breakdowns) {
    EXPECT_NEAR(stage.total_compute_seconds + stage.total_exposed_comm_seconds +
                    stage.launch_overhead_seconds + stage.bubble_seconds,
                sim.step_seconds, 1e-9 * sim.step_seconds);
    EXPECT_GT(stage.exposed_comm_seconds.at("tp"), 0);
    EXPECT_GT(stage.exposed_comm_seconds.at("dp"), 0);
  }
  double critical = 0;
  for (const CriticalPathShare& share : sim.critical_path) critical += share.seconds;
  EXPECT_NEAR(critical, sim.step_seconds, 1e-9 * sim.step_seconds);
}

TEST(StepSimulatorTest, OverlapFeaturesNeverSlowTheStep) {
  config::TrainingConfig training = Training(2, 2, 2, 4);
  training.sequence_parallel = true;
  training.data_parallel.distributed_optimizer = true;
  const SimulationOptions no_interference{.interference_fraction = 0};
  const double base =
      SimulateStep(TinyModel(), training, LinearCosts(), no_interference).step_seconds;
  config::TrainingConfig overlapped = training;
  overlapped.data_parallel.overlap_grad_reduce = true;
  overlapped.data_parallel.overlap_param_gather = true;
  overlapped.overlap.tp_comm_overlap = true;
  const double with_overlap =
      SimulateStep(TinyModel(), overlapped, LinearCosts(), no_interference).step_seconds;
  EXPECT_LT(with_overlap, base);
}

// Only the forward QKV GEMM (4 ms) and the all-gather that feeds it (2 ms) take time.
OpCostModel QkvGemmAndGatherCosts() {
  return OpCostModel{
      .compute_seconds =
          [](const graph::Op& op) {
            return op.name == "attention.linear_qkv" && op.phase == graph::Phase::kForward ? 4 * kMs
                                                                                           : 0.0;
          },
      .comm_cost =
          [](const graph::Op& op, int64_t) {
            const bool qkv_gather = op.phase == graph::Phase::kForward &&
                                    op.collective == graph::Collective::kAllGather &&
                                    op.name.starts_with("attention.linear_qkv");
            return CommCost{.seconds = qkv_gather ? 2 * kMs : 0.0};
          }};
}

TEST(StepSimulatorTest, TensorParallelOverlapPipelinesCommWithGemm) {
  // One GEMM of 4 ms fed by a 2 ms all-gather over t = 2: in series 6 ms; pipelined in t chunks
  // the GEMM starts after the first chunk (1 ms) and ends at max(1 + 4, 2 + 4/2) = 5 ms.
  config::TrainingConfig training = Training(2, 1, 1, 1);
  training.sequence_parallel = true;
  training.overlap.tp_comm_overlap = true;
  const OpCostModel costs = QkvGemmAndGatherCosts();
  const SimulationOptions no_interference{.interference_fraction = 0};
  const StepSimulation sim = SimulateStep(TinyModel(), training, costs, no_interference);
  // Four layers, each 5 ms instead of 6 ms.
  EXPECT_NEAR(sim.step_seconds, 4 * 5 * kMs, 1e-12);
  training.overlap.tp_comm_overlap = false;
  EXPECT_NEAR(SimulateStep(TinyModel(), training, costs, no_interference).step_seconds, 4 * 6 * kMs,
              1e-12);
}

TEST(StepSimulatorTest, TensorParallelOverlapReachesPastFp8Casts) {
  // The same 4 ms GEMM and 2 ms all-gather under FP8: the graph issues the operands' casts
  // (graph/fp8_ops.h) between the gather and the GEMM; the gather still pipelines with the GEMM
  // (5 ms per layer, not 6), the casts costing nothing here.
  config::TrainingConfig training = Training(2, 1, 1, 1);
  training.sequence_parallel = true;
  training.overlap.tp_comm_overlap = true;
  training.precision.fp8 = config::Fp8Format::kHybrid;
  training.precision.fp8_recipe = config::Fp8Recipe::kTensorwise;
  const OpCostModel costs = QkvGemmAndGatherCosts();
  const SimulationOptions no_interference{.interference_fraction = 0};
  EXPECT_NEAR(SimulateStep(TinyModel(), training, costs, no_interference).step_seconds, 4 * 5 * kMs,
              1e-12);
}

TEST(StepSimulatorTest, MoeOverlapsHideExpertParallelExchanges) {
  // Qwen3.5-35B-A3B (shared expert in every MoE layer), two layers, EP 2: the shared expert can
  // run while the dispatch all-to-all is in flight, and with the 1F1B A2A overlap the exchanges
  // run beside their layer's compute. Either overlap shortens the step; neither lengthens it.
  config::ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  model.layers.resize(2);
  model.num_mtp_layers = 0;
  config::TrainingConfig training = Training(1, 1, 2, 2);
  training.parallel.expert = 2;
  training.moe.dispatcher = config::TokenDispatcher::kAllToAll;
  training.moe.grouped_gemm = true;
  const SimulationOptions no_interference{.interference_fraction = 0};
  const double base = SimulateStep(model, training, LinearCosts(), no_interference).step_seconds;
  config::TrainingConfig shared = training;
  shared.moe.shared_expert_overlap = true;
  EXPECT_LT(SimulateStep(model, shared, LinearCosts(), no_interference).step_seconds, base);
  config::TrainingConfig a2a = training;
  a2a.moe.overlap_expert_parallel_comm = true;
  EXPECT_LT(SimulateStep(model, a2a, LinearCosts(), no_interference).step_seconds, base);
}

// Qwen3-30B-A3B cut to one layer, EP 2, alltoall dispatcher with grouped GEMM, two
// micro-batches, no pipeline.
std::pair<config::ModelConfig, config::TrainingConfig> OneLayerExpertParallel() {
  config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  model.layers.resize(1);
  config::TrainingConfig training = Training(1, 1, 2, 2);
  training.parallel.expert = 2;
  training.moe.dispatcher = config::TokenDispatcher::kAllToAll;
  training.moe.grouped_gemm = true;
  return {model, training};
}

// The given compute cost, and 1 ms for every EP all-to-all.
OpCostModel ExpertExchangeCosts(std::function<double(const graph::Op&)> compute_seconds) {
  return OpCostModel{
      .compute_seconds = std::move(compute_seconds), .comm_cost = [](const graph::Op& op, int64_t) {
        const bool exchange =
            op.collective == graph::Collective::kAllToAll && op.group == config::GroupKind::kEp;
        return CommCost{.seconds = exchange ? kMs : 0.0};
      }};
}

TEST(StepSimulatorTest, ExpertParallelOverlapPairsAForwardWithABackward) {
  // Qwen3-30B-A3B, one layer, EP 2, alltoall, two micro-batches, no pipeline: the passes are
  // issued F0 B0 F1 B1 and Megatron-Core's combined 1F1B runs F0, then B0 with F1, then B1
  // (model_chunk_schedule_plan.py). Only the expert fc1 forward GEMM (10 ms) and the EP
  // all-to-alls (1 ms each: tokens, probs and combine forward, their three gradients backward)
  // take time; every op waits for the one before it in its pass.
  // Without overlap a micro-batch takes 3 + 10 + 3 = 16 ms: 32 ms.
  // With it: F0 alone, 0-13 (tokens, probs, fc1, combine). The pair from 13: B0's combine
  // gradient 13-14 on the EP stream, then F1's tokens 14-15 and probs 15-16, B0's probs and
  // tokens gradients 16-17 and 17-18; F1's fc1 16-26 (after its probs), its combine 26-27 and
  // unpermute at 27. B1 alone: its three gradients, 27-30. 30 ms.
  auto [model, training] = OneLayerExpertParallel();
  const OpCostModel costs = ExpertExchangeCosts([](const graph::Op& op) {
    return op.name == "moe.experts.linear_fc1" && op.role.pass == graph::OpPass::kForward ? 10 * kMs
                                                                                          : 0.0;
  });
  const SimulationOptions no_interference{.interference_fraction = 0};
  EXPECT_NEAR(SimulateStep(model, training, costs, no_interference).step_seconds, 32 * kMs, 1e-12);
  training.moe.overlap_expert_parallel_comm = true;
  EXPECT_NEAR(SimulateStep(model, training, costs, no_interference).step_seconds, 30 * kMs, 1e-12);
}

TEST(StepSimulatorTest, DelayedWeightGradientsLetTheDispatchGradientStartEarlier) {
  // The same pair with a 6 ms expert fc1 weight gradient in the backward. Without
  // --delay-wgrad-compute B0's probs gradient waits for it (the expert backward is one node in
  // Megatron); with it (backward_dw) the exchange starts once the data gradients are done and
  // runs beside the weight gradient.
  auto [model, training] = OneLayerExpertParallel();
  training.moe.overlap_expert_parallel_comm = true;
  const OpCostModel costs = ExpertExchangeCosts([](const graph::Op& op) {
    return op.name == "moe.experts.linear_fc1.wgrad" ? 6 * kMs : 0.0;
  });
  const SimulationOptions no_interference{.interference_fraction = 0};
  const auto timing = [&](const StepSimulation& sim, const std::string& name) {
    const LaneTimeline& lane = sim.lanes.front();
    for (const graph::Op& op : lane.graph.ops) {
      if (op.micro_batch == 0 && op.name == name) return lane.timings[static_cast<size_t>(op.id)];
    }
    ADD_FAILURE() << name;
    return OpTiming{};
  };
  const StepSimulation plain = SimulateStep(model, training, costs, no_interference);
  EXPECT_GE(timing(plain, "moe.dispatch.a2a_probs.grad").start_seconds,
            timing(plain, "moe.experts.linear_fc1.wgrad").end_seconds);
  training.moe.delay_wgrad_compute = true;
  const StepSimulation delayed = SimulateStep(model, training, costs, no_interference);
  EXPECT_LT(timing(delayed, "moe.dispatch.a2a_probs.grad").start_seconds,
            timing(delayed, "moe.experts.linear_fc1.wgrad").end_seconds);
  EXPECT_LE(delayed.step_seconds, plain.step_seconds);
}

TEST(StepSimulatorTest, DeterministicAcrossRuns) {
  config::TrainingConfig training = Training(2, 2, 2, 8);
  training.parallel.virtual_stages = 2;
  training.sequence_parallel = true;
  training.data_parallel.distributed_optimizer = true;
  training.data_parallel.overlap_grad_reduce = true;
  const StepSimulation a = SimulateStep(TinyModel(), training, LinearCosts());
  const StepSimulation b = SimulateStep(TinyModel(), training, LinearCosts());
  EXPECT_EQ(a.step_seconds, b.step_seconds);
  ASSERT_EQ(a.lanes.size(), b.lanes.size());
  for (size_t l = 0; l < a.lanes.size(); ++l) {
    ASSERT_EQ(a.lanes[l].timings.size(), b.lanes[l].timings.size());
    for (size_t i = 0; i < a.lanes[l].timings.size(); ++i) {
      EXPECT_EQ(a.lanes[l].timings[i].start_seconds, b.lanes[l].timings[i].start_seconds);
    }
  }
}

TEST(StepSimulatorTest, MoeLoadFactorScalesRoutedOpsOnly) {
  // A balanced single-GPU step versus the same step with the busiest expert rank at 2x: the
  // difference is exactly the summed time of the routed MoE ops (their time doubles).
  config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  model.layers.resize(2);
  const config::TrainingConfig training = Training(1, 1, 1, 1);
  const OpCostModel costs = LinearCosts();
  const StepSimulation balanced = SimulateStep(model, training, costs);
  const StepSimulation skewed = SimulateStep(model, training, costs, {.moe_load_factor = 2});
  double routed = 0;
  for (const graph::Op& op : balanced.lanes.front().graph.ops) {
    if (op.name.starts_with("moe.experts") || op.name.starts_with("moe.permute") ||
        op.name.starts_with("moe.unpermute") || op.name.starts_with("moe.sort_chunks") ||
        op.name.starts_with("moe.unsort_chunks") || op.name.starts_with("moe.dispatch") ||
        op.name.starts_with("moe.combine")) {
      routed += costs.compute_seconds(op);
    }
  }
  ASSERT_GT(routed, 0);
  EXPECT_NEAR(skewed.step_seconds - balanced.step_seconds, routed, 1e-12);
}

// The 6·N·D convention: Qwen3-30B-A3B has 3,353,032,704 active parameters (KerasHub qwen3_moe
// presets; embeddings included). GBS 8 × 4096 tokens in 2 s on 8 GPUs of 1e15 FLOP/s:
// 6 · 3,353,032,704 · 32,768 / 2 / 8 / 1e15 = 0.041200...
TEST(StepMetricsTest, ReportsSixNActiveMfuBesideMegatronMfu) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  config::TrainingConfig training;
  training.parallel.world_size = 8;
  training.batch.global_batch_size = 8;
  const StepMetrics metrics = ComputeStepMetrics(model, training, 2.0, 1e15);
  const double expected_flops = 6.0 * 3'353'032'704.0 * 8 * 4096;
  EXPECT_DOUBLE_EQ(metrics.six_n_flops_per_step, expected_flops);
  EXPECT_DOUBLE_EQ(metrics.six_n_mfu, expected_flops / 2.0 / 8 / 1e15);
  EXPECT_GT(metrics.mfu, 0);
}

}  // namespace
}  // namespace trainscope::sim
