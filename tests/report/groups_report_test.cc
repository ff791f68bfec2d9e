#include "trainscope/report/groups_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/config/rank_mapping.h"
#include "trainscope/config/training_config.h"

namespace trainscope::report {
namespace {

using Groups = std::vector<std::vector<int64_t>>;
using testing::HasSubstr;

// Megatron's initialize_model_parallel docstring shape: W = 16, t = 2, p = 4, so d = 2 and, with
// u = t = 2 and e = 1, d_e = 16/(2·1·4) = 2. rank = tp + 2·(dp + 2·pp).
config::RankMapping DocstringMapping() {
  config::ParallelSizes sizes;
  sizes.world_size = 16;
  sizes.tensor = 2;
  sizes.pipeline = 4;
  return config::RankMapping(sizes);
}

std::vector<std::string> Keys(const nlohmann::ordered_json& object) {
  std::vector<std::string> keys;
  for (const auto& item : object.items()) keys.push_back(item.key());
  return keys;
}

TEST(GroupsReportTest, JsonListsEveryGroupOfEveryKind) {
  const nlohmann::ordered_json json =
      nlohmann::ordered_json::parse(RenderGroupsJson(DocstringMapping(), std::nullopt));
  EXPECT_EQ(Keys(json), (std::vector<std::string>{"world_size", "order", "sizes", "groups"}));
  EXPECT_EQ(json["world_size"], 16);
  EXPECT_EQ(json["order"], "tp-cp-ep-dp-pp");
  EXPECT_EQ(Keys(json["sizes"]),
            (std::vector<std::string>{"tp", "cp", "pp", "dp", "ep", "etp", "edp"}));
  EXPECT_EQ(json["sizes"]["tp"], 2);
  EXPECT_EQ(json["sizes"]["pp"], 4);
  EXPECT_EQ(json["sizes"]["dp"], 2);
  EXPECT_EQ(json["sizes"]["etp"], 2);
  EXPECT_EQ(json["sizes"]["edp"], 2);
  EXPECT_EQ(Keys(json["groups"]),
            (std::vector<std::string>{"tp", "cp", "dp", "dp_cp", "pp", "tp_cp", "ep", "etp", "edp",
                                      "tp_ep", "embedding", "tp_dp_cp", "mp"}));
  // Groups from the docstring: pp [0,4,8,12], ...; dp [0,2],[1,3],[4,6], ...; embedding is the
  // first and last rank of each pp group.
  EXPECT_EQ(json["groups"]["pp"].get<Groups>(),
            (Groups{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}}));
  EXPECT_EQ(json["groups"]["dp"].get<Groups>(),
            (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}}));
  EXPECT_EQ(json["groups"]["embedding"].get<Groups>(),
            (Groups{{0, 12}, {1, 13}, {2, 14}, {3, 15}}));
  // c = 1 and e = 1: 16 single-rank cp groups and 16 single-rank ep groups.
  EXPECT_EQ(json["groups"]["cp"].size(), 16u);
  EXPECT_EQ(json["groups"]["ep"].size(), 16u);
}

