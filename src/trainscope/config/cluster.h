// The cluster a step runs on: one GPU type, how GPUs group into nodes and NVLink domains, the
// scale-out NIC per GPU, and the calibration constants of the collective cost model. Plain
// values with in-class defaults; DefaultCluster() builds the preset layout for a GPU.
#ifndef TRAINSCOPE_CONFIG_CLUSTER_H_
#define TRAINSCOPE_CONFIG_CLUSTER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "trainscope/config/hardware.h"

namespace trainscope::config {

// Calibration of the collective cost model, fitted to the measured NCCL sweeps of
// published nccl-tests and torch all_reduce_bench.py runs (sources and derivations in
// docs/cost-model.md, "Collectives"). A cluster file can
// override each field. The achieved bus bandwidth of a ring phase moving messages of S bytes is
//   busbw(S) = link · bus_efficiency / (1 + (half_bytes / S)^ramp_exponent)
// and every algorithm step also pays a latency.
struct LinkEfficiency {
  // Ring busbw / NVLink peak at large messages: nccl-tests on 8 x H200 at 16 GiB, all-gather
  // 361.4, reduce-scatter 362.9, all-reduce (NVLS off) 367.2 GB/s (stas00/ml-engineering
  // network/README.md): mean 363.8 / 450.
  double nvlink_bus_efficiency = 0.81;
  // Per ring step over NVLink, and the ramp of the ring busbw with message size: least-squares
  // (minimax) fit to the 8 x H200 all-reduce sweep, 32 KiB to 1 MiB (Ring + LL,
  // stas00/ml-engineering network/README.md).
  double nvlink_latency_seconds = 2.6e-6;
  double nvlink_half_bytes = 0.96e6;
  double nvlink_ramp_exponent = 0.5;
  // NVLS (NVLink SHARP) all-reduce: algbw / NVLink peak and a fixed cost per call, fitted to the
  // NVLS part of the same sweep (2 MiB to 16 GiB; 482.3 GB/s busbw at 16 GiB). NVLS algbw
  // hardly depends on the GPU count: 258.9, 261.4, 268.3, 270.3 GB/s for 5..8 GPUs at 8 GiB.
  double nvls_efficiency = 0.606;
  double nvls_latency_seconds = 91e-6;
  // NCCL chose Ring at 4 GPUs and NVLS from 5 (stas00/ml-engineering network/README.md).
  int64_t nvls_min_ranks = 5;
  // The scale-out (NIC) constants: busbw per NIC / NIC peak at large messages, the ramp with the
  // per-NIC message size and the latency of one inter-node algorithm step (hop). They depend on
  // the fabric; the in-class values are the InfiniBand preset's, and DefaultCluster sets those of
  // the GPU's default fabric (ScaleOutFabricLinks, sources in cluster.cc).
  double scale_out_bus_efficiency = 0.75;
  double scale_out_half_bytes = 3.7e6;
  double scale_out_ramp_exponent = 0.7;
  double scale_out_latency_seconds = 5e-6;
  friend bool operator==(const LinkEfficiency&, const LinkEfficiency&) = default;
};

// The scale-out network between NVLink domains. Each has its own bus efficiency, ramp and hop
// latency (ScaleOutFabricLinks): InfiniBand (NDR 400 / XDR 800 Gb/s ConnectX-7/-8, and HDR on
// A100), RoCE v2 on the same NICs, and AWS EFA (SRD through aws-ofi-nccl).
enum class ScaleOutFabric { kInfiniBand, kRoce, kEfa };

// "ib", "roce", "efa": the one table of fabric names (cluster file `scale_out_fabric`,
// --scale-out-fabric).
[[nodiscard]] std::string ToString(ScaleOutFabric fabric);
// The fabric spelled `name` ("ib", "roce", "efa", case-sensitive), or nothing.
[[nodiscard]] std::optional<ScaleOutFabric> ScaleOutFabricFromName(std::string_view name);
// Every fabric name, in table order, for messages.
[[nodiscard]] std::string ScaleOutFabricNameList();

// `link` with its four scale_out_* constants replaced by the preset of `fabric`; the NVLink and
// NVLS constants are kept.
[[nodiscard]] LinkEfficiency ScaleOutFabricLinks(LinkEfficiency link, ScaleOutFabric fabric);

// The fabric a GPU preset is typically deployed with: RoCE for H100-96GB (Meta Grand Teton),
// InfiniBand for every other preset (DGX/HGX H100, H200, B200, B300 and GB200/GB300 NVL72
// reference architectures; DGX A100 with HDR). No preset is an AWS instance, so none defaults
// to EFA.
[[nodiscard]] ScaleOutFabric DefaultScaleOutFabric(const GpuSpec& gpu);

// Host link of one GPU of a Grace-Blackwell superchip (GB200, GB300): NVLink-C2C's 900 GB/s
// bidirectional between the Grace CPU and its two Blackwell GPUs (NVIDIA GB200 NVL72 product
// page and datasheet), 450 GB/s per direction shared by two GPUs. The datasheet rate; no achieved
// per-GPU figure is published.
inline constexpr double kGraceC2cBytesPerGpuPerDirection = 225e9;

struct ClusterSpec {
  GpuSpec gpu;
  int64_t gpus_per_node = 8;
  int64_t nvlink_domain_gpus = 8;  // GPUs sharing one NVLink domain (72 for GB200/GB300 NVL72)
  double scale_out_bytes_per_second = 0;  // NIC bandwidth per GPU, per direction; 0 = unknown
  // The fabric whose preset set link.scale_out_* (a cluster file's `links` may override them).
  ScaleOutFabric scale_out_fabric = ScaleOutFabric::kInfiniBand;
  bool nvls = true;  // NVLink SHARP all-reduce available (Hopper/Blackwell NVSwitch)
  // Host link of one GPU, per direction (cluster file `pcie_gbps`, GB/s): pinned D2H/H2D copies
  // of the CPU-offloaded optimizer and of offloaded activations. Default 25 GB/s, an estimate of
  // the achieved rate of a PCIe Gen4 x16 link (32 GB/s raw per direction, PCI-SIG); Gen5 hosts
  // reach about twice that. GB200 and GB300 presets: kGraceC2cBytesPerGpuPerDirection.
  double pcie_bytes_per_second = 25e9;
  // CPU optimizer throughput of one node, shared by its GPUs' ranks (cluster file
  // `cpu_optimizer_gflops`): 14 Adam FLOPs per parameter x 1.16 Gparam/s = 16.3 GFLOP/s, from
  // Megatron's HybridDeviceOptimizer stepping 36 B params on 2 nodes in 15.5 s
  // (ISEEKYAN/Megatron-LM issue #188).
  double cpu_optimizer_flops_per_second = 16.3e9;
  // Shared checkpoint storage of the cluster, per direction (cluster file `storage_gbps`, GB/s):
  // the disk weight-sync transport writes and re-reads the HF checkpoint through it. Default
  // 2 GB/s, an estimate (one NVMe drive's sequential write; no published RL-cluster figure).
  double storage_bytes_per_second = 2e9;
  // Calibration constants, including the per-hop scale-out latency
  // (link.scale_out_latency_seconds), so a calibration file overrides them all in one place.
  LinkEfficiency link;
  friend bool operator==(const ClusterSpec&, const ClusterSpec&) = default;
};

// The preset cluster of `gpu`: HGX/DGX nodes of 8 GPUs forming one NVLink domain, except
// GB200 and GB300 (NVL72: compute trays of 4 GPUs, 72-GPU NVLink domain) and L20 (PCIe, one
// node per domain). NVLS is on for Hopper and Blackwell NVSwitch systems and off for A100,
// A800 and L20. The NIC bandwidth is the preset's (0 where no figure is published).
[[nodiscard]] ClusterSpec DefaultCluster(const GpuSpec& gpu);

}  // namespace trainscope::config

#endif  // TRAINSCOPE_CONFIG_CLUSTER_H_
