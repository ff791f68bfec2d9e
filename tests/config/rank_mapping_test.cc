#include "trainscope/config/rank_mapping.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "trainscope/config/training_config.h"

namespace trainscope::config {
namespace {

using Groups = std::vector<std::vector<int64_t>>;

ParallelSizes Sizes(int64_t world, int64_t tp, int64_t pp, int64_t cp = 1, int64_t ep = 1,
                    std::optional<int64_t> etp = std::nullopt,
                    RankOrder order = RankOrder::kTpCpEpDpPp) {
  ParallelSizes sizes;
  sizes.world_size = world;
  sizes.tensor = tp;
  sizes.pipeline = pp;
  sizes.context = cp;
  sizes.expert = ep;
  sizes.expert_tensor = etp;
  sizes.order = order;
  return sizes;
}

// Megatron's docstring example for generate_masked_orthogonal_rank_groups (parallel_state.py):
// parallel_size = [tp, dp, pp] = [2, 3, 4], mask = [False, True, False] gives dp groups
// dp_group[0] = [0, 2, 4], dp_group[1] = [1, 3, 5], ..., dp_group[7] = [19, 21, 23].
TEST(RankMappingTest, MaskedGroupsMatchMegatronDocstringExample) {
  const Groups groups = MaskedOrthogonalRankGroups({2, 3, 4}, {false, true, false});
  // Group g has tp = g % 2, pp = g / 2 and ranks tp + 2·dp + 6·pp for dp = 0, 1, 2.
  const Groups expected = {{0, 2, 4},    {1, 3, 5},    {6, 8, 10},   {7, 9, 11},
                           {12, 14, 16}, {13, 15, 17}, {18, 20, 22}, {19, 21, 23}};
  EXPECT_EQ(groups, expected);
}

TEST(RankMappingTest, MaskedGroupOrdersMembersByFirstMaskedAxisFastest) {
  // Sizes [2, 3, 4], mask [True, False, True]: members of the group containing rank 2 (tp 0,
  // dp 1) are 2 + tp + 6·pp with tp fastest: 2, 3, 8, 9, 14, 15, 20, 21.
  EXPECT_EQ(MaskedOrthogonalRankGroupOf({2, 3, 4}, {true, false, true}, 2),
            (std::vector<int64_t>{2, 3, 8, 9, 14, 15, 20, 21}));
}

// Megatron's initialize_model_parallel docstring: 16 GPUs, tp 2, pp 4 (so dp 2) gives
// 8 tp groups [0,1],[2,3],...; 4 pp groups [0,4,8,12],[1,5,9,13],...; 8 dp groups
// [0,2],[1,3],[4,6],.... Embedding groups are the first and last rank of each pp group.
TEST(RankMappingTest, DefaultOrderMatchesMegatronDocstringExample) {
  const RankMapping mapping(Sizes(16, /*tp=*/2, /*pp=*/4));
  EXPECT_EQ(mapping.AllGroups(GroupKind::kTp),
            (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}}));
  EXPECT_EQ(mapping.AllGroups(GroupKind::kPp),
            (Groups{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}}));
  EXPECT_EQ(mapping.AllGroups(GroupKind::kDp),
            (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}}));
  EXPECT_EQ(mapping.AllGroups(GroupKind::kEmbedding), (Groups{{0, 12}, {1, 13}, {2, 14}, {3, 15}}));
}

TEST(RankMappingTest, CoordinatesFollowTpFastestFormula) {
  // W = 16, t = 2, c = 2, p = 2, so d = 16/(2·2·2) = 2 and rank = tp + 2·(cp + 2·(dp + 2·pp)).
  // Rank 13 = 1 + 2·(0 + 2·(1 + 2·1)): tp 1, cp 0, dp 1, pp 1. The expert grid (u = t = 2,
  // e = 1, d_e = 16/(2·1·2) = 4) gives rank = etp + 2·(edp + 4·pp): etp 1, ep 0, edp 2.
  const RankMapping mapping(Sizes(16, /*tp=*/2, /*pp=*/2, /*cp=*/2));
  const RankCoordinates expected{.tp = 1, .cp = 0, .dp = 1, .pp = 1, .etp = 1, .ep = 0, .edp = 2};
  EXPECT_EQ(mapping.Coordinates(13), expected);
}

