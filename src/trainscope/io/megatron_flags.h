// Internal to io/: the table of command-line flags trainscope accepts (Megatron-LM names,
// aliases, tool flags), the Megatron flags it checks against the model, and those it accepts
// but ignores. io/megatron_args.cc walks argv against these tables, which live in
// megatron_flags.cc, tool_flags.cc, flag_docs.cc (help) and flag_name_lists.cc.
#ifndef TRAINSCOPE_IO_MEGATRON_FLAGS_H_
#define TRAINSCOPE_IO_MEGATRON_FLAGS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/io/input_ranges.h"
#include "trainscope/io/megatron_args.h"

namespace trainscope::io::internal {

enum class Arity { kNone, kOne, kList };

// A flag as written on the command line with the values that followed it.
struct FlagUse {
  std::string name;
  std::vector<std::string> values;
};

struct FlagSpec {
  std::vector<std::string_view> names;  // Megatron name first, then aliases
  Arity arity = Arity::kNone;
  bool parallel = false;  // part of the parallel/batch configuration
  std::function<void(CliRequest&, const FlagUse&)> apply;
  FlagGroup group = FlagGroup::kTraining;  // from the flag's FlagDoc
  std::string_view value;                  // the value's name in help ("N", "PATH"); "" = switch
  std::string_view help;                   // one line, with the default
};

// Every flag with a value or switch effect, in a fixed order, with its group and help.
[[nodiscard]] std::vector<FlagSpec> AllFlags();
// Every flag name trainscope knows (flags, aliases, architecture and ignored flags): the
// candidates for did-you-mean.
[[nodiscard]] std::vector<std::string> KnownFlagNames();
// A Megatron architecture flag (--num-layers, ...): checked against the model, never applied.
[[nodiscard]] bool IsArchitectureFlag(std::string_view name);
// A Megatron-LM flag that does not change what trainscope models.
[[nodiscard]] bool IsIgnoredFlag(std::string_view name);
// A model-describing switch (--attention-output-gate) or named value
// (--experimental-attention-variant): checked against the model, never applied.
[[nodiscard]] bool IsModelFeatureSwitch(std::string_view name);
[[nodiscard]] bool IsModelFeatureValue(std::string_view name);
// Parses an integer value of `use`; throws UsageError naming the flag and the bound if
// malformed, below `minimum` or above `maximum` (io/input_ranges.h).
[[nodiscard]] int64_t ParseInteger(const FlagUse& use, const std::string& text, int64_t minimum,
                                   int64_t maximum = kMaxInteger);

}  // namespace trainscope::io::internal

#endif  // TRAINSCOPE_IO_MEGATRON_FLAGS_H_
