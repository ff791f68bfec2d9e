// Shared by the step-graph and simulator tests: the tiny Qwen3 test model and a BSHD training
// configuration of a given TP x PP x DP layout and micro-batch count.
#ifndef TRAINSCOPE_TESTS_TINY_CONFIGS_H_
#define TRAINSCOPE_TESTS_TINY_CONFIGS_H_

#include <cstdint>
#include <string>

#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"
#include "trainscope/io/hf_config_loader.h"

namespace trainscope::testing_configs {

// qwen3_tiny.json: h = 64, F = 192, L = 4, n = 4, g = 2, d_h = 32, V0 = 1000, tied.
inline config::ModelConfig TinyModel() {
  return io::LoadModelConfigFile(std::string(TRAINSCOPE_TEST_DATA_DIR) + "/qwen3_tiny.json");
}

// W = tp·pp·dp, micro-batch 1, GBS = dp·m (so m micro-batches per rank), s = 256, BSHD.
inline config::TrainingConfig Training(int64_t tp, int64_t pp, int64_t dp,
                                       int64_t num_micro_batches) {
  config::TrainingConfig training;
  training.parallel.tensor = tp;
  training.parallel.pipeline = pp;
  training.parallel.world_size = tp * pp * dp;
  training.batch.micro_batch_size = 1;
  training.batch.global_batch_size = dp * num_micro_batches;
  training.batch.seq_length = 256;
  training.sequence_layout = config::SequenceLayout::kBshd;
  return training;
}

}  // namespace trainscope::testing_configs

#endif  // TRAINSCOPE_TESTS_TINY_CONFIGS_H_
