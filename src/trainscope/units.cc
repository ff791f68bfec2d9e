#include "trainscope/units.h"

#include <string>

#include "trainscope/error.h"

namespace trainscope {

int64_t CheckedMul(int64_t a, int64_t b, const char* what) {
  int64_t result = 0;
  if (__builtin_mul_overflow(a, b, &result)) {
    throw InputError(std::string(what) + ": absurd size, the count overflows 64 bits");
  }
  return result;
}

int64_t CheckedAdd(int64_t a, int64_t b, const char* what) {
  int64_t result = 0;
  if (__builtin_add_overflow(a, b, &result)) {
    throw InputError(std::string(what) + ": absurd size, the count overflows 64 bits");
  }
  return result;
}

}  // namespace trainscope
