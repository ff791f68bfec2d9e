#include "trainscope/io/atomic_write.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "trainscope/error.h"

namespace trainscope::io {
namespace {

// How one destination is written.
enum class Mode {
  kReplace,  // a regular file or a new name: temporary beside it, then rename
  kDirect,   // an existing character device or FIFO (/dev/null, a pipe): written in place
};

// Where and how one output file is written. `target` is `path` with symlinks resolved, so a
// symlink stays a symlink and the file it points to is replaced.
struct Destination {
  std::string path;  // as the user gave it, for messages
  std::string target;
  Mode mode = Mode::kReplace;
};

// A temporary name in the target's directory, unique to this process so that two runs
// writing the same path do not collide.
std::string TempPathFor(const std::string& target) {
  return fmt::format("{}.tmp.{}", target, static_cast<long>(::getpid()));
}

[[noreturn]] void Fail(const std::string& path, const char* what, int error) {
  throw IoError(fmt::format("{}: {}: {}", path, what, std::strerror(error)));
}

// The file a chain of symlinks ends at, which need not exist yet (a dangling link's target).
// Throws IoError on a loop or an unreadable link.
std::string ResolveSymlinks(const std::string& path) {
  constexpr int kMaxLinks = 40;  // as the kernel's ELOOP limit
  std::filesystem::path current = path;
  for (int i = 0; i < kMaxLinks; ++i) {
    std::error_code error;
    if (!std::filesystem::is_symlink(std::filesystem::symlink_status(current, error))) {
      const std::filesystem::path resolved = std::filesystem::weakly_canonical(current, error);
      if (error) Fail(path, "cannot resolve symlink", error.value());
      return resolved.string();
    }
    const std::filesystem::path link = std::filesystem::read_symlink(current, error);
    if (error) Fail(path, "cannot resolve symlink", error.value());
    current = link.is_absolute() ? link : current.parent_path() / link;
  }
  Fail(path, "cannot resolve symlink", ELOOP);
}

// Resolves symlinks and classifies the destination; throws IoError for a directory or another
// kind of file that cannot take output (block device, socket).
Destination Classify(const std::string& path) {
  Destination destination{.path = path, .target = path};
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return destination;  // a new file
  if (S_ISLNK(info.st_mode)) {
    destination.target = ResolveSymlinks(path);
    if (::stat(destination.target.c_str(), &info) != 0) return destination;  // dangling: create
  }
  if (S_ISREG(info.st_mode)) return destination;
  if (S_ISDIR(info.st_mode)) {
    throw IoError(fmt::format("{}: cannot write output: is a directory", path));
  }
  if (S_ISCHR(info.st_mode) || S_ISFIFO(info.st_mode)) {
    destination.mode = Mode::kDirect;
    return destination;
  }
  throw IoError(
      fmt::format("{}: cannot write output: not a regular file or character device", path));
}

// Writes all of `content` to `fd`, retrying short writes. Returns errno on failure, else 0.
int WriteAll(int fd, std::string_view content) {
  while (!content.empty()) {
    const ssize_t written = ::write(fd, content.data(), content.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    content.remove_prefix(static_cast<size_t>(written));
  }
  return 0;
}

// Writes the bytes of `file` to `temp_path`; on failure (or when its renderer throws) removes
// the temporary and throws (IoError naming `path` for a write failure).
void WriteTemp(const std::string& path, const std::string& temp_path, const OutputFile& file) {
  std::FILE* stream = std::fopen(temp_path.c_str(), "wb");
  if (stream == nullptr) Fail(path, "cannot create output file", errno);
  try {
    StreamContent(file, [&](std::string_view piece) {
      if (std::fwrite(piece.data(), 1, piece.size(), stream) != piece.size()) {
        Fail(path, "cannot write output file", errno);
      }
    });
  } catch (...) {
    std::fclose(stream);
    std::remove(temp_path.c_str());
    throw;
  }
  const bool flushed = std::fflush(stream) == 0;
  const bool closed = std::fclose(stream) == 0;
  if (!flushed || !closed) {
    const int error = errno;
    std::remove(temp_path.c_str());
    Fail(path, "cannot write output file", error);
  }
}

// Writes the bytes of `file` into an existing character device or FIFO. A FIFO without a
// reader fails at once (ENXIO) instead of blocking.
void WriteDirect(const Destination& destination, const OutputFile& file) {
  const int fd = ::open(destination.target.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) Fail(destination.path, "cannot open output", errno);
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  try {
    StreamContent(file, [&](std::string_view piece) {
      const int error = WriteAll(fd, piece);
      if (error != 0) Fail(destination.path, "cannot write output", error);
    });
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) Fail(destination.path, "cannot write output", errno);
}

}  // namespace

void StreamContent(const OutputFile& file, const ByteSink& sink) {
  if (file.render) {
    file.render(sink);
  } else {
    sink(file.content);
  }
}

void WriteFileAtomically(const std::string& path, std::string_view content) {
  WriteFilesAtomically({OutputFile{.path = path, .content = std::string(content)}});
}

void WriteFilesAtomically(const std::vector<OutputFile>& files) {
  std::vector<Destination> destinations;
  for (const OutputFile& file : files) destinations.push_back(Classify(file.path));
  std::vector<std::string> temps(files.size());
  try {
    for (size_t i = 0; i < files.size(); ++i) {
      if (destinations[i].mode != Mode::kReplace) continue;
      temps[i] = TempPathFor(destinations[i].target);
      WriteTemp(files[i].path, temps[i], files[i]);
    }
    for (size_t i = 0; i < files.size(); ++i) {
      if (destinations[i].mode != Mode::kDirect) continue;
      WriteDirect(destinations[i], files[i]);
    }
  } catch (...) {
    for (const std::string& temp : temps) {
      if (!temp.empty()) std::remove(temp.c_str());
    }
    throw;
  }
  for (size_t i = 0; i < files.size(); ++i) {
    if (temps[i].empty()) continue;
    if (std::rename(temps[i].c_str(), destinations[i].target.c_str()) != 0) {
      const int error = errno;
      for (size_t j = i; j < files.size(); ++j) {
        if (!temps[j].empty()) std::remove(temps[j].c_str());
      }
      Fail(files[i].path, "cannot replace output file", error);
    }
  }
}

}  // namespace trainscope::io
