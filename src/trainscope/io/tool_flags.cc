#include "trainscope/io/tool_flags.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/config/enum_names.h"
#include "trainscope/cost/weight_sync.h"
#include "trainscope/error.h"
#include "trainscope/io/flag_parsing.h"
#include "trainscope/io/input_ranges.h"
#include "trainscope/plan/search_space.h"

namespace trainscope::io::internal {
namespace {

// --memory-nccl-mib-per-communicator.
constexpr NumberRange kNcclMibRange{1e-3, 1e6};
// --comm-memory-guard-us (strictly positive: a check takes time).
constexpr NumberRange kGuardMicrosecondsRange{1e-3, 1e6};
// `rl`: samples per prompt, tokens of a prompt or response, and the KL coefficient.
constexpr int64_t kMaxRlSamples = 1'000'000;
constexpr int64_t kMaxRlTokens = 10'000'000;
constexpr NumberRange kRlTokensRange{1.0, 1e7};
constexpr NumberRange kKlCoefRange{0.0, 1e6};
// --bucket-mib: at most 1 TiB per bucket.
constexpr int64_t kMaxBucketMib = int64_t{1} << 20;

}  // namespace

std::vector<FlagSpec> ToolFlags() {
  using R = CliRequest;
  return {
      {{"--model"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) { r.model_name = use.values.front(); }},
      {{"--model-config"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) { r.model_config_path = PathValue(use); }},
      Switch({"--json"}, false, [](R& r) -> bool& { return r.json; }),
      {{"--rank"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) {
         r.rank = ParseInteger(use, use.values.front(), 0, kMaxWorldSize - 1);
       }},
      {{"--output", "-o"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) { r.output_path = PathValue(use); }},
      {{"--format"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) {
         const std::string& format = use.values.front();
         if (format != "json" && format != "aicb" && format != "simai" && format != "chakra") {
           throw UsageError(
               fmt::format("--format: unknown value \"{}\" (expected json|aicb|simai|chakra)",
                           Shortened(format)));
         }
         r.format = format;
       }},
      Switch({"--summary"}, false, [](R& r) -> bool& { return r.summary; }),
      {{"--gpu"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) { r.hardware.gpu = use.values.front(); }},
      Number({"--memory-cuda-context-gib"}, false, kMemoryGibRange,
             [](R& r) -> std::optional<double>& { return r.memory.cuda_context_gib; }),
      Number({"--memory-nccl-mib-per-communicator"}, false, kNcclMibRange,
             [](R& r) -> std::optional<double>& { return r.memory.nccl_mib_per_communicator; }),
      {{"--memory-fragmentation"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) { r.memory.fragmentation_fraction = ParseFraction(use); }},
      Path({"--cluster"},
           [](R& r) -> std::optional<std::string>& { return r.hardware.cluster_path; }),
      {{"--gpus-per-node"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) {
         r.hardware.gpus_per_node = ParseInteger(use, use.values.front(), 1, kMaxWorldSize);
       }},
      {{"--nvlink-domain"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) {
         r.hardware.nvlink_domain = ParseInteger(use, use.values.front(), 1, kMaxWorldSize);
       }},
      Number({"--scale-out-gbps"}, false, kLinkBandwidthRange,
             [](R& r) -> std::optional<double>& { return r.hardware.scale_out_gbps; }),
      Number({"--scale-out-latency-us"}, false, kLatencyMicrosecondsRange,
             [](R& r) -> std::optional<double>& { return r.hardware.scale_out_latency_us; }),
      Text({"--scale-out-fabric"},
           [](R& r) -> std::optional<std::string>& { return r.hardware.scale_out_fabric; }),
      Path({"--calibration"},
           [](R& r) -> std::optional<std::string>& { return r.cost.calibration_path; }),
      Text({"--qwen-gdn-backend"},
           [](R& r) -> std::optional<std::string>& { return r.cost.gdn_backend; }),
      Text({"--moe-routing-skew"},
           [](R& r) -> std::optional<std::string>& { return r.memory.routing_skew; }),
      Path({"--seq-length-distribution"},
           [](R& r) -> std::optional<std::string>& {
             return r.simulate.seq_length_distribution_path;
           }),
      {{"--comm-memory-guard"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) {
         const std::string& mode = use.values.front();
         if (mode != "all" && mode != "selected" && mode != "off") {
           throw UsageError(
               fmt::format("--comm-memory-guard: unknown value \"{}\" (expected all|selected|off)",
                           Shortened(mode)));
         }
         r.cost.comm_memory_guard = mode;
       }},
      Number({"--comm-memory-guard-us"}, false, kGuardMicrosecondsRange,
             [](R& r) -> std::optional<double>& { return r.cost.comm_memory_guard_us; }),
      {{"--overlap-interference"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) { r.cost.interference = ParseFraction(use); }},
      Path({"--trace"}, [](R& r) -> std::optional<std::string>& { return r.simulate.trace_path; }),
  };
}

std::vector<FlagSpec> PlannerFlags() {
  using R = CliRequest;
  return {
      {{"--fix"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) { r.plan.fixes.push_back(use.values.front()); }},
      {{"--max-tp"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) { r.plan.max_tp = Size(use, kMaxWorldSize); }},
      {{"--allow-recompute"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) {
         r.plan.allow_recompute =
             ParseEnum(use, use.values.front(), plan::kRecomputeAllowanceNames);
       }},
      {{"--dispatchers"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) {
         std::vector<config::TokenDispatcher> dispatchers;
         const std::string& text = use.values.front();
         for (size_t start = 0; start <= text.size();) {
           const size_t comma = std::min(text.find(',', start), text.size());
           dispatchers.push_back(
               ParseEnum(use, text.substr(start, comma - start), config::kDispatcherNames));
           start = comma + 1;
         }
         r.plan.dispatchers = dispatchers;
       }},
      {{"--objective"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) {
         r.plan.objective = ParseEnum(use, use.values.front(), plan::kObjectiveNames);
       }},
      {{"--top"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) { r.plan.top = Size(use, kMaxInteger); }},
      {{"--csv"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) { r.plan.csv_path = use.values.front(); }},
      {{"--explain"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) { r.plan.explain_rank = Size(use, kMaxInteger); }},
      {{"--compare"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) { r.plan.compare = use.values.front(); }},
      {{"--threads"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) { r.plan.threads = Size(use, 1024); }},
  };
}

std::vector<FlagSpec> WeightSyncFlags() {
  using R = CliRequest;
  return {
      {{"--rollout-gpus"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) { r.weight_sync.rollout_gpus = Size(use, kMaxWorldSize); }},
      {{"--rollout-tp"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) { r.weight_sync.rollout_tp = Size(use, kMaxWorldSize); }},
      {{"--rollout-ep"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) { r.weight_sync.rollout_ep = Size(use, kMaxWorldSize); }},
      Switch({"--colocate"}, false, [](R& r) -> bool& { return r.weight_sync.colocate; }),
      {{"--transport"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) {
         r.weight_sync.transport = ParseEnum(use, use.values.front(), cost::kSyncTransportNames);
       }},
      {{"--bucket-mib"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) { r.weight_sync.bucket_mib = Size(use, kMaxBucketMib); }},
      {{"--rollout-dtype"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) {
         r.weight_sync.dtype = ParseEnum(use, use.values.front(), cost::kRolloutDtypeNames);
       }},
  };
}

std::vector<FlagSpec> RlStepFlags() {
  using R = CliRequest;
  return {
      {{"--rollout-batch-size"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) { r.rl.rollout_batch_size = Size(use, kMaxInteger); }},
      {{"--n-samples-per-prompt"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) { r.rl.samples_per_prompt = Size(use, kMaxRlSamples); }},
      {{"--rollout-max-response-len"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) { r.rl.max_response_len = Size(use, kMaxRlTokens); }},
      Number({"--rollout-mean-response-len"}, false, kRlTokensRange,
             [](R& r) -> std::optional<double>& { return r.rl.mean_response_len; }),
      {{"--rollout-prompt-len"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) {
         r.rl.prompt_len = ParseInteger(use, use.values.front(), 0, kMaxRlTokens);
       }},
      Number({"--sglang-mem-fraction-static"}, false, kFlagFractionRange,
             [](R& r) -> double& { return r.rl.mem_fraction_static; }),
      Switch({"--use-kl-loss"}, false, [](R& r) -> bool& { return r.rl.use_kl_loss; }),
      {{"--ppo-n-minibatches"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) { r.rl.ppo_n_minibatches = Size(use, kMaxRlSamples); }},
      {{"--ppo-mini-batch-size"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) { r.rl.ppo_mini_batch_size = Size(use, kMaxRlSamples); }},
      {{"--ppo-epochs"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) { r.rl.ppo_epochs = Size(use, kMaxRlSamples); }},
      Number({"--kl-coef"}, false, kKlCoefRange, [](R& r) -> double& { return r.rl.kl_coef; }),
      Switch({"--use-rollout-logprobs"}, false,
             [](R& r) -> bool& { return r.rl.use_rollout_logprobs; }),
      Switch({"--rl-async"}, false, [](R& r) -> bool& { return r.rl.async; }),
      Switch({"--critic"}, false, [](R& r) -> bool& { return r.rl.critic; }),
      Switch({"--teacher-log-probs"}, false, [](R& r) -> bool& { return r.rl.teacher_log_probs; }),
      {{"--log-prob-max-token-len-per-gpu"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) {
         r.rl.log_prob_max_token_len_per_gpu = Size(use, kMaxRlTokens);
       }},
  };
}

}  // namespace trainscope::io::internal