TEST(RankMappingTest, BuildsContextParallelAndDenseGradientGroups) {
  // W = 16, t = 2, c = 2, p = 2, d = 2: rank = tp + 2·cp + 4·dp + 8·pp.
  const RankMapping mapping(Sizes(16, /*tp=*/2, /*pp=*/2, /*cp=*/2));
  // cp varies with stride 2 at fixed (tp, dp, pp).
  EXPECT_EQ(mapping.AllGroups(GroupKind::kCp),
            (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}}));
  // dp varies with stride 4 at fixed (tp, cp, pp).
  EXPECT_EQ(mapping.AllGroups(GroupKind::kDp),
            (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}, {8, 12}, {9, 13}, {10, 14}, {11, 15}}));
  // dp_cp: cp (stride 2) fastest, then dp (stride 4), at fixed (tp, pp): {0, 2, 4, 6} for tp 0,
  // pp 0; groups ordered tp fastest, then pp.
  EXPECT_EQ(mapping.AllGroups(GroupKind::kDpCp),
            (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}}));
  // tp_cp: tp (stride 1) then cp (stride 2), at fixed (dp, pp).
  EXPECT_EQ(mapping.AllGroups(GroupKind::kTpCp),
            (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, {12, 13, 14, 15}}));
  EXPECT_EQ(mapping.AllGroups(GroupKind::kPp),
            (Groups{{0, 8}, {1, 9}, {2, 10}, {3, 11}, {4, 12}, {5, 13}, {6, 14}, {7, 15}}));
}

TEST(RankMappingTest, ExpertDataParallelFoldsContextParallel) {
  // Same shape; the expert grid has u = t = 2, e = 1, d_e = 16/(2·1·2) = 4 and no CP axis, so
  // rank = etp + 2·edp + 8·pp and expert-DP spans the same ranks as dp_cp.
  const RankMapping mapping(Sizes(16, /*tp=*/2, /*pp=*/2, /*cp=*/2));
  EXPECT_EQ(mapping.AllGroups(GroupKind::kExpertDp),
            (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}}));
  EXPECT_EQ(mapping.GroupSize(GroupKind::kExpertDp), 4);
}

TEST(RankMappingTest, BuildsExpertGroupsWhenExpertTensorIsSmallerThanTensor) {
  // W = 16, t = 2, u = 1, e = 4, p = 2: d = 16/(2·2) = 4, d_e = 16/(1·4·2) = 2.
  // Expert grid: rank = etp + 1·(ep + 4·(edp + 2·pp)) = ep + 4·edp + 8·pp.
  const RankMapping mapping(Sizes(16, /*tp=*/2, /*pp=*/2, /*cp=*/1, /*ep=*/4, /*etp=*/1));
  EXPECT_EQ(mapping.AllGroups(GroupKind::kEp),
            (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, {12, 13, 14, 15}}));
  EXPECT_EQ(
      mapping.AllGroups(GroupKind::kEtp),
      (Groups{
          {0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}}));
  EXPECT_EQ(mapping.AllGroups(GroupKind::kExpertDp),
            (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}, {8, 12}, {9, 13}, {10, 14}, {11, 15}}));
  // tp_ep = ETP x EP = 1 x 4, the same ranks as ep.
  EXPECT_EQ(mapping.AllGroups(GroupKind::kTpEp), mapping.AllGroups(GroupKind::kEp));
  // The decoder grid is unaffected: rank = tp + 2·(dp + 4·pp).
  EXPECT_EQ(mapping.AllGroups(GroupKind::kDp),
            (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}}));
}

TEST(RankMappingTest, BuildsExpertGroupsWhenExpertTensorIsLargerThanTensor) {
  // W = 16, t = 1, u = 2, e = 2, p = 2: d_e = 16/(2·2·2) = 2.
  // Expert grid: rank = etp + 2·(ep + 2·(edp + 2·pp)) = etp + 2·ep + 4·edp + 8·pp.
  const RankMapping mapping(Sizes(16, /*tp=*/1, /*pp=*/2, /*cp=*/1, /*ep=*/2, /*etp=*/2));
  EXPECT_EQ(mapping.AllGroups(GroupKind::kEtp),
            (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}}));
  EXPECT_EQ(mapping.AllGroups(GroupKind::kEp),
            (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}}));
  EXPECT_EQ(mapping.AllGroups(GroupKind::kTpEp),
            (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, {12, 13, 14, 15}}));
  EXPECT_EQ(mapping.AllGroups(GroupKind::kExpertDp),
            (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}, {8, 12}, {9, 13}, {10, 14}, {11, 15}}));
}

