// The runner of every command in the command table (commands.cc). Each reads and resolves its
// inputs through io/, computes through the library (the study function for memory and
// simulate), and renders into a CommandOutput; none prints or writes.
#ifndef TRAINSCOPE_APPS_RUNNERS_H_
#define TRAINSCOPE_APPS_RUNNERS_H_

#include "commands.h"

namespace trainscope::app {

[[nodiscard]] CommandOutput RunParams(const io::CliRequest& request);
[[nodiscard]] CommandOutput RunValidate(const io::CliRequest& request);
[[nodiscard]] CommandOutput RunGroups(const io::CliRequest& request);
[[nodiscard]] CommandOutput RunWorkload(const io::CliRequest& request);
[[nodiscard]] CommandOutput RunMemory(const io::CliRequest& request);
[[nodiscard]] CommandOutput RunSimulate(const io::CliRequest& request);
[[nodiscard]] CommandOutput RunPresets(const io::CliRequest& request);

}  // namespace trainscope::app

#endif  // TRAINSCOPE_APPS_RUNNERS_H_
