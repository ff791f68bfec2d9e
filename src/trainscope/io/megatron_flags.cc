#include "trainscope/io/megatron_flags.h"

#include <fmt/format.h>

#include <algorithm>
#include <span>

#include "trainscope/config/enum_names.h"
#include "trainscope/config/pipeline_layout.h"
#include "trainscope/cost/weight_sync.h"
#include "trainscope/error.h"
#include "trainscope/io/flag_parsing.h"
#include "trainscope/io/input_ranges.h"

namespace trainscope::io::internal {
namespace {

// --moe-expert-capacity-factor.
constexpr NumberRange kCapacityFactorRange{1e-3, 1e3};
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
// --sgd-momentum and --optimizer-offload-fraction (0 and 1 included, as Megatron accepts).
constexpr NumberRange kUnitIntervalRange{0.0, 1.0};

std::vector<FlagSpec> ParallelFlags() {
  using R = CliRequest;
  return {
      Count({"--tensor-model-parallel-size", "--tp"}, kMaxWorldSize,
            [](R& r) -> int64_t& { return r.training.parallel.tensor; }),
      Count({"--pipeline-model-parallel-size", "--pp"}, kMaxWorldSize,
            [](R& r) -> int64_t& { return r.training.parallel.pipeline; }),
      Count({"--num-virtual-stages-per-pipeline-rank", "--virtual-pipeline-model-parallel-size",
             "--vpp"},
            kMaxLayers, [](R& r) -> int64_t& { return r.training.parallel.virtual_stages; }),
      OptionalCount({"--num-layers-per-virtual-pipeline-stage"}, kMaxLayers,
                    [](R& r) -> std::optional<int64_t>& { return r.layers_per_virtual_stage; }),
      Count({"--context-parallel-size", "--cp"}, kMaxWorldSize,
            [](R& r) -> int64_t& { return r.training.parallel.context; }),
      Count({"--expert-model-parallel-size", "--ep"}, kMaxWorldSize,
            [](R& r) -> int64_t& { return r.training.parallel.expert; }),
      OptionalCount(
          {"--expert-tensor-parallel-size", "--etp"}, kMaxWorldSize,
          [](R& r) -> std::optional<int64_t>& { return r.training.parallel.expert_tensor; }),
      OptionalCount({"--data-parallel-size", "--dp"}, kMaxWorldSize,
                    [](R& r) -> std::optional<int64_t>& { return r.training.parallel.data; }),
      {{"--num-gpus", "--world-size"},
       Arity::kOne,
       true,
       [](R& r, const FlagUse& use) {
         r.training.parallel.world_size = Size(use, kMaxWorldSize);
         r.world_size_given = true;
       }},
      Count({"--micro-batch-size", "--mbs"}, kMaxMicroBatchSize,
            [](R& r) -> int64_t& { return r.training.batch.micro_batch_size; }),
      OptionalCount(
          {"--global-batch-size", "--gbs"}, kMaxGlobalBatchSize,
          [](R& r) -> std::optional<int64_t>& { return r.training.batch.global_batch_size; }),
      Count({"--seq-length", "--seq"}, kMaxSeqLength,
            [](R& r) -> int64_t& { return r.training.batch.seq_length; }),
      Count({"--vision-tokens-per-sample"}, kMaxSeqLength,
            [](R& r) -> int64_t& { return r.training.batch.vision_tokens_per_sample; }),
      OptionalCount({"--microbatch-group-size-per-virtual-pipeline-stage"}, kMaxGlobalBatchSize,
                    [](R& r) -> std::optional<int64_t>& {
                      return r.training.batch.microbatch_group_size_per_vp_stage;
                    }),
      Switch({"--sequence-parallel"}, true,
             [](R& r) -> bool& { return r.training.sequence_parallel; }),
      OptionalCount(
          {"--decoder-first-pipeline-num-layers"}, kMaxLayers,
          [](R& r) -> std::optional<int64_t>& { return r.training.split.first_stage_layers; }),
      OptionalCount(
          {"--decoder-last-pipeline-num-layers"}, kMaxLayers,
          [](R& r) -> std::optional<int64_t>& { return r.training.split.last_stage_layers; }),
      {{"--pipeline-model-parallel-layout"},
       Arity::kOne,
       true,
       [](R& r, const FlagUse& use) {
         r.training.split.layout = config::ParsePipelineLayout(use.values.front());
         r.training.split.layout_text = use.values.front();
       }},
      Switch({"--account-for-embedding-in-pipeline-split"}, true,
             [](R& r) -> bool& { return r.training.split.account_for_embedding; }),
      Switch({"--account-for-loss-in-pipeline-split"}, true,
             [](R& r) -> bool& { return r.training.split.account_for_loss; }),
      {{"--use-tp-pp-dp-mapping"},
       Arity::kNone,
       true,
       [](R& r, const FlagUse&) { r.training.parallel.order = config::RankOrder::kTpCpEpPpDp; }},
  };
}

std::vector<FlagSpec> TrainingFlags() {
  using R = CliRequest;
  return {
      {{"--cp-comm-type"},
       Arity::kList,
       true,
       [](R& r, const FlagUse& use) {
         r.training.context.comm_types.clear();
         for (const std::string& value : use.values) {
           r.training.context.comm_types.push_back(ParseEnum(use, value, config::kCpCommTypeNames));
         }
       }},
      {{"--hierarchical-context-parallel-sizes"},
       Arity::kList,
       true,
       [](R& r, const FlagUse& use) {
         r.training.context.hierarchical_sizes.clear();
         int64_t product = 1;
         for (const std::string& value : use.values) {
           const int64_t size = ParseInteger(use, value, 1, kMaxWorldSize);
           if (__builtin_mul_overflow(product, size, &product) || product > kMaxWorldSize) {
             throw UsageError(
                 fmt::format("{}: the product of the sizes exceeds {}", use.name, kMaxWorldSize));
           }
           r.training.context.hierarchical_sizes.push_back(size);
         }
       }},
      Choice(
          {"--recompute-granularity"}, config::kRecomputeGranularityNames,
          [](R& r) -> config::RecomputeGranularity& { return r.training.recompute.granularity; }),
      Choice({"--recompute-method"}, config::kRecomputeMethodNames,
             [](R& r) -> config::RecomputeMethod& { return r.training.recompute.method; }),
      OptionalCount(
          {"--recompute-num-layers"}, kMaxLayers,
          [](R& r) -> std::optional<int64_t>& { return r.training.recompute.num_layers; }),
      {{"--recompute-modules"},
       Arity::kList,
       true,
       [](R& r, const FlagUse& use) { r.training.recompute.modules = use.values; }},
      {{"--recompute-activations"},
       Arity::kNone,
       true,
       [](R& r, const FlagUse&) {
         r.training.recompute.granularity = config::RecomputeGranularity::kSelective;
       }},
      Switch({"--distribute-saved-activations"}, true,
             [](R& r) -> bool& { return r.training.recompute.distribute_saved_activations; }),
      Choice({"--moe-token-dispatcher-type"}, config::kDispatcherNames,
             [](R& r) -> config::TokenDispatcher& { return r.training.moe.dispatcher; }),
      Switch({"--moe-grouped-gemm"}, true,
             [](R& r) -> bool& { return r.training.moe.grouped_gemm; }),
      {{"--moe-expert-capacity-factor"},
       Arity::kOne,
       true,
       [](R& r, const FlagUse& use) {
         r.training.moe.capacity_factor = ParseNumberIn(use, kCapacityFactorRange);
       }},
      Switch({"--moe-pad-expert-input-to-capacity"}, true,
             [](R& r) -> bool& { return r.training.moe.pad_expert_input_to_capacity; }),
      Choice({"--moe-router-load-balancing-type"}, config::kLoadBalancingNames,
             [](R& r) -> config::LoadBalancing& { return r.training.moe.load_balancing; }),
      Choice({"--moe-router-dtype"}, config::kRouterDtypeNames,
             [](R& r) -> config::RouterDtype& { return r.training.moe.router_dtype; }),
      Switch({"--moe-permute-fusion"}, true,
             [](R& r) -> bool& { return r.training.moe.permute_fusion; }),
      Switch({"--moe-shared-expert-overlap"}, true,
             [](R& r) -> bool& { return r.training.moe.shared_expert_overlap; }),
      Switch({"--overlap-moe-expert-parallel-comm"}, true,
             [](R& r) -> bool& { return r.training.moe.overlap_expert_parallel_comm; }),
      Switch({"--delay-wgrad-compute"}, true,
             [](R& r) -> bool& { return r.training.moe.delay_wgrad_compute; }),
      Switch({"--moe-enable-deepep"}, true,
             [](R& r) -> bool& { return r.training.moe.enable_deepep; }),
      Switch({"--moe-router-enable-expert-bias"}, true,
             [](R& r) -> bool& { return r.training.moe.router_enable_expert_bias; }),
      {{"--bf16"},
       Arity::kNone,
       true,
       [](R& r, const FlagUse&) { r.training.precision.params = config::ParamDtype::kBf16; }},
      {{"--fp16"},
       Arity::kNone,
       true,
       [](R& r, const FlagUse&) { r.training.precision.params = config::ParamDtype::kFp16; }},
      Choice({"--fp8-format"}, config::kFp8FormatNames,
             [](R& r) -> config::Fp8Format& { return r.training.precision.fp8; }),
      Choice({"--fp8-recipe"}, config::kFp8RecipeNames,
             [](R& r) -> config::Fp8Recipe& { return r.training.precision.fp8_recipe; }),
      Switch({"--accumulate-allreduce-grads-in-fp32"}, true,
             [](R& r) -> bool& { return r.training.precision.grad_reduce_in_fp32; }),
      Switch(
          {"--grad-reduce-in-bf16"}, true,
          [](R& r) -> bool& { return r.training.precision.grad_reduce_in_fp32; }, false),
      Switch({"--fp8-param-gather"}, true,
             [](R& r) -> bool& { return r.training.precision.fp8_param_gather; }),
      Switch({"--disable-parameter-transpose-cache"}, true,
             [](R& r) -> bool& { return r.training.precision.disable_parameter_transpose_cache; }),
      Switch({"--use-precision-aware-optimizer"}, true,
             [](R& r) -> bool& { return r.training.precision.precision_aware_optimizer; }),
      // bf16 main grads also switch off fp32 accumulation (arguments.py:1204-1216).
      {{"--main-grads-dtype"},
       Arity::kOne,
       true,
       [](R& r, const FlagUse& use) {
         using config::OptimizerDtype;
         r.training.precision.main_grads =
             ParseOptimizerDtype(use, {OptimizerDtype::kFp32, OptimizerDtype::kBf16});
         if (r.training.precision.main_grads == OptimizerDtype::kBf16) {
           r.training.precision.grad_reduce_in_fp32 = false;
         }
       }},
      OptimizerDtypeFlag(
          "--main-params-dtype", {config::OptimizerDtype::kFp32, config::OptimizerDtype::kFp16},
          [](R& r) -> config::OptimizerDtype& { return r.training.precision.main_params; }),
      OptimizerDtypeFlag(
          "--exp-avg-dtype",
          {config::OptimizerDtype::kFp32, config::OptimizerDtype::kFp16,
           config::OptimizerDtype::kBf16, config::OptimizerDtype::kFp8},
          [](R& r) -> config::OptimizerDtype& { return r.training.precision.exp_avg; }),
      OptimizerDtypeFlag(
          "--exp-avg-sq-dtype",
          {config::OptimizerDtype::kFp32, config::OptimizerDtype::kFp16,
           config::OptimizerDtype::kBf16, config::OptimizerDtype::kFp8},
          [](R& r) -> config::OptimizerDtype& { return r.training.precision.exp_avg_sq; }),
      Switch({"--use-distributed-optimizer"}, true,
             [](R& r) -> bool& { return r.training.data_parallel.distributed_optimizer; }),
      Switch({"--use-megatron-fsdp"}, true,
             [](R& r) -> bool& { return r.training.data_parallel.megatron_fsdp; }),
      Switch({"--use-torch-fsdp2"}, true,
             [](R& r) -> bool& { return r.training.data_parallel.torch_fsdp2; }),
      Choice({"--data-parallel-sharding-strategy"}, config::kFsdpStrategyNames,
             [](R& r) -> config::FsdpStrategy& { return r.training.data_parallel.fsdp_strategy; }),
      Switch({"--overlap-grad-reduce"}, true,
             [](R& r) -> bool& { return r.training.data_parallel.overlap_grad_reduce; }),
      Switch({"--overlap-param-gather"}, true,
             [](R& r) -> bool& { return r.training.data_parallel.overlap_param_gather; }),
      OptionalCount({"--ddp-bucket-size"}, kMaxInteger,
                    [](R& r) -> std::optional<int64_t>& {
                      return r.training.data_parallel.bucket_size_params;
                    }),
      Switch({"--tp-comm-overlap"}, true,
             [](R& r) -> bool& { return r.training.overlap.tp_comm_overlap; }),
      Switch({"--overlap-p2p-communication"}, true,
             [](R& r) -> bool& { return r.training.overlap.overlap_p2p_comm; }),
      Switch(
          {"--no-overlap-p2p-communication"}, true,
          [](R& r) -> bool& { return r.training.overlap.overlap_p2p_comm; }, false),
      Count({"--make-vocab-size-divisible-by"}, kMaxInteger,
            [](R& r) -> int64_t& { return r.training.make_vocab_size_divisible_by; }),
      Switch({"--cpu-offloading"}, true, [](R& r) -> bool& { return r.training.cpu_offloading; }),
      Switch({"--deterministic-mode"}, true,
             [](R& r) -> bool& { return r.training.deterministic; }),
      Switch({"--enable-cuda-graph"}, true,
             [](R& r) -> bool& { return r.training.cuda_graph.enable_cuda_graph; }),
      Switch({"--external-cuda-graph"}, true,
             [](R& r) -> bool& { return r.training.cuda_graph.external_cuda_graph; }),
      Choice({"--cuda-graph-impl"}, config::kCudaGraphImplNames,
             [](R& r) -> config::CudaGraphImpl& { return r.training.cuda_graph.impl; }),
      {{"--cuda-graph-scope"},
       Arity::kList,
       true,
       [](R& r, const FlagUse& use) { r.training.cuda_graph.scope = CudaGraphScopeValues(use); }},
      {{"--cuda-graph-modules"},
       Arity::kList,
       true,
       [](R& r, const FlagUse& use) { r.training.cuda_graph.modules = CudaGraphScopeValues(use); }},
      Choice({"--megatron-core"}, config::kCoreVersionNames,
             [](R& r) -> config::CoreVersion& { return r.training.core_version; }),
      Choice({"--sequence-layout"}, config::kSequenceLayoutNames,
             [](R& r) -> config::SequenceLayout& { return r.training.sequence_layout; }),
      Choice({"--optimizer"}, config::kOptimizerKindNames,
             [](R& r) -> config::OptimizerKind& { return r.training.optimizer.kind; }),
      {{"--sgd-momentum"},
       Arity::kOne,
       true,
       [](R& r, const FlagUse& use) {
         r.training.optimizer.sgd_momentum = ParseNumberIn(use, kUnitIntervalRange);
       }},
      Switch({"--optimizer-cpu-offload"}, true,
             [](R& r) -> bool& { return r.training.optimizer.cpu_offload; }),
      {{"--optimizer-offload-fraction"},
       Arity::kOne,
       true,
       [](R& r, const FlagUse& use) {
         r.training.optimizer.offload_fraction = ParseNumberIn(use, kUnitIntervalRange);
       }},
      Switch({"--overlap-cpu-optimizer-d2h-h2d"}, true,
             [](R& r) -> bool& { return r.training.optimizer.overlap_d2h_h2d; }),
      Switch({"--forward-only"}, false, [](R& r) -> bool& { return r.training.forward_only; }),
      Switch({"--use-dynamic-batch-size"}, true,
             [](R& r) -> bool& { return r.dynamic_batch.enabled; }),
      OptionalCount(
          {"--max-tokens-per-gpu"}, kMaxSeqLength,
          [](R& r) -> std::optional<int64_t>& { return r.dynamic_batch.max_tokens_per_gpu; }),
      OptionalCount(
          {"--data-pad-size-multiplier"}, kMaxSeqLength,
          [](R& r) -> std::optional<int64_t>& { return r.dynamic_batch.data_pad_size_multiplier; }),
      Choice({"--framework"}, config::kFrameworkNames,
             [](R& r) -> config::Framework& { return r.training.framework.framework; }),
      Choice({"--megatron-bridge"}, config::kBridgeVersionNames,
             [](R& r) -> config::BridgeVersion& { return r.training.framework.bridge_version; }),
  };
}

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
      {{"--memory-cuda-context-gib"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) {
         r.memory.cuda_context_gib = ParseNumberIn(use, kMemoryGibRange);
       }},
      {{"--memory-nccl-mib-per-communicator"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) {
         r.memory.nccl_mib_per_communicator = ParseNumberIn(use, kNcclMibRange);
       }},
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
      {{"--scale-out-gbps"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) {
         r.hardware.scale_out_gbps = ParseNumberIn(use, kLinkBandwidthRange);
       }},
      {{"--scale-out-latency-us"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) {
         r.hardware.scale_out_latency_us = ParseNumberIn(use, kLatencyMicrosecondsRange);
       }},
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
      {{"--comm-memory-guard-us"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) {
         r.cost.comm_memory_guard_us = ParseNumberIn(use, kGuardMicrosecondsRange);
       }},
      {{"--overlap-interference"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) { r.cost.interference = ParseFraction(use); }},
      Path({"--trace"}, [](R& r) -> std::optional<std::string>& { return r.simulate.trace_path; }),
  };
}

