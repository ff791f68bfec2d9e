// Calibration file: overrides reach the cost structs, unset fields keep their defaults, and every
// kind of bad input is an InputError naming the file and the key.
#include "trainscope/io/calibration_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "trainscope/error.h"

namespace trainscope::io {
namespace {

using testing::AllOf;
using testing::HasSubstr;
using testing::ThrowsMessage;

const std::string kDataDir = TRAINSCOPE_TEST_DATA_DIR;

void ExpectError(const std::string& json, const std::string& key) {
  EXPECT_THAT([&] { (void)ParseCalibration(json, "cal.json"); },
              ThrowsMessage<InputError>(AllOf(HasSubstr("cal.json"), HasSubstr(key))))
      << json;
}

TEST(CalibrationFileTest, AppliesComputeLinkAndBackendOverrides) {
  const CalibrationOverrides overrides = LoadCalibrationFile(kDataDir + "/calibration.json");
  cost::ComputeEfficiency expected_compute;
  expected_compute.bf16_gemm_efficiency = 0.7;
  expected_compute.gemm_tile_m = 256;
  expected_compute.attention_backward_efficiency = 0.45;
  EXPECT_EQ(ApplyCalibration(overrides, cost::ComputeEfficiency{}), expected_compute);
  cost::LinkEfficiency expected_links;
  expected_links.nvlink_bus_efficiency = 0.78;
  expected_links.scale_out_latency_seconds = 5e-6;
  EXPECT_EQ(ApplyCalibration(overrides, cost::LinkEfficiency{}), expected_links);
  EXPECT_EQ(overrides.gdn_backend, cost::GdnBackend::kFlashQla);
}

TEST(CalibrationFileTest, EmptyObjectChangesNothing) {
  const CalibrationOverrides overrides = ParseCalibration("{}", "cal.json");
  EXPECT_EQ(ApplyCalibration(overrides, cost::ComputeEfficiency{}), cost::ComputeEfficiency{});
  EXPECT_EQ(ApplyCalibration(overrides, cost::LinkEfficiency{}), cost::LinkEfficiency{});
  EXPECT_FALSE(overrides.gdn_backend.has_value());
}

TEST(CalibrationFileTest, AcceptsEfficiencyOfExactlyOne) {
  const CalibrationOverrides overrides = ParseCalibration(R"({"memory_efficiency": 1})", "c");
  EXPECT_EQ(ApplyCalibration(overrides, cost::ComputeEfficiency{}).memory_efficiency, 1.0);
}

TEST(CalibrationFileTest, ReadsPerGpuThroughputScalesWithCanonicalNames) {
  const CalibrationOverrides overrides =
      ParseCalibration(R"({"gpu_throughput_scale": {"gb300": 1.2, "B200": 0.9}})", "cal.json");
  cost::ComputeEfficiency base;
  base.gpu_throughput_scale = {{"GB200", 1.1}};
  const std::map<std::string, double> expected = {{"B200", 0.9}, {"GB200", 1.1}, {"GB300", 1.2}};
  EXPECT_EQ(ApplyCalibration(overrides, base).gpu_throughput_scale, expected);
}

TEST(CalibrationFileTest, RejectsUnknownGpuOrOutOfRangeScale) {
  ExpectError(R"({"gpu_throughput_scale": {"H900": 1.1}})", "gpu_throughput_scale.H900");
  ExpectError(R"({"gpu_throughput_scale": {"H100": 0}})", "gpu_throughput_scale.H100");
  ExpectError(R"({"gpu_throughput_scale": {"H100": 2.5}})", "gpu_throughput_scale.H100");
  ExpectError(R"({"gpu_throughput_scale": [1.1]})", "gpu_throughput_scale");
}

TEST(CalibrationFileTest, OverridesThePerLaunchHostSecondsOfEachHostCpu) {
  const CalibrationOverrides overrides = ParseCalibration(
      R"({"launch_host_seconds_x86": 5e-6, "launch_host_seconds_grace": 0,
          "host_sync_seconds": 1e-5})",
      "cal.json");
  const cost::ComputeEfficiency applied = ApplyCalibration(overrides, cost::ComputeEfficiency{});
  EXPECT_EQ(applied.launch_host_seconds_x86, 5e-6);
  EXPECT_EQ(applied.launch_host_seconds_grace, 0.0);
  EXPECT_EQ(applied.host_sync_seconds, 1e-5);
  ExpectError(R"({"launch_host_seconds_x86": -1e-6})", "launch_host_seconds_x86");
  ExpectError(R"({"launch_host_seconds_grace": "35us"})", "launch_host_seconds_grace");
}

