#include "trainscope/config/cluster.h"

#include <array>
#include <string_view>

namespace trainscope::config {
namespace {

constexpr int64_t kHgxGpusPerNode = 8;
// GB200/GB300 NVL72: 18 compute trays of 4 GPUs on one NVLink switch fabric.
constexpr int64_t kNvl72GpusPerTray = 4;
constexpr int64_t kNvl72DomainGpus = 72;

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

}  // namespace

ClusterSpec DefaultCluster(const GpuSpec& gpu) {
  ClusterSpec cluster;
  cluster.gpu = gpu;
  cluster.gpus_per_node = IsNvl72(gpu.name) ? kNvl72GpusPerTray : kHgxGpusPerNode;
  cluster.nvlink_domain_gpus = IsNvl72(gpu.name) ? kNvl72DomainGpus : kHgxGpusPerNode;
  cluster.scale_out_bytes_per_second = gpu.scale_out_bytes_per_second;
  cluster.nvls = HasNvls(gpu.name);
  return cluster;
}

}  // namespace trainscope::config
