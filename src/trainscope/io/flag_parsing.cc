#include "trainscope/io/flag_parsing.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <utility>

#include "trainscope/config/enum_names.h"
#include "trainscope/error.h"
#include "trainscope/io/input_ranges.h"

namespace trainscope::io::internal {
namespace {

// Megatron's optimizer-state dtype names (arguments.py:3671-3684); each flag accepts a subset.
constexpr config::EnumName<config::OptimizerDtype> kOptimizerDtypeNames[] = {
    {config::OptimizerDtype::kFp32, "fp32"},
    {config::OptimizerDtype::kFp16, "fp16"},
    {config::OptimizerDtype::kBf16, "bf16"},
    {config::OptimizerDtype::kFp8, "fp8"}};

}  // namespace

std::string Shortened(const std::string& text) {
  return text.size() <= 60 ? text : text.substr(0, 57) + "...";
}

int64_t ParseInteger(const FlagUse& use, const std::string& text, int64_t minimum,
                     int64_t maximum) {
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end != text.c_str() + text.size()) {
    throw UsageError(
        fmt::format("{}: expected an integer (got \"{}\")", use.name, Shortened(text)));
  }
  if (errno == ERANGE || value > maximum) {
    throw UsageError(fmt::format("{}: absurd value (got {}, expected at most {})", use.name,
                                 Shortened(text), maximum));
  }
  if (value < minimum) {
    throw UsageError(fmt::format("{}: must be at least {} (got {})", use.name, minimum, value));
  }
  return value;
}

int64_t Size(const FlagUse& use, int64_t maximum) {
  return ParseInteger(use, use.values.front(), 1, maximum);
}

double ParseNumberIn(const FlagUse& use, NumberRange range) {
  const std::string& text = use.values.front();
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE ||
      !InRange(value, range)) {
    throw UsageError(fmt::format("{}: expected {} (got \"{}\")", use.name, DescribeRange(range),
                                 Shortened(text)));
  }
  return value;
}

double ParseFraction(const FlagUse& use) {
  const std::string& text = use.values.front();
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE ||
      !InRange(value, kFlagFractionRange) || value >= 1.0) {
    throw UsageError(
        fmt::format("{}: expected a number in [0.001, 1) (got \"{}\")", use.name, Shortened(text)));
  }
  return value;
}

FlagSpec Switch(std::vector<std::string_view> names, bool parallel,
                std::function<bool&(CliRequest&)> field, bool value) {
  return {std::move(names), Arity::kNone, parallel,
          [field, value](CliRequest& request, const FlagUse&) { field(request) = value; }};
}

FlagSpec Count(std::vector<std::string_view> names, int64_t maximum,
               std::function<int64_t&(CliRequest&)> field) {
  return {std::move(names), Arity::kOne, true,
          [field, maximum](CliRequest& request, const FlagUse& use) {
            field(request) = Size(use, maximum);
          }};
}

FlagSpec OptionalCount(std::vector<std::string_view> names, int64_t maximum,
                       std::function<std::optional<int64_t>&(CliRequest&)> field) {
  return {std::move(names), Arity::kOne, true,
          [field, maximum](CliRequest& request, const FlagUse& use) {
            field(request) = Size(use, maximum);
          }};
}

config::OptimizerDtype ParseOptimizerDtype(const FlagUse& use,
                                           const std::vector<config::OptimizerDtype>& allowed) {
  const config::OptimizerDtype value = ParseEnum(use, use.values.front(), kOptimizerDtypeNames);
  if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return value;
  std::string choices;
  for (const config::OptimizerDtype dtype : allowed) {
    if (!choices.empty()) choices.push_back('|');
    choices.append(config::NameOf(kOptimizerDtypeNames, dtype));
  }
  throw UsageError(fmt::format("{}: unsupported value \"{}\" (expected {})", use.name,
                               Shortened(use.values.front()), choices));
}

FlagSpec OptimizerDtypeFlag(std::string_view name, std::vector<config::OptimizerDtype> allowed,
                            std::function<config::OptimizerDtype&(CliRequest&)> field) {
  return {{name}, Arity::kOne, true, [allowed, field](CliRequest& r, const FlagUse& use) {
            field(r) = ParseOptimizerDtype(use, allowed);
          }};
}

std::vector<std::string> CudaGraphScopeValues(const FlagUse& use) {
  for (const std::string& value : use.values) {
    if (value == config::kCudaGraphScopeFull || value == config::kCudaGraphScopeFullIteration ||
        value == config::kCudaGraphScopeFullIterationInference ||
        config::ValueOf(config::kCudaGraphModuleNames, value)) {
      continue;
    }
    throw UsageError(fmt::format("{}: unknown value \"{}\" (expected {}|{}|{}|{})", use.name,
                                 Shortened(value), config::Choices(config::kCudaGraphModuleNames),
                                 config::kCudaGraphScopeFull, config::kCudaGraphScopeFullIteration,
                                 config::kCudaGraphScopeFullIterationInference));
  }
  return use.values;
}

FlagSpec Text(std::vector<std::string_view> names,
              std::function<std::optional<std::string>&(CliRequest&)> field) {
  return {std::move(names), Arity::kOne, false,
          [field](CliRequest& r, const FlagUse& use) { field(r) = use.values.front(); }};
}

const std::string& PathValue(const FlagUse& use) {
  if (use.values.front().empty()) {
    throw UsageError(fmt::format("{}: empty path (expected a file name)", use.name));
  }
  return use.values.front();
}

FlagSpec Path(std::vector<std::string_view> names,
              std::function<std::optional<std::string>&(CliRequest&)> field) {
  return {std::move(names), Arity::kOne, false,
          [field](CliRequest& r, const FlagUse& use) { field(r) = PathValue(use); }};
}

}  // namespace trainscope::io::internal
