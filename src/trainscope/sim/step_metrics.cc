#include "trainscope/sim/step_metrics.h"

#include "trainscope/error.h"
#include "trainscope/graph/param_count.h"
#include "trainscope/graph/step_graph.h"

namespace trainscope::sim {

StepMetrics ComputeStepMetrics(const config::ModelConfig& model,
                               const config::TrainingConfig& training, double step_seconds,
                               double peak_flops_per_second) {
  TRAINSCOPE_CHECK(step_seconds > 0 && peak_flops_per_second > 0,
                   "step time and peak must be positive");
  const config::ParallelSizes& sizes = training.parallel;
  const int64_t global_batch = training.GlobalBatchSize();
  const auto gpus = static_cast<double>(sizes.world_size);
  StepMetrics metrics;
  metrics.step_seconds = step_seconds;
  metrics.tokens_per_step =
      static_cast<double>(global_batch) * static_cast<double>(training.batch.seq_length);
  metrics.tokens_per_second_per_gpu = metrics.tokens_per_step / step_seconds / gpus;
  // Megatron's count is forward + backward = 3 forwards; a forward-only pass does one of them.
  const double passes = training.forward_only ? 1.0 / 3.0 : 1.0;
  metrics.model_flops_per_step =
      passes * static_cast<double>(graph::MegatronModelFlopsPerStep(model, training));
  metrics.model_flops_per_second_per_gpu = metrics.model_flops_per_step / step_seconds / gpus;
  metrics.mfu = metrics.model_flops_per_second_per_gpu / peak_flops_per_second;
  const auto active = static_cast<double>(graph::CountParams(model).active);
  metrics.six_n_flops_per_step = passes * 6 * active * metrics.tokens_per_step;
  metrics.six_n_mfu = metrics.six_n_flops_per_step / step_seconds / gpus / peak_flops_per_second;
  return metrics;
}

}  // namespace trainscope::sim
