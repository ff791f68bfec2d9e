// Validator rules on model features: context parallelism (communication types, hierarchical
// sizes, a2a head splits) and Gated DeltaNet (dimensions, head splits, core-version and FP8
// rules), following Transformer Engine's context_parallel.py and Megatron-LM's
// transformer_config.py and ssm/gated_delta_net (the CP and GDN rules of docs/validation.md).
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/config/enum_names.h"
#include "trainscope/config/validate_rules.h"

namespace trainscope::config::internal {
namespace {

bool UsesCommType(const TrainingConfig& training, CpCommType type) {
  const std::vector<CpCommType>& types = training.context.comm_types;
  return std::find(types.begin(), types.end(), type) != types.end();
}

// C27: a2a+p2p needs hierarchical sizes, and given sizes multiply to c (arguments.py:580-585).
// Returns whether the sizes are usable.
bool CheckHierarchicalSizes(const TrainingConfig& training, ValidationResult& result) {
  const std::vector<int64_t>& sizes = training.context.hierarchical_sizes;
  const bool needed = UsesCommType(training, CpCommType::kA2aP2p);
  if (!needed && sizes.empty()) return true;
  const int64_t product =
      std::accumulate(sizes.begin(), sizes.end(), int64_t{1}, std::multiplies<int64_t>());
  if (!sizes.empty() && product == training.parallel.context) return true;
  AddError(result, "C27", {kHierCp, kCpCommType, kCp},
           sizes.empty() ? std::string("--hierarchical-context-parallel-sizes: must be set when "
                                       "--cp-comm-type includes a2a+p2p")
                         : fmt::format("--hierarchical-context-parallel-sizes {}: product {} "
                                       "differs from --context-parallel-size {}",
                                       fmt::join(sizes, " "), product, training.parallel.context),
           fmt::format("give --hierarchical-context-parallel-sizes A B with A·B = {} (A = a2a "
                       "group, B = p2p group)",
                       training.parallel.context));
  return false;
}

// C25: the a2a (Ulysses) group must divide the local query and key/value heads.
void CheckA2aHeads(const ModelConfig& model, const TrainingConfig& training, int64_t group,
                   const char* comm_type, ValidationResult& result) {
  const int64_t t = training.parallel.tensor;
  const int64_t n = model.attention.num_heads;
  const int64_t g = model.attention.num_kv_heads;
  if (n % t != 0 || group <= 1) return;  // C4 reports the TP split
  const int64_t local_heads = n / t;
  const int64_t local_kv_heads = std::max<int64_t>(1, g / t);
  if (local_heads % group == 0 && local_kv_heads % group == 0) return;
  AddError(
      result, "C25", {kCpCommType, kCp, kTp},
      fmt::format("--cp-comm-type {}: the a2a group of {} ranks must divide the {} query heads "
                  "and {} key/value heads per tensor-parallel rank",
                  comm_type, group, local_heads, local_kv_heads),
      fmt::format("use --cp-comm-type p2p, or an a2a group size among {}",
                  JoinChoices(Divisors(std::gcd(local_heads, local_kv_heads)))));
}

// C28: the Gated DeltaNet dimensions are set (transformer_config.py:1470-1497). Returns whether
// they are, so that the rules dividing by them can run.
bool CheckGdnDims(const GdnConfig& gdn, ValidationResult& result) {
  const std::pair<const char*, int64_t> dims[] = {{kGdnConv, gdn.conv_kernel},
                                                  {kGdnKeyDim, gdn.key_head_dim},
                                                  {kGdnValueDim, gdn.value_head_dim},
                                                  {kGdnKeyHeads, gdn.num_key_heads},
                                                  {kGdnValueHeads, gdn.num_value_heads}};
  bool ok = true;
  for (const auto& [flag, value] : dims) {
    if (value > 0) continue;
    ok = false;
    AddError(
        result, "C28", {flag},
        fmt::format("{} {}: Gated DeltaNet layers need it set to a positive value", flag, value),
        "load the model from its config.json (linear_* keys)");
  }
  return ok;
}

// C29: value heads are a multiple of key heads (transformer_config.py:1493-1497).
void CheckGdnHeadRatio(const GdnConfig& gdn, ValidationResult& result) {
  if (gdn.num_value_heads % gdn.num_key_heads == 0) return;
  AddError(result, "C29", {kGdnValueHeads, kGdnKeyHeads},
           fmt::format("--linear-num-value-heads {}: not a multiple of --linear-num-key-heads {}",
                       gdn.num_value_heads, gdn.num_key_heads),
           "fix the model configuration (linear_num_value_heads)");
}

// C30: head counts over the tensor/context-parallel split (transformer_config.py:1498-1509;
// `% t` only up to core 0.17: tags core_v0.16.0 to core_v0.17.1).
void CheckGdnHeads(const GdnConfig& gdn, const TrainingConfig& training, ValidationResult& result) {
  const int64_t t = training.parallel.tensor;
  const int64_t c = training.parallel.context;
  const bool per_tc = !IsCore017OrOlder(training);
  const int64_t divisor = per_tc ? t * c : t;
  if (gdn.num_key_heads % divisor == 0 && gdn.num_value_heads % divisor == 0) return;
  const std::string product =
      per_tc ? fmt::format("t·c = {}·{} = {}", t, c, divisor) : fmt::format("t = {}", t);
  AddError(
      result, "C30",
      per_tc ? std::vector<std::string>{kTp, kCp, kCore} : std::vector<std::string>{kTp, kCore},
      fmt::format("--tensor-model-parallel-size {}: Gated DeltaNet key heads {} and value "
                  "heads {} must be divisible by {} (Megatron-Core {})",
                  t, gdn.num_key_heads, gdn.num_value_heads, product,
                  ToString(training.core_version)),
      fmt::format("use {} {} (divisors of {} key heads and {} value heads)",
                  per_tc ? "--tensor-model-parallel-size and --context-parallel-size with t·c"
                         : "--tensor-model-parallel-size",
                  JoinChoices(Divisors(std::gcd(gdn.num_key_heads, gdn.num_value_heads))),
                  gdn.num_key_heads, gdn.num_value_heads));
}

// C31, C32: context parallelism and packed sequences per core version (asserts in
// transformer_config.py and ssm/gated_delta_net.py up to core_v0.17.1;
// gdn.py:137-140).
void CheckGdnVersion(const ModelConfig& model, const TrainingConfig& training,
                     ValidationResult& result) {
  const std::string core = ToString(training.core_version);
  const bool thd = training.ResolvedSequenceLayout(model) == SequenceLayout::kThd;
  if (IsCore017OrOlder(training)) {
    if (training.parallel.context > 1) {
      AddError(result, "C31", {kCp, kCore},
               fmt::format("--context-parallel-size {}: Megatron-Core {} asserts context parallel "
                           "size 1 for Gated DeltaNet",
                           training.parallel.context, core),
               "use --context-parallel-size 1, or --megatron-core 0.18");
    }
    if (thd) {
      AddError(result, "C31", {kLayout, kCore},
               fmt::format("--sequence-layout thd: Megatron-Core {} does not support packed "
                           "sequences with Gated DeltaNet",
                           core),
               "use --sequence-layout bshd (or auto), or --megatron-core 0.18");
    }
    return;
  }
  if (thd && training.batch.micro_batch_size != 1) {
    AddError(result, "C32", {kLayout, kMbs},
             fmt::format("--sequence-layout thd: packed sequences with Gated DeltaNet need "
                         "--micro-batch-size 1 (got {})",
                         training.batch.micro_batch_size),
             "use --micro-batch-size 1, or --sequence-layout bshd (or auto)");
  }
  if (thd && training.deterministic) {
    AddError(result, "C32", {kDeterministic, kLayout},
             "--deterministic-mode: packed sequences (--sequence-layout thd) with Gated DeltaNet "
             "do not support deterministic mode",
             "use --sequence-layout bshd, or drop --deterministic-mode");
  }
}

// C33: the FP8 GEMM alignment of the fused in_proj output (common.py:205-210; 32 for MXFP8,
// fp8_utils.py:356-361).
void CheckGdnFp8(const GdnConfig& gdn, const TrainingConfig& training, ValidationResult& result) {
  if (training.precision.fp8 == Fp8Format::kNone) return;
  const int64_t align = training.precision.fp8_recipe == Fp8Recipe::kMxfp8 ? 32 : 16;
  if (gdn.InProjWidth() % align == 0) return;
  AddError(result, "C33", {kFp8Format, kFp8Recipe},
           fmt::format("--fp8-format: the Gated DeltaNet in_proj width {} is not a multiple of {}",
                       gdn.InProjWidth(), align),
           "drop --fp8-format (train in bf16)");
}

}  // namespace

// C52: FP4 and FP8 exclude each other (arguments.py validate_args: "--fp4-format and
// --fp8-format cannot be used simultaneously"). C53: --fp4-param-gather needs --fp4-format
// (ibid.). C54: the custom FP4 recipe takes a user quantizer factory (TransformerConfig
// fp4_quantizer_factory) whose kernels trainscope cannot know.
void CheckFp4(const TrainingConfig& training, ValidationResult& result) {
  const PrecisionConfig& precision = training.precision;
  const bool fp4 = precision.fp4 != Fp4Format::kNone;
  if (fp4 && precision.fp8 != Fp8Format::kNone) {
    AddError(result, "C52", {kFp4Format, kFp8Format},
             "--fp4-format and --fp8-format cannot be used together",
             "choose one: drop --fp8-format for NVFP4 GEMMs, or --fp4-format for FP8");
  }
  if (precision.fp4_param_gather && !fp4) {
    AddError(result, "C53", {kFp4ParamGather, kFp4Format}, "--fp4-param-gather: needs --fp4-format",
             "add --fp4-format e2m1");
  }
  if (fp4 && precision.fp4_recipe == Fp4Recipe::kCustom) {
    AddError(result, "C54", {kFp4Recipe},
             "--fp4-recipe custom: a user quantizer factory's kernels are not modelled",
             "use --fp4-recipe nvfp4");
  }
  // C55: transformer_config.py __post_init__ ("fp8_output_proj must be used together with fp8
  // mode", "fp8_output_proj requires fp8_recipe='mxfp8'").
  if (precision.fp8_output_proj &&
      (precision.fp8 == Fp8Format::kNone || precision.fp8_recipe != Fp8Recipe::kMxfp8)) {
    AddError(result, "C55", {kFp8OutputProj, kFp8Recipe},
             "--fp8-output-proj: needs --fp8-format with --fp8-recipe mxfp8",
             "add --fp8-format e4m3 --fp8-recipe mxfp8, or drop --fp8-output-proj");
  }
}

// C24, C26, C27, C25: context parallelism.
void CheckContextParallel(const ModelConfig& model, const TrainingConfig& training,
                          ValidationResult& result) {
  const int64_t c = training.parallel.context;
  const int64_t s = training.batch.seq_length;
  if (c > 1 && s % (2 * c) != 0) {
    AddError(result, "C24", {kSeqLength, kCp},
             fmt::format("--seq-length {}: not divisible by 2·c = {} (--context-parallel-size {})",
                         s, 2 * c, c),
             fmt::format("use --seq-length {}", NearestMultiples(s, 2 * c)));
  }
  const size_t num_types = training.context.comm_types.size();
  if (c > 1 && num_types != 1 && num_types != static_cast<size_t>(model.NumLayers())) {
    AddError(
        result, "C26", {kCpCommType},
        fmt::format("--cp-comm-type: {} entries; give one for all layers or one per layer ({})",
                    num_types, model.NumLayers()),
        fmt::format("give 1 or {} values to --cp-comm-type", model.NumLayers()));
  }
  const bool hierarchical_ok = CheckHierarchicalSizes(training, result);
  if (c == 1) return;
  if (UsesCommType(training, CpCommType::kA2a)) CheckA2aHeads(model, training, c, "a2a", result);
  if (UsesCommType(training, CpCommType::kA2aP2p) && hierarchical_ok) {
    CheckA2aHeads(model, training, training.context.hierarchical_sizes.front(), "a2a+p2p", result);
  }
}

// C44: image tokens need a vision tower, fit in the sequence, and the tower's heads and widths
// split over TP (its qkv, fc1 and merger fc1 are column-parallel).
void CheckVision(const ModelConfig& model, const TrainingConfig& training,
                 ValidationResult& result) {
  const int64_t tokens = training.batch.vision_tokens_per_sample;
  if (tokens == 0) return;
  const VisionConfig& vision = model.vision;
  if (!vision.Present()) {
    AddError(
        result, "C44", {kVisionTokens},
        fmt::format("--vision-tokens-per-sample {}: {} has no vision tower", tokens, model.name),
        "drop --vision-tokens-per-sample, or use a Qwen3.5 model");
    return;
  }
  if (tokens > training.batch.seq_length) {
    AddError(result, "C44", {kVisionTokens, kSeqLength},
             fmt::format("--vision-tokens-per-sample {}: more than --seq-length {} (image tokens "
                         "are positions of the text sequence)",
                         tokens, training.batch.seq_length),
             "lower --vision-tokens-per-sample or raise --seq-length");
  }
  const int64_t t = training.parallel.tensor;
  if (vision.num_heads % t != 0 || vision.intermediate_size % t != 0 ||
      vision.hidden_size % vision.num_heads != 0) {
    AddError(result, "C44", {kVisionTokens, kTp},
             fmt::format("vision tower: {} heads and MLP width {} do not split over t = {}",
                         vision.num_heads, vision.intermediate_size, t),
             "choose --tensor-model-parallel-size dividing both");
  }
}

// C49: Megatron's CUDA-graph flag assertions (arguments.py:611-641, 1969-1971;
// cuda_graph_config.py normalize_cuda_graph_modules; enums.py: moe_preprocess needs moe_router).
void CheckCudaGraph(const ModelConfig& model, const TrainingConfig& training,
                    ValidationResult& result) {
  const CudaGraphConfig& g = training.cuda_graph;
  const char* enable = "--enable-cuda-graph";
  const char* external = "--external-cuda-graph";
  const char* impl = "--cuda-graph-impl";
  if ((g.enable_cuda_graph || g.external_cuda_graph) && g.impl != CudaGraphImpl::kNone) {
    AddError(result, "C49", {g.enable_cuda_graph ? enable : external, impl},
             "do not use --enable-cuda-graph or --external-cuda-graph with --cuda-graph-impl",
             "use --cuda-graph-impl alone");
  }
  if (g.enable_cuda_graph && g.external_cuda_graph) {
    AddError(result, "C49", {enable, external},
             "--enable-cuda-graph and --external-cuda-graph cannot be enabled at the same time",
             "drop one");
  }
  if (!g.scope.empty() && !g.modules.empty()) {
    AddError(result, "C49", {"--cuda-graph-scope", "--cuda-graph-modules"},
             "--cuda-graph-scope and --cuda-graph-modules cannot be used together",
             "use --cuda-graph-modules");
  }
  const std::vector<std::string>& values = g.scope.empty() ? g.modules : g.scope;
  const bool full = std::ranges::find(values, kCudaGraphScopeFull) != values.end();
  if (full && values.size() > 1) {
    AddError(result, "C49", {g.scope.empty() ? "--cuda-graph-modules" : "--cuda-graph-scope"},
             "full scope cannot be used with other scopes", "give full alone");
  }
  const std::vector<CudaGraphModule> modules = g.EffectiveModules();
  if (g.EffectiveImpl() == CudaGraphImpl::kFullIteration && !modules.empty()) {
    AddError(result, "C49", {impl, "--cuda-graph-modules"},
             "--cuda-graph-modules must be empty when --cuda-graph-impl=full_iteration",
             "drop the modules");
  }
  const auto has = [&](CudaGraphModule m) {
    return std::ranges::find(modules, m) != modules.end();
  };
  const CudaGraphImpl effective = g.EffectiveImpl();
  const bool per_layer =
      effective == CudaGraphImpl::kLocal || effective == CudaGraphImpl::kTransformerEngine;
  if (!per_layer) return;
  // transformer_config.py:2798-2848 (the local implementation adds moe_router and
  // moe_preprocess to each other).
  if (effective == CudaGraphImpl::kTransformerEngine && has(CudaGraphModule::kMoePreprocess) &&
      !has(CudaGraphModule::kMoeRouter)) {
    AddError(result, "C49", {"--cuda-graph-modules"},
             "moe_preprocess cuda graph is only supported with moe_router cuda graph",
             "add moe_router");
  }
  if (has(CudaGraphModule::kMoe) && has(CudaGraphModule::kMoeRouter)) {
    AddError(result, "C49", {"--cuda-graph-modules"},
             "cuda graph modules must not contain both moe and moe_router", "drop one");
  }
  const bool moe_scope = has(CudaGraphModule::kMoe) || has(CudaGraphModule::kMoeRouter) ||
                         has(CudaGraphModule::kMoePreprocess);
  if (moe_scope && !model.HasMoe()) {
    AddError(result, "C49", {"--cuda-graph-modules"},
             "moe cuda graph is only supported for MoE models", "drop moe / moe_router");
  }
  if (has(CudaGraphModule::kMoe) && model.HasMoe() &&
      !(training.moe.capacity_factor && training.moe.pad_expert_input_to_capacity)) {
    AddError(result, "C49", {"--cuda-graph-modules"},
             "moe cuda graph is only supported with drop-padding MoE",
             "add --moe-expert-capacity-factor and --moe-pad-expert-input-to-capacity, or use "
             "moe_router");
  }
  if (training.recompute.granularity == RecomputeGranularity::kFull) {
    AddError(result, "C49", {"--recompute-granularity"},
             "full recompute is only supported with full iteration CUDA graph",
             "use --cuda-graph-impl full_iteration or selective recompute");
  }
}

void CheckGdn(const ModelConfig& model, const TrainingConfig& training, ValidationResult& result) {
  if (!model.HasGdn()) return;
  if (!CheckGdnDims(model.gdn, result)) return;
  if (training.framework.DuplicatesGdn()) {
    // slime runs the whole GDN unsplit in its HuggingfaceAttention wrapper (plain nn.Linear, THD
    // via cu_seqlens, any CP), so only the model's own head ratio applies (C29).
    CheckGdnHeadRatio(model.gdn, result);
    return;
  }
  CheckGdnHeadRatio(model.gdn, result);
  CheckGdnHeads(model.gdn, training, result);
  CheckGdnVersion(model, training, result);
  CheckGdnFp8(model.gdn, training, result);
}

}  // namespace trainscope::config::internal
