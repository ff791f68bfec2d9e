// The rows of a SimAI workload for one rank (reference/workload-formats.md §1.8): the
// once-per-step data-parallel rows and the rows of one micro-batch, each with its compute times,
// collective tokens and sizes, plus diagnostics for everything the format cannot express. Pure:
// builds values from the configuration; simai_writer formats them.
#ifndef TRAINSCOPE_REPORT_SIMAI_ROWS_H_
#define TRAINSCOPE_REPORT_SIMAI_ROWS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"
#include "trainscope/graph/op.h"

namespace trainscope::report {

// Compute speeds of a simple roofline: an op takes max(flops / peak, bytes / HBM bandwidth).
// Used for the exported compute times until trainscope's cost model provides them. Defaults are
// an H100 SXM5: 989 dense BF16 TFLOP/s and 3.35 TB/s HBM3 (reference/hardware.md).
struct RooflineSpec {
  double peak_flops_per_second = 989e12;
  double hbm_bytes_per_second = 3.35e12;
  friend bool operator==(const RooflineSpec&, const RooflineSpec&) = default;
};

// Seconds one compute op takes under `roofline`; 0 for communication ops.
[[nodiscard]] double RooflineSeconds(const graph::Op& op, const RooflineSpec& roofline);

// Seconds one compute op takes; the SimAI compute columns sum it over the ops of a cell.
using ComputeTime = std::function<double(const graph::Op&)>;

// One column (fp, ig or wg) of a row: compute time first, then the collective.
struct SimAiColumn {
  double compute_seconds = 0;
  std::string comm = "NONE";  // a token of workload-formats.md §1.4
  int64_t comm_bytes = 0;     // whole logical buffer (§1.4)
};

struct SimAiRow {
  std::string name;
  SimAiColumn fp;  // forward
  SimAiColumn ig;  // input gradient (backward)
  SimAiColumn wg;  // weight gradient (backward; wg collectives are data-parallel)
};

struct SimAiHeader {
  int64_t tensor = 1;             // model_parallel_NPU_group:
  int64_t expert = 1;             // ep:
  int64_t pipeline = 1;           // pp:
  int64_t virtual_stages = 1;     // vpp:
  int64_t num_micro_batches = 1;  // ga:
  int64_t world_size = 1;         // all_gpus:
  int64_t pp_comm_bytes = 0;      // pp_comm:
};

struct SimAiWorkload {
  SimAiHeader header;
  std::vector<SimAiRow> step_rows;         // once per step; written first
  std::vector<SimAiRow> micro_batch_rows;  // one micro-batch; written num_micro_batches times
  std::vector<std::string> diagnostics;    // what the format cannot express, in a fixed order
};

// Builds the rows of global rank `rank`: only the layers of its pipeline stage, compute times
// from `roofline`. Precondition: config::Validate() accepted the configuration and
// 0 <= rank < world size.
[[nodiscard]] SimAiWorkload BuildSimAiWorkload(const config::ModelConfig& model,
                                               const config::TrainingConfig& training, int64_t rank,
                                               const RooflineSpec& roofline);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_SIMAI_ROWS_H_
