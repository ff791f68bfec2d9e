#include "trainscope/io/calibration_file.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>
#include <vector>

#include "trainscope/config/hardware.h"
#include "trainscope/cost/gemm_efficiency.h"
#include "trainscope/error.h"
#include "trainscope/io/input_ranges.h"
#include "trainscope/io/input_text.h"

namespace trainscope::io {
namespace {

using Json = nlohmann::json;

// One overridable field of `Struct`: its JSON key, and either a double member with its range
// or an int64_t member with its minimum (at most kMaxIntegerField).
template <typename Struct>
struct Field {
  std::string_view key;
  NumberRange range;
  double Struct::*real = nullptr;
  int64_t Struct::*integer = nullptr;
  int64_t minimum = 1;  // integer fields only
};

// Largest integer field value: tile sizes and rank counts.
constexpr int64_t kMaxIntegerField = 1'000'000;
// Integer fields carry no NumberRange.
constexpr NumberRange kIntegerField{};

// gpu_throughput_scale factors.
constexpr NumberRange kThroughputScaleRange{1e-3, 2.0};

using cost::ComputeEfficiency;
using cost::LinkEfficiency;

// The one table of ComputeEfficiency keys.
constexpr std::array<Field<ComputeEfficiency>, 21> kComputeFields = {{
    {"bf16_gemm_efficiency", kEfficiencyRange, &ComputeEfficiency::bf16_gemm_efficiency},
    {"fp8_gemm_efficiency", kEfficiencyRange, &ComputeEfficiency::fp8_gemm_efficiency},
    {"fp4_over_fp8_gemm_efficiency", kEfficiencyRange,
     &ComputeEfficiency::fp4_over_fp8_gemm_efficiency},
    {"fp4_over_fp8_gemm_efficiency_ultra", kEfficiencyRange,
     &ComputeEfficiency::fp4_over_fp8_gemm_efficiency_ultra},
    {"gemm_fallback_k0", kIntegerField, nullptr, &ComputeEfficiency::gemm_fallback_k0, 0},
    {"gemm_fallback_n0", kIntegerField, nullptr, &ComputeEfficiency::gemm_fallback_n0, 0},
    {"gemm_tile_m", kIntegerField, nullptr, &ComputeEfficiency::gemm_tile_m},
    {"gemm_tile_n", kIntegerField, nullptr, &ComputeEfficiency::gemm_tile_n},
    {"gemm_tile_k", kIntegerField, nullptr, &ComputeEfficiency::gemm_tile_k},
    {"fused_kernel_efficiency", kEfficiencyRange, &ComputeEfficiency::fused_kernel_efficiency},
    {"memory_efficiency", kEfficiencyRange, &ComputeEfficiency::memory_efficiency},
    {"fp8_cast_memory_efficiency", kEfficiencyRange,
     &ComputeEfficiency::fp8_cast_memory_efficiency},
    {"attention_forward_efficiency", kEfficiencyRange,
     &ComputeEfficiency::attention_forward_efficiency},
    {"attention_backward_efficiency", kEfficiencyRange,
     &ComputeEfficiency::attention_backward_efficiency},
    {"gdn_fla_forward_efficiency", kEfficiencyRange,
     &ComputeEfficiency::gdn_fla_forward_efficiency},
    {"gdn_fla_backward_efficiency", kEfficiencyRange,
     &ComputeEfficiency::gdn_fla_backward_efficiency},
    {"gdn_flashqla_forward_efficiency", kEfficiencyRange,
     &ComputeEfficiency::gdn_flashqla_forward_efficiency},
    {"gdn_flashqla_backward_efficiency", kEfficiencyRange,
     &ComputeEfficiency::gdn_flashqla_backward_efficiency},
    {"launch_host_seconds_x86", kLatencySecondsRange, &ComputeEfficiency::launch_host_seconds_x86},
    {"launch_host_seconds_grace", kLatencySecondsRange,
     &ComputeEfficiency::launch_host_seconds_grace},
    {"host_sync_seconds", kLatencySecondsRange, &ComputeEfficiency::host_sync_seconds},
}};

// The one table of LinkEfficiency keys (config/cluster.h); the ranges are those of the cluster
// file's link keys (io/cluster_file.cc), so both files accept the same values.
constexpr std::array<Field<LinkEfficiency>, 11> kLinkFields = {{
    {"nvlink_bus_efficiency", kEfficiencyRange, &LinkEfficiency::nvlink_bus_efficiency},
    {"nvlink_latency_seconds", kLatencySecondsRange, &LinkEfficiency::nvlink_latency_seconds},
    {"nvlink_half_bytes", kHalfBytesRange, &LinkEfficiency::nvlink_half_bytes},
    {"nvlink_ramp_exponent", kEfficiencyRange, &LinkEfficiency::nvlink_ramp_exponent},
    {"nvls_efficiency", kEfficiencyRange, &LinkEfficiency::nvls_efficiency},
    {"nvls_latency_seconds", kLatencySecondsRange, &LinkEfficiency::nvls_latency_seconds},
    {"nvls_min_ranks", kIntegerField, nullptr, &LinkEfficiency::nvls_min_ranks, 2},
    {"scale_out_bus_efficiency", kEfficiencyRange, &LinkEfficiency::scale_out_bus_efficiency},
    {"scale_out_half_bytes", kHalfBytesRange, &LinkEfficiency::scale_out_half_bytes},
    {"scale_out_ramp_exponent", kEfficiencyRange, &LinkEfficiency::scale_out_ramp_exponent},
    {"scale_out_latency_seconds", kLatencySecondsRange, &LinkEfficiency::scale_out_latency_seconds},
}};

[[noreturn]] void Fail(const std::string& source, const std::string& key,
                       const std::string& problem) {
  throw InputError(fmt::format("{}: {}: {}", source, key, problem));
}

// Checks `value` against `field` and returns it as a double. `key` is the full key path.
template <typename Struct>
double CheckedValue(const Json& value, const Field<Struct>& field, const std::string& key,
                    const std::string& source) {
  const std::string got = QuoteJson(value);
  if (field.integer != nullptr) {
    if (!value.is_number_integer() ||
        (value.is_number_unsigned() && value.get<uint64_t>() > kMaxIntegerField) ||
        value.get<int64_t>() < field.minimum || value.get<int64_t>() > kMaxIntegerField) {
      Fail(source, key,
           fmt::format("expected an integer >= {} and <= {} (got {})", field.minimum,
                       kMaxIntegerField, got));
    }
    return static_cast<double>(value.get<int64_t>());
  }
  if (!value.is_number()) Fail(source, key, fmt::format("expected a number (got {})", got));
  const double number = value.get<double>();
  if (!InRange(number, field.range)) {
    Fail(source, key,
         fmt::format("out of range (got {}, expected {})", got, DescribeRange(field.range)));
  }
  return number;
}

// Validates one key of `object` against `fields` and records it in `into`. Returns false when
// the key is not in the table.
template <typename Struct, size_t N>
bool ReadField(const std::array<Field<Struct>, N>& fields, const std::string& key,
               const Json& value, const std::string& key_path, const std::string& source,
               std::map<std::string, double>& into) {
  for (const Field<Struct>& field : fields) {
    if (field.key != key) continue;
    into[key] = CheckedValue(value, field, key_path, source);
    return true;
  }
  return false;
}

template <typename Struct, size_t N>
std::string KeyList(const std::array<Field<Struct>, N>& fields) {
  std::string list;
  for (const Field<Struct>& field : fields)
    list += (list.empty() ? "" : ", ") + std::string(field.key);
  return list;
}

void ReadLinks(const Json& links, const std::string& source, CalibrationOverrides& overrides) {
  if (!links.is_object()) {
    Fail(source, "links", fmt::format("expected an object (got {})", links.type_name()));
  }
  for (const auto& [key, value] : links.items()) {
    if (!ReadField(kLinkFields, key, value, "links." + key, source, overrides.links)) {
      Fail(source, "links." + key,
           fmt::format("unknown key (expected one of {})", KeyList(kLinkFields)));
    }
  }
}

// "gpu_throughput_scale": {"<GPU preset>": factor, ...}; names are canonicalised.
void ReadGpuScales(const Json& scales, const std::string& source, CalibrationOverrides& overrides) {
  const std::string key = "gpu_throughput_scale";
  if (!scales.is_object()) {
    Fail(source, key, fmt::format("expected an object (got {})", scales.type_name()));
  }
  for (const auto& [name, value] : scales.items()) {
    const std::optional<config::GpuSpec> gpu = config::FindGpu(name);
    if (!gpu) Fail(source, key + "." + name, "unknown GPU preset (see trainscope help)");
    if (!value.is_number() || !InRange(value.get<double>(), kThroughputScaleRange)) {
      Fail(source, key + "." + name,
           fmt::format("expected {} (got {})", DescribeRange(kThroughputScaleRange),
                       QuoteJson(value)));
    }
    overrides.gpu_throughput_scale[gpu->name] = value.get<double>();
  }
}

// "gemm_shape_scale": {"<family>_<bf16|fp8>": factor, ...}, family hopper, blackwell or other.
void ReadGemmShapeScales(const Json& scales, const std::string& source,
                         CalibrationOverrides& overrides) {
  const std::string key = "gemm_shape_scale";
  if (!scales.is_object()) {
    Fail(source, key, fmt::format("expected an object (got {})", scales.type_name()));
  }
  std::vector<std::string> known;
  for (const cost::GpuFamily family :
       {cost::GpuFamily::kHopper, cost::GpuFamily::kBlackwell, cost::GpuFamily::kOther}) {
    for (const cost::MathPrecision precision :
         {cost::MathPrecision::kBf16, cost::MathPrecision::kFp8}) {
      known.push_back(cost::GemmShapeScaleKey(family, precision));
    }
  }
  for (const auto& [name, value] : scales.items()) {
    if (std::ranges::find(known, name) == known.end()) {
      Fail(source, key + "." + name,
           fmt::format("unknown key (expected one of {})", fmt::join(known, ", ")));
    }
    if (!value.is_number() || !InRange(value.get<double>(), kThroughputScaleRange)) {
      Fail(source, key + "." + name,
           fmt::format("expected {} (got {})", DescribeRange(kThroughputScaleRange),
                       QuoteJson(value)));
    }
    overrides.gemm_shape_scale[name] = value.get<double>();
  }
}

// A string member of a "gemm_efficiency_points" entry parsed through `from_name`.
template <typename FromName>
auto ReadPointName(const Json& entry, const std::string& member, const std::string& key,
                   const std::string& expected, const std::string& source, FromName from_name) {
  const std::string path = key + "." + member;
  if (!entry.contains(member)) Fail(source, path, "missing (expected " + expected + ")");
  const Json& value = entry.at(member);
  const auto parsed =
      value.is_string() ? from_name(value.get<std::string>()) : decltype(from_name("")){};
  if (!parsed) {
    Fail(source, path, fmt::format("expected {} (got {})", expected, QuoteJson(value)));
  }
  return *parsed;
}

// An integer member >= 1 (at most kMaxIntegerField); `fallback` when absent and optional.
int64_t ReadPointExtent(const Json& entry, const std::string& member, const std::string& key,
                        const std::string& source, std::optional<int64_t> fallback) {
  const std::string path = key + "." + member;
  if (!entry.contains(member)) {
    if (fallback) return *fallback;
    Fail(source, path, "missing (expected an integer >= 1)");
  }
  const Json& value = entry.at(member);
  if (!value.is_number_integer() || value.get<int64_t>() < 1 ||
      (value.is_number_unsigned() && value.get<uint64_t>() > kMaxIntegerField) ||
      value.get<int64_t>() > kMaxIntegerField) {
    Fail(source, path,
         fmt::format("expected an integer >= 1 and <= {} (got {})", kMaxIntegerField,
                     QuoteJson(value)));
  }
  return value.get<int64_t>();
}

// "gemm_efficiency_points": [{"family", "dtype", "pass", "tokens", "in_features",
// "out_features", "groups" (optional, 1), "efficiency"}, ...].
void ReadGemmEfficiencyPoints(const Json& points, const std::string& source,
                              CalibrationOverrides& overrides) {
  const std::string key = "gemm_efficiency_points";
  if (!points.is_array()) {
    Fail(source, key, fmt::format("expected an array (got {})", points.type_name()));
  }
  constexpr std::array<std::string_view, 8> kMembers = {
      "family", "dtype", "pass", "tokens", "in_features", "out_features", "groups", "efficiency"};
  std::vector<cost::GemmEfficiencyPoint> parsed;
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string path = fmt::format("{}[{}]", key, i);
    const Json& entry = points[i];
    if (!entry.is_object()) {
      Fail(source, path, fmt::format("expected an object (got {})", entry.type_name()));
    }
    for (const auto& [member, value] : entry.items()) {
      if (std::ranges::find(kMembers, member) == kMembers.end()) {
        Fail(source, path + "." + member,
             fmt::format("unknown key (expected one of {})", fmt::join(kMembers, ", ")));
      }
    }
    cost::GemmEfficiencyPoint point;
    point.family = ReadPointName(entry, "family", path, "\"hopper\", \"blackwell\" or \"other\"",
                                 source, cost::GpuFamilyFromName);
    point.precision = ReadPointName(entry, "dtype", path, "\"bf16\" or \"fp8\"", source,
                                    cost::MathPrecisionFromName);
    point.pass = ReadPointName(entry, "pass", path, "\"forward\", \"dgrad\" or \"wgrad\"", source,
                               cost::GemmPassFromName);
    point.shape = {
        .tokens = ReadPointExtent(entry, "tokens", path, source, std::nullopt),
        .in_features = ReadPointExtent(entry, "in_features", path, source, std::nullopt),
        .out_features = ReadPointExtent(entry, "out_features", path, source, std::nullopt)};
    point.groups = ReadPointExtent(entry, "groups", path, source, 1);
    const Json efficiency = entry.contains("efficiency") ? entry.at("efficiency") : Json();
    if (!efficiency.is_number() || !InRange(efficiency.get<double>(), kEfficiencyRange)) {
      Fail(source, path + ".efficiency",
           fmt::format("expected {} (got {})", DescribeRange(kEfficiencyRange),
                       QuoteJson(efficiency)));
    }
    point.efficiency = efficiency.get<double>();
    parsed.push_back(point);
  }
  overrides.gemm_efficiency_points = std::move(parsed);
}

cost::GemmShapeModel ReadGemmShapeModel(const Json& value, const std::string& source) {
  if (!value.is_string()) {
    Fail(source, "gemm_shape_model", fmt::format("expected a string (got {})", QuoteJson(value)));
  }
  const std::optional<cost::GemmShapeModel> model =
      cost::GemmShapeModelFromName(value.get<std::string>());
  if (!model) {
    Fail(source, "gemm_shape_model",
         fmt::format("unknown model (got {}, expected \"table\" or \"tile\")", QuoteJson(value)));
  }
  return *model;
}

cost::GdnBackend ReadGdnBackend(const Json& value, const std::string& source) {
  if (!value.is_string()) {
    Fail(source, "gdn_backend", fmt::format("expected a string (got {})", QuoteJson(value)));
  }
  const std::optional<cost::GdnBackend> backend =
      cost::GdnBackendFromName(value.get<std::string>());
  if (!backend) {
    Fail(source, "gdn_backend",
         fmt::format("unknown backend (got {}, expected \"fla\" or \"flashqla\")",
                     QuoteJson(value)));
  }
  return *backend;
}

template <typename Struct, size_t N>
Struct Apply(const std::array<Field<Struct>, N>& fields,
             const std::map<std::string, double>& values, Struct base) {
  for (const Field<Struct>& field : fields) {
    const auto it = values.find(std::string(field.key));
    if (it == values.end()) continue;
    if (field.real != nullptr) base.*field.real = it->second;
    if (field.integer != nullptr) base.*field.integer = static_cast<int64_t>(it->second);
  }
  return base;
}

}  // namespace