// The planner's own flags (`trainscope plan`).
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

// `trainscope weight-sync`: the rollout layout and the transport.
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

// `trainscope rl`: the rollout, the log-prob passes and the loop (slime's spellings).
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
      {{"--rollout-mean-response-len"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) {
         r.rl.mean_response_len = ParseNumberIn(use, kRlTokensRange);
       }},
      {{"--rollout-prompt-len"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) {
         r.rl.prompt_len = ParseInteger(use, use.values.front(), 0, kMaxRlTokens);
       }},
      {{"--sglang-mem-fraction-static"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) {
         r.rl.mem_fraction_static = ParseNumberIn(use, kFlagFractionRange);
       }},
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
      {{"--kl-coef"},
       Arity::kOne,
       false,
       [](R& r, const FlagUse& use) { r.rl.kl_coef = ParseNumberIn(use, kKlCoefRange); }},
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

// Megatron architecture flags: checked against the model, never applied over it.
constexpr std::string_view kArchitectureFlags[] = {
    "--num-layers",
    "--hidden-size",
    "--ffn-hidden-size",
    "--num-attention-heads",
    "--num-query-groups",
    "--kv-channels",
    "--num-experts",
    "--moe-router-topk",
    "--moe-ffn-hidden-size",
    "--moe-shared-expert-intermediate-size",
    "--mtp-num-layers",
    "--max-position-embeddings",
    // Gated DeltaNet dimensions (Megatron-LM arguments.py, --experimental-attention-variant).
    "--linear-conv-kernel-dim",
    "--linear-key-head-dim",
    "--linear-value-head-dim",
    "--linear-num-key-heads",
    "--linear-num-value-heads",
    // Multi-latent attention and group-limited routing (Megatron-LM arguments.py, MLA group).
    "--q-lora-rank",
    "--kv-lora-rank",
    "--qk-head-dim",
    "--qk-pos-emb-head-dim",
    "--v-head-dim",
    "--moe-router-num-groups",
    "--moe-router-group-topk",
};

