// Preset cluster layouts: HGX nodes of 8 GPUs in one NVLink domain; GB200/GB300 NVL72 with trays
// of 4 GPUs, a job using 64 of a rack's 72 GPUs (16 trays, the Slurm segment NVIDIA's MLPerf
// v5.1 GB300 configs request); NVLS only on Hopper/Blackwell NVSwitch systems.
#include "trainscope/config/cluster.h"

#include <gtest/gtest.h>

#include <optional>

namespace trainscope::config {
namespace {

GpuSpec Gpu(const char* name) {
  const std::optional<GpuSpec> gpu = FindGpu(name);
  EXPECT_TRUE(gpu.has_value());
  return gpu.value_or(GpuSpec{});
}

TEST(ClusterTest, Gb200DefaultsToSixteenTraysOfAnNvl72Rack) {
  const ClusterSpec cluster = DefaultCluster(Gpu("GB200"));
  EXPECT_EQ(cluster.nvlink_domain_gpus, 64);
  EXPECT_EQ(cluster.gpus_per_node, 4);
  EXPECT_TRUE(cluster.nvls);
  EXPECT_DOUBLE_EQ(cluster.scale_out_bytes_per_second, 50e9);  // 400 Gb/s CX-7
  EXPECT_EQ(DefaultCluster(Gpu("GB300")).nvlink_domain_gpus, 64);
  EXPECT_DOUBLE_EQ(DefaultCluster(Gpu("GB300")).scale_out_bytes_per_second, 100e9);  // 800 Gb/s
}

TEST(ClusterTest, GraceBlackwellHostLinkIsHalfTheC2cPerDirection) {
  // NVLink-C2C: 900 GB/s bidirectional between the Grace CPU and its two GPUs, so 450 GB/s per
  // direction shared by two: 225 GB/s per GPU. HGX presets keep the PCIe default of 25 GB/s.
  EXPECT_DOUBLE_EQ(DefaultCluster(Gpu("GB200")).pcie_bytes_per_second, 900e9 / 2 / 2);
  EXPECT_DOUBLE_EQ(DefaultCluster(Gpu("GB300")).pcie_bytes_per_second, 900e9 / 2 / 2);
  EXPECT_DOUBLE_EQ(DefaultCluster(Gpu("B200")).pcie_bytes_per_second, 25e9);
}

TEST(ClusterTest, HgxNodesAreTheirOwnNvlinkDomain) {
  for (const char* name : {"H100", "H200", "B200", "B300", "A100"}) {
    SCOPED_TRACE(name);
    const ClusterSpec cluster = DefaultCluster(Gpu(name));
    EXPECT_EQ(cluster.gpus_per_node, 8);
    EXPECT_EQ(cluster.nvlink_domain_gpus, 8);
    EXPECT_EQ(cluster.gpu, Gpu(name));
  }
}

TEST(ClusterTest, NvlsOnlyOnHopperAndBlackwellNvswitch) {
  EXPECT_TRUE(DefaultCluster(Gpu("H100")).nvls);
  EXPECT_TRUE(DefaultCluster(Gpu("B200")).nvls);
  EXPECT_FALSE(DefaultCluster(Gpu("A100")).nvls);
  EXPECT_FALSE(DefaultCluster(Gpu("A800")).nvls);
  EXPECT_FALSE(DefaultCluster(Gpu("L20")).nvls);
}

TEST(ClusterTest, MissingNicFigureStaysZero) {
  // H20's scale-out is deployment-specific (no NIC figure is published).
  EXPECT_EQ(DefaultCluster(Gpu("H20")).scale_out_bytes_per_second, 0);
}

}  // namespace
TEST(ClusterTest, NvidiaReferencePresetsDefaultToInfiniBand) {
  for (const char* name : {"H100", "H200", "H800", "B200", "B300", "GB200", "GB300", "A100"}) {
    const ClusterSpec cluster = DefaultCluster(Gpu(name));
    EXPECT_EQ(cluster.scale_out_fabric, ScaleOutFabric::kInfiniBand) << name;
    EXPECT_EQ(cluster.link, ScaleOutFabricLinks(cluster.link, ScaleOutFabric::kInfiniBand)) << name;
  }
}

TEST(ClusterTest, GrandTetonH100DefaultsToRoce) {
  const ClusterSpec cluster = DefaultCluster(Gpu("H100-96GB"));
  EXPECT_EQ(cluster.scale_out_fabric, ScaleOutFabric::kRoce);
  EXPECT_DOUBLE_EQ(cluster.link.scale_out_bus_efficiency, 0.63);
}

TEST(ClusterTest, FabricPresetReplacesOnlyScaleOutConstants) {
  LinkEfficiency link;
  link.nvlink_bus_efficiency = 0.5;
  const LinkEfficiency efa = ScaleOutFabricLinks(link, ScaleOutFabric::kEfa);
  EXPECT_DOUBLE_EQ(efa.nvlink_bus_efficiency, 0.5);
  EXPECT_DOUBLE_EQ(efa.scale_out_bus_efficiency, 0.82);
  EXPECT_DOUBLE_EQ(efa.scale_out_half_bytes, 17e6);
  EXPECT_DOUBLE_EQ(efa.scale_out_ramp_exponent, 0.66);
  EXPECT_DOUBLE_EQ(efa.scale_out_latency_seconds, 10e-6);
  const LinkEfficiency ib = ScaleOutFabricLinks(link, ScaleOutFabric::kInfiniBand);
  EXPECT_LT(ib.scale_out_half_bytes, efa.scale_out_half_bytes);
  EXPECT_LT(ib.scale_out_latency_seconds, efa.scale_out_latency_seconds);
}

TEST(ClusterTest, InClassScaleOutDefaultsAreTheInfiniBandPreset) {
  EXPECT_EQ(LinkEfficiency{}, ScaleOutFabricLinks(LinkEfficiency{}, ScaleOutFabric::kInfiniBand));
}

TEST(ClusterTest, FabricNamesRoundTrip) {
  for (const ScaleOutFabric fabric :
       {ScaleOutFabric::kInfiniBand, ScaleOutFabric::kRoce, ScaleOutFabric::kEfa}) {
    EXPECT_EQ(ScaleOutFabricFromName(ToString(fabric)), fabric);
  }
  EXPECT_EQ(ToString(ScaleOutFabric::kInfiniBand), "ib");
  EXPECT_EQ(ScaleOutFabricFromName("infiniband"), std::nullopt);
  EXPECT_EQ(ScaleOutFabricNameList(), "ib, roce, efa");
}

}  // namespace trainscope::config
