#include "trainscope/io/atomic_write.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "trainscope/error.h"

namespace trainscope::io {
namespace {

// A temporary name in the destination's directory, unique to this process so that two runs
// writing the same path do not collide.
std::string TempPathFor(const std::string& path) {
  return fmt::format("{}.tmp.{}", path, static_cast<long>(::getpid()));
}

// Writes `content` to `temp_path`; on failure removes it and throws IoError naming `path`.
void WriteTemp(const std::string& path, const std::string& temp_path, std::string_view content) {
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
}

}  // namespace

void WriteFileAtomically(const std::string& path, std::string_view content) {
  WriteFilesAtomically({OutputFile{.path = path, .content = std::string(content)}});
}

void WriteFilesAtomically(const std::vector<OutputFile>& files) {
  std::vector<std::string> temps;
  try {
    for (const OutputFile& file : files) {
      temps.push_back(TempPathFor(file.path));
      WriteTemp(file.path, temps.back(), file.content);
    }
  } catch (...) {
    for (const std::string& temp : temps) std::remove(temp.c_str());
    throw;
  }
  for (size_t i = 0; i < files.size(); ++i) {
    if (std::rename(temps[i].c_str(), files[i].path.c_str()) != 0) {
      const std::string reason = std::strerror(errno);
      for (size_t j = i; j < files.size(); ++j) std::remove(temps[j].c_str());
      throw IoError(fmt::format("{}: cannot replace output file: {}", files[i].path, reason));
    }
  }
}

}  // namespace trainscope::io