// Model-describing flags that are switches or names, as slime / Megatron-Bridge launch scripts
// paste them: checked against the model (megatron_args.cc), never applied.
constexpr std::string_view kModelFeatureSwitches[] = {
    "--attention-output-gate", "--moe-shared-expert-gate", "--multi-latent-attention"};
constexpr std::string_view kModelFeatureValues[] = {"--experimental-attention-variant",
                                                    "--linear-attention-freq"};

// Megatron-LM flags that do not change what trainscope models: accepted, reported as ignored.
// Their values (any tokens up to the next "--" flag) are skipped.
constexpr std::string_view kIgnoredFlags[] = {
    "--spec",  // slime's model-spec module and function (--spec slime_plugins.models.qwen3_5 ...)
    "--lr",
    "--min-lr",
    "--lr-decay-style",
    "--lr-warmup-iters",
    "--lr-warmup-fraction",
    "--lr-decay-iters",
    "--lr-warmup-init",
    "--train-iters",
    "--train-samples",
    "--weight-decay",
    "--start-weight-decay",
    "--end-weight-decay",
    "--weight-decay-incr-style",
    "--clip-grad",
    "--adam-beta1",
    "--adam-beta2",
    "--adam-eps",
    "--init-method-std",
    "--save",
    "--load",
    "--save-interval",
    "--eval-interval",
    "--eval-iters",
    "--log-interval",
    "--data-path",
    "--split",
    "--tokenizer-type",
    "--tokenizer-model",
    "--vocab-file",
    "--merge-file",
    "--seed",
    "--tensorboard-dir",
    "--wandb-project",
    "--wandb-exp-name",
    "--exit-interval",
    "--exit-duration-in-mins",
    "--attention-dropout",
    "--hidden-dropout",
    "--position-embedding-type",
    "--rotary-base",
    "--rotary-percent",
    "--norm-epsilon",
    "--normalization",
    "--distributed-backend",
    "--distributed-timeout-minutes",
    "--transformer-impl",
    "--attention-backend",
    "--moe-router-topk-scaling-factor",
    "--moe-aux-loss-coeff",
    "--moe-z-loss-coeff",
    "--moe-router-score-function",
    "--moe-layer-freq",
    "--moe-token-drop-policy",
    "--moe-router-pre-softmax",
    "--moe-router-fusion",
    "--num-workers",
    "--data-cache-path",
    "--dataloader-type",
    "--qk-layernorm",
    "--swiglu",
    "--untie-embeddings-and-output-weights",
    "--disable-bias-linear",
    "--use-flash-attn",
    "--use-mcore-models",
    "--group-query-attention",
    "--no-masked-softmax-fusion",
    "--no-bias-gelu-fusion",
    "--no-bias-dropout-fusion",
    "--no-bias-swiglu-fusion",
    "--use-rotary-position-embeddings",
    "--no-position-embedding",
    "--manual-gc",
    "--manual-gc-interval",
    "--no-gradient-accumulation-fusion",
    "--cross-entropy-loss-fusion",
    "--no-rope-fusion",
    "--log-throughput",
    "--timing-log-level",
    "--ckpt-format",
    "--auto-detect-ckpt-format",
    "--no-save-optim",
    "--no-load-optim",
    "--no-save-rng",
    "--no-load-rng",
    "--finetune",
    "--mock-data",
    "--use-checkpoint-args",
    "--no-create-attention-mask-in-dataloader",
    "--eod-mask-loss",
    "--rotary-seq-len-interpolation-factor",
    "--attention-softmax-in-fp32",
    "--tokenizer-path",
    "--log-timers-to-tensorboard",
    "--log-memory-to-tensorboard",
    "--log-params-norm",
    "--log-num-zeros-in-grad",
    "--tensorboard-log-interval",
    "--profile",
    "--profile-step-start",
    "--profile-step-end",
    "--use-pytorch-profiler",
    "--calculate-per-token-loss",
    "--qk-layernorm-weight-decay",
    "--vocab-size",
    "--num-dataset-builder-threads",
    "--exit-signal-handler",
    "--use-dist-ckpt",
    "--dist-ckpt-strictness",
    "--no-check-for-nan-in-loss-and-grad",
    "--async-save",
    "--ckpt-fully-parallel-save",
    "--ckpt-fully-parallel-load",
    "--moe-per-layer-logging",
    "--no-async-tensor-model-parallel-allreduce",
    "--apply-layernorm-1p",
    "--rotary-interleaved",
    "--no-persist-layer-norm",
    "--init-method-xavier-uniform",
};

