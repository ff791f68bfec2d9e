#include "trainscope/io/cluster_file.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <sstream>

#include "trainscope/config/hardware.h"
#include "trainscope/error.h"
#include "trainscope/io/input_ranges.h"
#include "trainscope/io/input_text.h"
#include "trainscope/io/suggest.h"
#include "trainscope/units.h"

namespace trainscope::io {
namespace {

// The file and the flags give latencies in microseconds.
constexpr double kSecondsPerMicrosecond = 1e-6;
constexpr std::string_view kDefaultGpu = "H100";

// One overridable config::LinkEfficiency field (a double, or nvls_min_ranks).
struct LinkField {
  std::string_view key;
  NumberRange range;
  double config::LinkEfficiency::*member;
};

// The one table of the cluster file's link keys; same names and units (SI) as the fields, same
// ranges as the calibration file's (io/input_ranges.h).
constexpr std::array<LinkField, 11> kLinkFields = {{
    {"nvlink_bus_efficiency", kEfficiencyRange, &config::LinkEfficiency::nvlink_bus_efficiency},
    {"nvlink_latency_seconds", kLatencySecondsRange,
     &config::LinkEfficiency::nvlink_latency_seconds},
    {"nvlink_half_bytes", kHalfBytesRange, &config::LinkEfficiency::nvlink_half_bytes},
    {"nvlink_ramp_exponent", kEfficiencyRange, &config::LinkEfficiency::nvlink_ramp_exponent},
    {"nvls_efficiency", kEfficiencyRange, &config::LinkEfficiency::nvls_efficiency},
    {"nvls_latency_seconds", kLatencySecondsRange, &config::LinkEfficiency::nvls_latency_seconds},
    {"scale_out_bus_efficiency", kEfficiencyRange,
     &config::LinkEfficiency::scale_out_bus_efficiency},
    {"scale_out_half_bytes", kHalfBytesRange, &config::LinkEfficiency::scale_out_half_bytes},
    {"scale_out_ramp_exponent", kEfficiencyRange, &config::LinkEfficiency::scale_out_ramp_exponent},
    {"scale_out_latency_seconds", kLatencySecondsRange,
     &config::LinkEfficiency::scale_out_latency_seconds},
    {"nvls_min_ranks", {}, nullptr},  // an integer in [2, kMaxWorldSize], read separately
}};

[[noreturn]] void Fail(const std::string& source, const std::string& key,
                       const std::string& problem) {
  throw InputError(fmt::format("{}: {}: {}", source, key, problem));
}

std::string Got(const YAML::Node& node) {
  if (node.IsMap()) return "a mapping";
  if (node.IsSequence()) return "a list";
  if (node.IsNull()) return "nothing";
  std::string scalar = node.Scalar();
  if (scalar.size() > 60) scalar = scalar.substr(0, 57) + "...";
  return node.Tag() == "!" ? fmt::format("\"{}\"", scalar) : scalar;
}

// A plain (unquoted) scalar: in YAML and JSON a quoted value is a string.
bool IsPlainScalar(const YAML::Node& node) { return node.IsScalar() && node.Tag() != "!"; }

int64_t ReadInteger(const YAML::Node& node, const std::string& key, const std::string& source,
                    int64_t min) {
  int64_t value = 0;
  if (!IsPlainScalar(node) || !YAML::convert<int64_t>::decode(node, value) || value < min ||
      value > kMaxWorldSize) {
    Fail(
        source, key,
        fmt::format("expected an integer >= {} and <= {} (got {})", min, kMaxWorldSize, Got(node)));
  }
  return value;
}

double ReadNumber(const YAML::Node& node, const std::string& key, const std::string& source,
                  NumberRange range, std::string_view note = "") {
  double value = 0;
  if (!IsPlainScalar(node) || !YAML::convert<double>::decode(node, value) ||
      !InRange(value, range)) {
    Fail(source, key, fmt::format("expected {}{} (got {})", DescribeRange(range), note, Got(node)));
  }
  return value;
}

bool ReadBool(const YAML::Node& node, const std::string& key, const std::string& source) {
  if (IsPlainScalar(node) && (node.Scalar() == "true" || node.Scalar() == "false")) {
    return node.Scalar() == "true";
  }
  return Fail(source, key, fmt::format("expected true or false (got {})", Got(node))), false;
}

std::string ReadString(const YAML::Node& node, const std::string& key, const std::string& source) {
  if (!node.IsScalar()) Fail(source, key, fmt::format("expected a string (got {})", Got(node)));
  return node.Scalar();
}

// A compute capability written MAJOR.MINOR (9.0, 8.9, 10.3): one or two digits, a dot, one digit.
config::ComputeCapability ReadComputeCapability(const YAML::Node& node, const std::string& key,
                                                const std::string& source) {
  const std::string text = IsPlainScalar(node) ? node.Scalar() : std::string();
  const size_t dot = text.find('.');
  const auto digits = [&](size_t from, size_t count) {
    return count >= 1 && std::all_of(text.begin() + static_cast<std::ptrdiff_t>(from),
                                     text.begin() + static_cast<std::ptrdiff_t>(from + count),
                                     [](char ch) { return ch >= '0' && ch <= '9'; });
  };
  if (dot == std::string::npos || dot > 2 || text.size() != dot + 2 || !digits(0, dot) ||
      !digits(dot + 1, 1)) {
    Fail(source, key,
         fmt::format("expected a compute capability MAJOR.MINOR such as 9.0 (got {})", Got(node)));
  }
  return {.major = std::stoi(text.substr(0, dot)), .minor = text[dot + 1] - '0'};
}

// The name of a mapping key; a key that is not a plain scalar ({[1, 2]: 8}) is rejected.
std::string KeyName(const YAML::Node& key, const std::string& where, const std::string& source) {
  if (!key.IsScalar()) {
    Fail(source, where, fmt::format("expected a key name (got {} as a key)", Got(key)));
  }
  return key.Scalar();
}

std::string LinkKeyList() {
  std::string list;
  for (const LinkField& field : kLinkFields) {
    list += (list.empty() ? "" : ", ") + std::string(field.key);
  }
  return list;
}

void ReadLinks(const YAML::Node& links, const std::string& source, ClusterFile& file) {
  if (!links.IsMap()) Fail(source, "links", fmt::format("expected a mapping (got {})", Got(links)));
  for (const auto& entry : links) {
    const std::string key = KeyName(entry.first, "links", source);
    const std::string path = "links." + key;
    const auto field = std::ranges::find(kLinkFields, key, &LinkField::key);
    if (field == kLinkFields.end()) {
      Fail(source, path, fmt::format("unknown key (expected one of {})", LinkKeyList()));
    }
    file.links[key] = field->member == nullptr
                          ? static_cast<double>(ReadInteger(entry.second, path, source, 2))
                          : ReadNumber(entry.second, path, source, field->range,
                                       key.ends_with("_ramp_exponent")
                                           ? ", so that more bytes never take less time"
                                           : "");
  }
}

// Parses one top-level key into `file`; every key is read here and nowhere else.
void ReadKey(const std::string& key, const YAML::Node& value, const std::string& source,
             ClusterFile& file) {
  if (key == "gpu") {
    file.gpu = ReadString(value, key, source);
  } else if (key == "gpus_per_node") {
    file.gpus_per_node = ReadInteger(value, key, source, 1);
  } else if (key == "nvlink_domain") {
    file.nvlink_domain = ReadInteger(value, key, source, 1);
  } else if (key == "scale_out_gbps") {
    file.scale_out_gbps = ReadNumber(value, key, source, kLinkBandwidthRange);
  } else if (key == "scale_out_latency_us") {
    file.scale_out_latency_us = ReadNumber(value, key, source, kLatencyMicrosecondsRange);
  } else if (key == "scale_out_fabric") {
    const std::string name = ReadString(value, key, source);
    file.scale_out_fabric = config::ScaleOutFabricFromName(name);
    if (!file.scale_out_fabric) {
      Fail(source, key,
           fmt::format("unknown fabric (got {}, expected one of {})", Abbreviated(name),
                       config::ScaleOutFabricNameList()));
    }
  } else if (key == "nvls") {
    file.nvls = ReadBool(value, key, source);
  } else if (key == "bf16_tflops") {
    file.bf16_tflops = ReadNumber(value, key, source, kTflopsRange);
  } else if (key == "fp8_tflops") {
    file.fp8_tflops = ReadNumber(value, key, source, kTflopsRange);
  } else if (key == "fp4_tflops") {
    file.fp4_tflops = ReadNumber(value, key, source, kTflopsRange);
  } else if (key == "memory_gib") {
    file.memory_gib = ReadNumber(value, key, source, kMemoryGibRange);
  } else if (key == "hbm_tbps") {
    file.hbm_tbps = ReadNumber(value, key, source, kHbmTbpsRange);
  } else if (key == "compute_capability") {
    file.compute_capability = ReadComputeCapability(value, key, source);
  } else if (key == "nvlink_gbps") {
    file.nvlink_gbps = ReadNumber(value, key, source, kLinkBandwidthRange);
  } else if (key == "pcie_gbps") {
    file.pcie_gbps = ReadNumber(value, key, source, kLinkBandwidthRange);
  } else if (key == "cpu_optimizer_gflops") {
    file.cpu_optimizer_gflops = ReadNumber(value, key, source, kTflopsRange);
  } else if (key == "storage_gbps") {
    file.storage_gbps = ReadNumber(value, key, source, kLinkBandwidthRange);
  } else if (key == "links") {
    ReadLinks(value, source, file);
  } else {
    Fail(source, key,
         "unknown key (expected one of gpu, gpus_per_node, nvlink_domain, scale_out_gbps, "
         "scale_out_latency_us, scale_out_fabric, nvls, bf16_tflops, fp8_tflops, fp4_tflops, "
         "memory_gib, "
         "hbm_tbps, "
         "compute_capability, nvlink_gbps, pcie_gbps, cpu_optimizer_gflops, storage_gbps, "
         "links)");
  }
}

std::string GpuNameList() {
  std::string list;
  for (const std::string& name : config::GpuNames()) list += (list.empty() ? "" : ", ") + name;
  return list;
}

// The preset named by --gpu, else by the file's gpu key, else H100.
config::GpuSpec PresetGpu(const ClusterInputs& inputs, const std::optional<ClusterFile>& file) {
  if (inputs.gpu) {
    const std::optional<config::GpuSpec> gpu = config::FindGpu(*inputs.gpu);
    if (!gpu) {
      throw UsageError(fmt::format("--gpu: unknown GPU (got {}, expected one of {})",
                                   Abbreviated(*inputs.gpu), GpuNameList()));
    }
    return *gpu;
  }
  if (file && file->gpu) {
    const std::optional<config::GpuSpec> gpu = config::FindGpu(*file->gpu);
    if (!gpu) {
      Fail(file->source, "gpu",
           fmt::format("unknown GPU (got {}, expected one of {})", Abbreviated(*file->gpu),
                       GpuNameList()));
    }
    return *gpu;
  }
  return *config::FindGpu(kDefaultGpu);
}

double GigabitsToBytesPerSecond(double gbit_per_second) {
  return gbit_per_second * kBitsPerGigabit / kBitsPerByte;
}

void ApplyLinks(const std::map<std::string, double>& links, config::LinkEfficiency& link) {
  for (const LinkField& field : kLinkFields) {
    const auto it = links.find(std::string(field.key));
    if (it == links.end()) continue;
    if (field.member == nullptr) {
      link.nvls_min_ranks = static_cast<int64_t>(it->second);
    } else {
      link.*field.member = it->second;
    }
  }
}

void ApplyFile(const ClusterFile& file, config::ClusterSpec& cluster) {
  config::GpuSpec& gpu = cluster.gpu;
  if (file.bf16_tflops) gpu.bf16_flops_per_second = *file.bf16_tflops * kFlopsPerTeraflop;
  if (file.fp8_tflops) gpu.fp8_flops_per_second = *file.fp8_tflops * kFlopsPerTeraflop;
  if (file.fp4_tflops) gpu.fp4_flops_per_second = *file.fp4_tflops * kFlopsPerTeraflop;
  if (file.memory_gib) {
    gpu.memory_bytes = std::llround(*file.memory_gib * static_cast<double>(kBytesPerGiB));
  }
  if (file.hbm_tbps) gpu.hbm_bytes_per_second = *file.hbm_tbps * kBytesPerTB;
  if (file.nvlink_gbps) gpu.nvlink_bytes_per_second = *file.nvlink_gbps * kBytesPerGB;
  if (file.compute_capability) gpu.compute_capability = *file.compute_capability;
  if (file.gpus_per_node) cluster.gpus_per_node = *file.gpus_per_node;
  if (file.nvlink_domain) cluster.nvlink_domain_gpus = *file.nvlink_domain;
  if (file.scale_out_gbps) {
    cluster.scale_out_bytes_per_second = GigabitsToBytesPerSecond(*file.scale_out_gbps);
  }
  if (file.nvls) cluster.nvls = *file.nvls;
  if (file.pcie_gbps) cluster.pcie_bytes_per_second = *file.pcie_gbps * kBytesPerGB;
  if (file.cpu_optimizer_gflops) {
    cluster.cpu_optimizer_flops_per_second = *file.cpu_optimizer_gflops * kFlopsPerGigaflop;
  }
  if (file.storage_gbps) cluster.storage_bytes_per_second = *file.storage_gbps * kBytesPerGB;
  ApplyLinks(file.links, cluster.link);
  if (file.scale_out_latency_us) {
    cluster.link.scale_out_latency_seconds = *file.scale_out_latency_us * kSecondsPerMicrosecond;
  }
}

// The fabric named by --scale-out-fabric, else by the file's scale_out_fabric key, else the
// preset's, with its scale-out constants.
void ApplyFabric(const ClusterInputs& inputs, const std::optional<ClusterFile>& file,
                 config::ClusterSpec& cluster) {
  if (inputs.scale_out_fabric) {
    const std::optional<config::ScaleOutFabric> fabric =
        config::ScaleOutFabricFromName(*inputs.scale_out_fabric);
    if (!fabric) {
      throw UsageError(
          fmt::format("--scale-out-fabric: unknown fabric (got {}, expected one of {})",
                      Abbreviated(*inputs.scale_out_fabric), config::ScaleOutFabricNameList()));
    }
    cluster.scale_out_fabric = *fabric;
  } else if (file && file->scale_out_fabric) {
    cluster.scale_out_fabric = *file->scale_out_fabric;
  }
  cluster.link = config::ScaleOutFabricLinks(cluster.link, cluster.scale_out_fabric);
}

void ApplyFlags(const ClusterInputs& inputs, config::ClusterSpec& cluster) {
  if (inputs.gpus_per_node) {
    if (*inputs.gpus_per_node < 1) {
      throw UsageError(
          fmt::format("--gpus-per-node: expected an integer >= 1 (got {})", *inputs.gpus_per_node));
    }
    cluster.gpus_per_node = *inputs.gpus_per_node;
  }
  if (inputs.nvlink_domain) {
    if (*inputs.nvlink_domain < 1) {
      throw UsageError(
          fmt::format("--nvlink-domain: expected an integer >= 1 (got {})", *inputs.nvlink_domain));
    }
    cluster.nvlink_domain_gpus = *inputs.nvlink_domain;
  }
  if (inputs.scale_out_gbps) {
    if (!(*inputs.scale_out_gbps > 0) || !std::isfinite(*inputs.scale_out_gbps)) {
      throw UsageError(fmt::format("--scale-out-gbps: expected Gbit/s per GPU > 0 (got {})",
                                   *inputs.scale_out_gbps));
    }
    cluster.scale_out_bytes_per_second = GigabitsToBytesPerSecond(*inputs.scale_out_gbps);
  }
  if (inputs.scale_out_latency_us) {
    if (!(*inputs.scale_out_latency_us >= 0) || !std::isfinite(*inputs.scale_out_latency_us)) {
      throw UsageError(fmt::format("--scale-out-latency-us: expected microseconds >= 0 (got {})",
                                   *inputs.scale_out_latency_us));
    }
    cluster.link.scale_out_latency_seconds = *inputs.scale_out_latency_us * kSecondsPerMicrosecond;
  }
}

// Where a value came from, for the consistency message.
std::string Origin(bool from_flag, const char* flag, const std::optional<ClusterFile>& file,
                   bool in_file, const char* key, const std::string& gpu) {
  if (from_flag) return flag;
  if (in_file) return fmt::format("{}: {}", file->source, key);
  return fmt::format("the {} preset", gpu);
}

// A domain holds whole nodes: ranks r, s share a node iff r / gpus_per_node is equal and a
// domain iff r / nvlink_domain is equal, so a node split over two domains would be inconsistent.
void CheckDomainHoldsWholeNodes(const ClusterInputs& inputs, const std::optional<ClusterFile>& file,
                                const config::ClusterSpec& cluster) {
  if (cluster.nvlink_domain_gpus % cluster.gpus_per_node == 0) return;
  const std::string message = fmt::format(
      "nvlink_domain must be a whole number of nodes, a multiple of gpus_per_node (got "
      "nvlink_domain {} from {} and gpus_per_node {} from {}; expected e.g. 8 and 8 for HGX, "
      "72 and 4 for NVL72)",
      cluster.nvlink_domain_gpus,
      Origin(inputs.nvlink_domain.has_value(), "--nvlink-domain", file, file && file->nvlink_domain,
             "nvlink_domain", cluster.gpu.name),
      cluster.gpus_per_node,
      Origin(inputs.gpus_per_node.has_value(), "--gpus-per-node", file, file && file->gpus_per_node,
             "gpus_per_node", cluster.gpu.name));
  if (inputs.nvlink_domain || inputs.gpus_per_node) throw UsageError(message);
  throw InputError(file ? fmt::format("{}: {}", file->source, message) : message);
}

}  // namespace

ClusterFile ParseClusterFile(std::string_view text, const std::string& source) {
  CheckNesting(text, source, /*quoted_strings=*/false);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& error) {
    throw InputError(fmt::format("{}: malformed YAML/JSON at line {}, column {}: {}", source,
                                 error.mark.line + 1, error.mark.column + 1, error.msg));
  }
  if (!root.IsMap()) {
    throw InputError(
        fmt::format("{}: expected a mapping of keys at top level (got {})", source, Got(root)));
  }
  ClusterFile file{.source = source};
  for (const auto& entry : root) {
    ReadKey(KeyName(entry.first, "top level", source), entry.second, source, file);
  }
  return file;
}

ClusterFile LoadClusterFile(const std::string& path) {
  return ParseClusterFile(ReadInputFile(path, "--cluster file"), path);
}

config::ClusterSpec ResolveCluster(const ClusterInputs& inputs) {
  std::optional<ClusterFile> file;
  if (inputs.cluster_path) file = LoadClusterFile(*inputs.cluster_path);
  config::ClusterSpec cluster = config::DefaultCluster(PresetGpu(inputs, file));
  ApplyFabric(inputs, file, cluster);
  if (file) ApplyFile(*file, cluster);
  ApplyFlags(inputs, cluster);
  CheckDomainHoldsWholeNodes(inputs, file, cluster);
  return cluster;
}

}  // namespace trainscope::io
