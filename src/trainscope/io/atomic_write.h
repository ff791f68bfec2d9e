// The one function that writes output files: everything is computed first, then each file is
// written (or streamed from its renderer) to "<name>.tmp.<pid>" in the destination directory,
// flushed, closed and renamed over "<name>". On failure the temporary file is removed and the
// destination is untouched.
// A symlink is followed (the file it points to is replaced; the link stays); an existing
// character device or FIFO (/dev/null, a pipe) is written in place; a directory is refused.
#ifndef TRAINSCOPE_IO_ATOMIC_WRITE_H_
#define TRAINSCOPE_IO_ATOMIC_WRITE_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace trainscope::io {

// Receives consecutive pieces of an output; their concatenation is the output. It throws
// IoError when the bytes cannot be written.
using ByteSink = std::function<void(std::string_view)>;

// One output file. Its bytes are `content`, or, when `render` is set, what `render` passes to
// its sink at the moment the file is written: a writer of thousands of large files (one Chakra
// trace per rank) holds one file in memory at a time, and a renderer that passes small pieces
// (the `groups` listing of 10^7 ranks) holds one piece. `render` may throw; the write then fails.
struct OutputFile {
  std::string path;
  std::string content;
  std::function<void(const ByteSink&)> render;
};

// Passes the bytes of `file` (its content, or what its renderer produces now) to `sink`; `path`
// is not used. This is how an output that goes to stdout instead of a file is streamed.
void StreamContent(const OutputFile& file, const ByteSink& sink);

// Writes `content` to `path` atomically. Throws IoError naming the path on failure.
void WriteFileAtomically(const std::string& path, std::string_view content);

// Writes every file to a temporary beside it first, then renames them all; if any temporary
// cannot be written (or a `render` throws), every temporary is removed and no destination is
// touched. Files are rendered in order, one at a time. Throws IoError
// naming the path on failure.
void WriteFilesAtomically(const std::vector<OutputFile>& files);

}  // namespace trainscope::io

#endif  // TRAINSCOPE_IO_ATOMIC_WRITE_H_
