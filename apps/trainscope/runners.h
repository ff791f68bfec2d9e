// The runner of every command in the command table (commands.cc). Each reads and resolves its
// inputs through io/, computes through the library (the study function for memory and
// simulate), and renders into a CommandOutput; none prints or writes.
#ifndef TRAINSCOPE_APPS_RUNNERS_H_
#define TRAINSCOPE_APPS_RUNNERS_H_

#include <string>
#include <utility>

#include "commands.h"
#include "trainscope/error.h"

namespace trainscope::app {

// A configuration that fails validation, met by a command that needs a valid one: the
// InputError main() prints, carrying the id of the first violated rule ("C4") for callers that
// report it as data (the Python module).
class InvalidConfigurationError : public InputError {
 public:
  InvalidConfigurationError(const std::string& message, std::string rule)
      : InputError(message), rule_(std::move(rule)) {}
  [[nodiscard]] const std::string& rule() const { return rule_; }

 private:
  std::string rule_;
};

[[nodiscard]] CommandOutput RunParams(const io::CliRequest& request);
[[nodiscard]] CommandOutput RunValidate(const io::CliRequest& request);
[[nodiscard]] CommandOutput RunGroups(const io::CliRequest& request);
[[nodiscard]] CommandOutput RunWorkload(const io::CliRequest& request);
[[nodiscard]] CommandOutput RunMemory(const io::CliRequest& request);
[[nodiscard]] CommandOutput RunSimulate(const io::CliRequest& request);
[[nodiscard]] CommandOutput RunReport(const io::CliRequest& request);
[[nodiscard]] CommandOutput RunPresets(const io::CliRequest& request);
[[nodiscard]] CommandOutput RunWeightSync(const io::CliRequest& request);
[[nodiscard]] CommandOutput RunRl(const io::CliRequest& request);
[[nodiscard]] CommandOutput RunPlan(const io::CliRequest& request);  // plan_runner.cc

// The model of --model or --model-config. Throws UsageError for a missing or unknown model.
[[nodiscard]] config::ModelConfig LoadModel(const io::CliRequest& request);

}  // namespace trainscope::app

#endif  // TRAINSCOPE_APPS_RUNNERS_H_
