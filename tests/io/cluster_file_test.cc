// Cluster file loading (YAML and JSON through one loader) and cluster resolution
// (preset <- file <- flags). Expected SI values are converted by hand in the comments:
// Gbit/s / 8 x 10^9, µs x 10^-6, TFLOP/s x 10^12, GiB x 2^30, TB/s x 10^12, GB/s x 10^9.
#include "trainscope/io/cluster_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "trainscope/error.h"

namespace trainscope::io {
namespace {

using testing::AllOf;
using testing::HasSubstr;
using testing::ThrowsMessage;

// Writes `text` to a fresh file under the test temp directory and returns its path.
std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::filesystem::path path = std::filesystem::path(testing::TempDir()) / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST(ClusterFileTest, ParsesJson) {
  const ClusterFile file = ParseClusterFile(
      R"({"gpu": "GB200", "gpus_per_node": 4, "nvlink_domain": 72, "scale_out_gbps": 800,
          "scale_out_latency_us": 5, "nvls": false, "links": {"nvlink_bus_efficiency": 0.75}})",
      "c.json");
  EXPECT_EQ(file.gpu, "GB200");
  EXPECT_EQ(file.gpus_per_node, 4);
  EXPECT_EQ(file.nvlink_domain, 72);
  EXPECT_EQ(file.scale_out_gbps, 800);
  EXPECT_EQ(file.scale_out_latency_us, 5);
  EXPECT_EQ(file.nvls, false);
  EXPECT_EQ(file.links.at("nvlink_bus_efficiency"), 0.75);
}

TEST(ClusterFileTest, ParsesYaml) {
  const ClusterFile file = ParseClusterFile(
      "# 4 x 8 B200 on EFA v4\ngpu: B200\nscale_out_gbps: 400\nbf16_tflops: 2000\n"
      "links:\n  scale_out_half_bytes: 1.0e6\n  nvls_min_ranks: 4\n",
      "c.yaml");
  EXPECT_EQ(file.gpu, "B200");
  EXPECT_EQ(file.scale_out_gbps, 400);
  EXPECT_EQ(file.bf16_tflops, 2000);
  EXPECT_EQ(file.links.at("scale_out_half_bytes"), 1e6);
  EXPECT_EQ(file.links.at("nvls_min_ranks"), 4);
  EXPECT_FALSE(file.gpus_per_node.has_value());
}

TEST(ClusterFileTest, ComputeCapabilityOverridesThePresets) {
  const ClusterFile file = ParseClusterFile("gpu: L20\ncompute_capability: 9.0\n", "c.yaml");
  EXPECT_EQ(file.compute_capability, (config::ComputeCapability{9, 0}));
  EXPECT_EQ(ParseClusterFile(R"({"compute_capability": 10.3})", "c.json").compute_capability,
            (config::ComputeCapability{10, 3}));
  const std::string path = WriteTemp("cc.yaml", "gpu: L20\ncompute_capability: 9.0\n");
  EXPECT_EQ(ResolveCluster({.cluster_path = path}).gpu.compute_capability,
            (config::ComputeCapability{9, 0}));
  EXPECT_EQ(ResolveCluster({.gpu = "L20"}).gpu.compute_capability,
            (config::ComputeCapability{8, 9}));
}

TEST(ClusterFileTest, RejectsComputeCapabilityWithoutMinor) {
  EXPECT_THAT([] { (void)ParseClusterFile("compute_capability: 9\n", "c.yaml"); },
              ThrowsMessage<InputError>(
                  HasSubstr("c.yaml: compute_capability: expected a compute capability")));
  EXPECT_THAT([] { (void)ParseClusterFile(R"({"compute_capability": "9.0"})", "c.json"); },
              ThrowsMessage<InputError>(HasSubstr("c.json: compute_capability:")));
}

TEST(ClusterFileTest, RejectsUnknownKeyNamingIt) {
  EXPECT_THAT([] { (void)ParseClusterFile("gpus_per_nodes: 8\n", "c.yaml"); },
              ThrowsMessage<InputError>(AllOf(HasSubstr("c.yaml: gpus_per_nodes: unknown key"),
                                              HasSubstr("gpus_per_node"))));
}

TEST(ClusterFileTest, RejectsUnknownLinkKeyWithItsPath) {
  EXPECT_THAT([] { (void)ParseClusterFile(R"({"links": {"nvlink_speed": 1}})", "c.json"); },
              ThrowsMessage<InputError>(HasSubstr("c.json: links.nvlink_speed: unknown key")));
}

TEST(ClusterFileTest, RejectsQuotedNumber) {
  EXPECT_THAT([] { (void)ParseClusterFile(R"({"gpus_per_node": "8"})", "c.json"); },
              ThrowsMessage<InputError>(HasSubstr(
                  "c.json: gpus_per_node: expected an integer >= 1 and <= 10000000 (got \"8\")")));
}

