// Throughput figures of a simulated step in the conventions users compare against: tokens per
// second per GPU, model TFLOP/s per GPU in Megatron's FLOPs convention (num_floating_point_
// operations in training.py: active parameters for MoE, no recompute FLOPs) and MFU against the
// GPU's dense BF16 peak, and the same MFU in the 6·N_active·tokens convention.
#ifndef TRAINSCOPE_SIM_STEP_METRICS_H_
#define TRAINSCOPE_SIM_STEP_METRICS_H_

#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"

namespace trainscope::sim {

struct StepMetrics {
  double step_seconds = 0;
  double tokens_per_step = 0;  // global batch size · sequence length
  double tokens_per_second_per_gpu = 0;
  double model_flops_per_step = 0;  // Megatron's formula, whole model, all ranks
  double model_flops_per_second_per_gpu = 0;
  double mfu = 0;  // model_flops_per_second_per_gpu / peak_flops_per_second
  // The 6·N·D convention (Kaplan et al. 2020, eq. 2.1; slime's and crusades' reports):
  // 6 · active text parameters (graph::ParamCounts::active, embeddings included, MTP and vision
  // excluded) · tokens per step; no attention term, no recompute. A forward-only pass counts
  // 2·N per token (and Megatron's FLOPs one third of a training step's).
  double six_n_flops_per_step = 0;
  double six_n_mfu = 0;  // six_n_flops_per_step / step_seconds / GPUs / peak
};

// Precondition: step_seconds > 0 and peak_flops_per_second > 0.
[[nodiscard]] StepMetrics ComputeStepMetrics(const config::ModelConfig& model,
                                             const config::TrainingConfig& training,
                                             double step_seconds, double peak_flops_per_second);

}  // namespace trainscope::sim

#endif  // TRAINSCOPE_SIM_STEP_METRICS_H_
