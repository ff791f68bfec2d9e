// Validator rules on memory and overlap options: sequence parallelism and TP communication
// overlap, the data-parallel wrappers (distributed optimizer, FSDP) and their overlap options,
// activation recompute and CPU offloading (rules C1-C42 of docs/validation.md, each with the
// Megatron-LM line that enforces it).
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/config/enum_names.h"
#include "trainscope/config/validate_rules.h"

namespace trainscope::config::internal {
namespace {

// Selective-recompute modules Megatron accepts (transformer_config.py:1942-1958).
constexpr std::string_view kRecomputeModules[] = {
    "core_attn",      "moe_act",      "layernorm",   "mla_up_proj", "mlp", "moe",
    "shared_experts", "gdn_norm_out", "gdp_in_proj", "gdp_qkv",     "mhc"};

}  // namespace

// C7 (warning), C37: sequence parallelism and TP communication overlap (arguments.py:1430-1442).
void CheckSequenceParallel(const TrainingConfig& training, ValidationResult& result) {
  const bool sp_active = training.sequence_parallel && training.parallel.tensor > 1;
  if (training.sequence_parallel && training.parallel.tensor == 1) {
    AddWarning(result, "C7", {kSp, kTp},
               "--sequence-parallel: has no effect with --tensor-model-parallel-size 1; "
               "Megatron-LM turns it off",
               "drop --sequence-parallel, or use --tensor-model-parallel-size 2 or more");
  }
  if (training.overlap.tp_comm_overlap && !sp_active) {
    AddError(result, "C37", {kTpCommOverlap, kSp},
             fmt::format("--tp-comm-overlap: needs --sequence-parallel with "
                         "--tensor-model-parallel-size > 1 (got sequence parallel {}, t = {})",
                         training.sequence_parallel ? "on" : "off", training.parallel.tensor),
             "add --sequence-parallel (with t > 1), or drop --tp-comm-overlap");
  }
}

// C38, C39, T8: data-parallel wrappers and their overlap options.
void CheckDataParallel(const ModelConfig& model, const TrainingConfig& training,
                       ValidationResult& result) {
  const DataParallelConfig& dp = training.data_parallel;
  if (dp.overlap_param_gather && !dp.distributed_optimizer && !dp.megatron_fsdp) {
    AddError(result, "C38", {kOverlapParam, kDistOpt},
             "--overlap-param-gather: needs --use-distributed-optimizer or --use-megatron-fsdp",
             "add --use-distributed-optimizer, or drop --overlap-param-gather");
  }
  if (dp.overlap_param_gather && !dp.overlap_grad_reduce) {
    AddError(result, "C38", {kOverlapParam, kOverlapGrad},
             "--overlap-param-gather: needs --overlap-grad-reduce",
             "add --overlap-grad-reduce, or drop --overlap-param-gather");
  }
  if (dp.torch_fsdp2) {
    std::vector<std::string> reasons;
    if (training.parallel.pipeline > 1)
      reasons.push_back("--pipeline-model-parallel-size must be 1");
    if (training.parallel.expert > 1) reasons.push_back("--expert-model-parallel-size must be 1");
    if (dp.distributed_optimizer) reasons.push_back("--use-distributed-optimizer is not allowed");
    if (model.tied_embeddings) {
      reasons.push_back(fmt::format("{} is required, but model {} ties them", kUntie, model.name));
    }
    if (!reasons.empty()) {
      AddError(result, "C39", {kTorchFsdp2, kPp, kEp, kDistOpt},
               fmt::format("--use-torch-fsdp2: {}", fmt::join(reasons, "; ")),
               "change the listed options, or use --use-megatron-fsdp instead");
    }
  }
  if (dp.megatron_fsdp && dp.torch_fsdp2) {
    AddError(
        result, "T8", {kMegatronFsdp, kTorchFsdp2},
        "--use-megatron-fsdp and --use-torch-fsdp2: only one data-parallel wrapper can be used",
        "drop one of --use-megatron-fsdp and --use-torch-fsdp2");
  } else if (dp.megatron_fsdp && !dp.distributed_optimizer) {
    AddWarning(result, "T8", {kMegatronFsdp, kDistOpt},
               "--use-megatron-fsdp without --use-distributed-optimizer: Megatron-FSDP (v1) "
               "requires the distributed optimizer; Megatron-LM turns it on",
               "add --use-distributed-optimizer");
  }
}

// C40: granularity, method and layer count (transformer_config.py:1900-1937; arguments.py
// asserts that selective forbids a method and that distributing saved activations needs t > 1
// and full recompute with a method).
void CheckRecomputeOptions(const TrainingConfig& training, ValidationResult& result) {
  const RecomputeConfig& recompute = training.recompute;
  const std::string granularity = ToString(recompute.granularity);
  const bool has_method = recompute.method != RecomputeMethod::kNone;
  switch (recompute.granularity) {
    case RecomputeGranularity::kFull:
      if (!has_method || !recompute.num_layers) {
        AddError(result, "C40", {kGranularity, kMethod, kRecomputeLayers},
                 "--recompute-granularity full: needs --recompute-method (uniform or block) and "
                 "--recompute-num-layers",
                 "add --recompute-method uniform --recompute-num-layers 1");
      }
      break;
    case RecomputeGranularity::kSelective:
      if (has_method || recompute.num_layers) {
        AddError(result, "C40", {kGranularity, kMethod, kRecomputeLayers},
                 "--recompute-granularity selective: --recompute-method and "
                 "--recompute-num-layers must be unset",
                 "drop --recompute-method and --recompute-num-layers, or use "
                 "--recompute-granularity full");
      }
      break;
    case RecomputeGranularity::kNone:
      if (has_method || recompute.num_layers) {
        AddWarning(result, "C40", {kMethod, kRecomputeLayers, kGranularity},
                   "--recompute-method / --recompute-num-layers: ignored without "
                   "--recompute-granularity",
                   "add --recompute-granularity full, or drop the recompute options");
      }
      break;
  }
  if (!recompute.distribute_saved_activations) return;
  if (training.sequence_parallel || training.parallel.tensor == 1 ||
      recompute.granularity != RecomputeGranularity::kFull || !has_method) {
    AddError(result, "C40", {kDistributeSaved, kSp, kTp, kGranularity},
             fmt::format("--distribute-saved-activations: needs --recompute-granularity full with "
                         "a --recompute-method, --tensor-model-parallel-size > 1 and no "
                         "--sequence-parallel (got {}, t = {}, sequence parallel {})",
                         granularity, training.parallel.tensor,
                         training.sequence_parallel ? "on" : "off"),
             "drop --distribute-saved-activations");
  }
}

// C41: selective-recompute modules (transformer_config.py:1939-2012).
void CheckRecomputeModules(const ModelConfig& model, const TrainingConfig& training,
                           ValidationResult& result) {
  const std::vector<std::string>& modules = training.recompute.modules;
  if (training.recompute.granularity != RecomputeGranularity::kSelective) return;
  for (const std::string& module : modules) {
    if (std::find(std::begin(kRecomputeModules), std::end(kRecomputeModules), module) !=
        std::end(kRecomputeModules)) {
      continue;
    }
    AddError(result, "C41", {kModules},
             fmt::format("--recompute-modules {}: unknown module", module),
             "use core_attn, moe_act, layernorm, mlp, moe, shared_experts or gdn_norm_out");
  }
  // Each entry: the module, whether this configuration forbids it, why, and the flags involved.
  struct Requirement {
    std::string_view module;
    bool forbidden;
    std::string why;
    std::vector<std::string> flags;
  };
  const bool delayed_fp8 = training.precision.fp8 != Fp8Format::kNone &&
                           training.precision.fp8_recipe == Fp8Recipe::kDelayed;
  const Requirement requirements[] = {
      {"moe_act", !training.moe.grouped_gemm, "needs --moe-grouped-gemm", {kModules, kGroupedGemm}},
      {"mhc", true, "needs mHC connections, which this model does not use", {kModules}},
      {"gdn_norm_out", !model.HasGdn(), "needs Gated DeltaNet layers", {kModules}},
      {"shared_experts",
       model.moe.HasSharedExpert() && training.moe.shared_expert_overlap,
       "cannot be combined with --moe-shared-expert-overlap",
       {kModules, kSharedOverlap}},
      {"moe_act",
       delayed_fp8,
       "is not supported with --fp8-recipe delayed",
       {kModules, kFp8Recipe}},
      {"layernorm",
       delayed_fp8,
       "is not supported with --fp8-recipe delayed",
       {kModules, kFp8Recipe}},
  };
  for (const Requirement& requirement : requirements) {
    if (!requirement.forbidden || !Contains(modules, requirement.module)) continue;
    AddError(result, "C41", requirement.flags,
             fmt::format("--recompute-modules {}: {}", requirement.module, requirement.why),
             fmt::format("remove {} from --recompute-modules", requirement.module));
  }
  // C48: the MLA up-projection recompute (transformer_config.py:1969-1973).
  if (Contains(modules, "mla_up_proj") && !model.HasMla()) {
    AddError(result, "C48", {kModules},
             "--recompute-modules mla_up_proj: needs multi-latent attention, which this model "
             "does not use",
             "remove mla_up_proj from --recompute-modules");
  }
}

// C42: CPU offloading (transformer_config.py:1891-1899; at Megatron-LM d7288711
// TransformerConfig.__post_init__: "CPU offloading can be done only for layers less than
// num_layers").
void CheckCpuOffloading(const ModelConfig& model, const TrainingConfig& training,
                        ValidationResult& result) {
  if (!training.cpu_offloading) return;
  if (training.cpu_offloading_num_layers >= model.NumLayers()) {
    AddError(result, "C42", {kCpuOffloadingNumLayers},
             fmt::format("--cpu-offloading-num-layers {}: must be less than the model's {} "
                         "decoder layers",
                         training.cpu_offloading_num_layers, model.NumLayers()),
             fmt::format("use --cpu-offloading-num-layers {} or fewer", model.NumLayers() - 1));
  }
  if (training.parallel.pipeline > 1) {
    AddError(result, "C42", {kCpuOffloading, kPp},
             fmt::format("--cpu-offloading: not supported with --pipeline-model-parallel-size {}",
                         training.parallel.pipeline),
             "drop --cpu-offloading, or use --pipeline-model-parallel-size 1");
  }
  // transformer_config.py (__post_init__, CUDA graphs): "CUDA graphs not supported with CPU
  // offloading" unless the whole iteration is captured.
  const CudaGraphImpl graphs = training.cuda_graph.EffectiveImpl();
  if (graphs == CudaGraphImpl::kLocal || graphs == CudaGraphImpl::kTransformerEngine) {
    AddError(result, "C42", {kCpuOffloading, "--cuda-graph-impl"},
             fmt::format("--cpu-offloading: per-layer CUDA graphs (--cuda-graph-impl {}) do not "
                         "work with CPU offloading",
                         NameOf(kCudaGraphImplNames, graphs)),
             "drop --cpu-offloading, or use --cuda-graph-impl none or full_iteration");
  }
  if (training.recompute.granularity != RecomputeGranularity::kNone) {
    AddError(result, "C42", {kCpuOffloading, kGranularity},
             fmt::format("--cpu-offloading: does not work with --recompute-granularity {}",
                         ToString(training.recompute.granularity)),
             "drop --cpu-offloading or --recompute-granularity");
  }
}

// C43: the hybrid device optimizer reuses the precision-aware optimizer's code path, so
// --optimizer-cpu-offload requires --use-precision-aware-optimizer (Megatron-LM
// megatron/training/arguments.py, validate_args;
// docs/user-guide/features/optimizer_cpu_offload.md).
void CheckOptimizerOffload(const TrainingConfig& training, ValidationResult& result) {
  if (!training.optimizer.cpu_offload || training.precision.precision_aware_optimizer) return;
  AddError(result, "C43", {kOptimizerCpuOffload, kPrecisionAware},
           "--optimizer-cpu-offload: needs --use-precision-aware-optimizer (the hybrid device "
           "optimizer reuses its code path)",
           "add --use-precision-aware-optimizer");
}

}  // namespace trainscope::config::internal
