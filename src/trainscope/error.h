// Error types of trainscope. Library code throws only these; main() is the only place that
// catches them and turns them into exit codes.
#ifndef TRAINSCOPE_ERROR_H_
#define TRAINSCOPE_ERROR_H_

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace trainscope {

// A user-fixable problem with an input file or value. The message has the form
// "<source>: <key.path>: <problem> (got X, expected Y)".
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

// Bad command-line usage: unknown flag, missing value, wrong command.
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& message) : std::runtime_error(message) {}
};

// An I/O failure that is not the user's fault (disk full, permission denied while writing).
class IoError : public std::runtime_error {
 public:
  explicit IoError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace trainscope

// Always-on internal invariant check: reports file and line, then aborts. Never used on user
// input, which is checked by the loaders and Validate() and reported as InputError.
#define TRAINSCOPE_CHECK(cond, message)                                                          \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      std::fprintf(stderr, "%s:%d: internal check failed: %s (%s)\n", __FILE__, __LINE__, #cond, \
                   std::string(message).c_str());                                                \
      std::abort();                                                                              \
    }                                                                                            \
  } while (false)

#endif  // TRAINSCOPE_ERROR_H_