TEST(CalibrationFileTest, RejectsUnknownKey) {
  ExpectError(R"({"gemm_efficiency": 0.5})", "gemm_efficiency");
}

TEST(CalibrationFileTest, RejectsUnknownLinksKey) {
  ExpectError(R"({"links": {"nvlink_efficiency": 0.5}})", "links.nvlink_efficiency");
}

TEST(CalibrationFileTest, RejectsWrongType) {
  ExpectError(R"({"fused_kernel_efficiency": "0.5"})", "fused_kernel_efficiency");
}

TEST(CalibrationFileTest, RejectsZeroEfficiency) {
  ExpectError(R"({"attention_forward_efficiency": 0})", "attention_forward_efficiency");
}

TEST(CalibrationFileTest, RejectsEfficiencyAboveOne) {
  ExpectError(R"({"links": {"scale_out_bus_efficiency": 1.2}})", "links.scale_out_bus_efficiency");
}

TEST(CalibrationFileTest, RejectsTileThatIsNotAPositiveInteger) {
  ExpectError(R"({"gemm_tile_k": 0})", "gemm_tile_k");
  ExpectError(R"({"gemm_tile_n": 64.5})", "gemm_tile_n");
}

TEST(CalibrationFileTest, RejectsNegativeLatency) {
  ExpectError(R"({"links": {"nvlink_latency_seconds": -1e-6}})", "links.nvlink_latency_seconds");
}

TEST(CalibrationFileTest, RejectsUnknownGdnBackend) {
  ExpectError(R"({"gdn_backend": "triton"})", "gdn_backend");
  ExpectError(R"({"gdn_backend": 1})", "gdn_backend");
}

TEST(CalibrationFileTest, RejectsLinksThatAreNotAnObject) {
  ExpectError(R"({"links": [1]})", "links");
}

TEST(CalibrationFileTest, RejectsTopLevelThatIsNotAnObject) { ExpectError("[0.5]", "object"); }

TEST(CalibrationFileTest, RejectsMalformedJson) {
  ExpectError("{\"memory_efficiency\": ", "malformed");
}

TEST(CalibrationFileTest, AppliesRampAndNvlsLinkFields) {
  const CalibrationOverrides overrides = ParseCalibration(
      R"({"links": {"nvlink_half_bytes": 2e6, "scale_out_ramp_exponent": 0.7,
                    "nvls_min_ranks": 4, "nvls_latency_seconds": 8e-5}})",
      "cal.json");
  const cost::LinkEfficiency links = ApplyCalibration(overrides, cost::LinkEfficiency{});
  EXPECT_EQ(links.nvlink_half_bytes, 2e6);
  EXPECT_EQ(links.scale_out_ramp_exponent, 0.7);
  EXPECT_EQ(links.nvls_min_ranks, 4);
  EXPECT_EQ(links.nvls_latency_seconds, 8e-5);
  EXPECT_EQ(links.nvlink_bus_efficiency, cost::LinkEfficiency{}.nvlink_bus_efficiency);
}

TEST(CalibrationFileTest, RejectsNvlsMinRanksBelowTwo) {
  ExpectError(R"({"links": {"nvls_min_ranks": 1}})", "links.nvls_min_ranks");
}

TEST(CalibrationFileTest, RejectsRampExponentAboveOne) {
  ExpectError(R"({"links": {"nvlink_ramp_exponent": 1.5}})", "links.nvlink_ramp_exponent");
}

