// Reading user input files, one way for every loader: the whole file as text, and JSON text
// parsed into an object, with InputError messages that name the file.
#ifndef TRAINSCOPE_IO_INPUT_TEXT_H_
#define TRAINSCOPE_IO_INPUT_TEXT_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace trainscope::io {

// Deepest nesting of arrays and objects (JSON) or flow collections (YAML) any input accepts.
// Real inputs nest at most 4 levels; the bound keeps every recursive walk of a parsed value short.
inline constexpr int kMaxInputNesting = 64;

// The bytes of `path`. `what` names the file's role in messages ("--cluster file").
// Throws InputError "<path>: cannot open <what>", "<path>: <what> is a directory",
// "<path>: <what> is not a regular file" (FIFOs, devices, sockets are never read) or
// "cannot read <what>".
[[nodiscard]] std::string ReadInputFile(const std::string& path, std::string_view what);

// `text` parsed as JSON of any type. Throws InputError "<source>: malformed JSON at byte N: ...",
// "<source>: number out of range ..." (e.g. 1e400) or "<source>: nested deeper than 64 levels".
[[nodiscard]] nlohmann::json ParseJson(std::string_view text, const std::string& source);

// `text` parsed as JSON whose top level must be an object. Throws as ParseJson, or InputError
// "<source>: expected a JSON object at top level".
[[nodiscard]] nlohmann::json ParseJsonObject(std::string_view text, const std::string& source);

// Throws InputError "<source>: nested deeper than 64 levels at byte N" when '[' and '{' outside
// JSON strings nest deeper than kMaxInputNesting. `quoted_strings` false counts every bracket
// (YAML, whose quoting rules differ; a bracket inside a string then counts conservatively).
void CheckNesting(std::string_view text, const std::string& source, bool quoted_strings);

// A short one-line rendering of `value` for error messages: compact JSON, invalid UTF-8 replaced,
// cut to about 60 characters with "..." (never walks more of the value than it prints).
[[nodiscard]] std::string QuoteJson(const nlohmann::json& value);

}  // namespace trainscope::io

#endif  // TRAINSCOPE_IO_INPUT_TEXT_H_
