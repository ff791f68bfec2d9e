// The `trainscope groups` report: every Megatron-Core process group of a rank mapping (or only
// the groups of one rank) rendered as text or JSON. Pure functions returning strings; the caller
// owns the mapping and writes the result.
#ifndef TRAINSCOPE_REPORT_GROUPS_REPORT_H_
#define TRAINSCOPE_REPORT_GROUPS_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>

#include "trainscope/config/rank_mapping.h"

namespace trainscope::report {

// A human-readable listing: a header line (world size, rank order), a sizes line, then for each
// group kind in AllGroupKinds() order a line "<kind>: N groups of S" followed by one line per
// group, "<kind>[<index>]: <ranks>". With `rank` set, a coordinates line follows the sizes and
// each kind gets one line, the group containing `rank`. Ends with a newline; deterministic.
// Precondition: `rank`, if set, is in [0, world size) (checked).
[[nodiscard]] std::string RenderGroupsText(const config::RankMapping& mapping,
                                           std::optional<int64_t> rank);

// A JSON object {"world_size", "order", "sizes", "groups"} whose "groups" maps each kind's
// spelling (ToString(GroupKind)) to its list of rank lists. With `rank` set, "rank" and
// "coordinates" are added and each "groups" entry is the single rank list of the group that
// contains `rank` (empty for "embedding" when the rank holds no embedding copy). Keys keep a fixed
// order; the text ends with a newline. Precondition: as for RenderGroupsText.
[[nodiscard]] std::string RenderGroupsJson(const config::RankMapping& mapping,
                                           std::optional<int64_t> rank);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_GROUPS_REPORT_H_
