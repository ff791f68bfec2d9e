// The rows of a SimAI workload for one rank (docs/workload.md): the
// once-per-step data-parallel rows and the rows of one micro-batch, each with its compute times,
// collective tokens and sizes, plus diagnostics for everything the format cannot express. Pure:
// builds values from the rank's step graph and a compute-time function; simai_writer formats
// them.
#ifndef TRAINSCOPE_REPORT_SIMAI_ROWS_H_
#define TRAINSCOPE_REPORT_SIMAI_ROWS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"
#include "trainscope/graph/op.h"
#include "trainscope/graph/step_graph.h"

namespace trainscope::report {

// Seconds one compute op takes; the SimAI compute columns sum it over the ops of a cell. The
// workload writers get it from the simulator's cost model (sim::OpCostModel::compute_seconds).
using ComputeTime = std::function<double(const graph::Op&)>;

// One column (fp, ig or wg) of a row: compute time first, then the collective.
struct SimAiColumn {
  double compute_seconds = 0;
  std::string comm = "NONE";  // a token SimAI's Workload.cc knows
  int64_t comm_bytes = 0;     // whole logical buffer (SimAI)
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

// Builds the rows of the rank whose step graph is `graph` (graph::BuildStepGraph of `model` and
// `training`): only the layers of its pipeline stage, compute times from `compute_seconds`.
// Precondition: config::Validate() accepted the configuration. Borrows everything.
[[nodiscard]] SimAiWorkload BuildSimAiWorkload(const config::ModelConfig& model,
                                               const config::TrainingConfig& training,
                                               const graph::StepGraph& graph,
                                               const ComputeTime& compute_seconds);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_SIMAI_ROWS_H_
