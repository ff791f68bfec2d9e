// The token budget of an RL step's forward-only log-prob passes, separate from training's:
// verl's rollout/ref log_prob_max_token_len_per_gpu (dynamic batching by a token count per
// micro-batch, verl/utils/seqlen_balancing.py rearrange_micro_batches), and under slime's
// dynamic batching the bins of slime's packing at that budget (study/dynamic_batches.h). Pure;
// docs/rl.md ("Critic, teacher and the log-prob budget").
#ifndef TRAINSCOPE_STUDY_LOG_PROB_BUDGET_H_
#define TRAINSCOPE_STUDY_LOG_PROB_BUDGET_H_

#include <cstdint>

#include "trainscope/study/study.h"

namespace trainscope::study {

// verl's micro-batch count for `num_samples` samples of `total_tokens` tokens on one data-parallel
// rank under a budget of `max_token_len` tokens per micro-batch (already times the CP size, as
// MegatronPPOActor.compute_log_prob multiplies it): min(samples, ceil(tokens / budget)), rounded
// up to a multiple of `divided_by` (microbatch_group_size_per_vp_stage under VPP, else 1).
// Preconditions (checked): every argument >= 1.
[[nodiscard]] int64_t VerlMicroBatchCount(int64_t num_samples, int64_t total_tokens,
                                          int64_t max_token_len, int64_t divided_by);

// `forward` (a forward-only study of the passes' samples) with its micro-batches formed under a
// budget of `max_tokens_per_gpu` tokens per GPU:
// - under slime's dynamic batching, its packing at the new budget (--max-tokens-per-gpu replaced);
// - under static batching (every sample --seq-length tokens), verl's count m per data-parallel
//   rank (VerlMicroBatchCount with the budget times c); the simulated micro-batches hold b
//   samples each, b the largest divisor of the rank's n samples not above ceil(n / m) (equal
//   micro-batches, the same tokens; b = n / m when m divides n).
// Throws InputError naming --log-prob-max-token-len-per-gpu when the budget times c is below one
// sample (verl asserts max_token_len >= the sequence length), when VPP's rounding asks for more
// micro-batches than samples (verl asserts), or when the largest micro-batch is not a step
// trainscope can model.
[[nodiscard]] Study WithLogProbTokenBudget(Study forward, int64_t max_tokens_per_gpu);

// Micro-batches one data-parallel rank runs in a step of `study` (under dynamic batching, of its
// packing). Throws as PlanDynamicBatches.
[[nodiscard]] int64_t MicroBatchesPerRank(const Study& study);

}  // namespace trainscope::study

#endif  // TRAINSCOPE_STUDY_LOG_PROB_BUDGET_H_
