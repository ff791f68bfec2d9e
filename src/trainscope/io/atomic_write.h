// The one function that writes output files: render everything in memory first, then write
// each file to "<name>.tmp.<pid>" in the destination directory, flush, close and rename over
// "<name>". On failure the temporary file is removed and the destination is untouched.
// A symlink is followed (the file it points to is replaced; the link stays); an existing
// character device or FIFO (/dev/null, a pipe) is written in place; a directory is refused.
#ifndef TRAINSCOPE_IO_ATOMIC_WRITE_H_
#define TRAINSCOPE_IO_ATOMIC_WRITE_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace trainscope::io {

// One output file. Its bytes are `content`, or, when `render` is set, what `render` returns at
// the moment the file is written: a writer of thousands of large files (one Chakra trace per
// rank) then holds one file in memory at a time instead of all of them.
struct OutputFile {
  std::string path;
  std::string content;
  std::function<std::string()> render;
};

// Writes `content` to `path` atomically. Throws IoError naming the path on failure.
void WriteFileAtomically(const std::string& path, std::string_view content);

// Writes every file to a temporary beside it first, then renames them all; if any temporary
// cannot be written (or a `render` throws), every temporary is removed and no destination is
// touched. Files are rendered in order, one at a time. Throws IoError
// naming the path on failure.
void WriteFilesAtomically(const std::vector<OutputFile>& files);

}  // namespace trainscope::io

#endif  // TRAINSCOPE_IO_ATOMIC_WRITE_H_
