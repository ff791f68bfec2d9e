#include "trainscope/io/megatron_flags.h"

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/config/enum_names.h"
#include "trainscope/config/pipeline_layout.h"
#include "trainscope/error.h"
#include "trainscope/io/flag_docs.h"
#include "trainscope/io/flag_parsing.h"
#include "trainscope/io/input_ranges.h"
#include "trainscope/io/tool_flags.h"

namespace trainscope::io::internal {
namespace {

// --moe-expert-capacity-factor.
constexpr NumberRange kCapacityFactorRange{1e-3, 1e3};
// --moe-expert-rank-capacity-factor: a budget below the balanced rows drops tokens every step.
constexpr NumberRange kRankCapacityFactorRange{1.0, 1e3};
// --moe-paged-stash-buffer-size-factor-cuda: |f| x the balanced (f > 0) or the busiest (f < 0)
// rank's rows.
constexpr NumberRange kPagedStashFactorRange{-1e3, 1e3};
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
      Number({"--moe-expert-capacity-factor"}, true, kCapacityFactorRange,
             [](R& r) -> std::optional<double>& { return r.training.moe.capacity_factor; }),
      Switch({"--moe-pad-expert-input-to-capacity"}, true,
             [](R& r) -> bool& { return r.training.moe.pad_expert_input_to_capacity; }),
      Choice({"--moe-router-load-balancing-type"}, config::kLoadBalancingNames,
             [](R& r) -> config::LoadBalancing& { return r.training.moe.load_balancing; }),
      Choice({"--moe-router-dtype"}, config::kRouterDtypeNames,
             [](R& r) -> config::RouterDtype& { return r.training.moe.router_dtype; }),
      Switch({"--moe-permute-fusion"}, true,
             [](R& r) -> bool& { return r.training.moe.permute_fusion; }),
      Switch({"--moe-router-padding-for-quantization", "--moe-router-padding-for-fp8"}, true,
             [](R& r) -> bool& { return r.training.moe.router_padding_for_quantization; }),
      Switch({"--moe-shared-expert-overlap"}, true,
             [](R& r) -> bool& { return r.training.moe.shared_expert_overlap; }),
      Switch({"--overlap-moe-expert-parallel-comm"}, true,
             [](R& r) -> bool& { return r.training.moe.overlap_expert_parallel_comm; }),
      Switch({"--delay-wgrad-compute"}, true,
             [](R& r) -> bool& { return r.training.moe.delay_wgrad_compute; }),
      Switch({"--use-transformer-engine-op-fuser"}, true,
             [](R& r) -> bool& { return r.training.moe.te_op_fuser; }),
      Switch({"--moe-enable-deepep"}, true,
             [](R& r) -> bool& { return r.training.moe.enable_deepep; }),
      Choice({"--moe-flex-dispatcher-backend"}, config::kFlexBackendNames,
             [](R& r) -> config::FlexBackend& { return r.training.moe.flex_backend; }),
      OptionalCount(
          {"--moe-flex-dispatcher-num-sms", "--moe-deepep-num-sms", "--moe-hybridep-num-sms"},
          kMaxFlexSms, [](R& r) -> std::optional<int64_t>& { return r.training.moe.flex_num_sms; }),
      Switch({"--moe-permute-fusion-into-hybridep"}, true,
             [](R& r) -> bool& { return r.training.moe.permute_fusion_into_hybridep; }),
      Number({"--moe-expert-rank-capacity-factor"}, true, kRankCapacityFactorRange,
             [](R& r) -> std::optional<double>& { return r.training.moe.rank_capacity_factor; }),
      Switch({"--moe-paged-stash"}, true, [](R& r) -> bool& { return r.training.moe.paged_stash; }),
      {{"--moe-paged-stash-buffer-size-factor-cuda"},
       Arity::kOne,
       true,
       [](R& r, const FlagUse& use) {
         const double factor = ParseNumberIn(use, kPagedStashFactorRange);
         if (factor == 0.0) {
           throw UsageError(
               "--moe-paged-stash-buffer-size-factor-cuda 0: the stash needs a size; give a "
               "factor such as 1.1 (x the balanced rows) or -1.1 (x the busiest rank's rows)");
         }
         r.training.moe.paged_stash_buffer_factor = factor;
       }},
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
      Choice({"--fp4-format"}, config::kFp4FormatNames,
             [](R& r) -> config::Fp4Format& { return r.training.precision.fp4; }),
      Choice({"--fp4-recipe"}, config::kFp4RecipeNames,
             [](R& r) -> config::Fp4Recipe& { return r.training.precision.fp4_recipe; }),
      Switch({"--fp4-param-gather"}, true,
             [](R& r) -> bool& { return r.training.precision.fp4_param_gather; }),
      Switch({"--fp8-output-proj"}, true,
             [](R& r) -> bool& { return r.training.precision.fp8_output_proj; }),
      Switch({"--fp8-dot-product-attention"}, true,
             [](R& r) -> bool& { return r.training.precision.fp8_dot_product_attention; }),
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
      // Megatron's arguments.py turns --cpu-offloading on for N > 0; 0 is its default.
      {{"--cpu-offloading-num-layers"},
       Arity::kOne,
       true,
       [](R& r, const FlagUse& use) {
         const int64_t n = ParseInteger(use, use.values.front(), 0, kMaxLayers);
         r.training.cpu_offloading_num_layers = n;
         if (n > 0) r.training.cpu_offloading = true;
       }},
      Switch({"--deterministic-mode"}, true,
             [](R& r) -> bool& { return r.training.deterministic; }),
      Switch({"--cross-entropy-loss-fusion"}, true,
             [](R& r) -> bool& { return r.training.cross_entropy.loss_fusion; }),
      Choice({"--cross-entropy-fusion-impl"}, config::kCrossEntropyFusionImplNames,
             [](R& r) -> config::CrossEntropyFusionImpl& {
               return r.training.cross_entropy.fusion_impl;
             }),
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
      Number({"--sgd-momentum"}, true, kUnitIntervalRange,
             [](R& r) -> double& { return r.training.optimizer.sgd_momentum; }),
      Switch({"--optimizer-cpu-offload"}, true,
             [](R& r) -> bool& { return r.training.optimizer.cpu_offload; }),
      Number({"--optimizer-offload-fraction"}, true, kUnitIntervalRange,
             [](R& r) -> double& { return r.training.optimizer.offload_fraction; }),
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
      Switch({"--training.compile", "--compile.enable"}, true,
             [](R& r) -> bool& { return r.training.framework.torch_compile; }),
      Choice({"--megatron-bridge"}, config::kBridgeVersionNames,
             [](R& r) -> config::BridgeVersion& { return r.training.framework.bridge_version; }),
  };
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

}  // namespace trainscope::io::internal
