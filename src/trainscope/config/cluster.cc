#include "trainscope/config/cluster.h"

#include <array>
#include <string_view>

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