TEST(CalibrationFileTest, RejectsNegativeHalfBytes) {
  ExpectError(R"({"links": {"scale_out_half_bytes": -1}})", "links.scale_out_half_bytes");
}

TEST(CalibrationFileTest, MissingFileNamesThePath) {
  EXPECT_THAT([] { (void)LoadCalibrationFile("no/such/calibration.json"); },
              ThrowsMessage<InputError>(HasSubstr("no/such/calibration.json")));
}

TEST(CalibrationFileTest, RejectsANumberThatOverflowsADouble) {
  EXPECT_THAT([] { (void)ParseCalibration(R"({"memory_efficiency": 1e400})", "cal.json"); },
              ThrowsMessage<InputError>(HasSubstr("cal.json: number out of range")));
}

TEST(CalibrationFileTest, RejectsALatencyAboveOneSecond) {
  EXPECT_THAT(
      [] { (void)ParseCalibration(R"({"links": {"nvlink_latency_seconds": 1e308}})", "cal.json"); },
      ThrowsMessage<InputError>(
          AllOf(HasSubstr("links.nvlink_latency_seconds: out of range"), HasSubstr("[0, 1]"))));
}

TEST(CalibrationFileTest, RejectsASubnormalEfficiency) {
  EXPECT_THAT([] { (void)ParseCalibration(R"({"bf16_gemm_efficiency": 1e-320})", "cal.json"); },
              ThrowsMessage<InputError>(
                  AllOf(HasSubstr("bf16_gemm_efficiency: out of range"), HasSubstr("[0.001, 1]"))));
}

TEST(CalibrationFileTest, RejectsAHugeRankCount) {
  EXPECT_THAT([] { (void)ParseCalibration(R"({"links": {"nvls_min_ranks": 1e308}})", "cal.json"); },
              ThrowsMessage<InputError>(HasSubstr("links.nvls_min_ranks: expected an integer")));
}

}  // namespace
}  // namespace trainscope::io

namespace trainscope::io {
namespace {

TEST(CalibrationFileTest, AppliesGemmShapeModelScalesAndFallbackExtents) {
  const CalibrationOverrides overrides = ParseCalibration(
      R"({"gemm_shape_model": "tile", "gemm_shape_scale": {"hopper_fp8": 1.1,
          "blackwell_bf16": 0.9}, "gemm_fallback_k0": 0, "gemm_fallback_n0": 64})",
      "cal.json");
  cost::ComputeEfficiency base;
  base.gemm_shape_scale = {{"other_bf16", 1.2}};
  const cost::ComputeEfficiency applied = ApplyCalibration(overrides, base);
  EXPECT_EQ(applied.gemm_shape_model, cost::GemmShapeModel::kTile);
  const std::map<std::string, double> expected = {
      {"blackwell_bf16", 0.9}, {"hopper_fp8", 1.1}, {"other_bf16", 1.2}};
  EXPECT_EQ(applied.gemm_shape_scale, expected);
  EXPECT_EQ(applied.gemm_fallback_k0, 0);
  EXPECT_EQ(applied.gemm_fallback_n0, 64);
}

TEST(CalibrationFileTest, RejectsUnknownGemmShapeModel) {
  ExpectError(R"({"gemm_shape_model": "roofline"})", "gemm_shape_model");
  ExpectError(R"({"gemm_shape_model": true})", "gemm_shape_model");
}

TEST(CalibrationFileTest, RejectsUnknownGemmShapeScaleKey) {
  ExpectError(R"({"gemm_shape_scale": {"hopper": 1.1}})", "gemm_shape_scale.hopper");
  ExpectError(R"({"gemm_shape_scale": {"ampere_bf16": 1.1}})", "gemm_shape_scale.ampere_bf16");
}

TEST(CalibrationFileTest, RejectsGemmShapeScaleOutOfRange) {
  ExpectError(R"({"gemm_shape_scale": {"hopper_bf16": 0}})", "gemm_shape_scale.hopper_bf16");
  ExpectError(R"({"gemm_shape_scale": {"hopper_bf16": 2.5}})", "gemm_shape_scale.hopper_bf16");
  ExpectError(R"({"gemm_shape_scale": [1]})", "gemm_shape_scale");
}

