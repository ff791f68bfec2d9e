#include "trainscope/study/study.h"

#include <fmt/format.h>

#include <algorithm>

#include "trainscope/cost/gemm_efficiency_table.h"
#include "trainscope/error.h"
#include "trainscope/graph/step_graph.h"
#include "trainscope/study/dynamic_batches.h"
#include "trainscope/units.h"

namespace trainscope::study {
namespace {

// The flex dispatcher's constants with the run's SM count: --moe-flex-dispatcher-num-sms N of the
// GPU generation's SMs (cost::ReferenceSmCount), else the constants' own fraction.
cost::FlexDispatchConstants FlexConstantsOf(const Study& study) {
  cost::FlexDispatchConstants constants = study.flex_dispatch;
  if (const std::optional<int64_t> sms = study.training.moe.flex_num_sms) {
    const int64_t gpu_sms = cost::ReferenceSmCount(study.cluster.gpu.compute_capability);
    if (gpu_sms == 0) {
      throw InputError(fmt::format(
          "--moe-flex-dispatcher-num-sms: the SM count of a {} is not known to trainscope",
          study.cluster.gpu.name));
    }
    if (*sms >= gpu_sms) {
      throw InputError(fmt::format(
          "--moe-flex-dispatcher-num-sms {}: must be below the {} SMs of a {} (compute "
          "capability {}.{})",
          *sms, gpu_sms, study.cluster.gpu.name, study.cluster.gpu.compute_capability.major,
          study.cluster.gpu.compute_capability.minor));
    }
    constants.sm_fraction = static_cast<double>(*sms) / static_cast<double>(gpu_sms);
  }
  return constants;
}

sim::SimulationOptions SimulationOptionsOf(const Study& study) {
  return sim::SimulationOptions{
      .interference_fraction = study.interference_fraction,
      .flex_interference_fraction = cost::FlexComputeSlowdown(FlexConstantsOf(study)),
      .moe_load_factor = SimulatedMoeLoadFactor(study)};
}

// The same training without HybridEP's rank budget: what the overflow runner reruns (eager
// buffers, no paged stash).
config::TrainingConfig WithoutRankBudget(config::TrainingConfig training) {
  training.moe.rank_capacity_factor.reset();
  training.moe.paged_stash = false;
  return training;
}

// The step re-simulated with the attention cost of THD-packed sequences (cost/sequence_packing),
// against the padded BSHD step that was simulated.
SequencePackingResult PackingWhatIf(const Study& study, const sim::HardwareCostOptions& options,
                                    const sim::StepMetrics& metrics) {
  const cost::SequencePacking packing =
      cost::PackSequences(*study.sequence_lengths, study.training.batch.seq_length,
                          study.training.batch.micro_batch_size);
  sim::HardwareCostOptions packed = options;
  packed.attention_scale = packing.thd_attention_flops_fraction;
  const double thd_seconds =
      sim::SimulateStep(study.model, study.training,
                        sim::BindHardwareCosts(study.model, study.training, packed),
                        SimulationOptionsOf(study))
          .step_seconds;
  const double gpus = static_cast<double>(study.training.parallel.world_size);
  return SequencePackingResult{
      .mean_length = packing.mean_length,
      .bshd_useful_token_fraction = packing.bshd_useful_token_fraction,
      .bshd_useful_tokens_per_s_per_gpu =
          metrics.tokens_per_second_per_gpu * packing.bshd_useful_token_fraction,
      .thd_step_seconds = thd_seconds,
      .thd_useful_tokens_per_s_per_gpu =
          metrics.tokens_per_step * packing.thd_packed_micro_batch_fill / thd_seconds / gpus};
}

// The token figures of a dynamically batched step counted on its real (unpadded) sample tokens;
// Megatron's FLOPs stay those of the simulated micro-batches.
sim::StepMetrics OnRealTokens(sim::StepMetrics metrics, double real_tokens) {
  const double scale = real_tokens / metrics.tokens_per_step;
  metrics.tokens_per_step = real_tokens;
  metrics.tokens_per_second_per_gpu *= scale;
  metrics.six_n_flops_per_step *= scale;
  metrics.six_n_mfu *= scale;
  return metrics;
}

// The device footprint the guard sees on the busiest stage (the highest memory peak).
struct GuardFootprint {
  double floor_bytes = 0;  // peak minus activations: what stays allocated
  double peak_bytes = 0;
  double capacity_bytes = 0;
  double clear_fraction = 0;
  [[nodiscard]] double SecondsPerCall(const CommGuardSetting& guard) const {
    return guard.seconds_per_call +
           clear_fraction * (guard.clear.gc_seconds + guard.clear.empty_cache_seconds);
  }
};

GuardFootprint GuardFootprintOf(const Study& study) {
  const cost::MemoryEstimate memory = EstimateStudyMemory(study);
  const cost::RankMemory& rank =
      memory.stages.at(static_cast<size_t>(memory.max_peak_pipeline_rank));
  GuardFootprint footprint;
  footprint.peak_bytes = static_cast<double>(rank.peak_bytes);
  footprint.floor_bytes = footprint.peak_bytes - static_cast<double>(rank.activations_bytes);
  footprint.capacity_bytes = static_cast<double>(study.cluster.gpu.memory_bytes);
  footprint.clear_fraction =
      sim::ClearFraction(footprint.floor_bytes, footprint.peak_bytes, footprint.capacity_bytes,
                         study.comm_guard.clear.threshold_bytes);
  return footprint;
}

// Guarded calls of rank 0's step: the step graph is affine in the micro-batch count (the same
// ops per micro-batch, the gradient sync and optimizer once), so two small graphs give the
// count for any m without building m micro-batches.
int64_t GuardedCalls(const Study& study, sim::CommGuardMode mode) {
  const config::TrainingConfig base = SimulatedTraining(study);
  const auto count = [&](int64_t micro_batches) {
    config::TrainingConfig training = base;
    training.batch.global_batch_size =
        micro_batches * training.batch.micro_batch_size * training.parallel.Data();
    const graph::StepGraph graph = graph::BuildStepGraph(study.model, training, 0);
    return static_cast<int64_t>(
        std::count_if(graph.ops.begin(), graph.ops.end(),
                      [&](const graph::Op& op) { return sim::GuardApplies(op, mode); }));
  };
  // The interleaved schedule needs whole micro-batch groups; the per-micro-batch difference is
  // the same between any two counts it accepts.
  const int64_t unit = base.parallel.virtual_stages > 1 ? base.MicroBatchGroupSize() : 1;
  const int64_t one = count(unit);
  const int64_t two = count(2 * unit);
  const int64_t per_micro_batch_ops = (two - one) / unit;
  return one + (base.NumMicroBatches() - unit) * per_micro_batch_ops;
}

}  // namespace

std::optional<CommGuardReport> EstimateCommGuard(const Study& study) {
  const sim::CommGuardMode mode = study.comm_guard.mode;
  if (mode == sim::CommGuardMode::kOff) return std::nullopt;
  const GuardFootprint footprint = GuardFootprintOf(study);
  CommGuardReport report;
  report.mode = mode;
  report.floor_bytes = footprint.floor_bytes;
  report.free_bytes_at_peak = footprint.capacity_bytes - footprint.peak_bytes;
  report.clear_fraction = footprint.clear_fraction;
  report.check_seconds = study.comm_guard.seconds_per_call;
  report.clear_seconds =
      study.comm_guard.clear.gc_seconds + study.comm_guard.clear.empty_cache_seconds;
  report.seconds_per_call = footprint.SecondsPerCall(study.comm_guard);
  report.guarded_calls = GuardedCalls(study, mode);
  report.clears = static_cast<double>(report.guarded_calls) * report.clear_fraction;
  report.seconds = static_cast<double>(report.guarded_calls) * report.seconds_per_call;
  return report;
}

double MoeLoadFactor(const Study& study) {
  if (!study.routing_skew || !study.model.HasMoe()) return 1;
  return cost::BusiestRankLoadFactor(*study.routing_skew, study.model.moe.num_experts,
                                     study.model.moe.top_k, study.training.parallel.expert);
}

double SimulatedMoeLoadFactor(const Study& study) {
  const double load = MoeLoadFactor(study);
  const config::MoeRunConfig& moe = study.training.moe;
  return moe.RankBudgetRuns() ? std::min(load, *moe.rank_capacity_factor) : load;
}

cost::MemoryOverheads MemoryOverheads(const Study& study) {
  cost::MemoryOverheads overheads = study.memory_overheads;
  overheads.moe_load_factor = MoeLoadFactor(study);
  overheads.gpu_compute_capability_major = study.cluster.gpu.compute_capability.major;
  return overheads;
}

sim::HardwareCostOptions CostOptions(const Study& study) {
  sim::HardwareCostOptions options;
  options.cluster = study.cluster;
  options.compute = study.compute;
  options.gdn_backend = study.gdn_backend;
  options.flex = FlexConstantsOf(study);
  if (study.routing_skew && study.model.HasMoe()) {
    options.expert_shares =
        cost::ExpertShares(*study.routing_skew, study.model.moe.num_experts, study.model.moe.top_k,
                           study.training.parallel.expert);
  }
  const sim::CommGuardMode mode = study.comm_guard.mode;
  if (mode != sim::CommGuardMode::kOff) {
    options.guard_applies = [mode](const graph::Op& op) { return sim::GuardApplies(op, mode); };
    // Each guarded call pays the check, plus clear_memory() on the share of calls that find
    // less than the threshold free (sim/comm_guard.h ClearFraction).
    options.guard_seconds = GuardFootprintOf(study).SecondsPerCall(study.comm_guard);
  }
  return options;
}

cost::MemoryEstimate EstimateStudyMemory(const Study& study) {
  const std::optional<DynamicBatches> dynamic = PlanDynamicBatches(study);
  cost::MemoryEstimate estimate = cost::EstimateMemory(
      study.model, dynamic ? dynamic->memory : study.training, MemoryOverheads(study));
  // Every rank of a node runs the same stage at worst: the largest per-rank host share
  // (offloaded optimizer plus offloaded activations) times the ranks on a node (at most the
  // world size).
  const int64_t ranks_per_node =
      std::min(study.cluster.gpus_per_node, study.training.parallel.world_size);
  for (const cost::RankMemory& rank : estimate.stages) {
    estimate.max_host_bytes_per_node =
        std::max(estimate.max_host_bytes_per_node,
                 CheckedMul(CheckedAdd(rank.host_optimizer_bytes, rank.host_activation_bytes,
                                       "host memory per rank"),
                            ranks_per_node, "host memory per node"));
  }
  return estimate;
}

StudyResult RunStudy(const Study& study) {
  const double peak = study.cluster.gpu.bf16_flops_per_second;
  TRAINSCOPE_CHECK(peak > 0, "RunStudy needs a GPU with a BF16 peak");
  const std::optional<DynamicBatches> dynamic = PlanDynamicBatches(study);
  sim::HardwareCostOptions options = CostOptions(study);
  const config::TrainingConfig& training = dynamic ? dynamic->simulated : study.training;
  if (dynamic) options.attention_scale = dynamic->step.attention_flops_fraction;
  StudyResult result;
  result.moe_load_factor = MoeLoadFactor(study);
  result.simulation = sim::SimulateStep(study.model, training,
                                        sim::BindHardwareCosts(study.model, training, options),
                                        SimulationOptionsOf(study));
  double step_seconds = result.simulation.step_seconds;
  if (training.moe.RankBudgetRuns() &&
      result.moe_load_factor > *training.moe.rank_capacity_factor) {
    Study eager = study;
    eager.training = WithoutRankBudget(study.training);
    const config::TrainingConfig rerun = WithoutRankBudget(training);
    result.overflow_rerun_seconds =
        sim::SimulateStep(study.model, rerun, sim::BindHardwareCosts(study.model, rerun, options),
                          SimulationOptionsOf(eager))
            .step_seconds;
    step_seconds += *result.overflow_rerun_seconds;
  }
  result.metrics = sim::ComputeStepMetrics(study.model, training, step_seconds, peak);
  result.memory = EstimateStudyMemory(study);
  if (dynamic) {
    result.metrics = OnRealTokens(result.metrics, static_cast<double>(dynamic->step.real_tokens));
    result.dynamic_batching = dynamic->step;
  } else if (study.sequence_lengths) {
    result.sequence_packing = PackingWhatIf(study, options, result.metrics);
  }
  result.comm_guard = EstimateCommGuard(study);
  return result;
}

}  // namespace trainscope::study
