#include "trainscope/config/cluster.h"

#include <array>
#include <string_view>
#include <utility>

namespace trainscope::config {
namespace {

constexpr int64_t kHgxGpusPerNode = 8;
// GB200/GB300 NVL72: 18 compute trays of 4 GPUs on one NVLink switch fabric. A training job is
// given 16 trays of a rack, 64 GPUs, so that power-of-two groups fill whole racks: NVIDIA's MLPerf
// Training v5.1 GB300 configs request Slurm segments of 16 trays (mlcommons/
// training_results_v5.1, NVIDIA/benchmarks/llama31_405b/.../config_GB300_128x4x72xtp2pp8cp2_
// cg_fp4.sh: DGXNGPU=4, SEGMENT=16) and Megatron-Bridge's GB200/GB300 recipes set
// NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN=64 with NVLINK_DOMAIN_SIZE=72. The job's ranks
// therefore share an NVLink domain 64 at a time; --nvlink-domain 72 models a job that spans all
// 18 trays.
constexpr int64_t kNvl72GpusPerTray = 4;
constexpr int64_t kNvl72DomainGpus = 64;

bool IsNvl72(std::string_view name) { return name == "GB200" || name == "GB300"; }

// NVLS needs third-generation NVSwitch (Hopper) or later; A100/A800 have an older NVSwitch and
// L20 has no NVLink at all.
bool HasNvls(std::string_view name) {
  constexpr std::array<std::string_view, 3> kWithout = {"A100", "A800", "L20"};
  for (const std::string_view without : kWithout) {
    if (name == without) return false;
  }
  return true;
}

// The one table of fabric names.
constexpr std::array<std::pair<ScaleOutFabric, std::string_view>, 3> kFabricNames = {{
    {ScaleOutFabric::kInfiniBand, "ib"},
    {ScaleOutFabric::kRoce, "roce"},
    {ScaleOutFabric::kEfa, "efa"},
}};

// The scale-out constants of one fabric, in the units of LinkEfficiency.
struct FabricConstants {
  double bus_efficiency = 0;
  double half_bytes = 0;
  double ramp_exponent = 1;
  double latency_seconds = 0;
};

// Sources and derivations: docs/cost-model.md, "Scale-out fabrics". The bus efficiency is the
// level at which the hierarchical model (collective_cost.cc) reproduces the published
// large-message multi-node all-reduce busbw, not the raw per-NIC ratio.
FabricConstants ConstantsOf(ScaleOutFabric fabric) {
  switch (fabric) {
    case ScaleOutFabric::kInfiniBand:
      // Level: 4 x 8 H100 on NDR, all-reduce 8 GiB, 380 GB/s busbw = 8 NICs x 47.5 GB/s
      // (NVIDIA/nccl-tests #290: 46-48 GB/s per NDR NIC; NVIDIA/nccl #1649: about 380 GB/s
      // multi-node). Ramp: minimax fit to the 2-rank ConnectX-7 sweep of NVIDIA/nccl-tests #232
      // (2-32 MiB, within 7.5 %; same NIC and NCCL IB-verbs transport), with the exponent kept
      // below 1 so that the ramp adds no hidden latency to small messages. Hop: NVIDIA/nccl
      // #1244, 2 x 8 H20 on NDR, 46.3 us small-message all-reduce minus 14 NVLink steps of
      // 2.6 us, over 2 inter-node steps.
      return {.bus_efficiency = 0.75,
              .half_bytes = 3.7e6,
              .ramp_exponent = 0.7,
              .latency_seconds = 5e-6};
    case ScaleOutFabric::kRoce:
      // Level: 4 x 8 H100 on 8 x 400G RoCE, about 320 GB/s all-reduce busbw at 4-8 GiB
      // (NVIDIA/nccl #1221). Ramp: the ConnectX-7 sweep above. Hop: no published RoCE
      // small-message figure; the InfiniBand one (same NIC and transport).
      return {.bus_efficiency = 0.63,
              .half_bytes = 3.7e6,
              .ramp_exponent = 0.7,
              .latency_seconds = 5e-6};
    case ScaleOutFabric::kEfa:
      // Minimax fit to 4 x 8 B200 on EFA v4, all-reduce 16 MiB to 16 GiB (torch
      // all_reduce_bench.py, stas00/ml-engineering), with a 10 us hop: the lower end of the
      // unsourced 20-40 us inter-node all-reduce rule of thumb over 2 inter-node steps.
      return {.bus_efficiency = 0.82,
              .half_bytes = 17e6,
              .ramp_exponent = 0.66,
              .latency_seconds = 10e-6};
  }
  return {};
}

}  // namespace

std::string ToString(ScaleOutFabric fabric) {
  for (const auto& [value, name] : kFabricNames) {
    if (value == fabric) return std::string(name);
  }
  return "unknown";
}

std::optional<ScaleOutFabric> ScaleOutFabricFromName(std::string_view name) {
  for (const auto& [value, fabric_name] : kFabricNames) {
    if (fabric_name == name) return value;
  }
  return std::nullopt;
}

std::string ScaleOutFabricNameList() {
  std::string list;
  for (const auto& [value, name] : kFabricNames) {
    list += (list.empty() ? "" : ", ") + std::string(name);
  }
  return list;
}

LinkEfficiency ScaleOutFabricLinks(LinkEfficiency link, ScaleOutFabric fabric) {
  const FabricConstants constants = ConstantsOf(fabric);
  link.scale_out_bus_efficiency = constants.bus_efficiency;
  link.scale_out_half_bytes = constants.half_bytes;
  link.scale_out_ramp_exponent = constants.ramp_exponent;
  link.scale_out_latency_seconds = constants.latency_seconds;
  return link;
}

ScaleOutFabric DefaultScaleOutFabric(const GpuSpec& gpu) {
  // H100-96GB is Meta's Grand Teton part, deployed with 400 Gb/s RoCE per GPU (pytorch/torchtitan
  // benchmarks/llama3_h100_202412_torchtitan.md). NVIDIA's DGX/HGX reference architectures
  // (DGX H100/H200/B200/B300 SuperPOD, GB200/GB300 NVL72) and DGX A100 use InfiniBand compute
  // fabrics; trainscope has no cloud-instance preset, so none defaults to EFA.
  if (gpu.name == "H100-96GB") return ScaleOutFabric::kRoce;
  return ScaleOutFabric::kInfiniBand;
}

ClusterSpec DefaultCluster(const GpuSpec& gpu) {
  ClusterSpec cluster;
  cluster.gpu = gpu;
  cluster.gpus_per_node = IsNvl72(gpu.name) ? kNvl72GpusPerTray : kHgxGpusPerNode;
  cluster.nvlink_domain_gpus = IsNvl72(gpu.name) ? kNvl72DomainGpus : kHgxGpusPerNode;
  cluster.scale_out_bytes_per_second = gpu.scale_out_bytes_per_second;
  cluster.nvls = HasNvls(gpu.name);
  cluster.scale_out_fabric = DefaultScaleOutFabric(gpu);
  cluster.link = ScaleOutFabricLinks(cluster.link, cluster.scale_out_fabric);
  if (IsNvl72(gpu.name)) cluster.pcie_bytes_per_second = kGraceC2cBytesPerGpuPerDirection;
  return cluster;
}

}  // namespace trainscope::config
