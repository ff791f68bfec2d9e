#include "trainscope/report/params_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "trainscope/io/hf_config_loader.h"
#include "trainscope/report/format.h"

namespace trainscope::report {
namespace {

using ::testing::HasSubstr;

TEST(ParamsReportTest, JsonReadsBackWithContractKeys) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-0.6B");
  const graph::ParamCounts counts = graph::CountParams(model);
  const std::vector<graph::StageParams> stages;
  const config::TrainingConfig training;
  const nlohmann::json json =
      nlohmann::json::parse(RenderParamsJson({model, counts, stages, training}));
  EXPECT_EQ(json["total"].get<int64_t>(), 596'049'920);
  EXPECT_EQ(json["lm_head"].get<int64_t>(), 0);  // tied
  EXPECT_EQ(json["components"]["embedding"].get<int64_t>(), 151936LL * 1024);
  EXPECT_EQ(json["layer_kinds"][0]["num_layers"].get<int64_t>(), 28);
}

TEST(ParamsReportTest, TextShowsTotalsAndLayerKinds) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-0.8B");
  const graph::ParamCounts counts = graph::CountParams(model);
  const std::vector<graph::StageParams> stages;
  const config::TrainingConfig training;
  const std::string text = RenderParamsText({model, counts, stages, training});
  EXPECT_THAT(text, HasSubstr("gated_deltanet+dense_mlp"));
  EXPECT_THAT(text, HasSubstr("gated_attention+dense_mlp"));
  EXPECT_THAT(text, HasSubstr(WithThousands(counts.total)));
}

TEST(ParamsReportTest, FormatsThousandsAndAbbreviations) {
  EXPECT_EQ(WithThousands(30532122624), "30,532,122,624");
  EXPECT_EQ(WithThousands(999), "999");
  EXPECT_EQ(WithThousands(-1000), "-1,000");
  EXPECT_EQ(Abbreviated(30532122624), "30.53B");
  EXPECT_EQ(Abbreviated(596049920), "596.05M");
}

}  // namespace
}  // namespace trainscope::report
