// Shared fixtures of the memory tests: a BSHD training configuration of a given t·p·d grid and
// the check that Megatron-Core accepts it.
#ifndef TRAINSCOPE_TESTS_COST_MEMORY_TEST_SUPPORT_H_
#define TRAINSCOPE_TESTS_COST_MEMORY_TEST_SUPPORT_H_

#include <gtest/gtest.h>

#include <cstdint>

#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"
#include "trainscope/config/validate.h"

namespace trainscope::cost::testing_support {

// t·p·d GPUs, micro-batch 1 of 4,096 tokens, SP when t > 1, unpacked (BSHD) sequences.
inline config::TrainingConfig Training(int64_t tp, int64_t pp, int64_t dp) {
  config::TrainingConfig training;
  training.parallel.tensor = tp;
  training.parallel.pipeline = pp;
  training.parallel.world_size = tp * pp * dp;
  training.batch.micro_batch_size = 1;
  training.batch.seq_length = 4096;
  training.sequence_parallel = tp > 1;
  training.sequence_layout = config::SequenceLayout::kBshd;
  return training;
}

inline void ExpectValid(const config::ModelConfig& model, const config::TrainingConfig& training) {
  const config::ValidationResult result = config::Validate(model, training);
  ASSERT_TRUE(result.ok()) << result.errors.front().message;
}

}  // namespace trainscope::cost::testing_support

#endif  // TRAINSCOPE_TESTS_COST_MEMORY_TEST_SUPPORT_H_