// Group, value name and help of every flag, keyed by its first name. AllFlags() attaches
// them; a flag without an entry fails an internal check (tests parse every command line).
struct FlagDoc {
  std::string_view name;
  FlagGroup group;
  std::string_view value;
  std::string_view help;
};

constexpr FlagDoc kFlagDocs[] = {
    {"--model", FlagGroup::kModel, "NAME",
     "built-in preset (e.g. Qwen/Qwen3.5-35B-A3B; see `trainscope presets`)"},
    {"--model-config", FlagGroup::kModel, "PATH",
     "a Hugging Face config.json of a supported family"},
    {"--json", FlagGroup::kOutput, "", "machine-readable output"},
    {"--output", FlagGroup::kOutput, "PATH",
     "write the output to PATH atomically instead of stdout"},
    {"--rank", FlagGroup::kRank, "R",
     "groups: only the groups holding rank R; workload: the rank (default 0)"},
    {"--format", FlagGroup::kWorkload, "json|aicb|simai|chakra",
     "workload output format (default json; chakra: -o DIR gets every rank's ET file)"},
    {"--summary", FlagGroup::kWorkload, "",
     "one entry per distinct (phase, collective, group, size) plus totals"},
    {"--gpu", FlagGroup::kGpu, "NAME", "GPU preset (default H100)"},
    {"--cluster", FlagGroup::kCluster, "FILE",
     "cluster description, YAML or JSON; the flags below override it"},
    {"--gpus-per-node", FlagGroup::kCluster, "N",
     "GPUs per node, <= 1e7 (default 8; 4 for GB200/GB300)"},
    {"--nvlink-domain", FlagGroup::kCluster, "N",
     "GPUs per NVLink domain, <= 1e7 (default 8; 72 for NVL72)"},
    {"--scale-out-gbps", FlagGroup::kCluster, "X",
     "NIC Gbit/s per GPU and direction, 0.001..1e6 (default: preset)"},
    {"--scale-out-latency-us", FlagGroup::kCluster, "X",
     "latency of one inter-node step, us, 0..1e6 (default: the fabric's)"},
    {"--scale-out-fabric", FlagGroup::kCluster, "ib|roce|efa",
     "scale-out fabric preset: bus efficiency, ramp, hop latency (default ib)"},
    {"--memory-cuda-context-gib", FlagGroup::kMemory, "X",
     "CUDA context outside the allocator, GiB, 0.001..1e6 (default by GPU: 0.4375 before "
     "Hopper, 0.5 Hopper, 0.5625 Blackwell)"},
    {"--memory-nccl-mib-per-communicator", FlagGroup::kMemory, "X",
     "NCCL buffers per communicator, MiB, 0.001..1e6 (default 147: 16 channels x 9.1875)"},
    {"--memory-fragmentation", FlagGroup::kMemory, "F",
     "allocator reserve over allocated bytes, 0.001 <= F < 1 (default 0.1)"},
    {"--moe-routing-skew", FlagGroup::kMemory, "S|contiguous=S|FILE|load=F",
     "Zipf exponent, per-expert token histogram or busiest-rank load factor (default balanced)"},
    {"--calibration", FlagGroup::kCostModel, "FILE",
     "JSON overriding kernel efficiencies and link constants"},
    {"--qwen-gdn-backend", FlagGroup::kCostModel, "fla|flashqla",
     "Gated DeltaNet kernel backend (default fla)"},
    {"--comm-memory-guard", FlagGroup::kCostModel, "all|selected|off",
     "slime's free-memory check before collectives (default off)"},
    {"--comm-memory-guard-us", FlagGroup::kCostModel, "X",
     "host time of one guard check, us, 0.001..1e6 (default 50)"},
    {"--overlap-interference", FlagGroup::kCostModel, "F",
     "slowdown of compute overlapping comm, 0.001 <= F < 1 (default 0.1)"},
    {"--seq-length-distribution", FlagGroup::kSimulate, "FILE",
     "sample-length histogram: BSHD padding against THD packing"},
    {"--trace", FlagGroup::kSimulate, "PATH",
     "write the simulated timeline as a Chrome/Perfetto trace"},
    {"--fix", FlagGroup::kPlan, "FLAG=VALUE",
     "pin a Megatron flag (repeatable; a Megatron flag given directly pins it too)"},
    {"--max-tp", FlagGroup::kPlan, "N", "largest tensor-parallel size to try (default 8)"},
    {"--allow-recompute", FlagGroup::kPlan, "none|selective|full|any",
     "recompute the search may use besides none (default any)"},
    {"--dispatchers", FlagGroup::kPlan, "A,B", "MoE dispatchers to try (default alltoall,flex)"},
    {"--objective", FlagGroup::kPlan, "throughput|memory-headroom",
     "what the ranking maximises (default throughput)"},
    {"--top", FlagGroup::kPlan, "K", "candidates to print (default 10)"},
    {"--csv", FlagGroup::kPlan, "PATH", "write every enumerated layout and its outcome as CSV"},
    {"--explain", FlagGroup::kPlan, "RANK", "why candidate RANK beats RANK+1, term by term"},
    {"--compare", FlagGroup::kPlan, "\"FLAGS\"|@FILE",
     "rank your current layout and show what switching gains"},
    {"--threads", FlagGroup::kPlan, "N", "worker threads (default: all cores)"},
    {"--rollout-batch-size", FlagGroup::kRl, "P", "prompts per rollout (required by rl)"},
    {"--n-samples-per-prompt", FlagGroup::kRl, "K", "responses sampled per prompt (default 1)"},
    {"--rollout-max-response-len", FlagGroup::kRl, "L",
     "longest response, tokens (required by rl)"},
    {"--rollout-mean-response-len", FlagGroup::kRl, "M",
     "mean response, tokens, <= L (default L/2: uniform on [1, L])"},
    {"--rollout-prompt-len", FlagGroup::kRl, "N", "tokens of every prompt (default 512)"},
    {"--sglang-mem-fraction-static", FlagGroup::kRl, "F",
     "GPU memory share of a rollout engine, 0.001..1 (default 0.8)"},
    {"--use-kl-loss", FlagGroup::kRl, "", "KL loss against the reference: adds the ref pass"},
    {"--ppo-n-minibatches", FlagGroup::kRl, "N",
     "AReaL (--framework areal): optimizer steps per RL step, each over 1/N of the samples "
     "(default 4)"},
    {"--ppo-mini-batch-size", FlagGroup::kRl, "P",
     "verl (--framework verl): prompts per optimizer step (default 256)"},
    {"--ppo-epochs", FlagGroup::kRl, "E", "verl: passes over the rollout's samples (default 1)"},
    {"--kl-coef", FlagGroup::kRl, "X", "KL coefficient; != 0 adds the ref pass (default 0)"},
    {"--use-rollout-logprobs", FlagGroup::kRl, "",
     "use the engine's log-probs: no old-policy pass"},
    {"--rl-async", FlagGroup::kRl, "",
     "rollout of step n+1 overlaps training on step n (separate GPUs)"},
    {"--critic", FlagGroup::kRl, "",
     "PPO: a critic of the actor's architecture adds a value pass and critic training"},
    {"--teacher-log-probs", FlagGroup::kRl, "",
     "on-policy distillation: one teacher forward-only pass (slime, areal)"},
    {"--log-prob-max-token-len-per-gpu", FlagGroup::kRl, "N",
     "token budget per GPU of the log-prob passes' micro-batches (verl; default: training's)"},
    {"--rollout-gpus", FlagGroup::kWeightSync, "N", "GPUs of the rollout engines (required)"},
    {"--rollout-tp", FlagGroup::kWeightSync, "T",
     "tensor-parallel size of one rollout engine, divides N (required)"},
    {"--rollout-ep", FlagGroup::kWeightSync, "E",
     "expert-parallel size of one rollout engine, divides T (default 1)"},
    {"--colocate", FlagGroup::kWeightSync, "",
     "the rollout engines share the training GPUs (default: their own GPUs)"},
    {"--transport", FlagGroup::kWeightSync, "nccl|ipc|disk",
     "NCCL broadcast, CUDA IPC (colocated) or an HF checkpoint on disk (default nccl)"},
    {"--bucket-mib", FlagGroup::kWeightSync, "B", "bucket size in MiB, <= 2^20 (default 512)"},
    {"--rollout-dtype", FlagGroup::kWeightSync, "bf16|fp8",
     "weight dtype the engines load (default bf16; fp8 = blockwise 128x128)"},
    {"--tensor-model-parallel-size", FlagGroup::kTraining, "N",
     "tensor parallel t, <= 1e7 (default 1)"},
    {"--pipeline-model-parallel-size", FlagGroup::kTraining, "N",
     "pipeline parallel p, <= 1e7 (default 1)"},
    {"--num-virtual-stages-per-pipeline-rank", FlagGroup::kTraining, "N",
     "model chunks per pipeline rank v, <= 1e4 (default 1)"},
    {"--num-layers-per-virtual-pipeline-stage", FlagGroup::kTraining, "N",
     "layers per virtual stage, <= 1e4 (sets v)"},
    {"--context-parallel-size", FlagGroup::kTraining, "N",
     "context parallel c, <= 1e7 (default 1)"},
    {"--expert-model-parallel-size", FlagGroup::kTraining, "N",
     "expert parallel e, <= 1e7 (default 1)"},
    {"--expert-tensor-parallel-size", FlagGroup::kTraining, "N",
     "expert tensor parallel u, <= 1e7 (default t)"},
    {"--data-parallel-size", FlagGroup::kTraining, "N",
     "data parallel d, <= 1e7, checked against W/(t*p*c)"},
    {"--num-gpus", FlagGroup::kTraining, "N",
     "world size W, <= 1e7 (default: the smallest that fits)"},
    {"--micro-batch-size", FlagGroup::kTraining, "N", "micro-batch size b, <= 1e6 (default 1)"},
    {"--global-batch-size", FlagGroup::kTraining, "N", "global batch size, <= 1e9 (default b*d)"},
    {"--seq-length", FlagGroup::kTraining, "N", "sequence length s, <= 1e8 (default 4096)"},
    {"--vision-tokens-per-sample", FlagGroup::kTraining, "N",
     "image tokens per sample (after the merger, part of s): the vision tower runs on the first "
     "stage over N·m² patches; Qwen3.5 only (default 0: text)"},
    {"--microbatch-group-size-per-virtual-pipeline-stage", FlagGroup::kTraining, "N",
     "interleaved schedule group size (default p)"},
    {"--sequence-parallel", FlagGroup::kTraining, "", "sequence parallelism within the TP group"},
    {"--decoder-first-pipeline-num-layers", FlagGroup::kTraining, "N",
     "decoder layers on the first stage, <= 1e4"},
    {"--decoder-last-pipeline-num-layers", FlagGroup::kTraining, "N",
     "decoder layers on the last stage, <= 1e4"},
    {"--pipeline-model-parallel-layout", FlagGroup::kTraining, "LAYOUT",
     "layers per stage as Megatron spells it, e.g. \"Et*4|(t*4|)*14tmL\" (E embedding, t "
     "decoder, m MTP, L loss; '|' between stages; sets v = stages/p)"},
    {"--account-for-embedding-in-pipeline-split", FlagGroup::kTraining, "",
     "the embedding counts as a layer in the split"},
    {"--account-for-loss-in-pipeline-split", FlagGroup::kTraining, "",
     "the loss counts as a layer in the split"},
    {"--use-tp-pp-dp-mapping", FlagGroup::kTraining, "",
     "rank order tp-cp-ep-pp-dp instead of tp-cp-ep-dp-pp"},
    {"--cp-comm-type", FlagGroup::kTraining, "TYPE...",
     "p2p|all_gather|a2a|a2a+p2p, one or one per layer (default p2p)"},
    {"--hierarchical-context-parallel-sizes", FlagGroup::kTraining, "N...",
     "CP sub-group sizes for a2a+p2p, product <= 1e7"},
    {"--recompute-granularity", FlagGroup::kTraining, "full|selective",
     "activation recompute (default none)"},
    {"--recompute-method", FlagGroup::kTraining, "uniform|block",
     "which layers full recompute covers"},
    {"--recompute-num-layers", FlagGroup::kTraining, "N",
     "layers per recompute group (uniform) or per chunk (block)"},
    {"--recompute-modules", FlagGroup::kTraining, "M...",
     "selective recompute modules (default core_attn)"},
    {"--recompute-activations", FlagGroup::kTraining, "", "selective recompute of core attention"},
    {"--distribute-saved-activations", FlagGroup::kTraining, "",
     "shard full-recompute checkpoints over TP"},
    {"--moe-token-dispatcher-type", FlagGroup::kTraining, "allgather|alltoall|flex",
     "MoE token dispatcher (default allgather)"},
    {"--moe-grouped-gemm", FlagGroup::kTraining, "", "grouped GEMM for the local experts"},
    {"--moe-permute-fusion", FlagGroup::kTraining, "",
     "TE fused token permutation (changes the saved permutation map, docs/memory.md)"},
    {"--moe-expert-capacity-factor", FlagGroup::kTraining, "X",
     "expert capacity factor, 0.001..1e3 (default none: dropless)"},
    {"--moe-pad-expert-input-to-capacity", FlagGroup::kTraining, "",
     "pad every expert's input to its capacity"},
    {"--moe-router-load-balancing-type", FlagGroup::kTraining, "TYPE",
     "aux_loss|seq_aux_loss|global_aux_loss|sinkhorn|none (default aux_loss)"},
    {"--moe-router-dtype", FlagGroup::kTraining, "fp32|fp64",
     "router dtype (default the activation dtype)"},
    {"--moe-shared-expert-overlap", FlagGroup::kTraining, "",
     "overlap the shared expert with dispatch"},
    {"--overlap-moe-expert-parallel-comm", FlagGroup::kTraining, "",
     "overlap EP all-to-all with another micro-batch's compute"},
    {"--delay-wgrad-compute", FlagGroup::kTraining, "",
     "delay weight-gradient GEMMs (needs --overlap-moe-expert-parallel-comm)"},
    {"--moe-enable-deepep", FlagGroup::kTraining, "", "DeepEP kernels for the flex dispatcher"},
    {"--moe-router-enable-expert-bias", FlagGroup::kTraining, "", "aux-loss-free expert bias"},
    {"--bf16", FlagGroup::kTraining, "", "bf16 parameters (default)"},
    {"--fp16", FlagGroup::kTraining, "", "fp16 parameters"},
    {"--fp8-format", FlagGroup::kTraining, "e4m3|hybrid", "FP8 GEMMs (default off)"},
    {"--fp8-recipe", FlagGroup::kTraining, "RECIPE",
     "delayed|tensorwise|mxfp8|blockwise (default delayed)"},
    {"--accumulate-allreduce-grads-in-fp32", FlagGroup::kTraining, "",
     "reduce gradients in fp32 (default on)"},
    {"--grad-reduce-in-bf16", FlagGroup::kTraining, "", "reduce gradients in bf16"},
    {"--fp8-param-gather", FlagGroup::kTraining, "",
     "keep and all-gather TE linear weights in FP8"},
    {"--disable-parameter-transpose-cache", FlagGroup::kTraining, "",
     "re-quantize FP8 weights every micro-batch (no cache)"},
    {"--use-precision-aware-optimizer", FlagGroup::kTraining, "",
     "TE FusedAdam with the dtypes below"},
    {"--main-grads-dtype", FlagGroup::kTraining, "fp32|bf16", "main gradient dtype (default fp32)"},
    {"--main-params-dtype", FlagGroup::kTraining, "fp32|fp16",
     "master weight dtype (default fp32)"},
    {"--exp-avg-dtype", FlagGroup::kTraining, "DTYPE",
     "Adam first moment fp32|fp16|bf16|fp8 (default fp32)"},
    {"--exp-avg-sq-dtype", FlagGroup::kTraining, "DTYPE",
     "Adam second moment fp32|fp16|bf16|fp8 (default fp32)"},
    {"--use-distributed-optimizer", FlagGroup::kTraining, "",
     "shard optimizer state over DP (ZeRO-1)"},
    {"--use-megatron-fsdp", FlagGroup::kTraining, "", "Megatron-FSDP"},
    {"--use-torch-fsdp2", FlagGroup::kTraining, "", "PyTorch FSDP2"},
    {"--data-parallel-sharding-strategy", FlagGroup::kTraining, "STRATEGY",
     "FSDP sharding (default optim_grads_params)"},
    {"--overlap-grad-reduce", FlagGroup::kTraining, "",
     "overlap DP gradient reduction with backward"},
    {"--overlap-param-gather", FlagGroup::kTraining, "",
     "overlap DP parameter all-gather with forward"},
    {"--ddp-bucket-size", FlagGroup::kTraining, "N", "DP bucket size in parameters"},
    {"--tp-comm-overlap", FlagGroup::kTraining, "",
     "overlap TP communication with GEMMs (TE userbuffers)"},
    {"--overlap-p2p-communication", FlagGroup::kTraining, "",
     "overlap pipeline sends and receives (default on with VPP)"},
    {"--no-overlap-p2p-communication", FlagGroup::kTraining, "",
     "blocking pipeline sends and receives"},
    {"--make-vocab-size-divisible-by", FlagGroup::kTraining, "N",
     "vocabulary padding multiple (default 128)"},
    {"--cpu-offloading", FlagGroup::kTraining, "", "offload activations to the host"},
    {"--deterministic-mode", FlagGroup::kTraining, "",
     "Megatron's deterministic mode (GDN: torch-native chunked delta rule, fp32)"},
    {"--enable-cuda-graph", FlagGroup::kTraining, "",
     "Megatron's per-layer CUDA graphs (deprecated spelling of --cuda-graph-impl local)"},
    {"--external-cuda-graph", FlagGroup::kTraining, "",
     "TE-captured CUDA graphs (deprecated spelling of --cuda-graph-impl transformer_engine)"},
    {"--cuda-graph-impl", FlagGroup::kTraining, "none|local|transformer_engine|full_iteration",
     "CUDA-graph implementation (default none); captured kernels pay no launch overhead"},
    {"--cuda-graph-scope", FlagGroup::kTraining, "SCOPE...",
     "captured regions (deprecated alias of --cuda-graph-modules)"},
    {"--cuda-graph-modules", FlagGroup::kTraining, "SCOPE...",
     "attn|mlp|moe|moe_router|moe_preprocess|mamba, or none for the whole layer"},
    {"--megatron-core", FlagGroup::kTraining, "0.16|0.17|0.18",
     "Megatron-Core version whose rules apply (default 0.18)"},
    {"--sequence-layout", FlagGroup::kTraining, "auto|thd|bshd",
     "packed (THD) or padded (BSHD) sequences (default auto)"},
    {"--optimizer", FlagGroup::kTraining, "adam|sgd", "optimizer (default adam)"},
    {"--sgd-momentum", FlagGroup::kTraining, "X",
     "SGD momentum, 0..1 (default 0.9; 0 keeps no optimizer state)"},
    {"--optimizer-cpu-offload", FlagGroup::kTraining, "",
     "step a share of the optimizer on the host (HybridDeviceOptimizer)"},
    {"--optimizer-offload-fraction", FlagGroup::kTraining, "F",
     "share of optimizer parameters on the host, 0..1 (default 1)"},
    {"--overlap-cpu-optimizer-d2h-h2d", FlagGroup::kTraining, "",
     "overlap grad D2H, CPU step and param H2D per parameter"},
    {"--forward-only", FlagGroup::kTraining, "",
     "eval-mode forward pass (log-probs): no recompute, grads, grad sync or optimizer"},
    {"--use-dynamic-batch-size", FlagGroup::kTraining, "",
     "slime's dynamic batching: pack each step's samples by --max-tokens-per-gpu (ignores "
     "--micro-batch-size; needs --framework slime)"},
    {"--max-tokens-per-gpu", FlagGroup::kTraining, "N",
     "dynamic batching's token budget per GPU; a micro-batch holds at most N·c tokens, <= 1e8"},
    {"--data-pad-size-multiplier", FlagGroup::kTraining, "N",
     "slime pads each packed micro-batch to a multiple of t·N tokens (default 128)"},
    {"--framework", FlagGroup::kTraining, "megatron-core|megatron-bridge|areal|slime|verl",
     "framework profile: its rules, defaults and GDN implementation (default megatron-core)"},
    {"--megatron-bridge", FlagGroup::kTraining, "0.4|0.5|0.6",
     "Megatron-Bridge release whose rules apply (bridge and areal; default 0.4)"},
};

