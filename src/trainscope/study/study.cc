#include "trainscope/study/study.h"

#include <algorithm>

#include "trainscope/error.h"
#include "trainscope/study/dynamic_batches.h"
#include "trainscope/units.h"

namespace trainscope::study {
namespace {

sim::SimulationOptions SimulationOptionsOf(const Study& study) {
  return sim::SimulationOptions{
      .interference_fraction = study.interference_fraction,
      .flex_interference_fraction = cost::FlexComputeSlowdown(study.flex_dispatch),
      .moe_load_factor = MoeLoadFactor(study)};
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

}  // namespace

double MoeLoadFactor(const Study& study) {
  if (!study.routing_skew || !study.model.HasMoe()) return 1;
  return cost::BusiestRankLoadFactor(*study.routing_skew, study.model.moe.num_experts,
                                     study.model.moe.top_k, study.training.parallel.expert);
}

cost::MemoryOverheads MemoryOverheads(const Study& study) {
  cost::MemoryOverheads overheads = study.memory_overheads;
  overheads.moe_load_factor = MoeLoadFactor(study);
  return overheads;
}

sim::HardwareCostOptions CostOptions(const Study& study) {
  sim::HardwareCostOptions options;
  options.cluster = study.cluster;
  options.compute = study.compute;
  options.gdn_backend = study.gdn_backend;
  options.flex = study.flex_dispatch;
  if (study.routing_skew && study.model.HasMoe()) {
    options.expert_shares =
        cost::ExpertShares(*study.routing_skew, study.model.moe.num_experts, study.model.moe.top_k,
                           study.training.parallel.expert);
  }
  const sim::CommGuardMode mode = study.comm_guard.mode;
  if (mode != sim::CommGuardMode::kOff) {
    options.guard_applies = [mode](const graph::Op& op) { return sim::GuardApplies(op, mode); };
    options.guard_seconds = study.comm_guard.seconds_per_call;
  }
  return options;
}

cost::MemoryEstimate EstimateStudyMemory(const Study& study) {
  const std::optional<DynamicBatches> dynamic = PlanDynamicBatches(study);
  cost::MemoryEstimate estimate = cost::EstimateMemory(
      study.model, dynamic ? dynamic->memory : study.training, MemoryOverheads(study));
  // Every rank of a node runs the same stage's optimizer at worst: the largest per-rank host
  // share times the ranks on a node (at most the world size).
  const int64_t ranks_per_node =
      std::min(study.cluster.gpus_per_node, study.training.parallel.world_size);
  for (const cost::RankMemory& rank : estimate.stages) {
    estimate.max_host_bytes_per_node =
        std::max(estimate.max_host_bytes_per_node,
                 CheckedMul(rank.host_optimizer_bytes, ranks_per_node, "host memory per node"));
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
  result.metrics =
      sim::ComputeStepMetrics(study.model, training, result.simulation.step_seconds, peak);
  result.memory = EstimateStudyMemory(study);
  if (dynamic) {
    result.metrics = OnRealTokens(result.metrics, static_cast<double>(dynamic->step.real_tokens));
    result.dynamic_batching = dynamic->step;
  } else if (study.sequence_lengths) {
    result.sequence_packing = PackingWhatIf(study, options, result.metrics);
  }
  return result;
}

}  // namespace trainscope::study
