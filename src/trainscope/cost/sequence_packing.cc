#include "trainscope/cost/sequence_packing.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <utility>

#include "trainscope/cost/first_fit_tree.h"
#include "trainscope/error.h"

namespace trainscope::cost {
namespace {

// Apportions `counts` to `total` whole samples: floor of each quota, then one more to the
// largest remainders (ties to the lower index, which PackSequences orders by length).
std::vector<int64_t> Apportion(const std::vector<double>& counts, int64_t total) {
  const double sum = std::accumulate(counts.begin(), counts.end(), 0.0);
  std::vector<int64_t> whole(counts.size());
  std::vector<double> remainder(counts.size());
  int64_t assigned = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double quota = counts[i] / sum * static_cast<double>(total);
    whole[i] = static_cast<int64_t>(std::floor(quota));
    remainder[i] = quota - static_cast<double>(whole[i]);
    assigned += whole[i];
  }
  std::vector<size_t> order(counts.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return remainder[a] > remainder[b]; });
  for (size_t i = 0; assigned < total && i < order.size(); ++i, ++assigned) ++whole[order[i]];
  return whole;
}

void CheckHistogram(const SequenceLengthHistogram& histogram) {
  TRAINSCOPE_CHECK(
      !histogram.lengths.empty() && histogram.lengths.size() == histogram.counts.size(),
      "histogram needs matching, non-empty lengths and counts");
  double total = 0;
  for (size_t i = 0; i < histogram.lengths.size(); ++i) {
    TRAINSCOPE_CHECK(histogram.lengths[i] >= 1 && histogram.counts[i] >= 0,
                     "histogram lengths must be >= 1 and counts >= 0");
    total += histogram.counts[i];
  }
  TRAINSCOPE_CHECK(total > 0, "histogram needs a positive total count");
}

// The histogram's lengths, shortest first, each with its whole number of samples out of
// `total` (Apportion over the lengths in that order, so ties go to the shorter length).
std::vector<std::pair<int64_t, int64_t>> ApportionByLength(const SequenceLengthHistogram& histogram,
                                                           int64_t total) {
  std::vector<size_t> by_length(histogram.lengths.size());
  std::iota(by_length.begin(), by_length.end(), size_t{0});
  std::stable_sort(by_length.begin(), by_length.end(),
                   [&](size_t a, size_t b) { return histogram.lengths[a] < histogram.lengths[b]; });
  std::vector<double> sorted_counts;
  for (const size_t i : by_length) sorted_counts.push_back(histogram.counts[i]);
  const std::vector<int64_t> copies = Apportion(sorted_counts, total);
  std::vector<std::pair<int64_t, int64_t>> apportioned;
  for (size_t j = 0; j < by_length.size(); ++j) {
    apportioned.emplace_back(histogram.lengths[by_length[j]], copies[j]);
  }
  return apportioned;
}

}  // namespace

std::vector<int64_t> DrawSampleLengths(const SequenceLengthHistogram& histogram,
                                       int64_t num_samples) {
  CheckHistogram(histogram);
  TRAINSCOPE_CHECK(num_samples >= 1, "at least one sample must be drawn");
  std::vector<int64_t> lengths;
  lengths.reserve(static_cast<size_t>(num_samples));
  for (const auto& [length, copies] : ApportionByLength(histogram, num_samples)) {
    lengths.insert(lengths.end(), copies, length);
  }
  std::mt19937_64 random(kSampleOrderSeed);
  for (size_t i = lengths.size(); i > 1; --i) {
    std::swap(lengths[i - 1], lengths[random() % i]);
  }
  return lengths;
}

int64_t FirstFitDecreasingBins(std::vector<int64_t> item_sizes, int64_t capacity) {
  TRAINSCOPE_CHECK(capacity >= 1, "bin capacity must be >= 1");
  std::sort(item_sizes.begin(), item_sizes.end(), std::greater<>());
  // n items never need more than n bins; unopened bins sit after the opened ones at full
  // capacity, so "leftmost bin that fits" is exactly first fit.
  internal::FirstFitTree tree(std::max<int64_t>(1, static_cast<int64_t>(item_sizes.size())),
                              capacity);
  int64_t num_bins = 0;
  for (const int64_t size : item_sizes) {
    TRAINSCOPE_CHECK(size >= 1 && size <= capacity, "item does not fit in an empty bin");
    const int64_t bin = tree.LeftmostFitting(size);
    tree.SetFree(bin, tree.Free(bin) - size);
    num_bins = std::max(num_bins, bin + 1);
  }
  return num_bins;
}

SequencePacking PackSequences(const SequenceLengthHistogram& histogram, int64_t seq_length,
                              int64_t micro_batch_size) {
  CheckHistogram(histogram);
  TRAINSCOPE_CHECK(seq_length >= 1 && micro_batch_size >= 1,
                   "seq_length and micro_batch_size must be >= 1");
  // Moments over samples, weighted by count: E[l], P(l > s), E[u], E[u²] with u = min(l, s).
  const double s = static_cast<double>(seq_length);
  double total = 0, sum_length = 0, sum_truncated = 0, sum_used = 0, sum_used_squared = 0;
  for (size_t i = 0; i < histogram.lengths.size(); ++i) {
    const double count = histogram.counts[i];
    const double used = static_cast<double>(std::min(histogram.lengths[i], seq_length));
    total += count;
    sum_length += count * static_cast<double>(histogram.lengths[i]);
    if (histogram.lengths[i] > seq_length) sum_truncated += count;
    sum_used += count * used;
    sum_used_squared += count * used * used;
  }
  SequencePacking packing;
  packing.mean_length = sum_length / total;
  packing.truncated_sample_fraction = sum_truncated / total;
  packing.mean_used_length = sum_used / total;
  packing.bshd_useful_token_fraction = packing.mean_used_length / s;

  // THD fill: first-fit decreasing of a representative sample, shortest lengths first so that
  // apportioning ties go to the shorter length.
  std::vector<int64_t> items;
  double packed_tokens = 0;
  for (const auto& [length, copies] : ApportionByLength(histogram, kRepresentativeSamples)) {
    const int64_t used = std::min(length, seq_length);
    items.insert(items.end(), copies, used);
    packed_tokens += static_cast<double>(copies) * static_cast<double>(used);
  }
  const int64_t capacity = micro_batch_size * seq_length;
  const double bins = static_cast<double>(FirstFitDecreasingBins(std::move(items), capacity));
  packing.thd_packed_micro_batch_fill = packed_tokens / (bins * static_cast<double>(capacity));
  packing.thd_samples_per_micro_batch = static_cast<double>(kRepresentativeSamples) / bins;
  // Σ u_i² per packed micro-batch over b·s²: fill · E[u²] / (E[u] · s).
  packing.thd_attention_flops_fraction = packing.thd_packed_micro_batch_fill *
                                         (sum_used_squared / total) /
                                         (packing.mean_used_length * s);
  return packing;
}

}  // namespace trainscope::cost