TEST(ClusterFileTest, RejectsNumberForBoolean) {
  EXPECT_THAT([] { (void)ParseClusterFile("nvls: 1\n", "c.yaml"); },
              ThrowsMessage<InputError>(HasSubstr("c.yaml: nvls: expected true or false")));
}

TEST(ClusterFileTest, RejectsNonPositiveBandwidth) {
  EXPECT_THAT([] { (void)ParseClusterFile("scale_out_gbps: 0\n", "c.yaml"); },
              ThrowsMessage<InputError>(HasSubstr(
                  "c.yaml: scale_out_gbps: expected a number in [0.001, 1e+06] (got 0)")));
  EXPECT_THAT(
      [] { (void)ParseClusterFile("nvlink_gbps: -450\n", "c.yaml"); },
      ThrowsMessage<InputError>(HasSubstr("nvlink_gbps: expected a number in [0.001, 1e+06]")));
}

TEST(ClusterFileTest, RejectsZeroGpusPerNode) {
  EXPECT_THAT([] { (void)ParseClusterFile("gpus_per_node: 0\n", "c.yaml"); },
              ThrowsMessage<InputError>(HasSubstr("gpus_per_node: expected an integer >= 1")));
}

TEST(ClusterFileTest, RejectsNegativeLatency) {
  EXPECT_THAT([] { (void)ParseClusterFile("scale_out_latency_us: -1\n", "c.yaml"); },
              ThrowsMessage<InputError>(
                  HasSubstr("scale_out_latency_us: expected a number in [0, 1e+06]")));
}

TEST(ClusterFileTest, RejectsEfficiencyAboveOne) {
  EXPECT_THAT(
      [] { (void)ParseClusterFile("links:\n  scale_out_bus_efficiency: 1.2\n", "c.yaml"); },
      ThrowsMessage<InputError>(HasSubstr("links.scale_out_bus_efficiency: expected a number in")));
}

TEST(ClusterFileTest, RejectsRampExponentThatWouldMakeMoreBytesFaster) {
  EXPECT_THAT([] { (void)ParseClusterFile("links:\n  nvlink_ramp_exponent: 1.5\n", "c.yaml"); },
              ThrowsMessage<InputError>(AllOf(HasSubstr("links.nvlink_ramp_exponent"),
                                              HasSubstr("more bytes never take less time"))));
}

TEST(ClusterFileTest, RejectsMalformedTextAndNonMappingTopLevel) {
  EXPECT_THAT([] { (void)ParseClusterFile(R"({"gpu": "H100",)", "c.json"); },
              ThrowsMessage<InputError>(HasSubstr("c.json: malformed YAML/JSON")));
  EXPECT_THAT([] { (void)ParseClusterFile("[1, 2]", "c.json"); },
              ThrowsMessage<InputError>(HasSubstr("c.json: expected a mapping")));
}

TEST(ClusterFileTest, ResolveUsesTheH100PresetWhenNothingIsGiven) {
  const config::ClusterSpec cluster = ResolveCluster({});
  EXPECT_EQ(cluster.gpu.name, "H100");
  EXPECT_EQ(cluster, config::DefaultCluster(*config::FindGpu("H100")));
}

