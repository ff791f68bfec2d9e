// Reading user input files, one way for every loader: the whole file as text, and JSON text
// parsed into an object, with InputError messages that name the file.
#ifndef TRAINSCOPE_IO_INPUT_TEXT_H_
#define TRAINSCOPE_IO_INPUT_TEXT_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace trainscope::io {

// The bytes of `path`. `what` names the file's role in messages ("--cluster file").
// Throws InputError "<path>: cannot open <what>" / "cannot read <what>".
[[nodiscard]] std::string ReadInputFile(const std::string& path, std::string_view what);

// `text` parsed as JSON whose top level must be an object. Throws InputError
// "<source>: malformed JSON at byte N: ..." or "<source>: expected a JSON object at top level".
[[nodiscard]] nlohmann::json ParseJsonObject(std::string_view text, const std::string& source);

}  // namespace trainscope::io

#endif  // TRAINSCOPE_IO_INPUT_TEXT_H_
