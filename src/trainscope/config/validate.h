// The validator: reproduces the Megatron-Core constraints (docs/validation.md, with Megatron-LM
// lines) that apply to what trainscope models, keyed on the Megatron-Core version profile. Pure: it
// returns every violated rule as data and never throws for an invalid configuration.
#ifndef TRAINSCOPE_CONFIG_VALIDATE_H_
#define TRAINSCOPE_CONFIG_VALIDATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"

namespace trainscope::config {

// One violated (or, for warnings, questionable) rule.
struct Violation {
  std::string rule;                // rule id from docs/validation.md, e.g. "C4"
  std::vector<std::string> flags;  // Megatron flags involved, e.g. "--tensor-model-parallel-size"
  std::string message;             // what is wrong, with the values
  std::string fix;                 // what would make it valid
  // The profile whose rule this is: "megatron-core 0.18", "megatron-bridge 0.4", "areal", ...
  std::string profile;
  friend bool operator==(const Violation&, const Violation&) = default;
};

struct ValidationResult {
  std::vector<Violation> errors;
  std::vector<Violation> warnings;
  [[nodiscard]] bool ok() const { return errors.empty(); }
};

// Checks every rule of Megatron-Core (at training.core_version) and of the framework profile
// (training.framework); the result lists all violations, not only the first, each naming the
// profile it belongs to.
[[nodiscard]] ValidationResult Validate(const ModelConfig& model, const TrainingConfig& training);

}  // namespace trainscope::config

#endif  // TRAINSCOPE_CONFIG_VALIDATE_H_
