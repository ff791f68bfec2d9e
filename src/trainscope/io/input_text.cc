#include "trainscope/io/input_text.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "trainscope/error.h"

namespace trainscope::io {

std::string ReadInputFile(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open {}", path, what));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError(fmt::format("{}: cannot read {}", path, what));
  return text.str();
}

nlohmann::json ParseJsonObject(std::string_view text, const std::string& source) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& error) {
    throw InputError(
        fmt::format("{}: malformed JSON at byte {}: {}", source, error.byte, error.what()));
  }
  if (!json.is_object()) {
    throw InputError(
        fmt::format("{}: expected a JSON object at top level (got {})", source, json.type_name()));
  }
  return json;
}

}  // namespace trainscope::io
