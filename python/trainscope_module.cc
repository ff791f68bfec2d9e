// The Python module `trainscope` (pybind11). Each function runs the trainscope command of the
// same name through the CLI's own command table and runners: its keyword arguments become the
// command's flags (tp=2 -> --tp 2, sequence_parallel=True -> --sequence-parallel, a list -> the
// flag followed by its items), the command renders its --json output, and the function returns
// that JSON as Python dicts and lists. Errors raise trainscope.Error (a ValueError) carrying the
// message and, for an invalid configuration, the violated rule id in `.rule`. No state is kept
// between calls; calls release the GIL while the command runs.
#include <pybind11/eval.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "runners.h"
#include "trainscope/error.h"
#include "trainscope/io/megatron_args.h"

namespace py = pybind11;

namespace trainscope::python {
namespace {

// Keyword arguments the module cannot honour: it writes no files and prints no help.
constexpr const char* kRejectedKeys[] = {"output", "o", "trace", "help", "json"};

// "--tensor-model-parallel-size" for "tensor_model_parallel_size"; "--tp" for "tp".
std::string FlagName(const std::string& key) {
  std::string flag = "--" + key;
  std::replace(flag.begin() + 2, flag.end(), '_', '-');
  return flag;
}

std::string ValueText(const py::handle& value) { return py::str(value).cast<std::string>(); }

// Appends the flag of `key` and its value: nothing for None or False, the bare flag for True,
// the flag and every item for a list or tuple, the flag and str(value) otherwise.
void AppendArgument(const std::string& key, const py::handle& value,
                    std::vector<std::string>& args) {
  for (const char* rejected : kRejectedKeys) {
    if (key == rejected) {
      throw UsageError("keyword argument \"" + key +
                       "\" is not accepted by the Python module (results are returned)");
    }
  }
  if (value.is_none()) return;
  const std::string flag = FlagName(key);
  if (py::isinstance<py::bool_>(value)) {
    if (value.cast<bool>()) args.push_back(flag);
    return;
  }
  args.push_back(flag);
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    for (const py::handle item : value) args.push_back(ValueText(item));
    return;
  }
  args.push_back(ValueText(value));
}

std::vector<std::string> CommandLine(const std::string& command,
                                     const std::vector<std::string>& fixed,
                                     const py::kwargs& kwargs) {
  std::vector<std::string> args{command};
  args.insert(args.end(), fixed.begin(), fixed.end());
  for (const auto& [key, value] : kwargs) AppendArgument(key.cast<std::string>(), value, args);
  args.push_back("--json");
  return args;
}

[[noreturn]] void RaiseError(const std::string& message, const std::optional<std::string>& rule) {
  const py::object error_class = py::module_::import("trainscope").attr("Error");
  const py::object error = error_class(message, rule ? py::object(py::str(*rule)) : py::none());
  PyErr_SetObject(error_class.ptr(), error.ptr());
  throw py::error_already_set();
}

// Runs `command` with `fixed` flags and the keyword arguments; returns its parsed JSON output.
py::object RunCommand(const std::string& name, const std::vector<std::string>& fixed,
                      const py::kwargs& kwargs) {
  std::string text;
  try {
    const app::Command* command = app::FindCommand(name);
    TRAINSCOPE_CHECK(command != nullptr, "no command " + name);
    const std::vector<std::string> args = CommandLine(name, fixed, kwargs);
    py::gil_scoped_release release;
    const io::CliRequest request = io::ParseCommandLine(args, command->groups);
    text = command->run(request).text;
  } catch (const app::InvalidConfigurationError& e) {
    RaiseError(e.what(), e.rule());
  } catch (const InputError& e) {
    RaiseError(e.what(), std::nullopt);
  } catch (const UsageError& e) {
    RaiseError(e.what(), std::nullopt);
  } catch (const IoError& e) {
    RaiseError(e.what(), std::nullopt);
  }
  return py::module_::import("json").attr("loads")(text);
}

// trainscope.Error: a ValueError with the message and the violated rule id (or None).
constexpr const char* kErrorClass = R"(
class Error(ValueError):
    """A trainscope error: bad arguments, unreadable inputs or an invalid configuration.

    `rule` is the id of the first violated validation rule (docs/validation.md), or None."""

    def __init__(self, message, rule=None):
        super().__init__(message)
        self.rule = rule

Error.__module__ = "trainscope"
)";

void DefineCommand(py::module_& module, const char* name, const char* command,
                   std::vector<std::string> fixed, const char* doc) {
  module.def(
      name,
      [command = std::string(command), fixed = std::move(fixed)](const py::kwargs& kwargs) {
        return RunCommand(command, fixed, kwargs);
      },
      doc);
}

}  // namespace
}  // namespace trainscope::python

PYBIND11_MODULE(trainscope, module) {
  using trainscope::python::DefineCommand;
  module.doc() =
      "trainscope: Megatron-Core training steps of Qwen3/Qwen3.5 models, simulated. Keyword "
      "arguments are the CLI's flags in snake_case (tp=2 or tensor_model_parallel_size=2); "
      "results are the commands' --json outputs. See docs/python.md.";
  py::dict scope;
  py::exec(trainscope::python::kErrorClass, scope);
  module.attr("Error") = scope["Error"];
  DefineCommand(module, "params", "params", {},
                "Exact parameter counts (per stage with parallel flags): `params --json`.");
  DefineCommand(module, "validate", "validate", {},
                "The validation verdict as `validate --json` reports it; an invalid "
                "configuration is returned (valid: false), not raised.");
  DefineCommand(module, "groups", "groups", {}, "Process-group ranks: `groups --json`.");
  DefineCommand(module, "memory", "memory", {}, "Per-rank peak memory: `memory --json`.");
  DefineCommand(module, "simulate", "simulate", {},
                "Step time, tokens/s/GPU, MFU and breakdown: `simulate --json`.");
  DefineCommand(module, "workload_summary", "workload", {"--summary"},
                "One rank's op counts, FLOPs and bytes: `workload --summary --json`.");
  DefineCommand(module, "weight_sync", "weight-sync", {},
                "Bytes, gathers, buckets and seconds of one trainer-to-rollout weight sync: "
                "`weight-sync --json`.");
  DefineCommand(module, "rl", "rl", {},
                "One RL step per phase (rollout, log-prob passes, actor train, weight sync, "
                "offload): `rl --json`.");
  DefineCommand(module, "presets", "presets", {}, "The built-in model names.");
}
