// slime's dynamic batching: one step's samples packed into micro-batches by a token budget and
// dealt to the data-parallel ranks (slime/utils/dp_schedule.py, build_dp_schedule; the packing
// helpers in slime/utils/seqlen_balancing.py), and what one step of those micro-batches looks like
// to the simulator. Plain values and pure functions; docs/rl.md ("Dynamic batching").
#ifndef TRAINSCOPE_COST_DYNAMIC_BATCHING_H_
#define TRAINSCOPE_COST_DYNAMIC_BATCHING_H_

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace trainscope::cost {

// Micro-batches as lists of sample indices (into the step's sample lengths), in slime's order.
using SampleBins = std::vector<std::vector<int64_t>>;

// slime's first_fit_pack: each sample, in order, goes into the first bin whose tokens plus its
// length stay within `capacity_tokens`, else into a new bin; a sample longer than the capacity
// gets a bin of its own, which nothing else joins. Precondition (checked): capacity >= 1 and
// every length >= 1.
[[nodiscard]] SampleBins FirstFitPack(std::span<const int64_t> lengths, int64_t capacity_tokens);

// slime's expand_bins_by_splitting: while there are fewer than `target_count` bins, the bin with
// the most tokens among those holding two or more samples (ties: the later bin) is split into two
// token-balanced halves (longest sample first, each to the lighter half, ties to the first); the
// first half replaces it and the second is appended. Stops early when every bin is a single
// sample. Returns the bins; fewer than `target_count` when it stopped early.
[[nodiscard]] SampleBins ExpandBinsBySplitting(SampleBins bins, int64_t target_count,
                                               std::span<const int64_t> lengths);

// How slime packs and deals one step (build_dp_schedule with --use-dynamic-batch-size and
// neither --balance-data nor --balance-by-flops).
struct DpScheduleOptions {
  int64_t max_tokens_per_gpu = 0;  // --max-tokens-per-gpu
  int64_t context_parallel = 1;    // c: the bin capacity is max_tokens_per_gpu · c
  int64_t data_parallel = 1;       // d
  // The bin count is raised to a multiple of d · align_group: G
  // (--microbatch-group-size-per-virtual-pipeline-stage) with VPP > 1, else 1.
  int64_t align_group = 1;
};

// The bins of one step and which data-parallel rank runs which: rank r runs bins r, r + d,
// r + 2d, ... (slime's strided round-robin), K/d of them.
struct DpSchedule {
  SampleBins bins;                          // K bins
  std::vector<std::vector<int64_t>> ranks;  // d lists of bin indices, in the order run
  int64_t num_micro_batches_per_rank = 0;   // K / d
};

// Packs `lengths` (the step's samples in order) with FirstFitPack at capacity
// max_tokens_per_gpu · c, raises the bin count to K = max(d·g, d·g·ceil(bins / (d·g))) with
// ExpandBinsBySplitting and deals the bins round-robin. Returns nothing when the samples cannot
// make K bins (slime asserts then). Preconditions (checked): every option >= 1, lengths >= 1.
[[nodiscard]] std::optional<DpSchedule> BuildDpSchedule(std::span<const int64_t> lengths,
                                                        const DpScheduleOptions& options);

// The tokens a micro-batch of samples `lengths` occupies on the GPUs of a TP·CP group after
// slime's padding (slime/backends/megatron_utils/data.py, get_batch; cp_utils.py,
// slice_with_cp): with c > 1 each sample is padded to a multiple of 2c and each rank holds
// 2·ceil(l / 2c) of its tokens; the rank's concatenated stream is padded to a multiple of
// t · pad_multiplier (--data-pad-size-multiplier). Returns c times the padded stream.
[[nodiscard]] int64_t PaddedBinTokens(std::span<const int64_t> bin_lengths,
                                      int64_t context_parallel, int64_t tensor_parallel,
                                      int64_t pad_multiplier);

// The step as the simulator runs it: m micro-batches of one sequence each. Tokens are real
// (unpadded) sample tokens unless the name says padded.
struct DynamicBatchStep {
  int64_t num_samples = 0;                 // the step's samples (GBS)
  int64_t bin_capacity_tokens = 0;         // max_tokens_per_gpu · c
  int64_t num_bins = 0;                    // K
  int64_t num_micro_batches_per_rank = 0;  // m = K / d
  double mean_bin_tokens = 0;              // real tokens / K
  int64_t max_bin_tokens = 0;              // the fullest bin's real tokens
  double fill = 0;                         // real tokens / (K · capacity)
  int64_t real_tokens = 0;                 // Σ of every sample's length
  int64_t busiest_rank = 0;                // the DP rank with the most padded tokens
  // Sequence length of each simulated micro-batch: the busiest rank's mean padded bin, rounded
  // to the nearest multiple of `granularity` (at least one).
  int64_t simulated_bin_tokens = 0;
  // Sequence length the memory estimate uses: the largest padded bin, rounded up likewise.
  int64_t memory_bin_tokens = 0;
  // Causal attention of the busiest rank's bins, Σ l² over their samples, over that of m dense
  // sequences of simulated_bin_tokens (m · S²): scales "attention.core" FLOPs.
  double attention_flops_fraction = 0;
};

// Padding of one sequence of the simulated step: t·pad_multiplier·c, made even per CP rank when
// c > 1 (the graph splits a sequence into 2c chunks and over t with SP).
[[nodiscard]] int64_t SimulatedSequenceGranularity(int64_t context_parallel,
                                                   int64_t tensor_parallel, int64_t pad_multiplier);

// Summarises `schedule` of `lengths` for the simulator (see DynamicBatchStep). Preconditions
// (checked): the schedule was built from `lengths` with `options`; t, pad_multiplier >= 1.
[[nodiscard]] DynamicBatchStep SummariseDpSchedule(std::span<const int64_t> lengths,
                                                   const DpSchedule& schedule,
                                                   const DpScheduleOptions& options,
                                                   int64_t tensor_parallel, int64_t pad_multiplier);

}  // namespace trainscope::cost

#endif  // TRAINSCOPE_COST_DYNAMIC_BATCHING_H_