TEST(GroupsReportTest, JsonForOneRankHasCoordinatesAndItsGroups) {
  const nlohmann::ordered_json json =
      nlohmann::ordered_json::parse(RenderGroupsJson(DocstringMapping(), 5));
  EXPECT_EQ(Keys(json), (std::vector<std::string>{"world_size", "order", "sizes", "rank",
                                                  "coordinates", "groups"}));
  EXPECT_EQ(json["rank"], 5);
  // 5 = 1 + 2·(0 + 2·1): tp 1, dp 0, pp 1; expert grid 5 = 1 + 2·(0 + 2·1): etp 1, edp 0.
  const nlohmann::ordered_json expected_coordinates = {{"tp", 1}, {"cp", 0},  {"pp", 1}, {"dp", 0},
                                                       {"ep", 0}, {"etp", 1}, {"edp", 0}};
  EXPECT_EQ(json["coordinates"], expected_coordinates);
  const nlohmann::ordered_json& groups = json["groups"];
  EXPECT_EQ(groups["tp"].get<std::vector<int64_t>>(), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(groups["cp"].get<std::vector<int64_t>>(), (std::vector<int64_t>{5}));
  EXPECT_EQ(groups["dp"].get<std::vector<int64_t>>(), (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(groups["dp_cp"].get<std::vector<int64_t>>(), (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(groups["pp"].get<std::vector<int64_t>>(), (std::vector<int64_t>{1, 5, 9, 13}));
  EXPECT_EQ(groups["tp_cp"].get<std::vector<int64_t>>(), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(groups["ep"].get<std::vector<int64_t>>(), (std::vector<int64_t>{5}));
  EXPECT_EQ(groups["etp"].get<std::vector<int64_t>>(), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(groups["edp"].get<std::vector<int64_t>>(), (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(groups["tp_ep"].get<std::vector<int64_t>>(), (std::vector<int64_t>{4, 5}));
  // Rank 5 is pp stage 1 of 4, so it holds no embedding copy.
  EXPECT_TRUE(groups["embedding"].empty());
}

TEST(GroupsReportTest, JsonKeepsEachGroupListOnOneLine) {
  const std::string json = RenderGroupsJson(DocstringMapping(), std::nullopt);
  EXPECT_THAT(json, HasSubstr("\n    \"pp\": [[0,4,8,12],[1,5,9,13],[2,6,10,14],[3,7,11,15]],\n"));
  EXPECT_THAT(json, HasSubstr("\n    \"tp\": 2,\n"));
}

TEST(GroupsReportTest, OutputIsDeterministicAndEndsWithNewline) {
  const config::RankMapping mapping = DocstringMapping();
  const std::string json = RenderGroupsJson(mapping, std::nullopt);
  const std::string text = RenderGroupsText(mapping, 3);
  EXPECT_EQ(json, RenderGroupsJson(mapping, std::nullopt));
  EXPECT_EQ(text, RenderGroupsText(mapping, 3));
  EXPECT_EQ(json.back(), '\n');
  EXPECT_EQ(text.back(), '\n');
}

TEST(GroupsReportTest, TextListsSizesAndOneLinePerGroup) {
  const std::string text = RenderGroupsText(DocstringMapping(), std::nullopt);
  EXPECT_THAT(text, testing::StartsWith("world_size: 16, order: tp-cp-ep-dp-pp\n"
                                        "sizes: tp=2 cp=1 pp=4 dp=2 ep=1 etp=2 edp=2\n"
                                        "tp: 8 groups of 2\n"
                                        "tp[0]: 0 1\n"
                                        "tp[1]: 2 3\n"));
  EXPECT_THAT(text, HasSubstr("\npp: 4 groups of 4\npp[0]: 0 4 8 12\npp[1]: 1 5 9 13\n"));
  EXPECT_THAT(text, HasSubstr("\ndp[7]: 13 15\n"));
  EXPECT_THAT(text, HasSubstr("\nembedding: 4 groups of 2\nembedding[0]: 0 12\n"));
  EXPECT_THAT(text, HasSubstr("\nembedding[3]: 3 15\n"));
  EXPECT_THAT(text, testing::EndsWith("mp[1]: 2 3 6 7 10 11 14 15\n"));
}

TEST(GroupsReportTest, TextForOneRankShowsCoordinatesAndIndexedGroups) {
  const std::string text = RenderGroupsText(DocstringMapping(), 5);
  EXPECT_THAT(text, HasSubstr("\nrank 5: tp=1 cp=0 pp=1 dp=0 ep=0 etp=1 edp=0\n"));
  // Group indices count the fixed coordinates, first axis fastest: the tp group of rank 5 has
  // dp 0, pp 1, index 0 + 2·1 = 2; its dp group has tp 1, pp 1, index 1 + 2·1 = 3; its pp group
  // has tp 1, dp 0, index 1 + 2·0 = 1.
  EXPECT_THAT(text, HasSubstr("\ntp[2]: 4 5\n"));
  EXPECT_THAT(text, HasSubstr("\ndp[3]: 5 7\n"));
  EXPECT_THAT(text, HasSubstr("\npp[1]: 1 5 9 13\n"));
  EXPECT_THAT(text, HasSubstr("\nembedding: none (rank 5 is on a middle pipeline stage)\n"));
  EXPECT_THAT(text, testing::Not(HasSubstr("tp[0]")));
}

TEST(GroupsReportTest, TextForLastStageRankShowsItsEmbeddingGroup) {
  // Rank 15 = 1 + 2·(1 + 2·3) is pp stage 3 of pp group 3 = [3, 7, 11, 15].
  const std::string text = RenderGroupsText(DocstringMapping(), 15);
  EXPECT_THAT(text, HasSubstr("\nembedding[3]: 3 15\n"));
}

// W = 4, t = 2, p = 2: d = 1, rank = tp + 2·pp. Expert grid with u = t = 2, e = 1, d_e = 1:
// rank = etp + 2·pp. Every group derived by hand from those two formulas.
TEST(GroupsReportTest, TextOfSmallMappingIsTheHandDerivedListing) {
  config::ParallelSizes sizes;
  sizes.world_size = 4;
  sizes.tensor = 2;
  sizes.pipeline = 2;
  const std::string expected =
      "world_size: 4, order: tp-cp-ep-dp-pp\n"
      "sizes: tp=2 cp=1 pp=2 dp=1 ep=1 etp=2 edp=1\n"
      "tp: 2 groups of 2\ntp[0]: 0 1\ntp[1]: 2 3\n"
      "cp: 4 groups of 1\ncp[0]: 0\ncp[1]: 1\ncp[2]: 2\ncp[3]: 3\n"
      "dp: 4 groups of 1\ndp[0]: 0\ndp[1]: 1\ndp[2]: 2\ndp[3]: 3\n"
      "dp_cp: 4 groups of 1\ndp_cp[0]: 0\ndp_cp[1]: 1\ndp_cp[2]: 2\ndp_cp[3]: 3\n"
      "pp: 2 groups of 2\npp[0]: 0 2\npp[1]: 1 3\n"
      "tp_cp: 2 groups of 2\ntp_cp[0]: 0 1\ntp_cp[1]: 2 3\n"
      "ep: 4 groups of 1\nep[0]: 0\nep[1]: 1\nep[2]: 2\nep[3]: 3\n"
      "etp: 2 groups of 2\netp[0]: 0 1\netp[1]: 2 3\n"
      "edp: 4 groups of 1\nedp[0]: 0\nedp[1]: 1\nedp[2]: 2\nedp[3]: 3\n"
      "tp_ep: 2 groups of 2\ntp_ep[0]: 0 1\ntp_ep[1]: 2 3\n"
      "embedding: 2 groups of 2\nembedding[0]: 0 2\nembedding[1]: 1 3\n"
      "tp_dp_cp: 2 groups of 2\ntp_dp_cp[0]: 0 1\ntp_dp_cp[1]: 2 3\n"
      "mp: 1 groups of 4\nmp[0]: 0 1 2 3\n";
  const config::RankMapping mapping(sizes);
  EXPECT_EQ(RenderGroupsText(mapping, std::nullopt), expected);
  std::string streamed;
  StreamGroupsText(mapping, std::nullopt, [&](std::string_view piece) { streamed += piece; });
  EXPECT_EQ(streamed, expected);
}

// With context, expert and pipeline parallelism in both rank orders, the streamed JSON lists
// exactly the groups RankMapping::AllGroups builds (checked against the closed form in
// rank_mapping_test).
TEST(GroupsReportTest, StreamedJsonListsTheGroupsOfEveryKind) {
  for (const config::RankOrder order :
       {config::RankOrder::kTpCpEpDpPp, config::RankOrder::kTpCpEpPpDp}) {
    config::ParallelSizes sizes;
    sizes.world_size = 48;
    sizes.tensor = 2;
    sizes.pipeline = 3;
    sizes.context = 2;
    sizes.expert = 2;
    sizes.expert_tensor = 2;
    sizes.order = order;
    const config::RankMapping mapping(sizes);
    std::string streamed;
    StreamGroupsJson(mapping, std::nullopt, [&](std::string_view piece) { streamed += piece; });
    const nlohmann::json json = nlohmann::json::parse(streamed);
    for (const config::GroupKind kind : config::AllGroupKinds()) {
      EXPECT_EQ(json["groups"][config::ToString(kind)].get<Groups>(), mapping.AllGroups(kind))
          << config::ToString(kind);
    }
  }
}

// Counts the pieces and lines of a streamed report without keeping it.
struct PieceStats {
  int64_t num_pieces = 0;
  int64_t num_lines = 0;
  int64_t total_bytes = 0;
  std::size_t largest_piece_bytes = 0;
  char last = 0;
  void Add(std::string_view piece) {
    ++num_pieces;
    total_bytes += static_cast<int64_t>(piece.size());
    largest_piece_bytes = std::max(largest_piece_bytes, piece.size());
    for (const char c : piece) num_lines += c == '\n' ? 1 : 0;
    if (!piece.empty()) last = piece.back();
  }
};

// W = 2^18 ranks at t = 8 print tens of megabytes; they reach the sink in pieces of bounded
// size, never as one string. Line count: 2 header lines, then per kind a heading plus one line
// per group: tp, tp_cp, etp, tp_ep and mp have W/8 groups; cp, pp, ep and embedding have W
// (p = c = e = 1); dp, dp_cp and edp have 8; tp_dp_cp has 1.
TEST(GroupsReportTest, StreamsALargeWorldInBoundedPieces) {
  config::ParallelSizes sizes;
  sizes.world_size = int64_t{1} << 18;
  sizes.tensor = 8;
  const int64_t w = sizes.world_size;
  PieceStats text;
  StreamGroupsText(config::RankMapping(sizes), std::nullopt,
                   [&](std::string_view piece) { text.Add(piece); });
  EXPECT_EQ(text.num_lines, 2 + 13 + 5 * (w / 8) + 4 * w + 3 * 8 + 1);
  EXPECT_GT(text.total_bytes, int64_t{20} << 20);
  EXPECT_GT(text.num_pieces, 100);
  EXPECT_LE(text.largest_piece_bytes, std::size_t{128} << 10);
  EXPECT_EQ(text.last, '\n');
  PieceStats json;
  StreamGroupsJson(config::RankMapping(sizes), std::nullopt,
                   [&](std::string_view piece) { json.Add(piece); });
  EXPECT_GT(json.num_pieces, 100);
  EXPECT_LE(json.largest_piece_bytes, std::size_t{128} << 10);
  EXPECT_EQ(json.last, '\n');
}

}  // namespace
}  // namespace trainscope::report