CalibrationOverrides ParseCalibration(std::string_view text, const std::string& source) {
  const Json json = ParseJsonObject(text, source);
  CalibrationOverrides overrides{.source = source};
  for (const auto& [key, value] : json.items()) {
    if (key == "links") {
      ReadLinks(value, source, overrides);
    } else if (key == "gdn_backend") {
      overrides.gdn_backend = ReadGdnBackend(value, source);
    } else if (key == "gpu_throughput_scale") {
      ReadGpuScales(value, source, overrides);
    } else if (key == "gemm_shape_scale") {
      ReadGemmShapeScales(value, source, overrides);
    } else if (key == "gemm_efficiency_points") {
      ReadGemmEfficiencyPoints(value, source, overrides);
    } else if (key == "gemm_shape_model") {
      overrides.gemm_shape_model = ReadGemmShapeModel(value, source);
    } else if (!ReadField(kComputeFields, key, value, key, source, overrides.compute)) {
      Fail(source, key,
           fmt::format("unknown key (expected one of {}, gdn_backend, gemm_efficiency_points, "
                       "gemm_shape_model, gemm_shape_scale, gpu_throughput_scale, links)",
                       KeyList(kComputeFields)));
    }
  }
  return overrides;
}

CalibrationOverrides LoadCalibrationFile(const std::string& path) {
  return ParseCalibration(ReadInputFile(path, "calibration file"), path);
}

cost::ComputeEfficiency ApplyCalibration(const CalibrationOverrides& overrides,
                                         cost::ComputeEfficiency base) {
  for (const auto& [name, scale] : overrides.gpu_throughput_scale) {
    base.gpu_throughput_scale[name] = scale;
  }
  for (const auto& [key, scale] : overrides.gemm_shape_scale) base.gemm_shape_scale[key] = scale;
  if (overrides.gemm_shape_model) base.gemm_shape_model = *overrides.gemm_shape_model;
  if (overrides.gemm_efficiency_points) {
    base.gemm_efficiency_points = *overrides.gemm_efficiency_points;
  }
  return Apply(kComputeFields, overrides.compute, base);
}

cost::LinkEfficiency ApplyCalibration(const CalibrationOverrides& overrides,
                                      cost::LinkEfficiency base) {
  return Apply(kLinkFields, overrides.links, base);
}

}  // namespace trainscope::io
