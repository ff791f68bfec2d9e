// SimAI workload text, as SimAI's Workload::initialize_workload reads it.
#include "trainscope/report/simai_writer.h"

#include <fmt/format.h>

#include <cmath>

namespace trainscope::report {
namespace {

// SimAI's clock: CLOCK_PERIOD 1, one tick is one nanosecond (SimAI).
constexpr double kSimAiTicksPerSecond = 1e9;
// The per-row delay SimAI adds after every collective of the row; AICB always writes 100.
constexpr int64_t kRowProcessTimeTicks = 100;
// Field 2, read and ignored by SimAI.
constexpr int64_t kUnusedDependency = -1;

int64_t Ticks(double seconds) { return std::llround(seconds * kSimAiTicksPerSecond); }

std::string FormatHeader(const SimAiHeader& h) {
  return fmt::format(
      "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: {} ep: {} pp: {} vpp: {} ga: {} "
      "all_gpus: {} checkpoints: 0 checkpoint_initiates: 0 pp_comm: {}\n",
      h.tensor, h.expert, h.pipeline, h.virtual_stages, h.num_micro_batches, h.world_size,
      h.pp_comm_bytes);
}

void AppendRow(const SimAiRow& row, std::string& out) {
  out += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n", row.name,
                     kUnusedDependency, Ticks(row.fp.compute_seconds), row.fp.comm,
                     row.fp.comm_bytes, Ticks(row.ig.compute_seconds), row.ig.comm,
                     row.ig.comm_bytes, Ticks(row.wg.compute_seconds), row.wg.comm,
                     row.wg.comm_bytes, kRowProcessTimeTicks);
}

}  // namespace

std::string FormatSimAiWorkload(const SimAiWorkload& workload) {
  const int64_t m = workload.header.num_micro_batches;
  const size_t num_rows =
      workload.step_rows.size() + static_cast<size_t>(m) * workload.micro_batch_rows.size();
  std::string out = FormatHeader(workload.header);
  out += fmt::format("{}\n", num_rows);
  for (const SimAiRow& row : workload.step_rows) AppendRow(row, out);
  for (int64_t i = 0; i < m; ++i) {  // GA is unrolled (a SimAI pass is one step)
    for (const SimAiRow& row : workload.micro_batch_rows) AppendRow(row, out);
  }
  return out;
}

ExportResult RenderSimAiWorkload(const config::ModelConfig& model,
                                 const config::TrainingConfig& training,
                                 const graph::StepGraph& graph,
                                 const ComputeTime& compute_seconds) {
  SimAiWorkload workload = BuildSimAiWorkload(model, training, graph, compute_seconds);
  return ExportResult{.text = FormatSimAiWorkload(workload),
                      .diagnostics = std::move(workload.diagnostics)};
}

}  // namespace trainscope::report
