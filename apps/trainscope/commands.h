// The command table: every trainscope command with its one-line help, the flag groups it
// accepts and its runner. It drives dispatch, `trainscope help`, `trainscope help CMD` and
// `CMD --help`. Runners compute and render into a CommandOutput; only main() prints and writes.
#ifndef TRAINSCOPE_APPS_COMMANDS_H_
#define TRAINSCOPE_APPS_COMMANDS_H_

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/io/atomic_write.h"
#include "trainscope/io/megatron_args.h"

namespace trainscope::app {

// Everything a command produces. `text` goes to the -o file or stdout; `files` are further
// outputs (--trace), written together with -o, atomically, after everything is computed.
struct CommandOutput {
  std::string text;
  // When set, streams the text instead of `text` (which is then empty), to the -o file or
  // stdout: a listing too large to hold in memory (`groups` on 10^7 GPUs).
  std::function<void(const io::ByteSink&)> render_text;
  std::vector<io::OutputFile> files;
  std::vector<std::string> notes;  // stderr lines, printed before any output is written
  // -o names the (existing) directory `files` are written into; `text` goes to stdout.
  bool output_is_directory = false;
  int exit_code = 0;
};

using Runner = CommandOutput (*)(const io::CliRequest& request);

struct Command {
  std::string_view name;
  std::string_view summary;  // one line
  std::span<const io::FlagGroup> groups;
  Runner run = nullptr;
};

// Every command, in the order `trainscope help` lists them.
[[nodiscard]] std::span<const Command> CommandTable();

// The command named `name`, or nullptr.
[[nodiscard]] const Command* FindCommand(std::string_view name);

// The names of all commands plus "help" (candidates for did-you-mean).
[[nodiscard]] std::vector<std::string> CommandNames();

// `trainscope help`: the commands and where to read more.
[[nodiscard]] std::string GeneralHelp();

// `trainscope help CMD` / `CMD --help`: the command's summary and its flags, grouped, with
// defaults.
[[nodiscard]] std::string CommandHelp(const Command& command);

}  // namespace trainscope::app

#endif  // TRAINSCOPE_APPS_COMMANDS_H_
