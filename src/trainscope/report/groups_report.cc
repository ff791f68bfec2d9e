// Renders the process groups of a RankMapping as text or JSON. Both renderers append to one
// buffer that is handed to the sink in pieces, and visit groups rank by rank: a 10^7-rank world
// prints gigabytes, so no group list, per-group JSON value or whole report is ever built.
#include "trainscope/report/groups_report.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainscope/config/rank_mapping.h"
#include "trainscope/config/training_config.h"
#include "trainscope/error.h"

namespace trainscope::report {
namespace {

using config::GroupKind;
using config::RankMapping;

// (name, value) pairs in the fixed report order tp, cp, pp, dp, ep, etp, edp.
using NamedValues = std::vector<std::pair<std::string, int64_t>>;

NamedValues SizeEntries(const config::ParallelSizes& sizes) {
  return {{"tp", sizes.tensor},       {"cp", sizes.context}, {"pp", sizes.pipeline},
          {"dp", sizes.Data()},       {"ep", sizes.expert},  {"etp", sizes.ExpertTensor()},
          {"edp", sizes.ExpertData()}};
}

NamedValues CoordinateEntries(const config::RankCoordinates& c) {
  return {{"tp", c.tp}, {"cp", c.cp},   {"pp", c.pp},  {"dp", c.dp},
          {"ep", c.ep}, {"etp", c.etp}, {"edp", c.edp}};
}

void CheckRank(const RankMapping& mapping, std::optional<int64_t> rank) {
  TRAINSCOPE_CHECK(!rank.has_value() || (*rank >= 0 && *rank < mapping.sizes().world_size),
                   "report rank outside the world");
}

// Collects report bytes in a fixed buffer and hands them to the sink in pieces of about
// kPieceBytes, so the rendering holds one piece however large the report. Integers are
// formatted in place: a 10^7-rank listing appends 10^8 of them. Finish() must be called at the
// end.
class PieceWriter {
 public:
  explicit PieceWriter(const ByteSink& sink) : sink_(sink), buffer_(kPieceBytes + kSlackBytes) {}
  void Append(std::string_view bytes) {
    if (used_ + bytes.size() > buffer_.size()) Flush();
    if (bytes.size() > buffer_.size()) {
      sink_(bytes);
      return;
    }
    std::copy(bytes.begin(), bytes.end(), buffer_.begin() + static_cast<std::ptrdiff_t>(used_));
    used_ += bytes.size();
  }
  void Append(char c) {
    if (used_ == buffer_.size()) Flush();
    buffer_[used_++] = c;
  }
  void AppendInteger(int64_t value) {
    if (used_ + kSlackBytes > buffer_.size()) Flush();
    char* const begin = buffer_.data() + used_;
    used_ += static_cast<std::size_t>(fmt::format_to(begin, FMT_COMPILE("{}"), value) - begin);
  }
  // Passes the buffer on once it holds a full piece.
  void MaybeFlush() {
    if (used_ >= kPieceBytes) Flush();
  }
  void Finish() { Flush(); }

 private:
  static constexpr std::size_t kPieceBytes = std::size_t{64} << 10;
  static constexpr std::size_t kSlackBytes = 32;  // more than any int64_t's digits and sign
  void Flush() {
    if (used_ > 0) sink_(std::string_view(buffer_.data(), used_));
    used_ = 0;
  }

  const ByteSink& sink_;
  std::vector<char> buffer_;
  std::size_t used_ = 0;
};

void AppendNamedValues(const NamedValues& values, std::string& out) {
  bool first = true;
  for (const auto& [name, value] : values) {
    if (!first) out += ' ';
    first = false;
    fmt::format_to(std::back_inserter(out), "{}={}", name, value);
  }
}

// "<kind>[<index>]: r0 r1 ...\n"
void AppendGroupLine(const std::string& kind, int64_t index, const std::vector<int64_t>& group,
                     std::string& out) {
  fmt::format_to(std::back_inserter(out), "{}[{}]:", kind, index);
  for (const int64_t member : group) fmt::format_to(std::back_inserter(out), " {}", member);
  out += '\n';
}

void AppendTextHeader(const RankMapping& mapping, std::string& out) {
  const config::ParallelSizes& sizes = mapping.sizes();
  fmt::format_to(std::back_inserter(out), "world_size: {}, order: {}\nsizes: ", sizes.world_size,
                 config::ToString(sizes.order));
  AppendNamedValues(SizeEntries(sizes), out);
  out += '\n';
}

// Every group of every kind, one line each, flushed member by member (a group can hold the
// whole world).
void AppendTextAllGroups(const RankMapping& mapping, PieceWriter& writer) {
  for (const GroupKind kind : config::AllGroupKinds()) {
    const std::string name = config::ToString(kind);
    const std::string head = name + "[";  // "<kind>[<index>]:"
    const config::GroupEnumerator groups = mapping.Groups(kind);
    writer.Append(
        fmt::format("{}: {} groups of {}\n", name, groups.num_groups(), groups.group_size()));
    for (int64_t g = 0; g < groups.num_groups(); ++g) {
      writer.Append(head);
      writer.AppendInteger(g);
      writer.Append("]:");
      groups.ForEachMember(g, [&](int64_t member) {
        writer.Append(' ');
        writer.AppendInteger(member);
        writer.MaybeFlush();
      });
      writer.Append('\n');
    }
  }
}

void AppendTextGroupsOfRank(const RankMapping& mapping, int64_t rank, std::string& out) {
  fmt::format_to(std::back_inserter(out), "rank {}: ", rank);
  AppendNamedValues(CoordinateEntries(mapping.Coordinates(rank)), out);
  out += '\n';
  for (const GroupKind kind : config::AllGroupKinds()) {
    const std::string name = config::ToString(kind);
    const std::optional<int64_t> index = mapping.GroupIndexOf(kind, rank);
    if (!index.has_value()) {
      fmt::format_to(std::back_inserter(out), "{}: none (rank {} is on a middle pipeline stage)\n",
                     name, rank);
      continue;
    }
    AppendGroupLine(name, *index, mapping.GroupOf(kind, rank), out);
  }
}

// A JSON string literal (names here are fixed identifiers; escaping kept for safety).
std::string JsonString(const std::string& text) { return nlohmann::json(text).dump(); }

// A member of a multi-line object: "\n<indent>"key": " with a comma before all but the first.
void AppendKey(const std::string& key, int depth, bool& first, std::string& out) {
  out += first ? "\n" : ",\n";
  first = false;
  out.append(static_cast<std::size_t>(2 * depth), ' ');
  out += JsonString(key);
  out += ": ";
}

// {"tp": 1, ...} with one member per line at `depth` (1), closing brace at depth - 1.
void AppendJsonObject(const NamedValues& values, int depth, std::string& out) {
  out += '{';
  bool first = true;
  for (const auto& [name, value] : values) {
    AppendKey(name, depth, first, out);
    fmt::format_to(std::back_inserter(out), "{}", value);
  }
  out += '\n';
  out.append(static_cast<std::size_t>(2 * (depth - 1)), ' ');
  out += '}';
}

// A compact JSON array of ranks: [0,1,2].
void AppendRankList(const std::vector<int64_t>& ranks, std::string& out) {
  out += '[';
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) out += ',';
    fmt::format_to(std::back_inserter(out), "{}", ranks[i]);
  }
  out += ']';
}

