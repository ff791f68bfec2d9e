#include "trainscope/io/calibration_csv.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <fstream>
#include <sstream>

#include "trainscope/error.h"
#include "trainscope/io/input_text.h"
#include "trainscope/units.h"

namespace trainscope::io {
namespace {

constexpr std::array<std::string_view, 18> kColumns = {"source",
                                                       "model",
                                                       "gpu",
                                                       "num_gpus",
                                                       "seq_len",
                                                       "gbs",
                                                       "mbs",
                                                       "tp",
                                                       "pp",
                                                       "cp",
                                                       "vp",
                                                       "ep",
                                                       "etp",
                                                       "precision",
                                                       "tokens_per_sec_per_gpu",
                                                       "tflops_per_gpu",
                                                       "peak_mem_gib",
                                                       "notes"};

struct Record {
  int64_t line = 0;
  std::vector<std::string> fields;
};

// Splits RFC 4180 text into records. A quoted field may contain commas, line breaks and doubled
// quotes; CR before LF is dropped outside quotes. Empty lines are skipped.
std::vector<Record> SplitRecords(std::string_view text, const std::string& source) {
  std::vector<Record> records;
  Record record{.line = 1};
  std::string field;
  bool in_quotes = false;
  bool field_was_quoted = false;
  int64_t line = 1;
  const auto end_record = [&] {
    const bool empty_line = record.fields.empty() && field.empty() && !field_was_quoted;
    if (!empty_line) {
      record.fields.push_back(std::move(field));
      records.push_back(std::move(record));
    }
    record = Record{.line = line + 1};
    field.clear();
    field_was_quoted = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        in_quotes = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
    } else if (c == '"') {
      in_quotes = true;
      field_was_quoted = true;
    } else if (c == ',') {
      record.fields.push_back(std::move(field));
      field.clear();
      field_was_quoted = false;
    } else if (c == '\n') {
      end_record();
      ++line;
    } else if (c != '\r') {
      field += c;
    }
  }
  if (in_quotes) {
    throw InputError(fmt::format("{}: line {}: unterminated quoted field", source, record.line));
  }
  end_record();
  return records;
}

std::string_view Trim(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const size_t last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

// The leading number of `cell`, or nothing; text that follows or replaces it goes to
// `qualifiers` as "<column>: <cell>".
template <typename Number>
std::optional<Number> LeadingNumber(std::string_view column, std::string_view cell,
                                    std::vector<std::string>& qualifiers) {
  const std::string_view trimmed = Trim(cell);
  if (trimmed.empty()) return std::nullopt;
  Number value{};
  const auto [rest, error] =
      std::from_chars(trimmed.data(), trimmed.data() + trimmed.size(), value);
  const bool parsed = error == std::errc();
  if (!parsed || rest != trimmed.data() + trimmed.size()) {
    qualifiers.push_back(fmt::format("{}: {}", column, trimmed));
  }
  if (!parsed) return std::nullopt;
  return value;
}

std::optional<double> Scaled(std::optional<double> value, double factor) {
  if (!value) return std::nullopt;
  return *value * factor;
}

void CheckHeader(const Record& header, const std::string& source) {
  for (size_t i = 0; i < kColumns.size(); ++i) {
    const std::string_view got =
        i < header.fields.size() ? std::string_view(header.fields[i]) : std::string_view();
    if (got != kColumns[i] || header.fields.size() != kColumns.size()) {
      throw InputError(fmt::format(
          "{}: line 1: header: column {} is \"{}\" (got {} columns, expected {} starting "
          "source,model,gpu,... as listed in data/calibration/SOURCES.md)",
          source, i + 1, got, header.fields.size(), kColumns.size()));
    }
  }
}

CalibrationRow ToRow(const Record& record) {
  const std::vector<std::string>& f = record.fields;
  CalibrationRow row;
  row.line = record.line;
  row.source = f[0];
  row.model = f[1];
  row.gpu = f[2];
  std::vector<std::string>& q = row.qualifiers;
  row.num_gpus = LeadingNumber<int64_t>(kColumns[3], f[3], q);
  row.seq_len = LeadingNumber<int64_t>(kColumns[4], f[4], q);
  row.gbs = LeadingNumber<int64_t>(kColumns[5], f[5], q);
  row.mbs = LeadingNumber<int64_t>(kColumns[6], f[6], q);
  row.tp = LeadingNumber<int64_t>(kColumns[7], f[7], q);
  row.pp = LeadingNumber<int64_t>(kColumns[8], f[8], q);
  row.cp = LeadingNumber<int64_t>(kColumns[9], f[9], q);
  row.vp = LeadingNumber<int64_t>(kColumns[10], f[10], q);
  row.ep = LeadingNumber<int64_t>(kColumns[11], f[11], q);
  row.etp = LeadingNumber<int64_t>(kColumns[12], f[12], q);
  row.precision = f[13];
  row.tokens_per_second_per_gpu = LeadingNumber<double>(kColumns[14], f[14], q);
  row.flops_per_second_per_gpu =
      Scaled(LeadingNumber<double>(kColumns[15], f[15], q), kFlopsPerTeraflop);
  row.peak_memory_bytes =
      Scaled(LeadingNumber<double>(kColumns[16], f[16], q), static_cast<double>(kBytesPerGiB));
  row.notes = f[17];
  return row;
}

}  // namespace

std::vector<CalibrationRow> ParseCalibrationCsv(std::string_view text, const std::string& source) {
  const std::vector<Record> records = SplitRecords(text, source);
  if (records.empty()) throw InputError(fmt::format("{}: line 1: header: file is empty", source));
  CheckHeader(records.front(), source);
  std::vector<CalibrationRow> rows;
  for (size_t i = 1; i < records.size(); ++i) {
    const Record& record = records[i];
    if (record.fields.size() != kColumns.size()) {
      throw InputError(fmt::format("{}: line {}: wrong number of fields (got {}, expected {})",
                                   source, record.line, record.fields.size(), kColumns.size()));
    }
    rows.push_back(ToRow(record));
  }
  return rows;
}

std::vector<CalibrationRow> LoadCalibrationCsv(const std::string& path) {
  return ParseCalibrationCsv(ReadInputFile(path, "calibration CSV"), path);
}

}  // namespace trainscope::io
