#include "trainscope/io/histogram_file.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "trainscope/error.h"
#include "trainscope/io/input_ranges.h"
#include "trainscope/io/input_text.h"

namespace trainscope::io {
namespace {

using Json = nlohmann::json;

std::string_view Trim(std::string_view text) {
  const size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(" \t\r") - begin + 1);
}

// The whole of `text` (trimmed) as a finite number, or nullopt.
std::optional<double> ParseNumber(std::string_view text) {
  text = Trim(text);
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() ||
      !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

bool IsWhole(double value) { return std::floor(value) == value; }

// Largest accepted count, length or expert id: sums of up to millions of entries stay finite
// and exact enough, and lengths squared stay far from overflow.
constexpr double kMaxHistogramValue = 1e15;

bool IsCount(double value) { return value >= 0 && value <= kMaxHistogramValue; }

// One data line of a CSV histogram: its 1-based line number and its comma-separated fields.
struct CsvLine {
  int64_t line = 0;
  std::vector<std::string_view> fields;
};

// Splits `text` into lines of trimmed fields, dropping empty lines and a header: the first
// non-empty line when its first field is not a number.
std::vector<CsvLine> DataLines(std::string_view text) {
  std::vector<CsvLine> lines;
  bool first = true;
  for (int64_t line_number = 1; !text.empty(); ++line_number) {
    const size_t end = text.find('\n');
    const std::string_view line = Trim(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    if (line.empty()) continue;
    CsvLine parsed{.line = line_number};
    for (std::string_view rest = line;;) {
      const size_t comma = rest.find(',');
      parsed.fields.push_back(Trim(rest.substr(0, comma)));
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
    const bool header = first && !ParseNumber(parsed.fields.front());
    first = false;
    if (!header) lines.push_back(std::move(parsed));
  }
  return lines;
}

[[noreturn]] void FailLine(const std::string& source, int64_t line, const std::string& problem) {
  throw InputError(fmt::format("{}: line {}: {}", source, line, problem));
}

// A CSV field that must be a finite number >= 0.
double CountField(const CsvLine& line, std::string_view field, const std::string& source) {
  const std::optional<double> value = ParseNumber(field);
  if (!value || !IsCount(*value)) {
    FailLine(source, line.line,
             fmt::format("count: expected a number >= 0 and <= 1e15 (got \"{}\")", field));
  }
  return *value;
}

// A CSV field that must be a whole number >= `minimum`.
int64_t IntegerField(const CsvLine& line, std::string_view field, const char* what, int64_t minimum,
                     const std::string& source) {
  const std::optional<double> value = ParseNumber(field);
  if (!value || !IsWhole(*value) || *value < static_cast<double>(minimum) ||
      *value > kMaxHistogramValue) {
    FailLine(source, line.line,
             fmt::format("{}: expected an integer >= {} (got \"{}\")", what, minimum, field));
  }
  return static_cast<int64_t>(*value);
}

void RequirePositiveTotal(const std::vector<double>& counts, const std::string& source) {
  double total = 0;
  for (const double count : counts) total += count;
  if (counts.empty() || total <= 0) {
    throw InputError(
        fmt::format("{}: counts: expected a positive total (got {} entries summing to {})", source,
                    counts.size(), total));
  }
}

bool LooksLikeJson(std::string_view text) {
  const std::string_view trimmed = Trim(text);
  const size_t begin = trimmed.find_first_not_of(" \t\r\n");
  return begin != std::string_view::npos && (trimmed[begin] == '[' || trimmed[begin] == '{');
}

// A JSON array of numbers under `key` (for messages), each checked by the caller.
std::vector<double> JsonNumbers(const Json& array, const std::string& key,
                                const std::string& source) {
  if (!array.is_array()) {
    throw InputError(fmt::format("{}: {}: expected an array of numbers (got {})", source, key,
                                 array.type_name()));
  }
  std::vector<double> values;
  for (size_t i = 0; i < array.size(); ++i) {
    if (!array[i].is_number()) {
      throw InputError(fmt::format("{}: {}[{}]: expected a number (got {})", source, key, i,
                                   QuoteJson(array[i])));
    }
    values.push_back(array[i].get<double>());
  }
  return values;
}

std::vector<double> ExpertCountsFromJson(const Json& json, const std::string& source) {
  std::vector<double> counts = JsonNumbers(json, "experts", source);
  for (size_t i = 0; i < counts.size(); ++i) {
    if (!IsCount(counts[i])) {
      throw InputError(fmt::format("{}: experts[{}]: expected a count >= 0 and <= 1e15 (got {})",
                                   source, i, counts[i]));
    }
  }
  return counts;
}

// "expert,count" lines: place each count at its expert id; every id exactly once.
std::vector<double> ExpertCountsById(const std::vector<CsvLine>& lines, const std::string& source) {
  const int64_t num_experts = static_cast<int64_t>(lines.size());
  std::vector<double> counts(num_experts, 0.0);
  std::vector<bool> seen(num_experts, false);
  for (const CsvLine& line : lines) {
    if (line.fields.size() != 2) {
      FailLine(source, line.line,
               fmt::format("expected \"expert,count\" (got {} fields)", line.fields.size()));
    }
    const int64_t expert = IntegerField(line, line.fields[0], "expert", 0, source);
    if (expert >= num_experts || seen[expert]) {
      FailLine(source, line.line,
               fmt::format("expert: expected each id 0..{} exactly once (got {})", num_experts - 1,
                           expert));
    }
    seen[expert] = true;
    counts[expert] = CountField(line, line.fields[1], source);
  }
  return counts;
}

}  // namespace

std::vector<double> ParseExpertHistogram(std::string_view text, const std::string& source) {
  std::vector<double> counts;
  if (LooksLikeJson(text)) {
    counts = ExpertCountsFromJson(ParseJson(text, source), source);
  } else {
    const std::vector<CsvLine> lines = DataLines(text);
    if (!lines.empty() && lines.front().fields.size() == 2) {
      counts = ExpertCountsById(lines, source);
    } else {
      for (const CsvLine& line : lines) {
        if (line.fields.size() != 1) {
          FailLine(source, line.line,
                   fmt::format("expected one count per line (got {} fields)", line.fields.size()));
        }
        counts.push_back(CountField(line, line.fields[0], source));
      }
    }
  }
  RequirePositiveTotal(counts, source);
  return counts;
}

std::vector<double> LoadExpertHistogramFile(const std::string& path) {
  return ParseExpertHistogram(ReadInputFile(path, "expert histogram"), path);
}

cost::RoutingSkew ParseRoutingSkew(const std::string& value, std::string_view flag) {
  cost::RoutingSkew skew;
  if (value.starts_with("load=")) {
    const std::optional<double> factor = ParseNumber(value.substr(5));
    if (!factor || !(*factor >= 1) || *factor > 1e6) {
      throw UsageError(fmt::format(
          "{}: load factor must be a number >= 1 (got {}, expected load=F, F >= 1)", flag, value));
    }
    skew.load_factor = *factor;
    return skew;
  }
  // contiguous=S: the Zipf law with the most popular experts together on EP rank 0.
  const bool contiguous = value.starts_with("contiguous=");
  const std::string exponent_text = contiguous ? value.substr(11) : value;
  if (const std::optional<double> exponent = ParseNumber(exponent_text)) {
    if (contiguous) skew.placement = cost::ExpertPlacement::kContiguous;
    if (*exponent < 0) {
      throw InputError(fmt::format(
          "{}: Zipf exponent must be >= 0 (got {}, expected a number >= 0 or a histogram file)",
          flag, value));
    }
    skew.zipf_exponent = *exponent;
    return skew;
  }
  if (contiguous) {
    throw UsageError(
        fmt::format("{}: contiguous= takes a Zipf exponent (got {}, expected contiguous=S, S >= 0)",
                    flag, value));
  }
  skew.expert_tokens = LoadExpertHistogramFile(value);
  skew.source = value;
  return skew;
}

cost::SequenceLengthHistogram ParseSequenceLengthHistogram(std::string_view text,
                                                           const std::string& source) {
  cost::SequenceLengthHistogram histogram;
  if (LooksLikeJson(text)) {
    const Json json = ParseJson(text, source);
    if (!json.is_object()) {
      throw InputError(
          fmt::format("{}: expected a JSON object with \"lengths\" and \"counts\" "
                      "(got {})",
                      source, json.type_name()));
    }
    for (const auto& [key, value] : json.items()) {
      if (key != "lengths" && key != "counts") {
        throw InputError(
            fmt::format("{}: {}: unknown key (expected lengths, counts)", source, key));
      }
    }
    for (const char* key : {"lengths", "counts"}) {
      if (!json.contains(key)) throw InputError(fmt::format("{}: {}: missing", source, key));
    }
    const std::vector<double> lengths = JsonNumbers(json.at("lengths"), "lengths", source);
    histogram.counts = JsonNumbers(json.at("counts"), "counts", source);
    if (lengths.size() != histogram.counts.size()) {
      throw InputError(
          fmt::format("{}: counts: expected as many entries as lengths (got {}, "
                      "expected {})",
                      source, histogram.counts.size(), lengths.size()));
    }
    for (size_t i = 0; i < lengths.size(); ++i) {
      if (!IsWhole(lengths[i]) || lengths[i] < 1 ||
          lengths[i] > static_cast<double>(kMaxSeqLength)) {
        throw InputError(fmt::format("{}: lengths[{}]: expected an integer >= 1 and <= {} (got {})",
                                     source, i, kMaxSeqLength, lengths[i]));
      }
      if (!IsCount(histogram.counts[i])) {
        throw InputError(fmt::format("{}: counts[{}]: expected a count >= 0 and <= 1e15 (got {})",
                                     source, i, histogram.counts[i]));
      }
      histogram.lengths.push_back(static_cast<int64_t>(lengths[i]));
    }
  } else {
    for (const CsvLine& line : DataLines(text)) {
      if (line.fields.size() != 2) {
        FailLine(source, line.line,
                 fmt::format("expected \"length,count\" (got {} fields)", line.fields.size()));
      }
      const int64_t length = IntegerField(line, line.fields[0], "length", 1, source);
      if (length > kMaxSeqLength) {
        FailLine(source, line.line,
                 fmt::format("length: expected an integer <= {} (got {})", kMaxSeqLength, length));
      }
      histogram.lengths.push_back(length);
      histogram.counts.push_back(CountField(line, line.fields[1], source));
    }
  }
  RequirePositiveTotal(histogram.counts, source);
  return histogram;
}

cost::SequenceLengthHistogram LoadSequenceLengthHistogramFile(const std::string& path) {
  return ParseSequenceLengthHistogram(ReadInputFile(path, "sequence-length distribution"), path);
}

}  // namespace trainscope::io
