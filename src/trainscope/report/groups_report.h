// The `trainscope groups` report: every Megatron-Core process group of a rank mapping (or only
// the groups of one rank) rendered as text or JSON. Pure functions: the Stream* forms hand the
// bytes to a sink in chunks of bounded size (a 10^7-rank world prints gigabytes), the Render*
// forms return them as one string. The caller owns the mapping and the sink.
#ifndef TRAINSCOPE_REPORT_GROUPS_REPORT_H_
#define TRAINSCOPE_REPORT_GROUPS_REPORT_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "trainscope/config/rank_mapping.h"

namespace trainscope::report {

// Receives consecutive pieces of a report; their concatenation is the report. It may throw (an
// I/O failure), which ends the rendering.
using ByteSink = std::function<void(std::string_view)>;

// A human-readable listing: a header line (world size, rank order), a sizes line, then for each
// group kind in AllGroupKinds() order a line "<kind>: N groups of S" followed by one line per
// group, "<kind>[<index>]: <ranks>". With `rank` set, a coordinates line follows the sizes and
// each kind gets one line, the group containing `rank`. Ends with a newline; deterministic.
// Precondition: `rank`, if set, is in [0, world size) (checked).
// Memory used is independent of the world size: groups are visited rank by rank and pieces are
// at most about 64 KiB.
void StreamGroupsText(const config::RankMapping& mapping, std::optional<int64_t> rank,
                      const ByteSink& sink);
[[nodiscard]] std::string RenderGroupsText(const config::RankMapping& mapping,
                                           std::optional<int64_t> rank);

// A JSON object {"world_size", "order", "sizes", "groups"} whose "groups" maps each kind's
// spelling (ToString(GroupKind)) to its list of rank lists. With `rank` set, "rank" and
// "coordinates" are added and each "groups" entry is the single rank list of the group that
// contains `rank` (empty for "embedding" when the rank holds no embedding copy). Keys keep a fixed
// order; the text ends with a newline. Precondition: as for RenderGroupsText. Streamed as
// StreamGroupsText is.
void StreamGroupsJson(const config::RankMapping& mapping, std::optional<int64_t> rank,
                      const ByteSink& sink);
[[nodiscard]] std::string RenderGroupsJson(const config::RankMapping& mapping,
                                           std::optional<int64_t> rank);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_GROUPS_REPORT_H_