// Every group of `kind` as a compact list of rank lists, flushed member by member.
void AppendJsonAllGroups(const RankMapping& mapping, GroupKind kind, PieceWriter& writer) {
  const config::GroupEnumerator groups = mapping.Groups(kind);
  writer.Append('[');
  for (int64_t g = 0; g < groups.num_groups(); ++g) {
    writer.Append(g > 0 ? ",[" : "[");
    bool first = true;
    groups.ForEachMember(g, [&](int64_t member) {
      if (!first) writer.Append(',');
      first = false;
      writer.AppendInteger(member);
      writer.MaybeFlush();
    });
    writer.Append(']');
  }
  writer.Append(']');
}

// "groups": each kind on one line, its value compact: a rank list (one rank) or a list of them.
void AppendJsonGroups(const RankMapping& mapping, std::optional<int64_t> rank,
                      PieceWriter& writer) {
  writer.Append('{');
  bool first = true;
  for (const GroupKind kind : config::AllGroupKinds()) {
    std::string member;
    AppendKey(config::ToString(kind), 2, first, member);
    if (rank.has_value()) AppendRankList(mapping.GroupOf(kind, *rank), member);
    writer.Append(member);
    if (!rank.has_value()) AppendJsonAllGroups(mapping, kind, writer);
  }
  writer.Append(first ? "}" : "\n  }");
}

}  // namespace

void StreamGroupsText(const RankMapping& mapping, std::optional<int64_t> rank,
                      const ByteSink& sink) {
  CheckRank(mapping, rank);
  PieceWriter writer(sink);
  std::string head;
  AppendTextHeader(mapping, head);
  if (rank.has_value()) AppendTextGroupsOfRank(mapping, *rank, head);
  writer.Append(head);
  if (!rank.has_value()) AppendTextAllGroups(mapping, writer);
  writer.Finish();
}

void StreamGroupsJson(const RankMapping& mapping, std::optional<int64_t> rank,
                      const ByteSink& sink) {
  CheckRank(mapping, rank);
  const config::ParallelSizes& sizes = mapping.sizes();
  std::string head;
  bool first = true;
  head += '{';
  AppendKey("world_size", 1, first, head);
  fmt::format_to(std::back_inserter(head), "{}", sizes.world_size);
  AppendKey("order", 1, first, head);
  head += JsonString(config::ToString(sizes.order));
  AppendKey("sizes", 1, first, head);
  AppendJsonObject(SizeEntries(sizes), 2, head);
  if (rank.has_value()) {
    AppendKey("rank", 1, first, head);
    fmt::format_to(std::back_inserter(head), "{}", *rank);
    AppendKey("coordinates", 1, first, head);
    AppendJsonObject(CoordinateEntries(mapping.Coordinates(*rank)), 2, head);
  }
  AppendKey("groups", 1, first, head);
  PieceWriter writer(sink);
  writer.Append(head);
  AppendJsonGroups(mapping, rank, writer);
  writer.Append("\n}\n");
  writer.Finish();
}

std::string RenderGroupsText(const RankMapping& mapping, std::optional<int64_t> rank) {
  std::string text;
  StreamGroupsText(mapping, rank, [&text](std::string_view piece) { text += piece; });
  return text;
}

std::string RenderGroupsJson(const RankMapping& mapping, std::optional<int64_t> rank) {
  std::string text;
  StreamGroupsJson(mapping, rank, [&text](std::string_view piece) { text += piece; });
  return text;
}

}  // namespace trainscope::report
