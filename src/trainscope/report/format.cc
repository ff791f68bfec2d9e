#include "trainscope/report/format.h"

#include <fmt/format.h>

#include <cmath>

namespace trainscope::report {

std::string WithThousands(int64_t value) {
  const std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

std::string Abbreviated(int64_t value) {
  const double v = static_cast<double>(value);
  if (value >= 1'000'000'000'000) return fmt::format("{:.2f}T", v / 1e12);
  if (value >= 1'000'000'000) return fmt::format("{:.2f}B", v / 1e9);
  if (value >= 1'000'000) return fmt::format("{:.2f}M", v / 1e6);
  if (value >= 1'000) return fmt::format("{:.2f}K", v / 1e3);
  return std::to_string(value);
}

int64_t Nanoseconds(double seconds) { return std::llround(seconds * 1e9); }

std::string Micros(int64_t ns) { return fmt::format("{}.{:03d}", ns / 1000, ns % 1000); }

}  // namespace trainscope::report
