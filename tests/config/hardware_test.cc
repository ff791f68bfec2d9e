// GPU presets against the published figures cited in hardware.cc, converted by hand here:
// TFLOP/s x 10^12, GB/s x 10^9, TB/s x 10^12, Gb/s / 8 x 10^9, MiB x 2^20, GiB x 2^30.
#include "trainscope/config/hardware.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace trainscope::config {
namespace {

TEST(HardwareTest, H100MatchesReferenceTable) {
  const std::optional<GpuSpec> gpu = FindGpu("H100");
  ASSERT_TRUE(gpu.has_value());
  EXPECT_EQ(gpu->name, "H100");
  EXPECT_DOUBLE_EQ(gpu->bf16_flops_per_second, 989.4e12);
  EXPECT_DOUBLE_EQ(gpu->fp8_flops_per_second, 1978.9e12);
  // 80,999 MiB, the measured limit of an H100 job (79.1 GiB).
  EXPECT_EQ(gpu->memory_bytes, int64_t{80'999} * 1'048'576);
  EXPECT_DOUBLE_EQ(gpu->hbm_bytes_per_second, 3.35e12);
  EXPECT_DOUBLE_EQ(gpu->nvlink_bytes_per_second, 450e9);
  // 1x 400 Gb/s CX-7 = 50 GB/s.
  EXPECT_DOUBLE_EQ(gpu->scale_out_bytes_per_second, 50e9);
}

TEST(HardwareTest, PresetsCarryTheirComputeCapability) {
  // NVIDIA's CUDA GPUs table: Hopper 9.0, Ampere 8.0, Ada 8.9, Blackwell 10.0 / 10.3.
  const std::vector<std::pair<std::string, ComputeCapability>> expected = {
      {"H100", {9, 0}},  {"H100-96GB", {9, 0}}, {"H200", {9, 0}},  {"H800", {9, 0}},
      {"H20", {9, 0}},   {"A100", {8, 0}},      {"A800", {8, 0}},  {"L20", {8, 9}},
      {"B200", {10, 0}}, {"GB200", {10, 0}},    {"B300", {10, 3}}, {"GB300", {10, 3}}};
  ASSERT_EQ(expected.size(), GpuNames().size());
  for (const auto& [name, capability] : expected) {
    EXPECT_EQ(FindGpu(name)->compute_capability, capability) << name;
  }
  EXPECT_EQ(ToString(ComputeCapability{10, 3}), "10.3");
}

TEST(HardwareTest, LookupIgnoresCase) {
  ASSERT_TRUE(FindGpu("gb200").has_value());
  EXPECT_EQ(FindGpu("gb200")->name, "GB200");
  ASSERT_TRUE(FindGpu("h100-96gb").has_value());
  EXPECT_EQ(FindGpu("h100-96gb")->name, "H100-96GB");
}

TEST(HardwareTest, UnknownNameGivesNothing) {
  EXPECT_FALSE(FindGpu("L20Z").has_value());  // no figure published for L20Z
  EXPECT_FALSE(FindGpu("").has_value());
  EXPECT_FALSE(FindGpu("H100 ").has_value());
}

TEST(HardwareTest, ListsEveryPresetInFixedOrder) {
  const std::vector<std::string> expected = {"H100", "H100-96GB", "H200", "H800",  "H20",  "A100",
                                             "A800", "L20",       "B200", "GB200", "B300", "GB300"};
  EXPECT_EQ(GpuNames(), expected);
  for (const std::string& name : GpuNames()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(FindGpu(name).has_value());
    EXPECT_EQ(FindGpu(name)->name, name);
    EXPECT_GT(FindGpu(name)->bf16_flops_per_second, 0);
    EXPECT_GT(FindGpu(name)->memory_bytes, 0);
  }
}

TEST(HardwareTest, BlackwellPeaksMatchMfuDenominators) {
  // NVIDIA-NeMo/Automodel mfu.py: MFU denominators 2250 (B200) and 2500 (GB200) TFLOP/s.
  EXPECT_DOUBLE_EQ(FindGpu("B200")->bf16_flops_per_second, 2250e12);
  EXPECT_DOUBLE_EQ(FindGpu("GB200")->bf16_flops_per_second, 2500e12);
  EXPECT_DOUBLE_EQ(FindGpu("B200")->nvlink_bytes_per_second, 900e9);
  // B200 ≈180 GB usable; GB200 ≈184 GiB usable.
  EXPECT_EQ(FindGpu("B200")->memory_bytes, int64_t{180'000'000'000});
  EXPECT_EQ(FindGpu("GB200")->memory_bytes, int64_t{184} * 1'073'741'824);
}

TEST(HardwareTest, MarksMissingFiguresAsZero) {
  EXPECT_EQ(FindGpu("A100")->fp8_flops_per_second, 0);                  // no FP8 tensor cores
  EXPECT_EQ(FindGpu("H20")->scale_out_bytes_per_second, 0);             // deployment-specific
  EXPECT_DOUBLE_EQ(FindGpu("A100")->scale_out_bytes_per_second, 25e9);  // 200 Gb/s HDR
  EXPECT_DOUBLE_EQ(FindGpu("H20")->bf16_flops_per_second, 148e12);
  EXPECT_DOUBLE_EQ(FindGpu("L20")->bf16_flops_per_second, 119.5e12);
}

TEST(HardwareTest, Gb300MatchesReferenceTable) {
  // GB300 NVL72: 2500 / 5000 TFLOP/s dense (GB200's, unconfirmed); B300 SXM: 2250 / 4500, the
  // peaks of the MAMF table (stas00/ml-engineering, compute/accelerator/README.md), where B300's
  // measured BF16 maximum (1769) is within 2 % of B200's (1745). 288 GB, 8 TB/s, NVLink
  // 900 GB/s, 800 Gb/s CX-8 = 100 GB/s.
  for (const auto& [name, bf16_tflops] : {std::pair{"GB300", 2500.0}, std::pair{"B300", 2250.0}}) {
    SCOPED_TRACE(name);
    const std::optional<GpuSpec> gpu = FindGpu(name);
    ASSERT_TRUE(gpu.has_value());
    EXPECT_DOUBLE_EQ(gpu->bf16_flops_per_second, bf16_tflops * 1e12);
    EXPECT_DOUBLE_EQ(gpu->fp8_flops_per_second, 2 * bf16_tflops * 1e12);
    EXPECT_EQ(gpu->memory_bytes, int64_t{288'000'000'000});
    EXPECT_DOUBLE_EQ(gpu->hbm_bytes_per_second, 8e12);
    EXPECT_DOUBLE_EQ(gpu->nvlink_bytes_per_second, 900e9);
    EXPECT_DOUBLE_EQ(gpu->scale_out_bytes_per_second, 100e9);
  }
}

}  // namespace
}  // namespace trainscope::config
