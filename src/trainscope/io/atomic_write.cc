#include "trainscope/io/atomic_write.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "trainscope/error.h"

namespace trainscope::io {

void WriteFileAtomically(const std::string& path, std::string_view content) {
  const std::string temp_path = path + ".tmp";
  std::FILE* file = std::fopen(temp_path.c_str(), "wb");
  if (file == nullptr) {
    throw IoError(fmt::format("{}: cannot create output file: {}", path, std::strerror(errno)));
  }
  const bool written = std::fwrite(content.data(), 1, content.size(), file) == content.size();
  const bool flushed = std::fflush(file) == 0;
  const bool closed = std::fclose(file) == 0;
  if (!written || !flushed || !closed) {
    const std::string reason = std::strerror(errno);
    std::remove(temp_path.c_str());
    throw IoError(fmt::format("{}: cannot write output file: {}", path, reason));
  }
  if (std::rename(temp_path.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(temp_path.c_str());
    throw IoError(fmt::format("{}: cannot replace output file: {}", path, reason));
  }
}

}  // namespace trainscope::io
