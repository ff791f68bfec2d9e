// Did-you-mean for names a user types: commands, flags, models, GPUs. Pure string functions;
// io/ and apps/ call them when a name is unknown.
#ifndef TRAINSCOPE_IO_SUGGEST_H_
#define TRAINSCOPE_IO_SUGGEST_H_

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace trainscope::io {

// Levenshtein distance (insertions, deletions, substitutions each cost 1).
[[nodiscard]] int64_t EditDistance(std::string_view a, std::string_view b);

// The candidate a user most likely meant by `given`, or nothing when none is close. Names are
// compared case-insensitively with '_' read as '-' (the spellings pasted from Hugging Face and
// vLLM configs); a candidate that starts with what was given (`Qwen3.5-35B` for
// `Qwen3.5-35B-A3B`) counts as close, otherwise the edit distance must be at most a third of
// the longer name (at least 2). A candidate that extends `given` ranks first; ties go to the
// earlier candidate. A `given` longer than 128 bytes matches nothing.
[[nodiscard]] std::optional<std::string> ClosestName(std::string_view given,
                                                     std::span<const std::string> candidates);

// " (did you mean X?)" for the closest candidate, or "" when none is close.
[[nodiscard]] std::string DidYouMean(std::string_view given,
                                     std::span<const std::string> candidates);

// `text` cut to at most 60 bytes with "..." for quoting user input in one-line messages.
[[nodiscard]] std::string Abbreviated(std::string_view text);

}  // namespace trainscope::io

#endif  // TRAINSCOPE_IO_SUGGEST_H_
