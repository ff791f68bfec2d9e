#include "trainscope/study/log_prob_budget.h"

#include <fmt/format.h>

#include <algorithm>

#include "trainscope/config/validate.h"
#include "trainscope/error.h"
#include "trainscope/study/dynamic_batches.h"

namespace trainscope::study {
namespace {

constexpr const char* kFlag = "--log-prob-max-token-len-per-gpu";

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The largest divisor of n not above `limit` (>= 1).
int64_t LargestDivisorAtMost(int64_t n, int64_t limit) {
  for (int64_t b = std::min(n, limit); b > 1; --b) {
    if (n % b == 0) return b;
  }
  return 1;
}

}  // namespace

int64_t VerlMicroBatchCount(int64_t num_samples, int64_t total_tokens, int64_t max_token_len,
                            int64_t divided_by) {
  TRAINSCOPE_CHECK(num_samples >= 1 && total_tokens >= 1 && max_token_len >= 1 && divided_by >= 1,
                   "VerlMicroBatchCount needs positive arguments");
  const int64_t count = std::min(num_samples, CeilDiv(total_tokens, max_token_len));
  return CeilDiv(count, divided_by) * divided_by;  // roundup_divisible
}

Study WithLogProbTokenBudget(Study forward, int64_t max_tokens_per_gpu) {
  config::TrainingConfig& training = forward.training;
  if (training.batch.max_tokens_per_gpu) {
    training.batch.max_tokens_per_gpu = max_tokens_per_gpu;
    (void)PlanDynamicBatches(forward);  // the new packing's input errors, now
    return forward;
  }
  const config::ParallelSizes& parallel = training.parallel;
  const int64_t seq = training.batch.seq_length;
  const int64_t budget = max_tokens_per_gpu * parallel.context;
  if (budget < seq) {
    throw InputError(fmt::format(
        "{} {}: x CP {} = {} tokens is less than one sample of --seq-length {} (verl asserts "
        "max_token_len >= the sequence length)",
        kFlag, max_tokens_per_gpu, parallel.context, budget, seq));
  }
  const int64_t samples = training.GlobalBatchSize() / parallel.Data();
  const int64_t group = parallel.virtual_stages > 1 ? training.MicroBatchGroupSize() : 1;
  const int64_t count = VerlMicroBatchCount(samples, samples * seq, budget, group);
  if (count > samples) {
    throw InputError(fmt::format(
        "{} {}: {} micro-batches (rounded to a multiple of {} for VPP) exceed the {} samples per "
        "data-parallel rank (verl asserts)",
        kFlag, max_tokens_per_gpu, count, group, samples));
  }
  training.batch.micro_batch_size = LargestDivisorAtMost(samples, CeilDiv(samples, count));
  const config::ValidationResult valid = config::Validate(forward.model, training);
  if (!valid.ok()) {
    throw InputError(fmt::format(
        "{} {}: micro-batches of {} samples are not a step trainscope can model: [{}] {}", kFlag,
        max_tokens_per_gpu, training.batch.micro_batch_size, valid.errors.front().rule,
        valid.errors.front().message));
  }
  return forward;
}

int64_t MicroBatchesPerRank(const Study& study) {
  const config::TrainingConfig training = SimulatedTraining(study);
  return training.GlobalBatchSize() / (training.batch.micro_batch_size * training.parallel.Data());
}

}  // namespace trainscope::study