TEST(CalibrationFileTest, RejectsNegativeFallbackExtent) {
  ExpectError(R"({"gemm_fallback_k0": -1})", "gemm_fallback_k0");
}

}  // namespace
}  // namespace trainscope::io

namespace trainscope::io {
namespace {

TEST(CalibrationFileTest, ReadsGemmEfficiencyPoints) {
  const CalibrationOverrides overrides = ParseCalibration(
      R"({"gemm_efficiency_points": [
           {"family": "hopper", "dtype": "fp8", "pass": "wgrad", "tokens": 8192,
            "in_features": 4096, "out_features": 1024, "efficiency": 0.55},
           {"family": "blackwell", "dtype": "bf16", "pass": "forward", "tokens": 4096,
            "in_features": 2048, "out_features": 768, "groups": 16, "efficiency": 0.3}]})",
      "cal.json");
  const cost::ComputeEfficiency applied = ApplyCalibration(overrides, cost::ComputeEfficiency{});
  ASSERT_EQ(applied.gemm_efficiency_points.size(), 2u);
  const cost::GemmEfficiencyPoint expected_first{
      .family = cost::GpuFamily::kHopper,
      .precision = cost::MathPrecision::kFp8,
      .pass = cost::GemmPass::kWgrad,
      .shape = {.tokens = 8192, .in_features = 4096, .out_features = 1024},
      .groups = 1,
      .efficiency = 0.55};
  EXPECT_EQ(applied.gemm_efficiency_points[0], expected_first);
  EXPECT_EQ(applied.gemm_efficiency_points[1].groups, 16);
  EXPECT_EQ(applied.gemm_efficiency_points[1].family, cost::GpuFamily::kBlackwell);
}

TEST(CalibrationFileTest, RejectsGemmEfficiencyPointsThatAreNotAnArray) {
  ExpectError(R"({"gemm_efficiency_points": {}})", "gemm_efficiency_points");
  ExpectError(R"({"gemm_efficiency_points": [1]})", "gemm_efficiency_points[0]");
}

TEST(CalibrationFileTest, RejectsGemmEfficiencyPointWithUnknownMember) {
  ExpectError(R"({"gemm_efficiency_points": [{"family": "hopper", "m": 1}]})",
              "gemm_efficiency_points[0].m");
}

TEST(CalibrationFileTest, RejectsGemmEfficiencyPointWithUnknownFamily) {
  ExpectError(R"({"gemm_efficiency_points": [{"family": "ampere", "dtype": "bf16",
                 "pass": "forward", "tokens": 1, "in_features": 1, "out_features": 1,
                 "efficiency": 0.5}]})",
              "gemm_efficiency_points[0].family");
}

TEST(CalibrationFileTest, RejectsGemmEfficiencyPointWithoutTokens) {
  ExpectError(R"({"gemm_efficiency_points": [{"family": "hopper", "dtype": "bf16",
                 "pass": "forward", "in_features": 1, "out_features": 1,
                 "efficiency": 0.5}]})",
              "gemm_efficiency_points[0].tokens");
}

TEST(CalibrationFileTest, RejectsGemmEfficiencyPointOutOfRange) {
  ExpectError(R"({"gemm_efficiency_points": [{"family": "hopper", "dtype": "bf16",
                 "pass": "forward", "tokens": 8, "in_features": 8, "out_features": 8,
                 "efficiency": 1.5}]})",
              "gemm_efficiency_points[0].efficiency");
  ExpectError(R"({"gemm_efficiency_points": [{"family": "hopper", "dtype": "bf16",
                 "pass": "forward", "tokens": 8, "in_features": 8, "out_features": 8,
                 "groups": 0, "efficiency": 0.5}]})",
              "gemm_efficiency_points[0].groups");
}

}  // namespace
}  // namespace trainscope::io
