// Rank mapping: which global ranks form each Megatron-Core process group (TP, CP, DP, DP-CP, PP,
// EP, ETP, expert-DP, TP-EP, embedding), computed the way parallel_state.py's RankGenerator does
// (generate_masked_orthogonal_rank_groups): the decoder grid TP x CP x DP x PP and the expert
// grid ETP x EP x EDP x PP in the configured order. A RankMapping is a small value; lookups are
// O(group size) and never enumerate the world, so it stays cheap at 100k-GPU scale.
#ifndef TRAINSCOPE_CONFIG_RANK_MAPPING_H_
#define TRAINSCOPE_CONFIG_RANK_MAPPING_H_

#include <array>
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

// The groups of one kind, visited rank by rank without building any list: a listing of a
// 10^7-rank world then needs memory independent of its size. Groups and members come in the
// order of RankMapping::AllGroups(kind). A small value, obtained from RankMapping::Groups.
class GroupEnumerator {
 public:
  [[nodiscard]] int64_t num_groups() const { return num_groups_; }
  [[nodiscard]] int64_t group_size() const { return group_size_; }
  // Calls visit(rank) for each member of group `group`, in group order.
  // Precondition: 0 <= group < num_groups() (checked).
  template <typename Visit>
  void ForEachMember(int64_t group, Visit&& visit) const;

 private:
  friend class RankMapping;
  static constexpr int kMaxAxes = 4;
  // An axis of the masked grid: its size and rank stride.
  struct Axis {
    int64_t size = 1;
    int64_t stride = 1;
  };
  // The rank of the group's first member (group index in mixed radix over the unmasked axes).
  [[nodiscard]] int64_t Base(int64_t group) const;

  std::array<Axis, kMaxAxes> masked_{};
  std::array<Axis, kMaxAxes> unmasked_{};
  int num_masked_ = 0;
  int num_unmasked_ = 0;
  int64_t num_groups_ = 0;
  int64_t group_size_ = 0;
  // Embedding groups: only the first and last member of each pipeline group.
  bool ends_only_ = false;
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
  // The groups of `kind` as an enumerator: the same groups as AllGroups(kind), none built.
  [[nodiscard]] GroupEnumerator Groups(GroupKind kind) const;
  [[nodiscard]] int64_t GroupSize(GroupKind kind) const;
  [[nodiscard]] const ParallelSizes& sizes() const { return sizes_; }

 private:
  ParallelSizes sizes_;
};

template <typename Visit>
void GroupEnumerator::ForEachMember(int64_t group, Visit&& visit) const {
  const int64_t base = Base(group);
  if (ends_only_) {
    const Axis& pipeline = masked_[0];
    visit(base);
    if (pipeline.size > 1) visit(base + (pipeline.size - 1) * pipeline.stride);
    return;
  }
  // An odometer over the masked axes, first masked axis fastest.
  std::array<int64_t, kMaxAxes> digits{};
  int64_t rank = base;
  for (int64_t j = 0; j < group_size_; ++j) {
    visit(rank);
    for (int i = 0; i < num_masked_; ++i) {
      rank += masked_[i].stride;
      if (++digits[i] < masked_[i].size) break;
      rank -= masked_[i].size * masked_[i].stride;
      digits[i] = 0;
    }
  }
}

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
