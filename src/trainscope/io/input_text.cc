#include "trainscope/io/input_text.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "trainscope/error.h"

namespace trainscope::io {
namespace {

using Json = nlohmann::json;

constexpr size_t kMaxQuoteChars = 60;
constexpr size_t kMaxLibraryMessageChars = 160;

// `text` cut to at most `limit` bytes on a UTF-8 character boundary, "..." marking the cut.
std::string Shortened(std::string text, size_t limit) {
  if (text.size() <= limit) return text;
  size_t end = limit - 3;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  text.resize(end);
  return text + "...";
}

// Appends a compact rendering of `value`, stopping once `out` holds more than `limit` bytes.
void AppendBounded(const Json& value, size_t limit, std::string& out) {
  if (out.size() > limit) return;
  if (value.is_array() || value.is_object()) {
    out += value.is_array() ? '[' : '{';
    bool first = true;
    for (auto it = value.begin(); it != value.end() && out.size() <= limit; ++it) {
      if (!first) out += ',';
      first = false;
      if (value.is_object()) {
        out += Json(it.key()).dump(-1, ' ', false, Json::error_handler_t::replace);
        out += ':';
      }
      AppendBounded(*it, limit, out);
    }
    out += value.is_array() ? ']' : '}';
    return;
  }
  out += value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

std::string ReadInputFile(const std::string& path, std::string_view what) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    throw InputError(fmt::format("{}: cannot open {}: {}", path, what, std::strerror(errno)));
  }
  if (S_ISDIR(info.st_mode)) throw InputError(fmt::format("{}: {} is a directory", path, what));
  if (!S_ISREG(info.st_mode)) {
    throw InputError(fmt::format("{}: {} is not a regular file", path, what));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open {}", path, what));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError(fmt::format("{}: cannot read {}", path, what));
  return text.str();
}

void CheckNesting(std::string_view text, const std::string& source, bool quoted_strings) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"' && quoted_strings) {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxInputNesting) {
        throw InputError(fmt::format("{}: nested deeper than {} levels at byte {}", source,
                                     kMaxInputNesting, i));
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

Json ParseJson(std::string_view text, const std::string& source) {
  CheckNesting(text, source, /*quoted_strings=*/true);
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& error) {
    throw InputError(fmt::format("{}: malformed JSON at byte {}: {}", source, error.byte,
                                 Shortened(error.what(), kMaxLibraryMessageChars)));
  } catch (const Json::out_of_range& error) {
    throw InputError(fmt::format(
        "{}: number out of range (expected numbers a double can hold, at most about 1.8e308): {}",
        source, Shortened(error.what(), kMaxLibraryMessageChars)));
  } catch (const Json::exception& error) {
    throw InputError(fmt::format("{}: malformed JSON: {}", source,
                                 Shortened(error.what(), kMaxLibraryMessageChars)));
  }
}

Json ParseJsonObject(std::string_view text, const std::string& source) {
  Json json = ParseJson(text, source);
  if (!json.is_object()) {
    throw InputError(
        fmt::format("{}: expected a JSON object at top level (got {})", source, json.type_name()));
  }
  return json;
}

std::string QuoteJson(const Json& value) {
  std::string out;
  AppendBounded(value, kMaxQuoteChars, out);
  return Shortened(std::move(out), kMaxQuoteChars);
}

}  // namespace trainscope::io