TEST(RankMappingTest, EmbeddingGroupIsTheSingleRankWithoutPipeline) {
  // W = 4, t = 2, p = 1: every pp group is one rank, and so is every embedding group.
  const RankMapping mapping(Sizes(4, /*tp=*/2, /*pp=*/1));
  EXPECT_EQ(mapping.AllGroups(GroupKind::kEmbedding), (Groups{{0}, {1}, {2}, {3}}));
  EXPECT_EQ(mapping.GroupOf(GroupKind::kEmbedding, 3), (std::vector<int64_t>{3}));
  EXPECT_EQ(mapping.GroupSize(GroupKind::kEmbedding), 1);
}

TEST(RankMappingTest, EmbeddingGroupIsFirstAndLastPipelineStage) {
  // W = 16, t = 2, p = 4 (docstring example): pp group [1, 5, 9, 13] gives embedding [1, 13].
  const RankMapping mapping(Sizes(16, /*tp=*/2, /*pp=*/4));
  EXPECT_EQ(mapping.GroupOf(GroupKind::kEmbedding, 13), (std::vector<int64_t>{1, 13}));
  EXPECT_EQ(mapping.GroupIndexOf(GroupKind::kEmbedding, 13), std::optional<int64_t>(1));
  EXPECT_EQ(mapping.GroupSize(GroupKind::kEmbedding), 2);
}

TEST(RankMappingTest, MiddlePipelineStageHasNoEmbeddingGroup) {
  // Rank 5 is pp stage 1 of 4 in pp group [1, 5, 9, 13].
  const RankMapping mapping(Sizes(16, /*tp=*/2, /*pp=*/4));
  EXPECT_TRUE(mapping.GroupOf(GroupKind::kEmbedding, 5).empty());
  EXPECT_EQ(mapping.GroupIndexOf(GroupKind::kEmbedding, 5), std::nullopt);
}

TEST(RankMappingTest, PipelineBeforeDataOrderPutsDataParallelLast) {
  // Order tp-cp-ep-pp-dp, W = 16, t = 2, p = 2: d = 4, rank = tp + 2·(pp + 2·dp).
  // Expert grid with e = 2, u = 1: d_e = 16/(1·2·2) = 4 = d, rank = ep + 2·pp + 4·edp.
  const RankMapping mapping(
      Sizes(16, /*tp=*/2, /*pp=*/2, /*cp=*/1, /*ep=*/2, /*etp=*/1, RankOrder::kTpCpEpPpDp));
  EXPECT_EQ(mapping.AllGroups(GroupKind::kPp),
            (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}}));
  EXPECT_EQ(mapping.AllGroups(GroupKind::kDp),
            (Groups{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}}));
  EXPECT_EQ(mapping.AllGroups(GroupKind::kEmbedding), mapping.AllGroups(GroupKind::kPp));
  EXPECT_EQ(mapping.AllGroups(GroupKind::kEp),
            (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}}));
  EXPECT_EQ(mapping.AllGroups(GroupKind::kExpertDp),
            (Groups{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}}));
  // Rank 7 = 1 + 2·(1 + 2·1): tp 1, pp 1, dp 1; expert: ep 1, pp 1, edp 1.
  const RankCoordinates expected{.tp = 1, .cp = 0, .dp = 1, .pp = 1, .etp = 0, .ep = 1, .edp = 1};
  EXPECT_EQ(mapping.Coordinates(7), expected);
}

