#include "trainscope/cost/dynamic_batching.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <utility>

#include "trainscope/cost/first_fit_tree.h"
#include "trainscope/error.h"

namespace trainscope::cost {
namespace {

int64_t TokensOf(const std::vector<int64_t>& bin, std::span<const int64_t> lengths) {
  int64_t tokens = 0;
  for (const int64_t i : bin) tokens += lengths[i];
  return tokens;
}

// slime's _split_bin_by_tokens: longest first (stable), each sample to the half with fewer
// tokens, ties to the first half.
std::pair<std::vector<int64_t>, std::vector<int64_t>> SplitByTokens(
    const std::vector<int64_t>& bin, std::span<const int64_t> lengths) {
  std::vector<int64_t> order = bin;
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return lengths[a] > lengths[b]; });
  std::pair<std::vector<int64_t>, std::vector<int64_t>> halves;
  int64_t first = 0, second = 0;
  for (const int64_t i : order) {
    if (first <= second) {
      halves.first.push_back(i);
      first += lengths[i];
    } else {
      halves.second.push_back(i);
      second += lengths[i];
    }
  }
  return halves;
}

int64_t RoundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

}  // namespace

SampleBins FirstFitPack(std::span<const int64_t> lengths, int64_t capacity_tokens) {
  TRAINSCOPE_CHECK(capacity_tokens >= 1, "bin capacity must be >= 1");
  const auto n = static_cast<int64_t>(lengths.size());
  internal::FirstFitTree tree(std::max<int64_t>(1, n), capacity_tokens);
  SampleBins bins;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t length = lengths[i];
    TRAINSCOPE_CHECK(length >= 1, "sample lengths must be >= 1");
    // Opened bins come first and unopened ones are empty, so the leftmost fitting bin is first
    // fit; a sample longer than the capacity fits nowhere and opens a bin of its own.
    int64_t bin = length <= capacity_tokens ? tree.LeftmostFitting(length) : -1;
    if (bin < 0) bin = static_cast<int64_t>(bins.size());
    if (bin == static_cast<int64_t>(bins.size())) bins.emplace_back();
    bins[bin].push_back(i);
    tree.SetFree(bin, length <= capacity_tokens ? tree.Free(bin) - length : 0);
  }
  return bins;
}

SampleBins ExpandBinsBySplitting(SampleBins bins, int64_t target_count,
                                 std::span<const int64_t> lengths) {
  // Bins of two or more samples by (tokens, index); the largest is the last (Python's max over
  // (sum, idx) tuples).
  std::set<std::pair<int64_t, int64_t>> splittable;
  for (size_t i = 0; i < bins.size(); ++i) {
    if (bins[i].size() > 1) splittable.emplace(TokensOf(bins[i], lengths), i);
  }
  while (static_cast<int64_t>(bins.size()) < target_count && !splittable.empty()) {
    const int64_t index = std::prev(splittable.end())->second;
    splittable.erase(std::prev(splittable.end()));
    auto [first, second] = SplitByTokens(bins[index], lengths);
    bins[index] = std::move(first);
    bins.push_back(std::move(second));
    const auto appended = static_cast<int64_t>(bins.size()) - 1;
    for (const int64_t i : {index, appended}) {
      if (bins[i].size() > 1) splittable.emplace(TokensOf(bins[i], lengths), i);
    }
  }
  return bins;
}

std::optional<DpSchedule> BuildDpSchedule(std::span<const int64_t> lengths,
                                          const DpScheduleOptions& options) {
  TRAINSCOPE_CHECK(options.max_tokens_per_gpu >= 1 && options.context_parallel >= 1 &&
                       options.data_parallel >= 1 && options.align_group >= 1,
                   "dynamic batching options must be >= 1");
  const int64_t align = options.data_parallel * options.align_group;
  SampleBins bins = FirstFitPack(lengths, options.max_tokens_per_gpu * options.context_parallel);
  const int64_t target =
      std::max(RoundUp(static_cast<int64_t>(bins.size()), align), align);  // dp_schedule.py
  bins = ExpandBinsBySplitting(std::move(bins), target, lengths);
  if (static_cast<int64_t>(bins.size()) != target) return std::nullopt;
  DpSchedule schedule;
  schedule.num_micro_batches_per_rank = target / options.data_parallel;
  schedule.ranks.resize(static_cast<size_t>(options.data_parallel));
  for (int64_t k = 0; k < target; ++k) schedule.ranks[k % options.data_parallel].push_back(k);
  schedule.bins = std::move(bins);
  return schedule;
}

