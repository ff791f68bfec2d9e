// Internal to io/: the value parsers the flag tables share (integers, numbers in a range,
// fractions, enum names, optimizer dtypes, CUDA-graph scopes, paths) and the FlagSpec builders
// that apply one parsed value to one CliRequest field. Parsers throw UsageError naming the flag.
#ifndef TRAINSCOPE_IO_FLAG_PARSING_H_
#define TRAINSCOPE_IO_FLAG_PARSING_H_

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainscope/config/enum_names.h"
#include "trainscope/config/training_config.h"
#include "trainscope/error.h"
#include "trainscope/io/input_ranges.h"
#include "trainscope/io/megatron_args.h"
#include "trainscope/io/megatron_flags.h"

namespace trainscope::io::internal {

// --memory-fragmentation and --overlap-interference, below 1 checked separately.
inline constexpr NumberRange kFlagFractionRange{1e-3, 1.0};

// `text` cut to 60 bytes for messages, so a pasted megabyte stays one short line.
[[nodiscard]] std::string Shortened(const std::string& text);

// The first value of `use` as an integer in [1, maximum]; throws UsageError as ParseInteger.
[[nodiscard]] int64_t Size(const FlagUse& use, int64_t maximum);

// A number in `range` (io/input_ranges.h); throws UsageError naming the flag and the range.
[[nodiscard]] double ParseNumberIn(const FlagUse& use, NumberRange range);

// A fraction F with 0 < F < 1, at least 0.001 so that no cost is scaled by a subnormal.
[[nodiscard]] double ParseFraction(const FlagUse& use);

// The value of `text` in `table`; throws UsageError naming the flag and the choices.
template <typename Enum, size_t N>
[[nodiscard]] Enum ParseEnum(const FlagUse& use, const std::string& text,
                             const config::EnumName<Enum> (&table)[N]) {
  const std::optional<Enum> value = config::ValueOf(table, text);
  if (!value) {
    throw UsageError(fmt::format("{}: unknown value \"{}\" (expected {})", use.name,
                                 Shortened(text), config::Choices(table)));
  }
  return *value;
}

// Applies a value-less switch to a bool field.
[[nodiscard]] FlagSpec Switch(std::vector<std::string_view> names, bool parallel,
                              std::function<bool&(CliRequest&)> field, bool value = true);

// Applies an integer in [1, maximum] to an int64_t field.
[[nodiscard]] FlagSpec Count(std::vector<std::string_view> names, int64_t maximum,
                             std::function<int64_t&(CliRequest&)> field);

// Applies an integer in [1, maximum] to an optional<int64_t> field.
[[nodiscard]] FlagSpec OptionalCount(std::vector<std::string_view> names, int64_t maximum,
                                     std::function<std::optional<int64_t>&(CliRequest&)> field);

// Applies a number in `range` to a double or optional<double> field (`field` returns a reference
// to it).
template <typename Field>
[[nodiscard]] FlagSpec Number(std::vector<std::string_view> names, bool parallel, NumberRange range,
                              Field field) {
  return {std::move(names), Arity::kOne, parallel,
          [field, range](CliRequest& request, const FlagUse& use) {
            field(request) = ParseNumberIn(use, range);
          }};
}

// Applies a name from `table` to an enum field. `table` must outlive the returned spec (the
// tables are constants in config/enum_names.h and the like).
template <typename Enum, size_t N, typename Field>
[[nodiscard]] FlagSpec Choice(std::vector<std::string_view> names,
                              const config::EnumName<Enum> (&table)[N], Field field) {
  return {std::move(names), Arity::kOne, true, [&table, field](CliRequest& r, const FlagUse& use) {
            field(r) = ParseEnum(use, use.values.front(), table);
          }};
}

// Parses an optimizer dtype and rejects values outside `allowed` (the flag's argparse choices).
[[nodiscard]] config::OptimizerDtype ParseOptimizerDtype(
    const FlagUse& use, const std::vector<config::OptimizerDtype>& allowed);

// Applies an optimizer dtype from `allowed` to a PrecisionConfig field.
[[nodiscard]] FlagSpec OptimizerDtypeFlag(
    std::string_view name, std::vector<config::OptimizerDtype> allowed,
    std::function<config::OptimizerDtype&(CliRequest&)> field);

// --cuda-graph-scope / --cuda-graph-modules values: CudaGraphModule names or the deprecated
// "full", "full_iteration", "full_iteration_inference" (arguments.py
// _parse_cuda_graph_modules_arg). Returns the values unchanged; throws UsageError on another.
[[nodiscard]] std::vector<std::string> CudaGraphScopeValues(const FlagUse& use);

// A tool flag taking one free-text value (a path or a name checked later).
[[nodiscard]] FlagSpec Text(std::vector<std::string_view> names,
                            std::function<std::optional<std::string>&(CliRequest&)> field);

// The value of a flag that names a file: an empty path names no file (and `-o ""` would
// write "<cwd>/.tmp.<pid>", then fail without naming the flag). The result refers into `use`.
[[nodiscard]] const std::string& PathValue(const FlagUse& use);

// A flag whose value is a file path, stored in `field`; an empty path is a usage error.
[[nodiscard]] FlagSpec Path(std::vector<std::string_view> names,
                            std::function<std::optional<std::string>&(CliRequest&)> field);

}  // namespace trainscope::io::internal

#endif  // TRAINSCOPE_IO_FLAG_PARSING_H_
