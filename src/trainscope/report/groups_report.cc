// Renders the process groups of a RankMapping as text or JSON.
#include "trainscope/report/groups_report.h"

#include <cstddef>
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

std::string JoinNamedValues(const NamedValues& values) {
  std::string text;
  for (const auto& [name, value] : values) {
    if (!text.empty()) text += ' ';
    text += name;
    text += '=';
    text += std::to_string(value);
  }
  return text;
}

// "<kind>[<index>]: r0 r1 ...\n"
std::string GroupLine(GroupKind kind, int64_t index, const std::vector<int64_t>& group) {
  std::string line = config::ToString(kind) + "[" + std::to_string(index) + "]:";
  for (const int64_t member : group) {
    line += ' ';
    line += std::to_string(member);
  }
  return line + "\n";
}

std::string TextHeader(const RankMapping& mapping) {
  const config::ParallelSizes& sizes = mapping.sizes();
  return "world_size: " + std::to_string(sizes.world_size) +
         ", order: " + config::ToString(sizes.order) + "\n" +
         "sizes: " + JoinNamedValues(SizeEntries(sizes)) + "\n";
}

std::string TextAllGroups(const RankMapping& mapping) {
  std::string text;
  for (const GroupKind kind : config::AllGroupKinds()) {
    const std::vector<std::vector<int64_t>> groups = mapping.AllGroups(kind);
    text += config::ToString(kind) + ": " + std::to_string(groups.size()) + " groups of " +
            std::to_string(mapping.GroupSize(kind)) + "\n";
    for (std::size_t i = 0; i < groups.size(); ++i) {
      text += GroupLine(kind, static_cast<int64_t>(i), groups[i]);
    }
  }
  return text;
}

std::string TextGroupsOfRank(const RankMapping& mapping, int64_t rank) {
  std::string text = "rank " + std::to_string(rank) + ": " +
                     JoinNamedValues(CoordinateEntries(mapping.Coordinates(rank))) + "\n";
  for (const GroupKind kind : config::AllGroupKinds()) {
    const std::optional<int64_t> index = mapping.GroupIndexOf(kind, rank);
    if (!index.has_value()) {
      text += config::ToString(kind) + ": none (rank " + std::to_string(rank) +
              " is on a middle pipeline stage)\n";
      continue;
    }
    text += GroupLine(kind, *index, mapping.GroupOf(kind, rank));
  }
  return text;
}

nlohmann::ordered_json JsonObject(const NamedValues& values) {
  nlohmann::ordered_json object = nlohmann::ordered_json::object();
  for (const auto& [name, value] : values) object[name] = value;
  return object;
}

// Prints objects at depth 0 and 1 with one member per line and everything deeper compactly, so a
// group list stays on one line even for a 100k-rank world.
void AppendJson(const nlohmann::ordered_json& value, int depth, std::string& out) {
  if (!value.is_object() || value.empty() || depth >= 2) {
    out += value.dump();
    return;
  }
  const std::string indent(static_cast<std::size_t>(2 * (depth + 1)), ' ');
  out += "{\n";
  bool first = true;
  for (const auto& item : value.items()) {
    if (!first) out += ",\n";
    first = false;
    out += indent;
    out += nlohmann::ordered_json(item.key()).dump();
    out += ": ";
    AppendJson(item.value(), depth + 1, out);
  }
  out += '\n';
  out.append(static_cast<std::size_t>(2 * depth), ' ');
  out += '}';
}

}  // namespace

std::string RenderGroupsText(const RankMapping& mapping, std::optional<int64_t> rank) {
  CheckRank(mapping, rank);
  const std::string body =
      rank.has_value() ? TextGroupsOfRank(mapping, *rank) : TextAllGroups(mapping);
  return TextHeader(mapping) + body;
}

std::string RenderGroupsJson(const RankMapping& mapping, std::optional<int64_t> rank) {
  CheckRank(mapping, rank);
  const config::ParallelSizes& sizes = mapping.sizes();
  nlohmann::ordered_json json = nlohmann::ordered_json::object();
  json["world_size"] = sizes.world_size;
  json["order"] = config::ToString(sizes.order);
  json["sizes"] = JsonObject(SizeEntries(sizes));
  if (rank.has_value()) {
    json["rank"] = *rank;
    json["coordinates"] = JsonObject(CoordinateEntries(mapping.Coordinates(*rank)));
  }
  nlohmann::ordered_json groups = nlohmann::ordered_json::object();
  for (const GroupKind kind : config::AllGroupKinds()) {
    if (rank.has_value()) {
      groups[config::ToString(kind)] = mapping.GroupOf(kind, *rank);
    } else {
      groups[config::ToString(kind)] = mapping.AllGroups(kind);
    }
  }
  json["groups"] = std::move(groups);
  std::string out;
  AppendJson(json, 0, out);
  out += '\n';
  return out;
}

}  // namespace trainscope::report
