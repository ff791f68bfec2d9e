// `@FILE` arguments: a Megatron launch script's argument block saved to a file and passed as is.
// Reads files, so it lives in io/.
#ifndef TRAINSCOPE_IO_ARGUMENT_FILES_H_
#define TRAINSCOPE_IO_ARGUMENT_FILES_H_

#include <string>
#include <string_view>
#include <vector>

namespace trainscope::io {

// Splits the text of an argument file into arguments: whitespace separates arguments, '#'
// starts a comment to the end of the line (outside quotes), a backslash at the end of a line
// continues it (as in a shell script), and single or double quotes group words. A line holding
// only "torchrun ...", "python ...", or a script path is not special: every word is an argument.
// Throws InputError naming `source` for an unterminated quote.
[[nodiscard]] std::vector<std::string> SplitArgumentText(std::string_view text,
                                                         const std::string& source);

// Replaces every argument "@PATH" by the arguments in PATH (not recursively). Throws InputError
// naming the file when it cannot be read.
[[nodiscard]] std::vector<std::string> ExpandArgumentFiles(const std::vector<std::string>& args);

}  // namespace trainscope::io

#endif  // TRAINSCOPE_IO_ARGUMENT_FILES_H_