// Coordinates of `rank` from the closed forms (not from RankMapping): decoder axes
// tp, cp, dp, pp (or tp, cp, pp, dp) and expert axes etp, ep, edp, pp (or etp, ep, pp, edp).
std::map<std::string, int64_t> ClosedFormCoordinates(const ParallelSizes& s, int64_t rank) {
  const int64_t t = s.tensor, c = s.context, p = s.pipeline, e = s.expert;
  const int64_t u = s.expert_tensor.value_or(t);
  const int64_t d = s.world_size / (t * c * p), de = s.world_size / (u * e * p);
  const bool pp_last = s.order == RankOrder::kTpCpEpDpPp;
  std::map<std::string, int64_t> x;
  x["tp"] = rank % t;
  x["cp"] = (rank / t) % c;
  x["dp"] = pp_last ? (rank / (t * c)) % d : rank / (t * c * p);
  x["pp"] = pp_last ? rank / (t * c * d) : (rank / (t * c)) % p;
  x["etp"] = rank % u;
  x["ep"] = (rank / u) % e;
  x["edp"] = pp_last ? (rank / (u * e)) % de : rank / (u * e * p);
  return x;
}

// The coordinates a group of `kind` spans, by Megatron-LM's rank order (parallel_state.py:617,
// 887-895).
std::vector<std::string> Spans(GroupKind kind) {
  switch (kind) {
    case GroupKind::kTp:
      return {"tp"};
    case GroupKind::kCp:
      return {"cp"};
    case GroupKind::kDp:
      return {"dp"};
    case GroupKind::kDpCp:
      return {"cp", "dp"};
    case GroupKind::kPp:
      return {"pp"};
    case GroupKind::kTpCp:
      return {"tp", "cp"};
    case GroupKind::kEp:
      return {"ep"};
    case GroupKind::kEtp:
      return {"etp"};
    case GroupKind::kExpertDp:
      return {"edp"};
    case GroupKind::kTpEp:
      return {"etp", "ep"};
    case GroupKind::kEmbedding:
      return {"pp"};
    case GroupKind::kTpDpCp:
      return {"tp", "cp", "dp"};
    case GroupKind::kModelParallel:
      return {"tp", "pp"};
    case GroupKind::kWorld:
      return {"tp", "cp", "dp", "pp"};
  }
  return {};
}

bool IsExpert(GroupKind kind) {
  return kind == GroupKind::kEp || kind == GroupKind::kEtp || kind == GroupKind::kExpertDp ||
         kind == GroupKind::kTpEp;
}

// The coordinates that stay fixed inside a group of `kind` (the other axes of its grid).
std::vector<int64_t> FixedKey(const std::map<std::string, int64_t>& x, GroupKind kind) {
  const std::vector<std::string> grid = IsExpert(kind)
                                            ? std::vector<std::string>{"etp", "ep", "edp", "pp"}
                                            : std::vector<std::string>{"tp", "cp", "dp", "pp"};
  const std::vector<std::string> spans = Spans(kind);
  std::vector<int64_t> key;
  for (const std::string& axis : grid) {
    bool spanned = false;
    for (const std::string& s : spans) spanned = spanned || s == axis;
    if (!spanned) key.push_back(x.at(axis));
  }
  return key;
}

class RankMappingPropertyTest : public testing::TestWithParam<ParallelSizes> {};

// Independent of the implementation: ranks sharing every non-spanned coordinate form one group;
// inside a group the first spanned axis is fastest, which for strides that grow with the axis
// means ascending rank; groups come in order of their first unspanned axis fastest, which means
// ascending smallest member. Embedding groups are {first, last} of each pp group.
TEST_P(RankMappingPropertyTest, AllGroupsPartitionRanksByFixedCoordinates) {
  const ParallelSizes sizes = GetParam();
  const RankMapping mapping(sizes);
  for (const GroupKind kind : AllGroupKinds()) {
    std::map<std::vector<int64_t>, std::vector<int64_t>> expected_by_key;
    for (int64_t r = 0; r < sizes.world_size; ++r) {
      expected_by_key[FixedKey(ClosedFormCoordinates(sizes, r), kind)].push_back(r);
    }
    std::map<int64_t, std::vector<int64_t>> by_first;
    for (const auto& [key, group] : expected_by_key) by_first[group.front()] = group;
    Groups expected;
    for (auto& [first, group] : by_first) {
      if (kind == GroupKind::kEmbedding && group.size() > 1) group = {group.front(), group.back()};
      expected.push_back(group);
    }
    EXPECT_EQ(mapping.AllGroups(kind), expected) << ToString(kind);
  }
}

