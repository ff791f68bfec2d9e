// Renders the process groups of a RankMapping as text or JSON. Both renderers append to one
// buffer that is handed to the sink in pieces, and visit groups rank by rank: a 10^7-rank world
// prints gigabytes, so no group list, per-group JSON value or whole report is ever built.
#include "trainscope/report/groups_report.h"

#include <fmt/format.h>

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

// Collects report bytes and hands them to the sink in pieces of about kPieceBytes, so the
// rendering holds one piece however large the report. Finish() must be called at the end.
class PieceWriter {
 public:
  explicit PieceWriter(const ByteSink& sink) : sink_(sink) { buffer_.reserve(2 * kPieceBytes); }
  [[nodiscard]] std::string& out() { return buffer_; }
  // Passes the buffer on once it holds a full piece.
  void MaybeFlush() {
    if (buffer_.size() >= kPieceBytes) Finish();
  }
  void Finish() {
    if (!buffer_.empty()) sink_(buffer_);
    buffer_.clear();
  }

 private:
  static constexpr std::size_t kPieceBytes = std::size_t{64} << 10;
  const ByteSink& sink_;
  std::string buffer_;
};

void AppendInteger(int64_t value, std::string& out) {
  const fmt::format_int digits(value);
  out.append(digits.data(), digits.size());
}

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
  std::string& out = writer.out();
  for (const GroupKind kind : config::AllGroupKinds()) {
    const std::string name = config::ToString(kind);
    const config::GroupEnumerator groups = mapping.Groups(kind);
    fmt::format_to(std::back_inserter(out), "{}: {} groups of {}\n", name, groups.num_groups(),
                   groups.group_size());
    for (int64_t g = 0; g < groups.num_groups(); ++g) {
      out += name;  // "<kind>[<index>]:", appended piecewise: 10^7 ranks print 10^8 heads
      out += '[';
      AppendInteger(g, out);
      out += "]:";
      groups.ForEachMember(g, [&](int64_t member) {
        out += ' ';
        AppendInteger(member, out);
        writer.MaybeFlush();
      });
      out += '\n';
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
  std::string& out = writer.out();
  const config::GroupEnumerator groups = mapping.Groups(kind);
  out += '[';
  for (int64_t g = 0; g < groups.num_groups(); ++g) {
    out += g > 0 ? ",[" : "[";
    bool first = true;
    groups.ForEachMember(g, [&](int64_t member) {
      if (!first) out += ',';
      first = false;
      AppendInteger(member, out);
      writer.MaybeFlush();
    });
    out += ']';
  }
  out += ']';
}

// "groups": each kind on one line, its value compact: a rank list (one rank) or a list of them.
void AppendJsonGroups(const RankMapping& mapping, std::optional<int64_t> rank,
                      PieceWriter& writer) {
  std::string& out = writer.out();
  out += '{';
  bool first = true;
  for (const GroupKind kind : config::AllGroupKinds()) {
    AppendKey(config::ToString(kind), 2, first, out);
    if (rank.has_value()) {
      AppendRankList(mapping.GroupOf(kind, *rank), out);
    } else {
      AppendJsonAllGroups(mapping, kind, writer);
    }
  }
  out += first ? "}" : "\n  }";
}

}  // namespace

void StreamGroupsText(const RankMapping& mapping, std::optional<int64_t> rank,
                      const ByteSink& sink) {
  CheckRank(mapping, rank);
  PieceWriter writer(sink);
  AppendTextHeader(mapping, writer.out());
  if (rank.has_value()) {
    AppendTextGroupsOfRank(mapping, *rank, writer.out());
  } else {
    AppendTextAllGroups(mapping, writer);
  }
  writer.Finish();
}

void StreamGroupsJson(const RankMapping& mapping, std::optional<int64_t> rank,
                      const ByteSink& sink) {
  CheckRank(mapping, rank);
  const config::ParallelSizes& sizes = mapping.sizes();
  PieceWriter writer(sink);
  std::string& out = writer.out();
  bool first = true;
  out += '{';
  AppendKey("world_size", 1, first, out);
  fmt::format_to(std::back_inserter(out), "{}", sizes.world_size);
  AppendKey("order", 1, first, out);
  out += JsonString(config::ToString(sizes.order));
  AppendKey("sizes", 1, first, out);
  AppendJsonObject(SizeEntries(sizes), 2, out);
  if (rank.has_value()) {
    AppendKey("rank", 1, first, out);
    fmt::format_to(std::back_inserter(out), "{}", *rank);
    AppendKey("coordinates", 1, first, out);
    AppendJsonObject(CoordinateEntries(mapping.Coordinates(*rank)), 2, out);
  }
  AppendKey("groups", 1, first, out);
  AppendJsonGroups(mapping, rank, writer);
  out += "\n}\n";
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
