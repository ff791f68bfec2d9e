// Cluster description from a YAML or JSON file (yaml-cpp reads both), and the resolution of the
// cluster a run uses: GPU preset, then the cluster file, then command-line flags. The only code
// that turns the file's human units (Gbit/s, µs, TFLOP/s, GiB, TB/s, GB/s) into SI values.
// Keys and defaults are documented in docs/cost-model.md, "Cluster".
#ifndef TRAINSCOPE_IO_CLUSTER_FILE_H_
#define TRAINSCOPE_IO_CLUSTER_FILE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "trainscope/config/cluster.h"
#include "trainscope/config/hardware.h"

namespace trainscope::io {

// The validated values of one cluster file; unset = the file does not give the key. Numbers are
// in the file's units, as the key names say.
struct ClusterFile {
  std::string source;  // the file, for messages
  std::optional<std::string> gpu;
  std::optional<int64_t> gpus_per_node;
  std::optional<int64_t> nvlink_domain;
  std::optional<double> scale_out_gbps;                    // Gbit/s per GPU, per direction
  std::optional<double> scale_out_latency_us;              // per inter-node hop
  std::optional<config::ScaleOutFabric> scale_out_fabric;  // "ib", "roce" or "efa"
  std::optional<bool> nvls;
  std::optional<double> bf16_tflops;
  std::optional<double> fp8_tflops;
  std::optional<double> fp4_tflops;
  std::optional<double> memory_gib;
  std::optional<double> hbm_tbps;
  std::optional<double> nvlink_gbps;                            // GB/s per GPU, per direction
  std::optional<config::ComputeCapability> compute_capability;  // "MAJOR.MINOR", e.g. 9.0
  std::optional<double> pcie_gbps;             // GB/s per GPU host link, per direction
  std::optional<double> cpu_optimizer_gflops;  // CPU optimizer GFLOP/s per node
  std::optional<double> storage_gbps;          // GB/s of the checkpoint storage
  std::map<std::string, double> links;         // config::LinkEfficiency field -> value (SI)
  friend bool operator==(const ClusterFile&, const ClusterFile&) = default;
};

// Parses cluster YAML or JSON text; `source` names it in messages. Throws InputError
// "<source>: <key>: <problem> (got X, expected Y)" for malformed text, a top level that is not
// a mapping, an unknown key, a wrong type (quoted numbers are strings; booleans are true or
// false), a count below 1, a bandwidth, FLOP rate or capacity that is not > 0, a latency < 0,
// or a link constant outside its range.
[[nodiscard]] ClusterFile ParseClusterFile(std::string_view text, const std::string& source);

// Reads and parses a cluster file. Throws InputError naming the file if it cannot be read or
// fails ParseClusterFile.
[[nodiscard]] ClusterFile LoadClusterFile(const std::string& path);

// What the command line collected; unset = not given.
struct ClusterInputs {
  std::optional<std::string> gpu;               // --gpu (default H100 when neither sets it)
  std::optional<std::string> cluster_path;      // --cluster FILE
  std::optional<int64_t> gpus_per_node;         // --gpus-per-node
  std::optional<int64_t> nvlink_domain;         // --nvlink-domain
  std::optional<double> scale_out_gbps;         // --scale-out-gbps
  std::optional<double> scale_out_latency_us;   // --scale-out-latency-us
  std::optional<std::string> scale_out_fabric;  // --scale-out-fabric (ib, roce, efa)
};

// The cluster of a run: config::DefaultCluster of the GPU (--gpu, else the file's gpu, else
// H100), then the scale-out fabric's constants (--scale-out-fabric, else the file's
// scale_out_fabric, else the GPU's default fabric), then the file's other keys (so explicit
// links.scale_out_* values win over the fabric preset), then the other flags. Throws UsageError
// naming the flag for a bad flag value, an unknown --gpu (listing the presets) or an unknown
// --scale-out-fabric, and InputError naming file and key for file problems. Also throws (UsageError
// when a flag set one of the two values, InputError otherwise) when the NVLink domain is not a
// whole number of nodes.
[[nodiscard]] config::ClusterSpec ResolveCluster(const ClusterInputs& inputs);

}  // namespace trainscope::io

#endif  // TRAINSCOPE_IO_CLUSTER_FILE_H_