TEST(ClusterFileTest, ResolveConvertsFileUnits) {
  const std::string path =
      WriteTemp("units.yaml",
                "gpu: H100\nscale_out_gbps: 200\nscale_out_latency_us: 4\nbf16_tflops: 1000\n"
                "fp8_tflops: 2000\nmemory_gib: 80\nhbm_tbps: 3\nnvlink_gbps: 300\n");
  const config::ClusterSpec cluster = ResolveCluster({.cluster_path = path});
  EXPECT_DOUBLE_EQ(cluster.scale_out_bytes_per_second, 25e9);  // 200 / 8 GB/s
  EXPECT_DOUBLE_EQ(cluster.link.scale_out_latency_seconds, 4e-6);
  EXPECT_DOUBLE_EQ(cluster.gpu.bf16_flops_per_second, 1e15);
  EXPECT_DOUBLE_EQ(cluster.gpu.fp8_flops_per_second, 2e15);
  EXPECT_EQ(cluster.gpu.memory_bytes, int64_t{80} * 1'073'741'824);
  EXPECT_DOUBLE_EQ(cluster.gpu.hbm_bytes_per_second, 3e12);
  EXPECT_DOUBLE_EQ(cluster.gpu.nvlink_bytes_per_second, 300e9);
}

TEST(ClusterFileTest, ResolveAppliesPresetThenFileThenFlags) {
  const std::string path =
      WriteTemp("precedence.json",
                R"({"gpu": "GB200", "scale_out_gbps": 800, "nvlink_domain": 36, "nvls": false,
          "links": {"nvlink_bus_efficiency": 0.7}})");
  // The file picks GB200 (preset: trays of 4, domain 64) and overrides the NIC and domain.
  const config::ClusterSpec from_file = ResolveCluster({.cluster_path = path});
  EXPECT_EQ(from_file.gpu.name, "GB200");
  EXPECT_EQ(from_file.gpus_per_node, 4);
  EXPECT_EQ(from_file.nvlink_domain_gpus, 36);
  EXPECT_DOUBLE_EQ(from_file.scale_out_bytes_per_second, 100e9);  // 800 / 8
  EXPECT_FALSE(from_file.nvls);
  EXPECT_DOUBLE_EQ(from_file.link.nvlink_bus_efficiency, 0.7);
  // Flags win over the file.
  const config::ClusterSpec flagged = ResolveCluster({.cluster_path = path,
                                                      .nvlink_domain = 72,
                                                      .scale_out_gbps = 400,
                                                      .scale_out_latency_us = 2});
  EXPECT_EQ(flagged.nvlink_domain_gpus, 72);
  EXPECT_DOUBLE_EQ(flagged.scale_out_bytes_per_second, 50e9);
  EXPECT_DOUBLE_EQ(flagged.link.scale_out_latency_seconds, 2e-6);
  // --gpu picks the preset even when the file names another GPU; other file keys still apply.
  const config::ClusterSpec gpu_flag =
      ResolveCluster({.gpu = "B200", .cluster_path = path, .gpus_per_node = 4});
  EXPECT_EQ(gpu_flag.gpu.name, "B200");
  EXPECT_EQ(gpu_flag.nvlink_domain_gpus, 36);
}

TEST(ClusterFileTest, ResolveAppliesFabricFromFlagThenFileThenPreset) {
  const std::string path = WriteTemp(
      "fabric.yaml", "gpu: H100\nscale_out_fabric: efa\nlinks:\n  scale_out_half_bytes: 1.0e6\n");
  // The file's fabric sets the base; its explicit links value wins over the preset's.
  const config::ClusterSpec from_file = ResolveCluster({.cluster_path = path});
  EXPECT_EQ(from_file.scale_out_fabric, config::ScaleOutFabric::kEfa);
  EXPECT_DOUBLE_EQ(from_file.link.scale_out_bus_efficiency, 0.82);
  EXPECT_DOUBLE_EQ(from_file.link.scale_out_half_bytes, 1e6);
  // The flag wins over the file's fabric; the file's links still override the preset.
  const config::ClusterSpec flagged =
      ResolveCluster({.cluster_path = path, .scale_out_fabric = "roce"});
  EXPECT_EQ(flagged.scale_out_fabric, config::ScaleOutFabric::kRoce);
  EXPECT_DOUBLE_EQ(flagged.link.scale_out_bus_efficiency, 0.63);
  EXPECT_DOUBLE_EQ(flagged.link.scale_out_half_bytes, 1e6);
  // --scale-out-latency-us wins over the fabric's hop latency.
  const config::ClusterSpec latency =
      ResolveCluster({.scale_out_latency_us = 7, .scale_out_fabric = "efa"});
  EXPECT_DOUBLE_EQ(latency.link.scale_out_latency_seconds, 7e-6);
}

TEST(ClusterFileTest, RejectsUnknownFabricInFileNamingTheKey) {
  EXPECT_THAT([] { (void)ParseClusterFile("scale_out_fabric: omnipath\n", "c.yaml"); },
              ThrowsMessage<InputError>(
                  HasSubstr("c.yaml: scale_out_fabric: unknown fabric (got omnipath, expected one "
                            "of ib, roce, efa)")));
}

TEST(ClusterFileTest, ResolveRejectsUnknownFabricFlag) {
  EXPECT_THAT([] { (void)ResolveCluster({.scale_out_fabric = "IB"}); },
              ThrowsMessage<UsageError>(HasSubstr("--scale-out-fabric: unknown fabric (got IB")));
}

TEST(ClusterFileTest, ResolveRejectsUnknownGpuFlagListingThePresets) {
  EXPECT_THAT([] { (void)ResolveCluster({.gpu = "H300"}); },
              ThrowsMessage<UsageError>(AllOf(HasSubstr("--gpu: unknown GPU (got H300"),
                                              HasSubstr("H100, H100-96GB"), HasSubstr("GB300"))));
}

TEST(ClusterFileTest, ResolveRejectsUnknownGpuInFileNamingFileAndKey) {
  const std::string path = WriteTemp("bad_gpu.yaml", "gpu: X1\n");
  EXPECT_THAT([&] { (void)ResolveCluster({.cluster_path = path}); },
              ThrowsMessage<InputError>(HasSubstr(path + ": gpu: unknown GPU (got X1")));
}

