// Renders the process groups of a RankMapping as text or JSON. Both renderers append directly to
// one reserved string: a million-rank world prints hundreds of megabytes, so no per-group JSON
// values or temporary lines are built.
#include "trainscope/report/groups_report.h"

#include <fmt/format.h>

#include <cstddef>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
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

// Bytes the whole-world listing takes at most: every rank of every kind printed with the
// widest rank's digits and a separator, plus a line head per group. Reserving it up front
// avoids the copies of a growing string (untouched reserved pages cost no memory).
std::size_t AllGroupsBytes(const RankMapping& mapping) {
  const int64_t world = mapping.sizes().world_size;
  const std::size_t digits = fmt::formatted_size("{}", world);
  const std::size_t kinds = config::AllGroupKinds().size();
  return kinds * static_cast<std::size_t>(world) * (digits + 1 + 24) + 4096;
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

void AppendTextAllGroups(const RankMapping& mapping, std::string& out) {
  for (const GroupKind kind : config::AllGroupKinds()) {
    const std::string name = config::ToString(kind);
    const std::vector<std::vector<int64_t>> groups = mapping.AllGroups(kind);
    fmt::format_to(std::back_inserter(out), "{}: {} groups of {}\n", name, groups.size(),
                   mapping.GroupSize(kind));
    for (std::size_t i = 0; i < groups.size(); ++i) {
      AppendGroupLine(name, static_cast<int64_t>(i), groups[i], out);
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

// "groups": each kind on one line, its value compact: a rank list (one rank) or a list of them.
void AppendJsonGroups(const RankMapping& mapping, std::optional<int64_t> rank, std::string& out) {
  out += '{';
  bool first = true;
  for (const GroupKind kind : config::AllGroupKinds()) {
    AppendKey(config::ToString(kind), 2, first, out);
    if (rank.has_value()) {
      AppendRankList(mapping.GroupOf(kind, *rank), out);
      continue;
    }
    const std::vector<std::vector<int64_t>> groups = mapping.AllGroups(kind);
    out += '[';
    for (std::size_t i = 0; i < groups.size(); ++i) {
      if (i > 0) out += ',';
      AppendRankList(groups[i], out);
    }
    out += ']';
  }
  out += first ? "}" : "\n  }";
}

}  // namespace

std::string RenderGroupsText(const RankMapping& mapping, std::optional<int64_t> rank) {
  CheckRank(mapping, rank);
  std::string out;
  if (rank.has_value()) {
    AppendTextHeader(mapping, out);
    AppendTextGroupsOfRank(mapping, *rank, out);
  } else {
    out.reserve(AllGroupsBytes(mapping));
    AppendTextHeader(mapping, out);
    AppendTextAllGroups(mapping, out);
  }
  return out;
}

std::string RenderGroupsJson(const RankMapping& mapping, std::optional<int64_t> rank) {
  CheckRank(mapping, rank);
  const config::ParallelSizes& sizes = mapping.sizes();
  std::string out;
  if (!rank.has_value()) out.reserve(AllGroupsBytes(mapping));
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
  AppendJsonGroups(mapping, rank, out);
  out += "\n}\n";
  return out;
}

}  // namespace trainscope::report
