// Built-in GPU presets: peak dense compute, usable memory and link bandwidths of the GPUs
// trainscope models, with their sources cited in hardware.cc. Plain values; the table lives inside
// hardware.cc and is rebuilt on each call, so there is no shared state.
#ifndef TRAINSCOPE_CONFIG_HARDWARE_H_
#define TRAINSCOPE_CONFIG_HARDWARE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainscope::config {

// CUDA compute capability (SM version) major.minor, e.g. 9.0 for Hopper; 0.0 = unknown.
struct ComputeCapability {
  int major = 0;
  int minor = 0;
  friend auto operator<=>(const ComputeCapability&, const ComputeCapability&) = default;
};

// "9.0", "10.3".
[[nodiscard]] std::string ToString(ComputeCapability capability);
// The host CPU a GPU preset is deployed with: x86 (HGX / DGX boards) or NVIDIA Grace (GB200 /
// GB300 superchips). It sets the host time of one kernel launch (cost/launch_overhead.h).
enum class HostCpu { kX86, kGrace };

// One GPU type. Bandwidths are per GPU and per direction. A zero rate means no published
// figure for this GPU (FP8 on A100/A800; scale-out NICs that are deployment-specific) and the
// caller must take the value from the user's hardware profile instead.
struct GpuSpec {
  std::string name;                       // canonical preset name, e.g. "H100"
  double bf16_flops_per_second = 0;       // dense (no 2:4 sparsity) BF16 tensor-core peak
  double fp8_flops_per_second = 0;        // dense FP8 peak; 0 = no FP8 tensor cores
  int64_t memory_bytes = 0;               // usable HBM (see hardware.cc for each figure)
  double hbm_bytes_per_second = 0;        // HBM bandwidth
  double nvlink_bytes_per_second = 0;     // scale-up link per direction (PCIe for L20)
  double scale_out_bytes_per_second = 0;  // NIC share per GPU, per direction; 0 = not published
  ComputeCapability compute_capability;   // SM version; kernels such as FlashQLA need SM90+
  HostCpu host_cpu = HostCpu::kX86;
  double fp4_flops_per_second = 0;  // dense FP4 (NVFP4) peak; 0 = no FP4 tensor cores
  friend bool operator==(const GpuSpec&, const GpuSpec&) = default;
};

// The preset called `name`, compared case-insensitively ("h100", "GB200", "h100-96gb"), or
// nothing if trainscope has no preset of that name.
[[nodiscard]] std::optional<GpuSpec> FindGpu(std::string_view name);

// Canonical names of every GPU preset, in a fixed order.
[[nodiscard]] std::vector<std::string> GpuNames();

}  // namespace trainscope::config

#endif  // TRAINSCOPE_CONFIG_HARDWARE_H_
