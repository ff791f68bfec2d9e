// Rank mapping: which global ranks form each Megatron-Core process group (TP, CP, DP, DP-CP, PP,
// EP, ETP, expert-DP, TP-EP, embedding), computed the way parallel_state.py's RankGenerator does
// (generate_masked_orthogonal_rank_groups): the decoder grid TP x CP x DP x PP and the expert
// grid ETP x EP x EDP x PP in the configured order. A RankMapping is a small value; lookups are
// O(group size) and never enumerate the world, so it stays cheap at 100k-GPU scale.
#ifndef TRAINSCOPE_CONFIG_RANK_MAPPING_H_
#define TRAINSCOPE_CONFIG_RANK_MAPPING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/config/training_config.h"

namespace trainscope::config {

enum class GroupKind {
  kTp,             // "tp"
  kCp,             // "cp"
  kDp,             // "dp"
  kDpCp,           // "dp_cp": the dense-gradient reduction group
  kPp,             // "pp"
  kTpCp,           // "tp_cp": aux-loss statistics
  kEp,             // "ep"
  kEtp,            // "etp"
  kExpertDp,       // "edp": expert-gradient reduction group
  kTpEp,           // "tp_ep": allgather/flex dispatcher group (ETP x EP)
  kEmbedding,      // "embedding": first and last PP rank of each PP group
  kTpDpCp,         // "tp_dp_cp": global aux-loss and expert-bias statistics
  kModelParallel,  // "mp": TP x PP, the model-parallel group (grad-norm statistics)
  kWorld,          // "world": every rank (grad-norm statistics with the distributed optimizer)
};

// Coordinates of one rank in both grids.
struct RankCoordinates {
  int64_t tp = 0, cp = 0, dp = 0, pp = 0;  // decoder grid
  int64_t etp = 0, ep = 0, edp = 0;        // expert grid (pp is shared)
  friend bool operator==(const RankCoordinates&, const RankCoordinates&) = default;
};

class RankMapping {
 public:
  // Precondition: the sizes passed Validate() (C1, C2).
  explicit RankMapping(const ParallelSizes& sizes);

  [[nodiscard]] RankCoordinates Coordinates(int64_t rank) const;
  // The ranks of the group of `kind` that contains `rank`, in group order (position i in the
  // returned vector is group-local rank i).
  // For kEmbedding, a rank on neither the first nor the last pipeline stage belongs to no group
  // and the result is empty. Precondition: 0 <= rank < world size (checked).
  [[nodiscard]] std::vector<int64_t> GroupOf(GroupKind kind, int64_t rank) const;
  // The position of GroupOf(kind, rank) in AllGroups(kind), computed without enumerating; empty
  // when GroupOf(kind, rank) is empty. Precondition: 0 <= rank < world size (checked).
  [[nodiscard]] std::optional<int64_t> GroupIndexOf(GroupKind kind, int64_t rank) const;
  // Every group of `kind`, in Megatron's creation order.
  [[nodiscard]] std::vector<std::vector<int64_t>> AllGroups(GroupKind kind) const;
  [[nodiscard]] int64_t GroupSize(GroupKind kind) const;
  [[nodiscard]] const ParallelSizes& sizes() const { return sizes_; }

 private:
  ParallelSizes sizes_;
};

// generate_masked_orthogonal_rank_groups (parallel_state.py): ranks 0..prod(dim_sizes)-1 are laid
// out over a grid whose axis i has dim_sizes[i] entries, axis 0 fastest. A group is the set of
// ranks that differ only in the axes with mask[i] set. Ranks inside a group are ordered by their
// masked coordinates (first masked axis fastest); groups are ordered by their unmasked coordinates
// (first unmasked axis fastest). Preconditions (checked): equal lengths, every size >= 1.
[[nodiscard]] std::vector<std::vector<int64_t>> MaskedOrthogonalRankGroups(
    const std::vector<int64_t>& dim_sizes, const std::vector<bool>& mask);
// The group of MaskedOrthogonalRankGroups(dim_sizes, mask) that contains `rank`, in
// O(group size) time. Preconditions (checked): as above, and 0 <= rank < prod(dim_sizes).
[[nodiscard]] std::vector<int64_t> MaskedOrthogonalRankGroupOf(
    const std::vector<int64_t>& dim_sizes, const std::vector<bool>& mask, int64_t rank);

// Spelling used in reports and JSON ("tp", "dp_cp", "edp", ...).
[[nodiscard]] std::string ToString(GroupKind kind);
// Every GroupKind, in report order.
[[nodiscard]] std::vector<GroupKind> AllGroupKinds();

}  // namespace trainscope::config

#endif  // TRAINSCOPE_CONFIG_RANK_MAPPING_H_
