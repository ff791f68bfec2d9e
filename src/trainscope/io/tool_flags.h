// Internal to io/: the flag tables of trainscope's own options (model, output, hardware, memory,
// cost model, simulate) and of the `plan`, `weight-sync` and `rl` commands. AllFlags()
// (io/megatron_flags.h) joins them with the Megatron tables and attaches each flag's help.
#ifndef TRAINSCOPE_IO_TOOL_FLAGS_H_
#define TRAINSCOPE_IO_TOOL_FLAGS_H_

#include <vector>

#include "trainscope/io/megatron_flags.h"

namespace trainscope::io::internal {

// Each function returns its flags in a fixed order, without group, value name or help (those
// come from io/flag_docs.h).

// The tool's own flags: model, output, rank, format, GPU and cluster, memory, cost model, trace.
[[nodiscard]] std::vector<FlagSpec> ToolFlags();
// The planner's own flags (`trainscope plan`).
[[nodiscard]] std::vector<FlagSpec> PlannerFlags();
// `trainscope weight-sync`: the rollout layout and the transport.
[[nodiscard]] std::vector<FlagSpec> WeightSyncFlags();
// `trainscope rl`: the rollout, the log-prob passes and the loop (slime's spellings).
[[nodiscard]] std::vector<FlagSpec> RlStepFlags();

}  // namespace trainscope::io::internal

#endif  // TRAINSCOPE_IO_TOOL_FLAGS_H_