TEST(ClusterFileTest, ResolveRejectsBadFlagValuesNamingTheFlag) {
  EXPECT_THAT([] { (void)ResolveCluster({.gpus_per_node = 0}); },
              ThrowsMessage<UsageError>(HasSubstr("--gpus-per-node: expected an integer >= 1")));
  EXPECT_THAT([] { (void)ResolveCluster({.nvlink_domain = -8}); },
              ThrowsMessage<UsageError>(HasSubstr("--nvlink-domain: expected an integer >= 1")));
  EXPECT_THAT([] { (void)ResolveCluster({.scale_out_gbps = 0}); },
              ThrowsMessage<UsageError>(HasSubstr("--scale-out-gbps: expected")));
  EXPECT_THAT([] { (void)ResolveCluster({.scale_out_latency_us = -3}); },
              ThrowsMessage<UsageError>(HasSubstr("--scale-out-latency-us: expected")));
}

TEST(ClusterFileTest, ResolveRejectsDomainThatSplitsANode) {
  // 12 is not a multiple of 8: a node would straddle two NVLink domains.
  EXPECT_THAT(
      [] { (void)ResolveCluster({.nvlink_domain = 12}); },
      ThrowsMessage<UsageError>(AllOf(HasSubstr("nvlink_domain must be a whole number of nodes"),
                                      HasSubstr("nvlink_domain 12 from --nvlink-domain"),
                                      HasSubstr("gpus_per_node 8 from the H100 preset"))));
  const std::string path = WriteTemp("split.yaml", "gpus_per_node: 8\nnvlink_domain: 4\n");
  EXPECT_THAT([&] { (void)ResolveCluster({.cluster_path = path}); },
              ThrowsMessage<InputError>(HasSubstr(path + ": nvlink_domain must be")));
}

TEST(ClusterFileTest, ResolveReportsAMissingFile) {
  EXPECT_THAT([] { (void)ResolveCluster({.cluster_path = "/nonexistent/cluster.yaml"}); },
              ThrowsMessage<InputError>(HasSubstr("/nonexistent/cluster.yaml: cannot open")));
}

TEST(ClusterFileTest, RejectsAKeyThatIsNotAName) {
  EXPECT_THAT([] { (void)ParseClusterFile("{[1, 2]: 8}", "c.yaml"); },
              ThrowsMessage<InputError>(
                  AllOf(HasSubstr("c.yaml: top level: expected a key name"), HasSubstr("list"))));
  EXPECT_THAT([] { (void)ParseClusterFile("links: {{a: 1}: 8}", "c.yaml"); },
              ThrowsMessage<InputError>(HasSubstr("c.yaml: links: expected a key name")));
}

TEST(ClusterFileTest, RejectsASubnormalBandwidth) {
  EXPECT_THAT([] { (void)ParseClusterFile("hbm_tbps: 1e-320", "c.yaml"); },
              ThrowsMessage<InputError>(HasSubstr("hbm_tbps: expected a number in [0.001, 1000]")));
}

TEST(ClusterFileTest, RejectsAnAbsurdLatency) {
  EXPECT_THAT([] { (void)ParseClusterFile("scale_out_latency_us: 1e308", "c.yaml"); },
              ThrowsMessage<InputError>(HasSubstr("scale_out_latency_us: expected a number in")));
  EXPECT_THAT([] { (void)ParseClusterFile("links: {nvls_latency_seconds: 1e308}", "c.yaml"); },
              ThrowsMessage<InputError>(HasSubstr("links.nvls_latency_seconds: expected")));
}

TEST(ClusterFileTest, RejectsAbsurdCounts) {
  EXPECT_THAT([] { (void)ParseClusterFile("gpus_per_node: 1e308", "c.yaml"); },
              ThrowsMessage<InputError>(HasSubstr("gpus_per_node: expected an integer")));
  EXPECT_THAT([] { (void)ParseClusterFile("nvlink_domain: 100000000", "c.yaml"); },
              ThrowsMessage<InputError>(HasSubstr("nvlink_domain: expected an integer >= 1 and "
                                                  "<= 10000000")));
}

TEST(ClusterFileTest, RejectsANumberThatOverflowsADouble) {
  EXPECT_THAT([] { (void)ParseClusterFile(R"({"bf16_tflops": 1e400})", "c.json"); },
              ThrowsMessage<InputError>(HasSubstr("c.json: bf16_tflops: expected a number")));
}

TEST(ClusterFileTest, RejectsDeepNesting) {
  const std::string text = "gpu: " + std::string(100'000, '[');
  EXPECT_THAT([&] { (void)ParseClusterFile(text, "c.yaml"); },
              ThrowsMessage<InputError>(HasSubstr("c.yaml: nested deeper than 64 levels")));
}

}  // namespace
}  // namespace trainscope::io