int64_t PaddedBinTokens(std::span<const int64_t> bin_lengths, int64_t context_parallel,
                        int64_t tensor_parallel, int64_t pad_multiplier) {
  const int64_t c = context_parallel;
  int64_t local = 0;
  for (const int64_t length : bin_lengths) {
    // slice_with_cp: chunk = ceil(l / 2c); a rank keeps 2 chunks. Without CP, the whole sample.
    local += c == 1 ? length : 2 * ((length + 2 * c - 1) / (2 * c));
  }
  return c * RoundUp(local, tensor_parallel * pad_multiplier);
}

int64_t SimulatedSequenceGranularity(int64_t context_parallel, int64_t tensor_parallel,
                                     int64_t pad_multiplier) {
  const int64_t per_rank = tensor_parallel * pad_multiplier;
  if (context_parallel == 1) return per_rank;
  return context_parallel * std::lcm(per_rank, int64_t{2});
}

DynamicBatchStep SummariseDpSchedule(std::span<const int64_t> lengths, const DpSchedule& schedule,
                                     const DpScheduleOptions& options, int64_t tensor_parallel,
                                     int64_t pad_multiplier) {
  TRAINSCOPE_CHECK(!schedule.bins.empty() && tensor_parallel >= 1 && pad_multiplier >= 1,
                   "a schedule needs bins, t >= 1 and a pad multiple >= 1");
  const int64_t c = options.context_parallel;
  DynamicBatchStep step;
  step.num_samples = static_cast<int64_t>(lengths.size());
  step.bin_capacity_tokens = options.max_tokens_per_gpu * c;
  step.num_bins = static_cast<int64_t>(schedule.bins.size());
  step.num_micro_batches_per_rank = schedule.num_micro_batches_per_rank;
  // Per bin: real tokens, padded tokens, Σ l².
  std::vector<int64_t> padded(schedule.bins.size());
  std::vector<double> squares(schedule.bins.size());
  int64_t max_padded = 0;
  for (size_t k = 0; k < schedule.bins.size(); ++k) {
    std::vector<int64_t> bin_lengths;
    for (const int64_t i : schedule.bins[k]) {
      bin_lengths.push_back(lengths[i]);
      squares[k] += static_cast<double>(lengths[i]) * static_cast<double>(lengths[i]);
    }
    const int64_t real = std::accumulate(bin_lengths.begin(), bin_lengths.end(), int64_t{0});
    step.real_tokens += real;
    step.max_bin_tokens = std::max(step.max_bin_tokens, real);
    padded[k] = PaddedBinTokens(bin_lengths, c, tensor_parallel, pad_multiplier);
    max_padded = std::max(max_padded, padded[k]);
  }
  const auto num_bins = static_cast<double>(step.num_bins);
  step.mean_bin_tokens = static_cast<double>(step.real_tokens) / num_bins;
  step.fill = static_cast<double>(step.real_tokens) /
              (num_bins * static_cast<double>(step.bin_capacity_tokens));
  // The busiest rank (most padded tokens, ties to the lower rank) sets the step: every rank
  // waits for it at the gradient reduction.
  int64_t busiest_padded = -1;
  for (size_t r = 0; r < schedule.ranks.size(); ++r) {
    int64_t tokens = 0;
    for (const int64_t k : schedule.ranks[r]) tokens += padded[k];
    if (tokens > busiest_padded) {
      busiest_padded = tokens;
      step.busiest_rank = static_cast<int64_t>(r);
    }
  }
  const int64_t granularity = SimulatedSequenceGranularity(c, tensor_parallel, pad_multiplier);
  const auto m = static_cast<double>(step.num_micro_batches_per_rank);
  const double mean_padded = static_cast<double>(busiest_padded) / m;
  step.simulated_bin_tokens =
      std::max<int64_t>(1, std::llround(mean_padded / static_cast<double>(granularity))) *
      granularity;
  step.memory_bin_tokens = RoundUp(max_padded, granularity);
  double busiest_squares = 0;
  for (const int64_t k : schedule.ranks[step.busiest_rank]) busiest_squares += squares[k];
  const auto s = static_cast<double>(step.simulated_bin_tokens);
  step.attention_flops_fraction = busiest_squares / (m * s * s);
  return step;
}

}  // namespace trainscope::cost
