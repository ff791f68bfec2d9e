#include "trainscope/cost/moe_routing.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "trainscope/error.h"

namespace trainscope::cost {
namespace {

// ep · (largest per-rank sum of `shares`) / (sum of all shares), ranks holding contiguous slices
// [r·E/ep, (r+1)·E/ep) of the experts.
double LoadFactorOfShares(const std::vector<double>& shares, int64_t expert_parallel) {
  const int64_t num_experts = static_cast<int64_t>(shares.size());
  const double total = std::accumulate(shares.begin(), shares.end(), 0.0);
  TRAINSCOPE_CHECK(total > 0, "expert shares must have a positive total");
  double busiest = 0;
  for (int64_t rank = 0; rank < expert_parallel; ++rank) {
    const int64_t begin = rank * num_experts / expert_parallel;
    const int64_t end = (rank + 1) * num_experts / expert_parallel;
    double load = 0;
    for (int64_t expert = begin; expert < end; ++expert) load += shares[expert];
    busiest = std::max(busiest, load);
  }
  return std::max(1.0, static_cast<double>(expert_parallel) * busiest / total);
}

// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014):
// a fixed, platform-independent sequence, so the random placement is the same everywhere.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

// `shares` placed at random: of kPlacementSamples Fisher-Yates shuffles from a fixed seed, the
// one whose busiest rank carries the median load (ties: the earlier shuffle).
std::vector<double> RandomlyPlaced(const std::vector<double>& shares, int64_t expert_parallel) {
  SplitMix64 random(0x7472616E73636F70ULL);  // "transcop"
  std::vector<std::pair<double, std::vector<double>>> placements;
  placements.reserve(kPlacementSamples);
  for (int sample = 0; sample < kPlacementSamples; ++sample) {
    std::vector<double> placed = shares;
    for (size_t i = placed.size(); i > 1; --i) {
      std::swap(placed[i - 1], placed[random.Next() % i]);
    }
    const double factor = LoadFactorOfShares(placed, expert_parallel);
    placements.emplace_back(factor, std::move(placed));
  }
  std::stable_sort(placements.begin(), placements.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  return placements[kPlacementSamples / 2].second;
}

// The Zipf shares of `skew` in expert-id order under its placement.
std::vector<double> PlacedZipfShares(const RoutingSkew& skew, int64_t num_experts, int64_t top_k,
                                     int64_t expert_parallel) {
  std::vector<double> shares = ZipfExpertShares(*skew.zipf_exponent, num_experts, top_k);
  if (skew.placement == ExpertPlacement::kContiguous) return shares;
  return RandomlyPlaced(shares, expert_parallel);
}

// A direct load factor checked against the most one rank can receive.
double CheckedDirectFactor(double factor, int64_t num_experts, int64_t top_k,
                           int64_t expert_parallel) {
  const double ep = static_cast<double>(expert_parallel);
  const double per_rank = static_cast<double>(num_experts) / ep;
  const double most = ep * std::min(1.0, per_rank / static_cast<double>(top_k));
  if (!(factor >= 1) || factor > most * (1 + 1e-12)) {
    throw InputError(fmt::format(
        "--moe-routing-skew: load factor out of range for this layout (got {}, expected 1 to {} "
        "= ep · min(1, experts per rank / top-k))",
        factor, most));
  }
  return factor;
}

}  // namespace

std::vector<double> ZipfExpertShares(double zipf_exponent, int64_t num_experts, int64_t top_k) {
  TRAINSCOPE_CHECK(std::isfinite(zipf_exponent) && zipf_exponent >= 0,
                   "Zipf exponent must be finite and >= 0");
  TRAINSCOPE_CHECK(top_k >= 1 && top_k <= num_experts, "need 1 <= top_k <= num_experts");
  std::vector<double> weights(num_experts);
  for (int64_t i = 0; i < num_experts; ++i) {
    weights[i] = std::pow(static_cast<double>(i + 1), -zipf_exponent);
  }
  // Water-filling. Weights decrease with i, so the capped experts are always a prefix
  // [0, num_capped): raise num_capped until the first uncapped expert's share fits under the cap.
  const double cap = 1.0 / static_cast<double>(top_k);
  int64_t num_capped = 0;
  double uncapped_weight = std::accumulate(weights.begin(), weights.end(), 0.0);
  while (num_capped < num_experts) {
    const double remaining_mass = 1.0 - static_cast<double>(num_capped) * cap;
    if (weights[num_capped] / uncapped_weight * remaining_mass <= cap) break;
    uncapped_weight -= weights[num_capped];
    ++num_capped;
  }
  std::vector<double> shares(num_experts, cap);
  const double remaining_mass = 1.0 - static_cast<double>(num_capped) * cap;
  for (int64_t i = num_capped; i < num_experts; ++i) {
    shares[i] = weights[i] / uncapped_weight * remaining_mass;
  }
  return shares;
}

std::vector<double> ExpertShares(const RoutingSkew& skew, int64_t num_experts, int64_t top_k,
                                 int64_t expert_parallel) {
  TRAINSCOPE_CHECK(top_k >= 1 && top_k <= num_experts, "need 1 <= top_k <= num_experts");
  if (skew.zipf_exponent) return PlacedZipfShares(skew, num_experts, top_k, expert_parallel);
  if (skew.load_factor) {
    const double factor =
        CheckedDirectFactor(*skew.load_factor, num_experts, top_k, expert_parallel);
    const int64_t local = num_experts / expert_parallel;
    const double hot = factor / static_cast<double>(expert_parallel);
    std::vector<double> shares(
        static_cast<size_t>(num_experts),
        expert_parallel == 1 ? 0.0 : (1 - hot) / static_cast<double>(num_experts - local));
    for (int64_t i = 0; i < local; ++i)
      shares[static_cast<size_t>(i)] = hot / static_cast<double>(local);
    return shares;
  }
  if (skew.expert_tokens.empty()) return {};
  if (static_cast<int64_t>(skew.expert_tokens.size()) != num_experts) {
    throw InputError(fmt::format(
        "{}: expert histogram: number of experts does not match the model (got {}, expected {})",
        skew.source, skew.expert_tokens.size(), num_experts));
  }
  const double total = std::accumulate(skew.expert_tokens.begin(), skew.expert_tokens.end(), 0.0);
  TRAINSCOPE_CHECK(total > 0, "expert histogram must have a positive total");
  std::vector<double> shares;
  for (const double tokens : skew.expert_tokens) shares.push_back(tokens / total);
  return shares;
}

double BusiestRankLoadFactor(const RoutingSkew& skew, int64_t num_experts, int64_t top_k,
                             int64_t expert_parallel) {
  TRAINSCOPE_CHECK(top_k >= 1 && top_k <= num_experts, "need 1 <= top_k <= num_experts");
  TRAINSCOPE_CHECK(expert_parallel >= 1 && expert_parallel <= num_experts,
                   "need 1 <= expert_parallel <= num_experts");
  TRAINSCOPE_CHECK(!(skew.zipf_exponent && !skew.expert_tokens.empty()),
                   "a routing skew is either a Zipf exponent or a histogram");
  if (skew.zipf_exponent) {
    return LoadFactorOfShares(PlacedZipfShares(skew, num_experts, top_k, expert_parallel),
                              expert_parallel);
  }
  if (skew.load_factor) {
    return CheckedDirectFactor(*skew.load_factor, num_experts, top_k, expert_parallel);
  }
  if (skew.expert_tokens.empty()) return 1.0;
  if (static_cast<int64_t>(skew.expert_tokens.size()) != num_experts) {
    throw InputError(fmt::format(
        "{}: expert histogram: number of experts does not match the model (got {}, expected {})",
        skew.source, skew.expert_tokens.size(), num_experts));
  }
  TRAINSCOPE_CHECK(std::all_of(skew.expert_tokens.begin(), skew.expert_tokens.end(),
                               [](double tokens) { return tokens >= 0; }),
                   "expert histogram entries must be >= 0");
  return LoadFactorOfShares(skew.expert_tokens, expert_parallel);
}

}  // namespace trainscope::cost
