// trainscope command-line entry point: arguments -> the command table -> the command's runner ->
// outputs written last, atomically -> exit code. The only place that catches trainscope's
// errors and prints.
#include <fmt/format.h>

#include <iostream>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "commands.h"
#include "trainscope/error.h"
#include "trainscope/io/argument_files.h"
#include "trainscope/io/atomic_write.h"
#include "trainscope/io/megatron_args.h"
#include "trainscope/io/suggest.h"

namespace trainscope {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitIoError = 1;
constexpr int kExitBadInput = 2;

// `trainscope help [CMD]`, `trainscope --help`, `trainscope CMD --help`.
std::string HelpFor(const std::vector<std::string>& args) {
  if (args.size() < 2) return app::GeneralHelp();
  const app::Command* command = app::FindCommand(args[1]);
  if (command == nullptr) {
    throw UsageError(fmt::format("help: unknown command \"{}\"{}", io::Abbreviated(args[1]),
                                 io::DidYouMean(args[1], app::CommandNames())));
  }
  return app::CommandHelp(*command);
}

const app::Command& LookUp(const std::string& name) {
  const app::Command* command = app::FindCommand(name);
  if (command != nullptr) return *command;
  throw UsageError(fmt::format("unknown command \"{}\"{}", io::Abbreviated(name),
                               io::DidYouMean(name, app::CommandNames())));
}

// The command's text (or what its renderer streams) on stdout.
void PrintText(app::CommandOutput& output) {
  const io::OutputFile text{.content = std::move(output.text),
                            .render = std::move(output.render_text)};
  io::StreamContent(text, [](std::string_view piece) {
    std::cout.write(piece.data(), static_cast<std::streamsize>(piece.size()));
  });
}

// Writes the command's outputs: -o and --trace together and atomically, or the text to stdout.
void WriteOutputs(const io::CliRequest& request, app::CommandOutput& output) {
  std::vector<io::OutputFile> files = std::move(output.files);
  if (request.output_path && !output.output_is_directory) {
    for (const io::OutputFile& file : files) {
      if (file.path == *request.output_path) {
        throw UsageError(fmt::format("-o and --trace name the same file ({})", file.path));
      }
    }
    files.push_back({.path = *request.output_path,
                     .content = std::move(output.text),
                     .render = std::move(output.render_text)});
  }
  io::WriteFilesAtomically(files);
  if (!request.output_path || output.output_is_directory) PrintText(output);
}

// `--compare VALUE` is one argument whatever VALUE holds: a layout's flags ("--tp 2 ...", which
// would read as flags) or @FILE (which @FILE expansion would splice in). Joined into
// "--compare=VALUE" here, it reaches the plan runner as written.
std::vector<std::string> KeepCompareValue(const std::vector<std::string>& raw_args) {
  std::vector<std::string> args;
  for (size_t i = 0; i < raw_args.size(); ++i) {
    if (raw_args[i] == "--compare" && i + 1 < raw_args.size()) {
      args.push_back("--compare=" + raw_args[++i]);
    } else {
      args.push_back(raw_args[i]);
    }
  }
  return args;
}

int Run(const std::vector<std::string>& raw_args) {
  const std::vector<std::string> args = io::ExpandArgumentFiles(KeepCompareValue(raw_args));
  if (args.empty()) {
    std::cerr << app::GeneralHelp();
    return kExitBadInput;
  }
  const std::string& name = args.front();
  if (name == "help" || name == "--help" || name == "-h") {
    std::cout << HelpFor(args);
    return kExitOk;
  }
  const app::Command& command = LookUp(name);
  const io::CliRequest request = io::ParseCommandLine(args, command.groups);
  if (request.help) {
    std::cout << app::CommandHelp(command);
    return kExitOk;
  }
  app::CommandOutput output = command.run(request);
  for (const std::string& note : output.notes) std::cerr << note << "\n";
  if (output.exit_code == kExitOk) {
    WriteOutputs(request, output);
  } else {
    PrintText(output);  // an invalid configuration's report: never written to -o
  }
  return output.exit_code;
}

// The hint line under a usage error: the help of the command the user ran, if it exists.
std::string HintFor(const std::vector<std::string>& args) {
  if (!args.empty() && app::FindCommand(args.front()) != nullptr) {
    return "see: trainscope help " + args.front();
  }
  return "see: trainscope help";
}

}  // namespace
}  // namespace trainscope

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return trainscope::Run(args);
  } catch (const trainscope::UsageError& e) {
    std::cerr << "error: " << e.what() << "\n" << trainscope::HintFor(args) << "\n";
    return trainscope::kExitBadInput;
  } catch (const trainscope::InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return trainscope::kExitBadInput;
  } catch (const trainscope::IoError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return trainscope::kExitIoError;
  } catch (const std::bad_alloc&) {
    // A configuration within every input bound can still need more memory than the machine has
    // (e.g. millions of micro-batches per rank): a runtime failure, not a crash.
    std::cerr << "error: out of memory (fewer micro-batches per rank, a smaller --gbs or world "
                 "size needs less)\n";
    return trainscope::kExitIoError;
  }
}
