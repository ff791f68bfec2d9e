// Validator rules that a framework profile adds on top of Megatron-Core's: Megatron-Bridge's
// Qwen3.5 provider and HF export (MB1-MB3, per bridge release) and AReaL's sequence-packing mode
// (AR1), torchtitan's switches elsewhere (TT1, TT2). Each violation names its profile
// ("megatron-bridge 0.4", "areal"); docs/frameworks.md lists the rules with their sources and
// fixes.
#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "trainscope/config/validate_rules.h"

namespace trainscope::config::internal {
namespace {

bool IsQwen35(const ModelConfig& model) {
  return model.family == ModelFamily::kQwen35 || model.family == ModelFamily::kQwen35Moe;
}

void AddProfileError(ValidationResult& result, const std::string& profile, std::string rule,
                     std::vector<std::string> flags, std::string message, std::string fix) {
  AddError(result, std::move(rule), std::move(flags), std::move(message), std::move(fix));
  result.errors.back().profile = profile;
}

// MB1: Qwen35VLModelProvider / Qwen35VLMoEModelProvider.__post_init__ raise "TP size {tp} should
// be less than or equal to num_query_groups {n}" (src/megatron/bridge/models/qwen_vl/
// qwen35_vl_provider.py, tags v0.4.0-v0.4.2; removed by #3238 before v0.5.0).
void CheckBridgeTensorParallel(const ModelConfig& model, const TrainingConfig& training,
                               const std::string& profile, ValidationResult& result) {
  const int64_t t = training.parallel.tensor;
  const int64_t g = model.attention.num_kv_heads;
  if (!IsQwen35(model) || training.framework.bridge_version != BridgeVersion::kV0_4 || t <= g) {
    return;
  }
  AddProfileError(
      result, profile, "MB1", {kTp, kBridge},
      fmt::format("--tensor-model-parallel-size {}: Megatron-Bridge 0.4's Qwen3.5 provider needs "
                  "TP <= num_query_groups ({})",
                  t, g),
      fmt::format("use --tensor-model-parallel-size {} or less, or --megatron-bridge 0.5", g));
}

// MB2: with tied embeddings, _broadcast_shared_embeddings takes VPP chunk 0 on the last stage,
// which has no output_layer ("Output layer not found"; src/megatron/bridge/models/conversion/
// model_bridge.py, where a maintainer note says VPP is still to be fixed); fixed by #4694, first in
// v0.6.0.
void CheckBridgeVirtualStages(const ModelConfig& model, const TrainingConfig& training,
                              const std::string& profile, ValidationResult& result) {
  if (!model.tied_embeddings || training.parallel.virtual_stages <= 1 ||
      training.framework.bridge_version == BridgeVersion::kV0_6) {
    return;
  }
  AddProfileError(
      result, profile, "MB2", {kVpp, kBridge},
      fmt::format("--num-virtual-stages-per-pipeline-rank {}: Megatron-Bridge {} cannot export "
                  "tied embeddings with virtual pipeline stages (output layer not found)",
                  training.parallel.virtual_stages, ToString(training.framework.bridge_version)),
      "drop --num-virtual-stages-per-pipeline-rank, or use --megatron-bridge 0.6");
}

// MB3: Qwen3VLGPTModel.forward swaps self.embedding for a closure when MTP runs with sequence
// parallelism, and _postprocess then needs .word_embeddings with tied embeddings
// (src/megatron/bridge/models/qwen_vl/modelling_qwen3_vl/text_model.py); fixed by #3143, first
// in v0.5.0. AReaL patches it at import (megatron_bridge_patches.py), so only the bridge's own
// profile reports it.
void CheckBridgeMtpEmbedding(const ModelConfig& model, const TrainingConfig& training,
                             const std::string& profile, ValidationResult& result) {
  const bool sequence_parallel = training.sequence_parallel && training.parallel.tensor > 1;
  if (training.framework.framework != Framework::kMegatronBridge || !IsQwen35(model) ||
      training.framework.bridge_version != BridgeVersion::kV0_4 || model.num_mtp_layers == 0 ||
      !model.tied_embeddings || !sequence_parallel) {
    return;
  }
  AddProfileError(result, profile, "MB3", {kSp, kMtp, kBridge},
                  "--sequence-parallel: Megatron-Bridge 0.4 crashes on Qwen3.5 MTP layers with "
                  "sequence parallelism and tied embeddings (missing word_embeddings)",
                  "drop --sequence-parallel, or use --megatron-bridge 0.5");
}

// AR1: validate_context_parallel_mode rejects CP > 1 in PADDED mode (areal/engine/core/model.py),
// the mode AReaL picks for Qwen3.5 (is_qwen3_5_model).
void CheckArealContextParallel(const ModelConfig& model, const TrainingConfig& training,
                               ValidationResult& result) {
  if (training.framework.framework != Framework::kAreal || training.parallel.context <= 1 ||
      training.ResolvedSequenceLayout(model) != SequenceLayout::kBshd) {
    return;
  }
  AddProfileError(result, "areal", "AR1", {kCp, kLayout, kFramework},
                  fmt::format("--context-parallel-size {}: AReaL rejects context parallelism "
                              "with padded (BSHD) sequences",
                              training.parallel.context),
                  "use --context-parallel-size 1, or --sequence-layout thd");
}

// TT1: --training.compile is torchtitan's switch; Megatron-Core's frameworks fuse with Transformer
// Engine instead, so the flag would change nothing there.
void CheckTorchCompile(const TrainingConfig& training, ValidationResult& result) {
  if (!training.framework.torch_compile || training.framework.TorchNative()) return;
  AddProfileError(result, ToString(training.framework.framework), "TT1",
                  {kTorchCompile, kFramework},
                  "--training.compile: torch.compile of the layers is torchtitan's; this "
                  "framework runs Transformer Engine's fused kernels",
                  "drop --training.compile, or use --framework torchtitan");
}

// TT2: --fp8-recipe rowwise is torchao's recipe (Float8LinearRecipeName.ROWWISE,
// torchao/float8/config.py), which torchtitan runs; Megatron-LM's --fp8-recipe has no such
// choice and Transformer Engine no such recipe. torchao gathers FP8 weights for the tensor-wise
// recipe only (Float8LinearConfig enable_fsdp_float8_all_gather).
void CheckRowwiseRecipe(const TrainingConfig& training, ValidationResult& result) {
  const PrecisionConfig& precision = training.precision;
  if (precision.fp8 == Fp8Format::kNone || precision.fp8_recipe != Fp8Recipe::kRowwise) return;
  const std::string profile = ToString(training.framework.framework);
  if (!training.framework.TorchNative()) {
    AddProfileError(result, profile, "TT2", {kFp8Recipe, kFramework},
                    "--fp8-recipe rowwise: torchao's row-wise recipe runs only with --framework "
                    "torchtitan",
                    "add --framework torchtitan, or use --fp8-recipe tensorwise, mxfp8 or "
                    "blockwise");
  }
  if (precision.fp8_param_gather) {
    AddProfileError(result, profile, "TT2", {kFp8ParamGather, kFp8Recipe},
                    "--fp8-param-gather: torchao gathers FP8 weights only for the tensor-wise "
                    "recipe, not with --fp8-recipe rowwise",
                    "drop --fp8-param-gather, or use --fp8-recipe tensorwise");
  }
}

}  // namespace

void CheckFrameworkRules(const ModelConfig& model, const TrainingConfig& training,
                         ValidationResult& result) {
  if (training.framework.UsesBridge()) {
    std::string profile = "megatron-bridge ";
    profile.append(ToString(training.framework.bridge_version));
    if (training.framework.framework == Framework::kAreal) {
      profile = std::string("areal (").append(profile).append(")");
    }
    CheckBridgeTensorParallel(model, training, profile, result);
    CheckBridgeVirtualStages(model, training, profile, result);
    CheckBridgeMtpEmbedding(model, training, profile, result);
  }
  CheckArealContextParallel(model, training, result);
  CheckTorchCompile(training, result);
  CheckRowwiseRecipe(training, result);
}

}  // namespace trainscope::config::internal
