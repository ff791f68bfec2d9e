#include "trainscope/io/argument_files.h"

#include <fmt/format.h>

#include "trainscope/error.h"
#include "trainscope/io/input_text.h"

namespace trainscope::io {

std::vector<std::string> SplitArgumentText(std::string_view text, const std::string& source) {
  std::vector<std::string> args;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else {
        word.push_back(c);
      }
      continue;
    }
    if (c == '\\' && i + 1 < text.size() && (text[i + 1] == '\n' || text[i + 1] == '\r')) {
      while (i + 1 < text.size() && (text[i + 1] == '\n' || text[i + 1] == '\r')) ++i;
      continue;  // line continuation
    }
    if (c == '#' && !in_word) {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (in_word) args.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '"' || c == '\'') {
      quote = c;
    } else {
      word.push_back(c);
    }
  }
  if (quote != 0) throw InputError(fmt::format("{}: unterminated {} quote", source, quote));
  if (in_word) args.push_back(std::move(word));
  return args;
}

std::vector<std::string> ExpandArgumentFiles(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const std::string& arg : args) {
    if (arg.size() < 2 || arg.front() != '@') {
      out.push_back(arg);
      continue;
    }
    const std::string path = arg.substr(1);
    for (std::string& expanded : SplitArgumentText(ReadInputFile(path, "@argument file"), path)) {
      out.push_back(std::move(expanded));
    }
  }
  return out;
}

}  // namespace trainscope::io
