#include "trainscope/report/groups_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
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

}  // namespace
}  // namespace trainscope::report
