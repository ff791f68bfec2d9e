#include "trainscope/study/dynamic_batches.h"

#include <fmt/format.h>

#include <vector>

#include "trainscope/config/validate.h"
#include "trainscope/error.h"

namespace trainscope::study {
namespace {

// The step's samples in order: drawn from the histogram, else every one --seq-length long.
std::vector<int64_t> SampleLengths(const Study& study) {
  const int64_t num_samples = study.training.GlobalBatchSize();
  if (study.sequence_lengths) return cost::DrawSampleLengths(*study.sequence_lengths, num_samples);
  return std::vector<int64_t>(static_cast<size_t>(num_samples), study.training.batch.seq_length);
}

// `training` running m micro-batches of one `seq_length`-token sequence per data-parallel rank.
config::TrainingConfig StaticStep(config::TrainingConfig training, int64_t num_micro_batches,
                                  int64_t seq_length) {
  training.batch.max_tokens_per_gpu.reset();
  training.batch.micro_batch_size = 1;
  training.batch.seq_length = seq_length;
  training.batch.global_batch_size = num_micro_batches * training.parallel.Data();
  return training;
}

}  // namespace

std::optional<DynamicBatches> PlanDynamicBatches(const Study& study) {
  const config::TrainingConfig& training = study.training;
  if (!training.batch.max_tokens_per_gpu) return std::nullopt;
  const config::ParallelSizes& parallel = training.parallel;
  const cost::DpScheduleOptions options{
      .max_tokens_per_gpu = *training.batch.max_tokens_per_gpu,
      .context_parallel = parallel.context,
      .data_parallel = parallel.Data(),
      .align_group = parallel.virtual_stages > 1 ? training.MicroBatchGroupSize() : 1};
  const std::vector<int64_t> lengths = SampleLengths(study);
  const std::optional<cost::DpSchedule> schedule = cost::BuildDpSchedule(lengths, options);
  if (!schedule) {
    throw InputError(fmt::format(
        "--global-batch-size: {} samples cannot make a multiple of {} micro-batches (d·G) under "
        "dynamic batching, even one sample each (slime's build_dp_schedule asserts)",
        lengths.size(), options.data_parallel * options.align_group));
  }
  DynamicBatches batches;
  batches.step = cost::SummariseDpSchedule(lengths, *schedule, options, parallel.tensor,
                                           training.batch.data_pad_size_multiplier);
  const int64_t m = batches.step.num_micro_batches_per_rank;
  batches.simulated = StaticStep(training, m, batches.step.simulated_bin_tokens);
  batches.memory = StaticStep(training, m, batches.step.memory_bin_tokens);
  const double samples_per_bin =
      static_cast<double>(batches.step.num_samples) / static_cast<double>(batches.step.num_bins);
  batches.simulated.batch.samples_per_micro_batch = samples_per_bin;
  batches.memory.batch.samples_per_micro_batch = samples_per_bin;
  // The largest micro-batch must itself be a step trainscope can count (T10: ops within 2^62
  // FLOPs, C24: whole CP chunks); the simulated one is no longer.
  const config::ValidationResult largest = config::Validate(study.model, batches.memory);
  if (!largest.ok()) {
    throw InputError(fmt::format(
        "--max-tokens-per-gpu: the largest dynamic micro-batch, {} tokens, is not a step "
        "trainscope can model: [{}] {}",
        batches.step.memory_bin_tokens, largest.errors.front().rule,
        largest.errors.front().message));
  }
  return batches;
}

config::TrainingConfig SimulatedTraining(const Study& study) {
  std::optional<DynamicBatches> dynamic = PlanDynamicBatches(study);
  return dynamic ? std::move(dynamic->simulated) : study.training;
}

}  // namespace trainscope::study
