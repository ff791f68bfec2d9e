// Unit constants and checked integer arithmetic. The only home of unit conversions: every other
// file names its quantities with a unit suffix (_bytes, _flops, _seconds) and converts through
// these constants.
#ifndef TRAINSCOPE_UNITS_H_
#define TRAINSCOPE_UNITS_H_

#include <cstdint>

namespace trainscope {

inline constexpr int64_t kBytesPerKiB = 1024;
inline constexpr int64_t kBytesPerMiB = 1024 * kBytesPerKiB;
inline constexpr int64_t kBytesPerGiB = 1024 * kBytesPerMiB;

// Decimal units as vendor sheets publish them (GB = 10^9 B,
// TFLOP/s = 10^12 FLOP/s, Gb/s = 10^9 bit/s).
inline constexpr double kBytesPerGB = 1e9;
inline constexpr double kBytesPerTB = 1e12;
inline constexpr double kFlopsPerTeraflop = 1e12;
inline constexpr double kFlopsPerGigaflop = 1e9;
inline constexpr double kBitsPerGigabit = 1e9;
inline constexpr double kBitsPerByte = 8;

// Element sizes of the number formats Megatron uses.
inline constexpr int64_t kBf16Bytes = 2;
inline constexpr int64_t kFp16Bytes = 2;
inline constexpr int64_t kFp32Bytes = 4;
inline constexpr int64_t kFp8Bytes = 1;
inline constexpr int64_t kInt64Bytes = 8;
inline constexpr int64_t kInt32Bytes = 4;
inline constexpr int64_t kBoolBytes = 1;

// Integer ceiling division for non-negative numerator and positive divisor.
[[nodiscard]] constexpr int64_t CeilDiv(int64_t numerator, int64_t divisor) {
  return (numerator + divisor - 1) / divisor;
}

// Smallest multiple of `multiple` that is >= value.
[[nodiscard]] constexpr int64_t RoundUp(int64_t value, int64_t multiple) {
  return CeilDiv(value, multiple) * multiple;
}

// a·b and a+b for counts that may exceed 2^31 (parameters, bytes, FLOPs at 100k-GPU scale).
// Throw InputError naming `what` when the result does not fit in 64 bits, so absurd inputs give
// a clear message instead of a wrapped number.
[[nodiscard]] int64_t CheckedMul(int64_t a, int64_t b, const char* what);
[[nodiscard]] int64_t CheckedAdd(int64_t a, int64_t b, const char* what);

}  // namespace trainscope

#endif  // TRAINSCOPE_UNITS_H_
