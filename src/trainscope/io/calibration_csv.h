// Reader for the calibration measurement set (data/calibration/calibration_runs.csv, described
// in data/calibration/SOURCES.md): one published training run per row. Rows are plain values; the
// published units (tokens/s, TFLOP/s, GiB) are converted to SI here, once.
#ifndef TRAINSCOPE_IO_CALIBRATION_CSV_H_
#define TRAINSCOPE_IO_CALIBRATION_CSV_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainscope::io {

// One measurement. Empty cells are nullopt. A numeric cell with text after its leading number
// ("8192 (assumed)", "64 (spans 8 nodes)") keeps the number and records the text in
// `qualifiers`; a cell with no leading number ("interleaved", "ramp to 15360") is nullopt and
// recorded there too, so no row and no cell is silently dropped.
struct CalibrationRow {
  int64_t line = 0;  // 1-based line of the row in the file (the header is line 1)
  std::string source;
  std::string model;
  std::string gpu;
  std::optional<int64_t> num_gpus;
  std::optional<int64_t> seq_len;
  std::optional<int64_t> gbs;
  std::optional<int64_t> mbs;
  std::optional<int64_t> tp;
  std::optional<int64_t> pp;
  std::optional<int64_t> cp;
  std::optional<int64_t> vp;
  std::optional<int64_t> ep;
  std::optional<int64_t> etp;
  std::string precision;
  std::optional<double> tokens_per_second_per_gpu;  // column tokens_per_sec_per_gpu
  std::optional<double> flops_per_second_per_gpu;   // column tflops_per_gpu, x 10^12
  std::optional<double> peak_memory_bytes;          // column peak_mem_gib, x 2^30
  std::string notes;
  // "<column>: <cell>" for every numeric cell that was not a plain number.
  std::vector<std::string> qualifiers;
  friend bool operator==(const CalibrationRow&, const CalibrationRow&) = default;
};

// Parses RFC 4180 CSV text (CRLF or LF line ends, quoted fields with commas, doubled quotes and
// line breaks) whose header names exactly the columns of data/calibration/SOURCES.md, in that
// order. `source` names the text in error messages. Throws InputError naming the line and column
// for a wrong header, a row with the wrong number of fields or an unterminated quote.
[[nodiscard]] std::vector<CalibrationRow> ParseCalibrationCsv(std::string_view text,
                                                              const std::string& source);

// Reads and parses a calibration CSV file. Throws InputError if it cannot be read or parsed.
[[nodiscard]] std::vector<CalibrationRow> LoadCalibrationCsv(const std::string& path);

}  // namespace trainscope::io

#endif  // TRAINSCOPE_IO_CALIBRATION_CSV_H_
