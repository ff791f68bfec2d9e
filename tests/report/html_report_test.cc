// The HTML report's data and page: timeline segments are sorted, merged per kind and within the
// step; memory and traffic add up to the study's; the page embeds both JSON blocks safely.
#include "trainscope/report/html_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tiny_configs.h"
#include "trainscope/io/cluster_file.h"
#include "trainscope/report/simulate_report.h"

namespace trainscope::report {
namespace {

study::Study TinyStudy() {
  study::Study study{.model = testing_configs::TinyModel(),
                     .training = testing_configs::Training(2, 2, 2, 4)};
  study.cluster = io::ResolveCluster({.gpu = std::string("H100")});
  return study;
}

TEST(HtmlReportTest, TimelineSegmentsAreSortedMergedAndWithinTheStep) {
  const study::Study study = TinyStudy();
  const study::StudyResult result = study::RunStudy(study);
  const nlohmann::json data =
      nlohmann::json::parse(RenderHtmlReportData(study, result, config::ValidationResult{}));
  const nlohmann::json& lanes = data["timeline"]["lanes"];
  ASSERT_EQ(lanes.size(), result.simulation.lanes.size());
  for (const nlohmann::json& lane : lanes) {
    for (const char* part : {"compute", "comm"}) {
      double previous_start = 0;
      for (const nlohmann::json& segment : lane[part]) {
        const double start = segment[0], end = segment[1];
        EXPECT_LE(previous_start, start);
        EXPECT_LT(start, end);
        EXPECT_LE(end, result.simulation.step_seconds);
        previous_start = start;
      }
    }
    ASSERT_FALSE(lane["compute"].empty());
    // Merged: two consecutive segments of one kind never touch.
    for (size_t i = 1; i < lane["comm"].size(); ++i) {
      EXPECT_LT(lane["comm"][i - 1][1].get<double>(), lane["comm"][i][0].get<double>());
    }
  }
}

TEST(HtmlReportTest, MemoryAndTrafficAddUpToTheStudy) {
  const study::Study study = TinyStudy();
  const study::StudyResult result = study::RunStudy(study);
  const nlohmann::json data =
      nlohmann::json::parse(RenderHtmlReportData(study, result, config::ValidationResult{}));
  ASSERT_EQ(data["memory"]["stages"].size(), result.memory.stages.size());
  for (const nlohmann::json& stage : data["memory"]["stages"]) {
    EXPECT_EQ(stage["weights_bytes"].get<int64_t>() + stage["grads_bytes"].get<int64_t>() +
                  stage["optimizer_bytes"].get<int64_t>() +
                  stage["activations_bytes"].get<int64_t>() + stage["buffers_bytes"].get<int64_t>(),
              stage["peak_bytes"].get<int64_t>());
  }
  int64_t comm_ops = 0;
  for (const sim::LaneTimeline& lane : result.simulation.lanes) {
    for (const graph::Op& op : lane.graph.ops) comm_ops += op.IsComm() ? 1 : 0;
  }
  int64_t counted = 0;
  for (const nlohmann::json& row : data["comm"]) counted += row["count"].get<int64_t>();
  EXPECT_EQ(counted, comm_ops);
  EXPECT_TRUE(data["validation"]["ok"].get<bool>());
}

TEST(HtmlReportTest, EmbedsSimulateJsonAndEscapesScriptEnds) {
  study::Study study = TinyStudy();
  study.model.name = "</script><b>tiny";
  const study::StudyResult result = study::RunStudy(study);
  const std::string page = RenderHtmlReport(study, result, config::ValidationResult{});
  EXPECT_THAT(page, ::testing::StartsWith("<!DOCTYPE html>"));
  EXPECT_THAT(page, ::testing::Not(::testing::HasSubstr("</script><b>")));
  const std::string open = "<script type=\"application/json\" id=\"simulate-json\">";
  const size_t start = page.find(open) + open.size();
  const std::string block = page.substr(start, page.find("</script>", start) - start);
  EXPECT_EQ(nlohmann::json::parse(block), nlohmann::json::parse(RenderSimulateJson(study, result)));
  EXPECT_EQ(page, RenderHtmlReport(study, result, config::ValidationResult{}));  // deterministic
}

}  // namespace
}  // namespace trainscope::report
