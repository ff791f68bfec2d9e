// Small configurations shared by the SimAI and AICB writer tests, and golden-file comparison:
// with TRAINSCOPE_REGEN_GOLDENS=1 in the environment the comparison rewrites the golden file
// instead (scripts/regen_goldens).
#ifndef TRAINSCOPE_TESTS_REPORT_SIMAI_TEST_CONFIGS_H_
#define TRAINSCOPE_TESTS_REPORT_SIMAI_TEST_CONFIGS_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"
#include "trainscope/config/validate.h"
#include "trainscope/graph/step_graph.h"
#include "trainscope/io/atomic_write.h"
#include "trainscope/io/cluster_file.h"
#include "trainscope/io/hf_config_loader.h"
#include "trainscope/report/aicb_writer.h"
#include "trainscope/report/simai_writer.h"
#include "trainscope/sim/op_costs.h"

namespace trainscope::testing {

struct ExportCase {
  config::ModelConfig model;
  config::TrainingConfig training;
};

// Qwen3-0.6B, t = 2 with SP, d = 4, m = 2, distributed optimizer.
inline ExportCase DenseSpCase() {
  ExportCase c{io::LoadPreset("Qwen3-0.6B"), {}};
  c.training.parallel.world_size = 8;
  c.training.parallel.tensor = 2;
  c.training.sequence_parallel = true;
  c.training.batch.seq_length = 4096;
  c.training.batch.global_batch_size = 8;  // b·d·m = 1·4·2
  c.training.data_parallel.distributed_optimizer = true;
  return c;
}

// Qwen3-0.6B, t = 2 without SP, d = 2, m = 1, plain DDP (gradient all-reduce).
inline ExportCase DenseNoSpCase() {
  ExportCase c{io::LoadPreset("Qwen3-0.6B"), {}};
  c.training.parallel.world_size = 4;
  c.training.parallel.tensor = 2;
  c.training.batch.seq_length = 2048;
  return c;
}

// Qwen3-30B-A3B, t = 2 with SP, e = 4 (ETP = TP), alltoall dispatcher, d = 8, distributed
// optimizer, so the expert-DP group has 16/(2·4) = 2 ranks.
inline ExportCase MoeCase() {
  ExportCase c{io::LoadPreset("Qwen3-30B-A3B"), {}};
  c.training.parallel.world_size = 16;
  c.training.parallel.tensor = 2;
  c.training.parallel.expert = 4;
  c.training.sequence_parallel = true;
  c.training.batch.seq_length = 4096;
  c.training.moe.dispatcher = config::TokenDispatcher::kAllToAll;
  c.training.data_parallel.distributed_optimizer = true;
  return c;
}

// The SimAI workload of `rank` with the simulator's compute costs on `gpu` (the CLI default
// H100 when unset) and the default calibration, launch floor included, as `trainscope workload
// --format simai` writes.
inline report::ExportResult RenderSimAi(const ExportCase& c, int64_t rank = 0,
                                        std::optional<std::string> gpu = std::nullopt) {
  const graph::StepGraph graph = graph::BuildStepGraph(c.model, c.training, rank);
  sim::HardwareCostOptions options;
  options.cluster = io::ResolveCluster(io::ClusterInputs{.gpu = std::move(gpu)});
  const sim::OpCostModel costs = sim::BindHardwareCosts(c.model, c.training, options);
  return report::RenderSimAiWorkload(c.model, c.training, graph, sim::ComputeWithHostFloor(costs));
}

// The AICB CSV of `rank`.
inline report::ExportResult RenderAicb(const ExportCase& c, int64_t rank = 0) {
  return report::RenderAicbCsv(graph::BuildStepGraph(c.model, c.training, rank), c.training);
}

inline std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Compares `actual` with tests/golden/<name>, or rewrites the golden file when
// TRAINSCOPE_REGEN_GOLDENS is set.
inline void ExpectMatchesGolden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(TRAINSCOPE_GOLDEN_DIR) + "/" + name;
  if (std::getenv("TRAINSCOPE_REGEN_GOLDENS") != nullptr) {
    io::WriteFileAtomically(path, actual);
    return;
  }
  const std::string expected = ReadFileOrEmpty(path);
  ASSERT_FALSE(expected.empty()) << "missing golden file " << path
                                 << " (run scripts/regen_goldens)";
  EXPECT_TRUE(actual == expected) << "output differs from " << path
                                  << " (review, then run scripts/regen_goldens)";
}

}  // namespace trainscope::testing

#endif  // TRAINSCOPE_TESTS_REPORT_SIMAI_TEST_CONFIGS_H_
