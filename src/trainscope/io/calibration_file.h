// Calibration file: a JSON object that overrides the cost model's efficiency constants, e.g.
//   {"bf16_gemm_efficiency": 0.7, "gemm_tile_m": 256, "gdn_backend": "flashqla",
//    "links": {"nvlink_bus_efficiency": 0.78, "scale_out_latency_seconds": 5e-6}}
// Top-level keys are the fields of cost::ComputeEfficiency plus "gdn_backend" ("fla" or
// "flashqla"), "gpu_throughput_scale" (an object of GPU preset name -> factor in (0, 2]),
// "gemm_shape_model" ("table" or "tile"), "gemm_shape_scale" (an object of "<family>_<dtype>",
// e.g. "hopper_fp8", -> factor in (0, 2]; cost/gemm_efficiency.h), "gemm_efficiency_points"
// (an array of measured GEMMs: {"family", "dtype", "pass", "tokens", "in_features",
// "out_features", "groups" (optional, 1), "efficiency"}) and "links", an object whose keys
// are the fields of cost::LinkEfficiency. Every key is optional. The loader validates everything;
// applying the overrides cannot fail.
#ifndef TRAINSCOPE_IO_CALIBRATION_FILE_H_
#define TRAINSCOPE_IO_CALIBRATION_FILE_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/cost/collective_cost.h"
#include "trainscope/cost/compute_cost.h"

namespace trainscope::io {

// The validated values a calibration file sets, by field name (ordered, so iteration is
// deterministic). Integer fields (the GEMM tiles) hold whole numbers.
struct CalibrationOverrides {
  std::string source;                                  // the file, for messages
  std::map<std::string, double> compute;               // ComputeEfficiency field -> value
  std::map<std::string, double> links;                 // LinkEfficiency field -> value
  std::map<std::string, double> gpu_throughput_scale;  // GPU preset name -> factor in (0, 2]
  std::map<std::string, double> gemm_shape_scale;      // "<family>_<dtype>" -> factor in (0, 2]
  std::optional<cost::GemmShapeModel> gemm_shape_model;
  // Replaces ComputeEfficiency::gemm_efficiency_points when the file sets the key.
  std::optional<std::vector<cost::GemmEfficiencyPoint>> gemm_efficiency_points;
  std::optional<cost::GdnBackend> gdn_backend;
  friend bool operator==(const CalibrationOverrides&, const CalibrationOverrides&) = default;
};

// Parses calibration JSON text; `source` names it in messages. Throws InputError
// "<source>: <key.path>: <problem> (got X, expected Y)" for malformed JSON, a top level that is
// not an object, an unknown key, a wrong JSON type, or a value outside its field's range:
// efficiencies and ramp exponents in (0, 1], latencies (`*_seconds`) and ramp sizes (`*_bytes`)
// >= 0, tile sizes integers >= 1, gemm_fallback_k0 / _n0 integers >= 0, nvls_min_ranks an
// integer >= 2, gdn_backend "fla" or "flashqla", gemm_shape_model "table" or "tile",
// gemm_shape_scale keys hopper|blackwell|other _bf16|_fp8 with factors in (0, 2],
// gemm_efficiency_points entries with known names, integer extents >= 1 and an efficiency in
// (0, 1].
[[nodiscard]] CalibrationOverrides ParseCalibration(std::string_view text,
                                                    const std::string& source);

// Reads and parses a calibration file. Throws InputError naming the file if it cannot be read
// or fails ParseCalibration.
[[nodiscard]] CalibrationOverrides LoadCalibrationFile(const std::string& path);

// `base` with the fields the file sets replaced; fields it does not set keep their value.
[[nodiscard]] cost::ComputeEfficiency ApplyCalibration(const CalibrationOverrides& overrides,
                                                       cost::ComputeEfficiency base);
[[nodiscard]] cost::LinkEfficiency ApplyCalibration(const CalibrationOverrides& overrides,
                                                    cost::LinkEfficiency base);

}  // namespace trainscope::io

#endif  // TRAINSCOPE_IO_CALIBRATION_FILE_H_