const FlagDoc* FindDoc(std::string_view name) {
  for (const FlagDoc& doc : kFlagDocs) {
    if (doc.name == name) return &doc;
  }
  return nullptr;
}
}  // namespace

std::vector<FlagSpec> AllFlags() {
  std::vector<FlagSpec> specs = ParallelFlags();
  for (std::vector<FlagSpec> more :
       {TrainingFlags(), ToolFlags(), PlannerFlags(), WeightSyncFlags(), RlStepFlags()}) {
    for (FlagSpec& spec : more) specs.push_back(std::move(spec));
  }
  for (FlagSpec& spec : specs) {
    const FlagDoc* doc = FindDoc(spec.names.front());
    TRAINSCOPE_CHECK(doc != nullptr, "flag without help: " + std::string(spec.names.front()));
    spec.group = doc->group;
    spec.value = doc->value;
    spec.help = doc->help;
  }
  return specs;
}

std::vector<std::string> KnownFlagNames() {
  std::vector<std::string> names;
  for (const FlagSpec& spec : AllFlags()) {
    for (const std::string_view name : spec.names) names.emplace_back(name);
  }
  for (const std::string_view name : kArchitectureFlags) names.emplace_back(name);
  for (const std::string_view name : kIgnoredFlags) names.emplace_back(name);
  for (const std::string_view name : kModelFeatureSwitches) names.emplace_back(name);
  for (const std::string_view name : kModelFeatureValues) names.emplace_back(name);
  return names;
}

namespace {

bool Contains(std::span<const std::string_view> names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

bool IsArchitectureFlag(std::string_view name) { return Contains(kArchitectureFlags, name); }

bool IsIgnoredFlag(std::string_view name) { return Contains(kIgnoredFlags, name); }

bool IsModelFeatureSwitch(std::string_view name) { return Contains(kModelFeatureSwitches, name); }

bool IsModelFeatureValue(std::string_view name) { return Contains(kModelFeatureValues, name); }

}  // namespace trainscope::io::internal
