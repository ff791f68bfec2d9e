// Number formatting shared by the text reports: one helper per style, so every report prints
// the same quantity the same way.
#ifndef TRAINSCOPE_REPORT_FORMAT_H_
#define TRAINSCOPE_REPORT_FORMAT_H_

#include <cstdint>
#include <string>

namespace trainscope::report {

// 30532122624 -> "30,532,122,624".
[[nodiscard]] std::string WithThousands(int64_t value);

// 30532122624 -> "30.53B"; 596049920 -> "596.05M".
[[nodiscard]] std::string Abbreviated(int64_t value);

// Seconds rounded to integer nanoseconds, the unit of trace timestamps.
[[nodiscard]] int64_t Nanoseconds(double seconds);

// Integer nanoseconds as microseconds with exactly three decimals (Chrome trace "ts"/"dur"):
// 1234567 -> "1234.567".
[[nodiscard]] std::string Micros(int64_t ns);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_FORMAT_H_