TEST_P(RankMappingPropertyTest, GroupOfAgreesWithAllGroups) {
  const ParallelSizes sizes = GetParam();
  const RankMapping mapping(sizes);
  for (const GroupKind kind : AllGroupKinds()) {
    const Groups all = mapping.AllGroups(kind);
    for (int64_t r = 0; r < sizes.world_size; ++r) {
      const std::vector<int64_t> group = mapping.GroupOf(kind, r);
      const std::optional<int64_t> index = mapping.GroupIndexOf(kind, r);
      if (group.empty()) {
        EXPECT_EQ(kind, GroupKind::kEmbedding);
        EXPECT_EQ(index, std::nullopt);
        continue;
      }
      ASSERT_TRUE(index.has_value()) << ToString(kind) << " rank " << r;
      EXPECT_EQ(all.at(static_cast<size_t>(*index)), group) << ToString(kind) << " rank " << r;
      EXPECT_THAT(group, testing::Contains(r));
      EXPECT_EQ(static_cast<int64_t>(group.size()), mapping.GroupSize(kind));
    }
  }
}

TEST_P(RankMappingPropertyTest, CoordinatesMatchClosedForm) {
  const ParallelSizes sizes = GetParam();
  const RankMapping mapping(sizes);
  for (int64_t r = 0; r < sizes.world_size; ++r) {
    const std::map<std::string, int64_t> x = ClosedFormCoordinates(sizes, r);
    const RankCoordinates expected{.tp = x.at("tp"),
                                   .cp = x.at("cp"),
                                   .dp = x.at("dp"),
                                   .pp = x.at("pp"),
                                   .etp = x.at("etp"),
                                   .ep = x.at("ep"),
                                   .edp = x.at("edp")};
    EXPECT_EQ(mapping.Coordinates(r), expected) << "rank " << r;
  }
}

// The enumerator visits the same groups, in the same order, as the list AllGroups builds (which
// the test above checks against the closed form).
TEST_P(RankMappingPropertyTest, GroupEnumeratorVisitsAllGroupsInOrder) {
  const RankMapping mapping(GetParam());
  for (const GroupKind kind : AllGroupKinds()) {
    const GroupEnumerator groups = mapping.Groups(kind);
    Groups visited(static_cast<size_t>(groups.num_groups()));
    for (int64_t g = 0; g < groups.num_groups(); ++g) {
      groups.ForEachMember(g,
                           [&](int64_t rank) { visited[static_cast<size_t>(g)].push_back(rank); });
      EXPECT_EQ(static_cast<int64_t>(visited[static_cast<size_t>(g)].size()), groups.group_size());
    }
    EXPECT_EQ(groups.group_size(), mapping.GroupSize(kind)) << ToString(kind);
    EXPECT_EQ(visited, mapping.AllGroups(kind)) << ToString(kind);
  }
}

INSTANTIATE_TEST_SUITE_P(
    RankMappingShapes, RankMappingPropertyTest,
    testing::Values(Sizes(1, 1, 1), Sizes(16, 2, 4), Sizes(16, 2, 2, /*cp=*/2),
                    Sizes(16, 2, 2, 1, /*ep=*/4, /*etp=*/1), Sizes(16, 1, 2, 1, 2, /*etp=*/2),
                    Sizes(48, 2, 3, /*cp=*/2, /*ep=*/4, /*etp=*/1),
                    Sizes(64, 4, 2, 2, /*ep=*/8, /*etp=*/2),
                    Sizes(16, 2, 2, 1, 2, 1, RankOrder::kTpCpEpPpDp),
                    Sizes(48, 2, 3, 2, 2, 2, RankOrder::kTpCpEpPpDp),
                    Sizes(24, 2, 1, 3, /*ep=*/3, /*etp=*/2, RankOrder::kTpCpEpPpDp)));

