// What the runners share (runners.cc, rl_runners.cc, plan_runner.cc): the checked model and
// configuration of a command, the usual output, and the BF16-peak requirement of simulating.
#ifndef TRAINSCOPE_APPS_RUNNER_SUPPORT_H_
#define TRAINSCOPE_APPS_RUNNER_SUPPORT_H_

#include <string>
#include <vector>

#include "commands.h"
#include "trainscope/config/model_config.h"
#include "trainscope/config/validate.h"
#include "trainscope/io/megatron_args.h"
#include "trainscope/study/study.h"

namespace trainscope::app {

// A command's model and training configuration, checked: the model loaded, the architecture
// flags compared with it, the configuration validated. Notes (ignored flags, warnings, the
// defaulted world size) are collected for stderr.
struct Checked {
  config::ModelConfig model;
  io::CliRequest request;
  config::ValidationResult validation;
  std::vector<std::string> notes;
};

// The checked configuration; an invalid one is an InvalidConfigurationError: its first
// violation and fix, and how many more there are (three lines at most).
[[nodiscard]] Checked CheckValid(const io::CliRequest& request);

// `text` for stdout or -o, with `notes` for stderr.
[[nodiscard]] CommandOutput Output(std::string text, std::vector<std::string> notes);

// Simulating needs the GPU's BF16 peak; a cluster file can set one for a preset without it.
// Throws InputError naming the GPU otherwise.
void RequireBf16Peak(const study::Study& study);

}  // namespace trainscope::app

#endif  // TRAINSCOPE_APPS_RUNNER_SUPPORT_H_
