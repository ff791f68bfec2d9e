// Command-line parsing: the trainscope command, its own options, and Megatron-LM launch flags
// accepted verbatim (plus short aliases). Megatron flags trainscope does not model are accepted
// and reported back as ignored; unknown flags are usage errors. Architecture flags
// (--num-layers, --hidden-size, ...) are kept so the caller can check them against the model.
#ifndef TRAINSCOPE_IO_MEGATRON_ARGS_H_
#define TRAINSCOPE_IO_MEGATRON_ARGS_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"
#include "trainscope/cost/weight_sync.h"
#include "trainscope/plan/search_space.h"

namespace trainscope::io {

// A Megatron architecture flag with an integer value (e.g. --num-layers 94).
struct ArchitectureFlag {
  std::string flag;
  int64_t value = 0;
};

// A model-describing switch or named value (--attention-output-gate,
// --experimental-attention-variant gated_delta_net); `value` is empty for a switch.
struct ModelFeatureFlag {
  std::string flag;
  std::string value;
};

// The flag groups a command accepts (apps/trainscope/commands.cc). A flag of a group the
// command does not accept is a usage error naming the command.
enum class FlagGroup {
  kModel,       // --model, --model-config
  kOutput,      // --json, -o/--output
  kRank,        // --rank
  kTraining,    // Megatron-LM parallel, batch and training flags, architecture and ignored flags
  kWorkload,    // --format, --summary
  kGpu,         // --gpu
  kCluster,     // --cluster, --gpus-per-node, --nvlink-domain, --scale-out-gbps/-latency-us/-fabric
  kMemory,      // --memory-cuda-context-gib, --memory-nccl-mib-per-communicator,
                // --memory-fragmentation, --moe-routing-skew
  kCostModel,   // --calibration, --qwen-gdn-backend, --comm-memory-guard[-us],
                // --overlap-interference
  kSimulate,    // --seq-length-distribution, --trace
  kPlan,        // --fix, --max-tp, --allow-recompute, --dispatchers, --objective, --top, --csv,
                // --explain, --compare, --threads
  kWeightSync,  // --rollout-gpus, --rollout-tp, --rollout-ep, --colocate, --transport,
                // --bucket-mib, --rollout-dtype
  kRl,          // --rollout-batch-size, --n-samples-per-prompt, --rollout-max-response-len, ...
};
inline constexpr FlagGroup kAllFlagGroups[] = {
    FlagGroup::kModel,     FlagGroup::kOutput,   FlagGroup::kRank,    FlagGroup::kTraining,
    FlagGroup::kWorkload,  FlagGroup::kGpu,      FlagGroup::kCluster, FlagGroup::kMemory,
    FlagGroup::kCostModel, FlagGroup::kSimulate, FlagGroup::kPlan,    FlagGroup::kWeightSync,
    FlagGroup::kRl};

// The heading of a group in `trainscope help CMD`.
[[nodiscard]] std::string_view FlagGroupTitle(FlagGroup group);

// Hardware flags (kGpu, kCluster); unset = the documented default.
struct HardwareFlags {
  std::optional<std::string> gpu;               // --gpu (the cluster file may set it; else H100)
  std::optional<std::string> cluster_path;      // --cluster FILE (YAML or JSON)
  std::optional<int64_t> gpus_per_node;         // --gpus-per-node
  std::optional<int64_t> nvlink_domain;         // --nvlink-domain
  std::optional<double> scale_out_gbps;         // --scale-out-gbps (Gbit/s per GPU)
  std::optional<double> scale_out_latency_us;   // --scale-out-latency-us
  std::optional<std::string> scale_out_fabric;  // --scale-out-fabric ib|roce|efa
};

// Memory-model flags (kMemory).
struct MemoryFlags {
  std::optional<double> cuda_context_gib;           // --memory-cuda-context-gib
  std::optional<double> nccl_mib_per_communicator;  // --memory-nccl-mib-per-communicator
  std::optional<double> fragmentation_fraction;     // --memory-fragmentation
  std::optional<std::string> routing_skew;          // --moe-routing-skew EXPONENT|FILE
};

// Cost-model flags (kCostModel).
struct CostModelFlags {
  std::optional<std::string> calibration_path;   // --calibration FILE
  std::optional<std::string> gdn_backend;        // --qwen-gdn-backend fla|flashqla
  std::optional<std::string> comm_memory_guard;  // --comm-memory-guard all|selected|off
  std::optional<double> comm_memory_guard_us;    // --comm-memory-guard-us
  std::optional<double> interference;            // --overlap-interference
};

// Simulate-only flags (kSimulate).
struct SimulateFlags {
  std::optional<std::string> seq_length_distribution_path;  // --seq-length-distribution FILE
  std::optional<std::string> trace_path;                    // --trace PATH
};

// Planner flags (kPlan).
struct PlanFlags {
  std::vector<std::string> fixes;  // --fix FLAG=VALUE, applied as the Megatron flag FLAG
  std::optional<int64_t> max_tp;   // --max-tp
  std::optional<plan::RecomputeAllowance> allow_recompute;          // --allow-recompute
  std::optional<std::vector<config::TokenDispatcher>> dispatchers;  // --dispatchers a,b
  plan::Objective objective = plan::Objective::kThroughput;         // --objective
  int64_t top = 10;                                                 // --top K
  std::optional<std::string> csv_path;                              // --csv PATH
  std::optional<int64_t> explain_rank;                              // --explain RANK
  std::optional<std::string> compare;  // --compare "FLAGS" or "@FILE" (read by the runner)
  std::optional<int64_t> threads;      // --threads N (default: hardware concurrency)
};

// Weight-sync flags (kWeightSync); --rollout-gpus and --rollout-tp are required by the command.
struct WeightSyncFlags {
  std::optional<int64_t> rollout_gpus;                         // --rollout-gpus
  std::optional<int64_t> rollout_tp;                           // --rollout-tp
  int64_t rollout_ep = 1;                                      // --rollout-ep
  bool colocate = false;                                       // --colocate
  cost::SyncTransport transport = cost::SyncTransport::kNccl;  // --transport
  std::optional<int64_t> bucket_mib;                           // --bucket-mib
  cost::RolloutDtype dtype = cost::RolloutDtype::kBf16;        // --rollout-dtype
};

// slime's dynamic-batching flags as given (kTraining); ParseCommandLine applies them to
// training.batch (see there).
struct DynamicBatchFlags {
  bool enabled = false;                             // --use-dynamic-batch-size
  std::optional<int64_t> max_tokens_per_gpu;        // --max-tokens-per-gpu
  std::optional<int64_t> data_pad_size_multiplier;  // --data-pad-size-multiplier
};

// RL-step flags (kRl), spelled as slime's launch arguments where slime has them.
struct RlFlags {
  std::optional<int64_t> rollout_batch_size;              // --rollout-batch-size (prompts)
  int64_t samples_per_prompt = 1;                         // --n-samples-per-prompt
  std::optional<int64_t> max_response_len;                // --rollout-max-response-len
  std::optional<double> mean_response_len;                // --rollout-mean-response-len
  int64_t prompt_len = 512;                               // --rollout-prompt-len
  double mem_fraction_static = 0.8;                       // --sglang-mem-fraction-static
  bool use_kl_loss = false;                               // --use-kl-loss
  double kl_coef = 0;                                     // --kl-coef
  bool use_rollout_logprobs = false;                      // --use-rollout-logprobs
  bool async = false;                                     // --rl-async
  bool critic = false;                                    // --critic (PPO critic passes)
  bool teacher_log_probs = false;                         // --teacher-log-probs
  std::optional<int64_t> log_prob_max_token_len_per_gpu;  // --log-prob-max-token-len-per-gpu
  // Optimizer steps per RL step in AReaL and verl (study::RlTraining).
  std::optional<int64_t> ppo_n_minibatches;    // --ppo-n-minibatches (AReaL actor.*)
  std::optional<int64_t> ppo_mini_batch_size;  // --ppo-mini-batch-size, prompts (verl actor.*)
  int64_t ppo_epochs = 1;                      // --ppo-epochs (verl actor.*)
};

struct CliRequest {
  std::string command;                           // the first argument
  std::optional<std::string> model_name;         // --model
  std::optional<std::string> model_config_path;  // --model-config
  config::TrainingConfig training;
  bool parallel_flags_given = false;                // any parallel / batch flag present
  bool world_size_given = false;                    // --num-gpus present
  std::optional<int64_t> layers_per_virtual_stage;  // --num-layers-per-virtual-pipeline-stage
  std::vector<ArchitectureFlag> architecture_flags;
  std::vector<ModelFeatureFlag> feature_flags;
  bool json = false;                       // --json
  std::optional<std::string> output_path;  // -o / --output
  std::optional<int64_t> rank;             // --rank
  std::string format = "json";             // workload: --format
  bool summary = false;                    // workload: --summary
  bool help = false;                       // --help / -h after the command
  HardwareFlags hardware;
  MemoryFlags memory;
  CostModelFlags cost;
  SimulateFlags simulate;
  PlanFlags plan;
  WeightSyncFlags weight_sync;
  DynamicBatchFlags dynamic_batch;
  RlFlags rl;
  // First names of the Megatron parallel and training flags given (directly or by --fix), in
  // order: the dimensions `plan` keeps fixed.
  std::vector<std::string> given_flags;
  std::vector<std::string> ignored_flags;  // accepted Megatron flags without effect here
};

// Parses argv[1..]: the command, then its flags. Throws UsageError naming the flag for unknown
// flags (with a did-you-mean suggestion), flags of a group outside `accepted` (naming the
// command), missing or malformed values and out-of-range sizes. When --num-gpus is absent the
// world size is the smallest that fits both grids: lcm(t·c·p·d, u·e·p) with d = --dp or 1.
// The framework profile's defaults (config::WithFrameworkDefaults) fill unset values first.
// slime's dynamic batching (slime/utils/arguments.py): --use-dynamic-batch-size needs
// --max-tokens-per-gpu and --framework slime, and lists a given --micro-batch-size as ignored
// (b = 1); without it --max-tokens-per-gpu and --data-pad-size-multiplier are listed as
// ignored, as slime reads neither then. Violations are InputError naming the flag.
[[nodiscard]] CliRequest ParseCommandLine(std::span<const std::string> args,
                                          std::span<const FlagGroup> accepted = kAllFlagGroups);

// Applies further Megatron training flags (`tokens`, e.g. the layout of `plan --compare`) over
// `request`, later flags overriding earlier ones. Throws UsageError as ParseCommandLine does.
void ApplyTrainingFlags(std::span<const std::string> tokens, CliRequest& request);

// One line per accepted flag of `group` ("  --flag VALUE   help (default ...)"), in table order.
[[nodiscard]] std::string FlagHelp(FlagGroup group);

// Completes the request with facts that need the model: --num-layers-per-virtual-pipeline-stage
// becomes a VPP size, and every architecture and model-feature flag must agree with the model.
// A flag that describes no part of the model (--ffn-hidden-size on a model without dense
// layers, --linear-attention-freq as a Python list) joins the ignored flags. Throws InputError
// naming the flag on a contradiction.
void ApplyModelDependentFlags(const config::ModelConfig& model, CliRequest& request);

}  // namespace trainscope::io

#endif  // TRAINSCOPE_IO_MEGATRON_ARGS_H_
