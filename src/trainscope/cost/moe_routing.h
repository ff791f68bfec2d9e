// MoE routing skew: how unevenly the router spreads token-expert assignments over the experts, and
// the resulting load of the busiest expert-parallel rank, which every rank of the EP group waits
// for in dispatch, the grouped GEMMs and combine. Plain values and pure functions; reading a
// measured histogram from a file is io/histogram_file.h. The model is described in
// docs/cost-model.md ("MoE routing skew").
#ifndef TRAINSCOPE_COST_MOE_ROUTING_H_
#define TRAINSCOPE_COST_MOE_ROUTING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainscope::cost {

// Which EP rank holds which expert when the skew is a Zipf law (whose experts are in popularity
// order, not id order).
enum class ExpertPlacement {
  // Popularity is unrelated to expert ids: the experts land on ranks in a random order. The
  // load factor is that of the placement whose busiest rank is the median of
  // kPlacementSamples fixed-seed shuffles (deterministic).
  kRandom,
  // The most popular experts together on rank 0 (the pessimistic placement):
  // --moe-routing-skew contiguous=S.
  kContiguous,
};

// Shuffles of the random placement; odd, so the median is one of them.
inline constexpr int kPlacementSamples = 255;

// At most one of the three is set; none means forced balance (every expert gets the same number
// of tokens, Megatron's --moe-router-force-load-balancing and the graph's default).
struct RoutingSkew {
  // Zipf exponent s >= 0: expert i (in popularity order, i = 0 most popular) receives a share
  // proportional to 1/(i+1)^s, capped at 1/top_k (see BusiestRankLoadFactor). s = 0 is uniform.
  std::optional<double> zipf_exponent;
  // Measured token-expert assignments per expert, index = expert id, each >= 0, total > 0.
  std::vector<double> expert_tokens;
  // Tokens on the busiest EP rank / mean, given directly (>= 1): --moe-routing-skew load=F.
  std::optional<double> load_factor;
  // Where expert_tokens came from (a file path), named in errors; empty otherwise.
  std::string source;
  // Placement of the Zipf experts (a histogram's ids and a direct factor are placed as given).
  ExpertPlacement placement = ExpertPlacement::kRandom;
  friend bool operator==(const RoutingSkew&, const RoutingSkew&) = default;
};

// Expert shares p_i (summing to 1) of the token-expert assignments under a Zipf law: p_i ∝
// 1/(i+1)^s, then capped at 1/top_k (a token picks top_k distinct experts, so one expert receives
// at most every token, i.e. 1/top_k of all assignments) by water-filling: capped experts get
// exactly 1/top_k and the remaining mass is shared by the others in proportion to their weights,
// repeated until no share exceeds the cap. Preconditions (checked): s >= 0 and finite,
// 1 <= top_k <= num_experts.
[[nodiscard]] std::vector<double> ZipfExpertShares(double zipf_exponent, int64_t num_experts,
                                                   int64_t top_k);

// The share of the token-expert assignments of each expert (expert-id order, summing to 1): the
// Zipf shares (contiguous: popularity order = id order; random: permuted by the median
// placement of `expert_parallel` ranks, see ExpertPlacement), the normalised histogram, for a
// direct load factor F the experts of EP rank 0 sharing F/ep evenly and the others the rest evenly,
// or empty for forced balance. Throws InputError naming skew.source when the histogram does not
// have exactly num_experts entries. Preconditions as BusiestRankLoadFactor.
[[nodiscard]] std::vector<double> ExpertShares(const RoutingSkew& skew, int64_t num_experts,
                                               int64_t top_k, int64_t expert_parallel);

// Tokens on the busiest EP rank / mean tokens per EP rank (>= 1; 1 = balanced). Experts are
// placed contiguously: rank r holds experts [r·E/ep, (r+1)·E/ep), as Megatron assigns local
// experts. For a Zipf skew the experts are placed as skew.placement says (contiguous: rank 0
// holds the most popular ones, the pessimistic placement for that exponent); for a histogram the
// expert ids are the file's order. The factor is ep · max_r Σ_{i on r} p_i; a direct load factor is
// returned as given. Throws InputError naming skew.source when the histogram does not have exactly
// num_experts entries, and naming --moe-routing-skew when a direct factor exceeds what the
// layout allows: ep · min(1, (E/ep)/k) (a rank receives at most every token, each of its experts
// at most 1/k of the assignments). Preconditions (checked):
// 1 <= top_k <= num_experts, 1 <= expert_parallel <= num_experts, zipf_exponent >= 0, histogram
// entries >= 0 with a positive total.
[[nodiscard]] double BusiestRankLoadFactor(const RoutingSkew& skew, int64_t num_experts,
                                           int64_t top_k, int64_t expert_parallel);

}  // namespace trainscope::cost

#endif  // TRAINSCOPE_COST_MOE_ROUTING_H_
