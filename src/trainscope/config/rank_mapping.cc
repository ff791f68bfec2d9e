// Rank mapping after Megatron-Core parallel_state.py: RankGenerator lays ranks out over a grid
// in the configured order and generate_masked_orthogonal_rank_groups cuts it into groups. Here a
// group is computed from one rank's coordinates, so no lookup touches the whole world.
#include "trainscope/config/rank_mapping.h"

#include <cstddef>
#include <string>
#include <vector>

#include "trainscope/error.h"

namespace trainscope::config {
namespace {

enum class Axis { kTp, kCp, kDp, kPp, kEtp, kEp, kEdp };

// One of the two rank grids: its axes and their sizes, fastest axis first.
struct Grid {
  std::vector<Axis> axes;
  std::vector<int64_t> sizes;
};

// The decoder RankGenerator (parallel_state.py, initialize_model_parallel) is built with ep = 1;
// an axis of size 1 moves no rank, so it is left out: tp, cp, dp, pp (or tp, cp, pp, dp).
Grid DecoderGrid(const ParallelSizes& sizes) {
  if (sizes.order == RankOrder::kTpCpEpDpPp) {
    return {{Axis::kTp, Axis::kCp, Axis::kDp, Axis::kPp},
            {sizes.tensor, sizes.context, sizes.Data(), sizes.pipeline}};
  }
  return {{Axis::kTp, Axis::kCp, Axis::kPp, Axis::kDp},
          {sizes.tensor, sizes.context, sizes.pipeline, sizes.Data()}};
}

// The expert RankGenerator uses tp = ETP, ep = EP, dp = expert-DP and cp = 1 (CP is folded into
// expert-DP), in the same order string: etp, ep, edp, pp (or etp, ep, pp, edp).
Grid ExpertGrid(const ParallelSizes& sizes) {
  if (sizes.order == RankOrder::kTpCpEpDpPp) {
    return {{Axis::kEtp, Axis::kEp, Axis::kEdp, Axis::kPp},
            {sizes.ExpertTensor(), sizes.expert, sizes.ExpertData(), sizes.pipeline}};
  }
  return {{Axis::kEtp, Axis::kEp, Axis::kPp, Axis::kEdp},
          {sizes.ExpertTensor(), sizes.expert, sizes.pipeline, sizes.ExpertData()}};
}

bool IsExpertKind(GroupKind kind) {
  return kind == GroupKind::kEp || kind == GroupKind::kEtp || kind == GroupKind::kExpertDp ||
         kind == GroupKind::kTpEp;
}

// The axes a group of `kind` spans (RankGenerator.get_ranks tokens in initialize_model_parallel).
std::vector<Axis> SpannedAxes(GroupKind kind) {
  switch (kind) {
    case GroupKind::kTp:
      return {Axis::kTp};
    case GroupKind::kCp:
      return {Axis::kCp};
    case GroupKind::kDp:
      return {Axis::kDp};
    case GroupKind::kDpCp:
      return {Axis::kCp, Axis::kDp};
    case GroupKind::kPp:
      return {Axis::kPp};
    case GroupKind::kTpCp:
      return {Axis::kTp, Axis::kCp};
    case GroupKind::kEp:
      return {Axis::kEp};
    case GroupKind::kEtp:
      return {Axis::kEtp};
    case GroupKind::kExpertDp:
      return {Axis::kEdp};
    case GroupKind::kTpEp:
      return {Axis::kEtp, Axis::kEp};
    case GroupKind::kTpDpCp:
      return {Axis::kTp, Axis::kCp, Axis::kDp};
    case GroupKind::kModelParallel:
      return {Axis::kTp, Axis::kPp};
    case GroupKind::kWorld:
      return {Axis::kTp, Axis::kCp, Axis::kDp, Axis::kPp};
    case GroupKind::kEmbedding:
      break;
  }
  TRAINSCOPE_CHECK(false, "embedding groups are derived from pipeline groups, not a grid mask");
  return {};
}

// A grid plus the mask that selects the axes of one group kind.
struct MaskedGrid {
  std::vector<int64_t> sizes;
  std::vector<bool> mask;
};

MaskedGrid MaskedGridFor(const ParallelSizes& sizes, GroupKind kind) {
  const Grid grid = IsExpertKind(kind) ? ExpertGrid(sizes) : DecoderGrid(sizes);
  const std::vector<Axis> spanned = SpannedAxes(kind);
  MaskedGrid result{grid.sizes, std::vector<bool>(grid.axes.size(), false)};
  for (std::size_t i = 0; i < grid.axes.size(); ++i) {
    for (const Axis axis : spanned) {
      if (grid.axes[i] == axis) result.mask[i] = true;
    }
  }
  return result;
}

int64_t CoordinateOf(const Grid& grid, Axis axis, int64_t rank) {
  int64_t stride = 1;
  for (std::size_t i = 0; i < grid.axes.size(); ++i) {
    if (grid.axes[i] == axis) return (rank / stride) % grid.sizes[i];
    stride *= grid.sizes[i];
  }
  TRAINSCOPE_CHECK(false, "axis is not part of the grid");
  return 0;
}

void CheckGrid(const std::vector<int64_t>& dim_sizes, const std::vector<bool>& mask) {
  TRAINSCOPE_CHECK(dim_sizes.size() == mask.size(), "one mask entry per grid axis");
  for (const int64_t size : dim_sizes) TRAINSCOPE_CHECK(size >= 1, "grid axis sizes are >= 1");
}

// Mixed-radix strides: stride[i] = dim_sizes[0] * ... * dim_sizes[i-1]; stride[n] = world size.
std::vector<int64_t> Strides(const std::vector<int64_t>& dim_sizes) {
  std::vector<int64_t> strides(dim_sizes.size() + 1, 1);
  for (std::size_t i = 0; i < dim_sizes.size(); ++i) strides[i + 1] = strides[i] * dim_sizes[i];
  return strides;
}

int64_t MaskedProduct(const std::vector<int64_t>& dim_sizes, const std::vector<bool>& mask) {
  int64_t product = 1;
  for (std::size_t i = 0; i < dim_sizes.size(); ++i) {
    if (mask[i]) product *= dim_sizes[i];
  }
  return product;
}

// The group whose unmasked coordinates contribute `base` to every member's rank. Member j has
// masked coordinates given by j in mixed radix over the masked axes, first masked axis fastest.
std::vector<int64_t> GroupWithBase(const std::vector<int64_t>& dim_sizes,
                                   const std::vector<bool>& mask,
                                   const std::vector<int64_t>& strides, int64_t base) {
  const int64_t group_size = MaskedProduct(dim_sizes, mask);
  std::vector<int64_t> group;
  group.reserve(static_cast<std::size_t>(group_size));
  for (int64_t j = 0; j < group_size; ++j) {
    int64_t rest = j;
    int64_t rank = base;
    for (std::size_t i = 0; i < dim_sizes.size(); ++i) {
      if (!mask[i]) continue;
      rank += (rest % dim_sizes[i]) * strides[i];
      rest /= dim_sizes[i];
    }
    group.push_back(rank);
  }
  return group;
}

// The rank offset contributed by the unmasked coordinates of `rank`.
int64_t UnmaskedBase(const std::vector<int64_t>& dim_sizes, const std::vector<bool>& mask,
                     const std::vector<int64_t>& strides, int64_t rank) {
  int64_t base = 0;
  for (std::size_t i = 0; i < dim_sizes.size(); ++i) {
    if (!mask[i]) base += ((rank / strides[i]) % dim_sizes[i]) * strides[i];
  }
  return base;
}

// The index of rank's group: its unmasked coordinates read in mixed radix, first unmasked fastest.
int64_t GroupIndex(const std::vector<int64_t>& dim_sizes, const std::vector<bool>& mask,
                   const std::vector<int64_t>& strides, int64_t rank) {
  int64_t index = 0;
  int64_t place = 1;
  for (std::size_t i = 0; i < dim_sizes.size(); ++i) {
    if (mask[i]) continue;
    index += ((rank / strides[i]) % dim_sizes[i]) * place;
    place *= dim_sizes[i];
  }
  return index;
}

// default_embedding_ranks (parallel_state.py): the first and last rank of a pipeline group, or
// the single rank when p = 1.
std::vector<int64_t> EmbeddingRanks(const std::vector<int64_t>& pipeline_group) {
  if (pipeline_group.size() == 1) return pipeline_group;
  return {pipeline_group.front(), pipeline_group.back()};
}

}  // namespace

std::vector<std::vector<int64_t>> MaskedOrthogonalRankGroups(const std::vector<int64_t>& dim_sizes,
                                                             const std::vector<bool>& mask) {
  CheckGrid(dim_sizes, mask);
  const std::vector<int64_t> strides = Strides(dim_sizes);
  const int64_t num_groups = strides.back() / MaskedProduct(dim_sizes, mask);
  std::vector<std::vector<int64_t>> groups;
  groups.reserve(static_cast<std::size_t>(num_groups));
  for (int64_t g = 0; g < num_groups; ++g) {
    // Group g's unmasked coordinates are g in mixed radix over the unmasked axes.
    int64_t rest = g;
    int64_t base = 0;
    for (std::size_t i = 0; i < dim_sizes.size(); ++i) {
      if (mask[i]) continue;
      base += (rest % dim_sizes[i]) * strides[i];
      rest /= dim_sizes[i];
    }
    groups.push_back(GroupWithBase(dim_sizes, mask, strides, base));
  }
  return groups;
}

std::vector<int64_t> MaskedOrthogonalRankGroupOf(const std::vector<int64_t>& dim_sizes,
                                                 const std::vector<bool>& mask, int64_t rank) {
  CheckGrid(dim_sizes, mask);
  const std::vector<int64_t> strides = Strides(dim_sizes);
  TRAINSCOPE_CHECK(rank >= 0 && rank < strides.back(),
                   "rank " + std::to_string(rank) + " outside the grid");
  return GroupWithBase(dim_sizes, mask, strides, UnmaskedBase(dim_sizes, mask, strides, rank));
}

RankMapping::RankMapping(const ParallelSizes& sizes) : sizes_(sizes) {
  TRAINSCOPE_CHECK(sizes.world_size >= 1 && sizes.tensor >= 1 && sizes.pipeline >= 1 &&
                       sizes.context >= 1 && sizes.expert >= 1 && sizes.ExpertTensor() >= 1,
                   "parallel sizes are positive");
  // C1, C2 (parallel_state.py:814-825, 874-884).
  TRAINSCOPE_CHECK(sizes.world_size % (sizes.tensor * sizes.pipeline * sizes.context) == 0,
                   "world size divisible by t*p*c");
  TRAINSCOPE_CHECK(sizes.world_size % (sizes.ExpertTensor() * sizes.expert * sizes.pipeline) == 0,
                   "world size divisible by u*e*p");
  // C3: without pp last, both grids only share their PP groups when d_e == d
  // (parallel_state.py:897-902 and the PP-group equality assertion after it).
  TRAINSCOPE_CHECK(sizes.order == RankOrder::kTpCpEpDpPp || sizes.pipeline == 1 ||
                       sizes.ExpertData() == sizes.Data(),
                   "order tp-cp-ep-pp-dp with p > 1 needs expert-DP == DP");
}

RankCoordinates RankMapping::Coordinates(int64_t rank) const {
  TRAINSCOPE_CHECK(rank >= 0 && rank < sizes_.world_size,
                   "rank " + std::to_string(rank) + " outside the world");
  const Grid decoder = DecoderGrid(sizes_);
  const Grid expert = ExpertGrid(sizes_);
  RankCoordinates coordinates;
  coordinates.tp = CoordinateOf(decoder, Axis::kTp, rank);
  coordinates.cp = CoordinateOf(decoder, Axis::kCp, rank);
  coordinates.dp = CoordinateOf(decoder, Axis::kDp, rank);
  coordinates.pp = CoordinateOf(decoder, Axis::kPp, rank);
  coordinates.etp = CoordinateOf(expert, Axis::kEtp, rank);
  coordinates.ep = CoordinateOf(expert, Axis::kEp, rank);
  coordinates.edp = CoordinateOf(expert, Axis::kEdp, rank);
  return coordinates;
}

std::vector<int64_t> RankMapping::GroupOf(GroupKind kind, int64_t rank) const {
  TRAINSCOPE_CHECK(rank >= 0 && rank < sizes_.world_size,
                   "rank " + std::to_string(rank) + " outside the world");
  if (kind == GroupKind::kEmbedding) {
    std::vector<int64_t> embedding = EmbeddingRanks(GroupOf(GroupKind::kPp, rank));
    for (const int64_t member : embedding) {
      if (member == rank) return embedding;
    }
    return {};
  }
  const MaskedGrid grid = MaskedGridFor(sizes_, kind);
  return MaskedOrthogonalRankGroupOf(grid.sizes, grid.mask, rank);
}

std::optional<int64_t> RankMapping::GroupIndexOf(GroupKind kind, int64_t rank) const {
  TRAINSCOPE_CHECK(rank >= 0 && rank < sizes_.world_size,
                   "rank " + std::to_string(rank) + " outside the world");
  if (kind == GroupKind::kEmbedding) {
    // Embedding groups are created one per pipeline group, in pipeline-group order.
    if (GroupOf(kind, rank).empty()) return std::nullopt;
    return GroupIndexOf(GroupKind::kPp, rank);
  }
  const MaskedGrid grid = MaskedGridFor(sizes_, kind);
  return GroupIndex(grid.sizes, grid.mask, Strides(grid.sizes), rank);
}

std::vector<std::vector<int64_t>> RankMapping::AllGroups(GroupKind kind) const {
  if (kind == GroupKind::kEmbedding) {
    std::vector<std::vector<int64_t>> groups = AllGroups(GroupKind::kPp);
    for (std::vector<int64_t>& group : groups) group = EmbeddingRanks(group);
    return groups;
  }
  const MaskedGrid grid = MaskedGridFor(sizes_, kind);
  return MaskedOrthogonalRankGroups(grid.sizes, grid.mask);
}

GroupEnumerator RankMapping::Groups(GroupKind kind) const {
  const bool embedding = kind == GroupKind::kEmbedding;
  const MaskedGrid grid = MaskedGridFor(sizes_, embedding ? GroupKind::kPp : kind);
  TRAINSCOPE_CHECK(grid.sizes.size() <= GroupEnumerator::kMaxAxes, "a rank grid has 4 axes");
  const std::vector<int64_t> strides = Strides(grid.sizes);
  GroupEnumerator groups;
  for (std::size_t i = 0; i < grid.sizes.size(); ++i) {
    const GroupEnumerator::Axis axis{.size = grid.sizes[i], .stride = strides[i]};
    if (grid.mask[i]) {
      groups.masked_[groups.num_masked_++] = axis;
    } else {
      groups.unmasked_[groups.num_unmasked_++] = axis;
    }
  }
  const int64_t span = MaskedProduct(grid.sizes, grid.mask);
  groups.num_groups_ = strides.back() / span;
  groups.group_size_ = embedding ? GroupSize(kind) : span;
  groups.ends_only_ = embedding;
  return groups;
}

int64_t GroupEnumerator::Base(int64_t group) const {
  TRAINSCOPE_CHECK(group >= 0 && group < num_groups_, "group index outside the kind's groups");
  int64_t rest = group;
  int64_t base = 0;
  for (int i = 0; i < num_unmasked_; ++i) {
    base += (rest % unmasked_[i].size) * unmasked_[i].stride;
    rest /= unmasked_[i].size;
  }
  return base;
}

int64_t RankMapping::GroupSize(GroupKind kind) const {
  if (kind == GroupKind::kEmbedding) return sizes_.pipeline > 1 ? 2 : 1;
  const MaskedGrid grid = MaskedGridFor(sizes_, kind);
  return MaskedProduct(grid.sizes, grid.mask);
}

std::string ToString(GroupKind kind) {
  switch (kind) {
    case GroupKind::kTp:
      return "tp";
    case GroupKind::kCp:
      return "cp";
    case GroupKind::kDp:
      return "dp";
    case GroupKind::kDpCp:
      return "dp_cp";
    case GroupKind::kPp:
      return "pp";
    case GroupKind::kTpCp:
      return "tp_cp";
    case GroupKind::kEp:
      return "ep";
    case GroupKind::kEtp:
      return "etp";
    case GroupKind::kExpertDp:
      return "edp";
    case GroupKind::kTpEp:
      return "tp_ep";
    case GroupKind::kEmbedding:
      return "embedding";
    case GroupKind::kTpDpCp:
      return "tp_dp_cp";
    case GroupKind::kModelParallel:
      return "mp";
    case GroupKind::kWorld:
      return "world";
  }
  TRAINSCOPE_CHECK(false, "unknown GroupKind");
  return "";
}

std::vector<GroupKind> AllGroupKinds() {
  return {GroupKind::kTp,           GroupKind::kCp,   GroupKind::kDp,        GroupKind::kDpCp,
          GroupKind::kPp,           GroupKind::kTpCp, GroupKind::kEp,        GroupKind::kEtp,
          GroupKind::kExpertDp,     GroupKind::kTpEp, GroupKind::kEmbedding, GroupKind::kTpDpCp,
          GroupKind::kModelParallel};
}

}  // namespace trainscope::config
