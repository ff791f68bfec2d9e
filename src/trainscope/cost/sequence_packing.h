// Sequence-length statistics of a training set and what they mean for one micro-batch in the two
// layouts Megatron supports: BSHD (every sample padded to --seq-length) and THD (samples packed
// back to back, attention restricted to each sample). Plain values and pure functions; reading a
// histogram from a file is io/histogram_file.h. Formulas and omissions: docs/cost-model.md
// ("Sequence-length distribution and packing").
#ifndef TRAINSCOPE_COST_SEQUENCE_PACKING_H_
#define TRAINSCOPE_COST_SEQUENCE_PACKING_H_

#include <cstdint>
#include <vector>

namespace trainscope::cost {

// Sample lengths (tokens) and how many samples have each length. lengths[i] >= 1 and counts[i]
// >= 0 (counts may be fractions, e.g. normalised frequencies); same size; positive total count.
// A length may appear more than once; its counts add up.
struct SequenceLengthHistogram {
  std::vector<int64_t> lengths;
  std::vector<double> counts;
  friend bool operator==(const SequenceLengthHistogram&, const SequenceLengthHistogram&) = default;
};

// Every sample is first truncated to s = seq_length tokens (Megatron cuts samples longer than
// --seq-length in both layouts); u = min(l, s) is a sample's used length. Expectations E[·] are
// over samples, weighted by count. b = micro_batch_size.
struct SequencePacking {
  double mean_length = 0;                // E[l] in tokens, before truncation
  double truncated_sample_fraction = 0;  // P(l > s): share of samples that lose tokens
  double mean_used_length = 0;           // E[u] in tokens, after truncation
  // BSHD: a micro-batch is b samples each padded to s; b·s tokens are computed, of which this
  // fraction E[u]/s is real. Attention cost is that of the dense s x s causal mask.
  double bshd_useful_token_fraction = 0;
  // THD: samples (after truncation) are packed into micro-batches of capacity b·s tokens by
  // first-fit decreasing over a large representative sample of the histogram (the long-run fill;
  // see kRepresentativeSamples). Fill = real tokens / (micro-batches · b·s). A packed micro-batch
  // carries no padding, so the lead's token count per micro-batch is fill · b·s.
  double thd_packed_micro_batch_fill = 0;
  // THD: mean number of samples in one packed micro-batch (= fill · b·s / E[u]).
  double thd_samples_per_micro_batch = 0;
  // THD: causal attention FLOPs of one packed micro-batch, Σ u_i² over its samples, divided by
  // those of the dense BSHD micro-batch the graph models, b·s² (both halved by the causal mask,
  // which cancels): fill · E[u²] / (E[u] · s). Multiply "attention.core" FLOPs by this.
  double thd_attention_flops_fraction = 0;
  friend bool operator==(const SequencePacking&, const SequencePacking&) = default;
};

// Size of the representative sample the THD fill is packed from: the histogram's counts are
// apportioned to this many samples (largest remainder, ties to the shorter length), so the
// result does not depend on whether counts are raw numbers or frequencies.
inline constexpr int64_t kRepresentativeSamples = 100'000;

// Statistics of `histogram` for --seq-length `seq_length` and --micro-batch-size
// `micro_batch_size`. Preconditions (checked): the histogram is as documented above,
// seq_length >= 1, micro_batch_size >= 1.
[[nodiscard]] SequencePacking PackSequences(const SequenceLengthHistogram& histogram,
                                            int64_t seq_length, int64_t micro_batch_size);

// `num_samples` sample lengths drawn deterministically from `histogram` (not truncated): its
// counts apportioned to num_samples whole samples as for kRepresentativeSamples (largest
// remainder, ties to the shorter length), then shuffled (Fisher-Yates, position i swapped with
// j = x mod (i + 1) for successive outputs x of std::mt19937_64 seeded with kSampleOrderSeed,
// whose outputs the C++ standard fixes), so the order, like a rollout batch's, does not follow
// the length. Preconditions (checked): the histogram is as documented above, num_samples >= 1.
[[nodiscard]] std::vector<int64_t> DrawSampleLengths(const SequenceLengthHistogram& histogram,
                                                     int64_t num_samples);
inline constexpr uint64_t kSampleOrderSeed = 14;

// Number of bins of capacity `capacity` that first-fit decreasing uses for `item_sizes` (each in
// [1, capacity]). Exposed for tests. Precondition (checked): capacity >= 1, sizes in range.
[[nodiscard]] int64_t FirstFitDecreasingBins(std::vector<int64_t> item_sizes, int64_t capacity);

}  // namespace trainscope::cost

#endif  // TRAINSCOPE_COST_SEQUENCE_PACKING_H_
