// The one function that writes output files: render everything in memory first, then write
// each file to "<name>.tmp" in the destination directory, flush, close and rename over
// "<name>". On failure the temporary file is removed and the destination is untouched.
#ifndef TRAINSCOPE_IO_ATOMIC_WRITE_H_
#define TRAINSCOPE_IO_ATOMIC_WRITE_H_

#include <string>
#include <string_view>

namespace trainscope::io {

// Writes `content` to `path` atomically. Throws IoError naming the path on failure.
void WriteFileAtomically(const std::string& path, std::string_view content);

}  // namespace trainscope::io

#endif  // TRAINSCOPE_IO_ATOMIC_WRITE_H_
