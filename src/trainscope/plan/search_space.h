// The planner's search space: every Megatron-Core layout of one model on one world size and
// batch that the planner considers (TP with SP, PP with its split options, VPP, CP, EP, ETP,
// the data-parallel wrapper, micro-batch size, recompute, MoE dispatcher, overlap flags), and
// the canonical Megatron flags of a layout. Pure: no I/O; the enumerator returns values.
#ifndef TRAINSCOPE_PLAN_SEARCH_SPACE_H_
#define TRAINSCOPE_PLAN_SEARCH_SPACE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "trainscope/config/enum_names.h"
#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"

namespace trainscope::plan {

// Which recompute settings the search may use (--allow-recompute): none = no recompute;
// selective = none or selective; full = none or full (uniform, 1 layer); any = all three.
enum class RecomputeAllowance { kNone, kSelective, kFull, kAny };
// What the ranking maximises (--objective).
enum class Objective { kThroughput, kMemoryHeadroom };

inline constexpr config::EnumName<RecomputeAllowance> kRecomputeAllowanceNames[] = {
    {RecomputeAllowance::kNone, "none"},
    {RecomputeAllowance::kSelective, "selective"},
    {RecomputeAllowance::kFull, "full"},
    {RecomputeAllowance::kAny, "any"}};
inline constexpr config::EnumName<Objective> kObjectiveNames[] = {
    {Objective::kThroughput, "throughput"}, {Objective::kMemoryHeadroom, "memory-headroom"}};

// Dimensions the user fixed (a Megatron flag on the plan command line, or --fix): every
// candidate keeps the base configuration's value of a pinned dimension.
struct Pins {
  bool tensor = false;             // --tensor-model-parallel-size
  bool sequence_parallel = false;  // --sequence-parallel
  bool pipeline = false;           // --pipeline-model-parallel-size
  bool split = false;              // --decoder-first/last-pipeline-num-layers, --account-for-*
  bool virtual_stages = false;     // --num-virtual-stages-per-pipeline-rank
  bool context = false;            // --context-parallel-size
  bool expert = false;             // --expert-model-parallel-size
  bool expert_tensor = false;      // --expert-tensor-parallel-size
  bool micro_batch = false;        // --micro-batch-size
  bool recompute = false;          // --recompute-*
  bool dispatcher = false;         // --moe-token-dispatcher-type
  bool grouped_gemm = false;       // --moe-grouped-gemm
  bool data_parallel = false;      // --use-distributed-optimizer, --use-megatron-fsdp
  bool dp_overlap = false;         // --overlap-grad-reduce, --overlap-param-gather
  bool tp_comm_overlap = false;    // --tp-comm-overlap
  friend bool operator==(const Pins&, const Pins&) = default;
};

struct SearchSpaceOptions {
  Pins pins;
  int64_t max_tensor = 8;  // --max-tp
  RecomputeAllowance recompute = RecomputeAllowance::kAny;
  // MoE dispatchers to try (--dispatchers); flex needs t·e > 1 (the validator rejects the rest).
  std::vector<config::TokenDispatcher> dispatchers = {config::TokenDispatcher::kAllToAll,
                                                      config::TokenDispatcher::kFlex};
  std::vector<int64_t> micro_batch_sizes = {1, 2, 4};
  // Also try Megatron-FSDP next to the distributed optimizer (off by default: pin
  // --use-megatron-fsdp to search FSDP layouts instead).
  bool megatron_fsdp = false;
};

// Every layout of the space for `model`, starting from `base` (world size, batch, precision,
// core version and every pinned dimension come from it). Layouts that cannot differ (the same
// canonical flags) appear once; the result is sorted by LayoutFlags. Layouts are not validated.
[[nodiscard]] std::vector<config::TrainingConfig> EnumerateLayouts(
    const config::ModelConfig& model, const config::TrainingConfig& base,
    const SearchSpaceOptions& options);

// The Megatron flags of the dimensions the planner chooses, in a fixed order, ready to paste
// into a launch next to --num-gpus, --global-batch-size and --seq-length: e.g.
// "--tensor-model-parallel-size 2 --sequence-parallel --pipeline-model-parallel-size 4
// --micro-batch-size 1 --use-distributed-optimizer --overlap-grad-reduce ...". Two layouts with
// the same flags are the same layout.
[[nodiscard]] std::string LayoutFlags(const config::ModelConfig& model,
                                      const config::TrainingConfig& training);

}  // namespace trainscope::plan

#endif  // TRAINSCOPE_PLAN_SEARCH_SPACE_H_