TEST(RankMappingTest, GroupOfWorksOnA131072RankWorld) {
  // W = 131072, t = 8, c = 2, p = 16, e = 64, u = 1: d = 131072/(8·2·16) = 512 and
  // d_e = 131072/(1·64·16) = 128.
  // Rank 100013 = 5 + 8·(1 + 2·(106 + 512·12)): tp 5, cp 1, dp 106, pp 12.
  // Expert grid: 100013 = 45 + 64·(26 + 128·12): ep 45, edp 26, pp 12.
  const RankMapping mapping(Sizes(131072, /*tp=*/8, /*pp=*/16, /*cp=*/2, /*ep=*/64, /*etp=*/1));
  const int64_t rank = 100013;
  std::vector<int64_t> tp, pp, dp, ep, edp;
  for (int64_t i = 0; i < 8; ++i) tp.push_back(100008 + i);
  // pp: base 5 + 8·(1 + 2·106) = 1709, stride t·c·d = 8192.
  for (int64_t i = 0; i < 16; ++i) pp.push_back(1709 + 8192 * i);
  // dp: base 5 + 8·1 + 8192·12 = 98317, stride t·c = 16.
  for (int64_t i = 0; i < 512; ++i) dp.push_back(98317 + 16 * i);
  // ep: 64·(26 + 128·12) = 99968, stride 1.
  for (int64_t i = 0; i < 64; ++i) ep.push_back(99968 + i);
  // edp: base 45 + 64·128·12 = 98349, stride u·e = 64.
  for (int64_t i = 0; i < 128; ++i) edp.push_back(98349 + 64 * i);
  EXPECT_EQ(mapping.GroupOf(GroupKind::kTp, rank), tp);
  EXPECT_EQ(mapping.GroupOf(GroupKind::kPp, rank), pp);
  EXPECT_EQ(mapping.GroupOf(GroupKind::kDp, rank), dp);
  EXPECT_EQ(mapping.GroupOf(GroupKind::kEp, rank), ep);
  EXPECT_EQ(mapping.GroupOf(GroupKind::kExpertDp, rank), edp);
  EXPECT_EQ(mapping.GroupOf(GroupKind::kEtp, rank), (std::vector<int64_t>{rank}));
  EXPECT_TRUE(mapping.GroupOf(GroupKind::kEmbedding, rank).empty());  // pp 12 of 16
  // The first stage of the same pp group holds an embedding copy with the last one.
  EXPECT_EQ(mapping.GroupOf(GroupKind::kEmbedding, 1709),
            (std::vector<int64_t>{1709, 1709 + 8192 * 15}));
}

TEST(RankMappingTest, SpellsGroupKindsInReportOrder) {
  std::vector<std::string> names;
  for (const GroupKind kind : AllGroupKinds()) names.push_back(ToString(kind));
  EXPECT_EQ(names, (std::vector<std::string>{"tp", "cp", "dp", "dp_cp", "pp", "tp_cp", "ep", "etp",
                                             "edp", "tp_ep", "embedding", "tp_dp_cp", "mp"}));
}

TEST(RankMappingTest, ModelParallelAndTpDpCpGroupsSpanTheirAxes) {
  // W 16, t 2, c 2, p 2 -> d 2; rank = tp + 2·(cp + 2·(dp + 2·pp)).
  // mp = {tp, pp} of rank 0: tp 0..1 at pp 0 and pp 1 (offset 8): 0, 1, 8, 9.
  // tp_dp_cp of rank 0: every rank with pp 0: 0..7. world: all 16.
  const RankMapping mapping(
      ParallelSizes{.world_size = 16, .tensor = 2, .pipeline = 2, .context = 2});
  EXPECT_EQ(mapping.GroupOf(GroupKind::kModelParallel, 0), (std::vector<int64_t>{0, 1, 8, 9}));
  EXPECT_EQ(mapping.GroupOf(GroupKind::kTpDpCp, 0), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(mapping.GroupSize(GroupKind::kWorld), 16);
}

TEST(RankMappingDeathTest, RejectsRankOutsideTheWorld) {
  const RankMapping mapping(Sizes(16, /*tp=*/2, /*pp=*/4));
  EXPECT_DEATH(static_cast<void>(mapping.GroupOf(GroupKind::kTp, 16)), "internal check failed");
  EXPECT_DEATH(static_cast<void>(mapping.Coordinates(-1)), "internal check failed");
}

}  // namespace
}  // namespace trainscope::config
