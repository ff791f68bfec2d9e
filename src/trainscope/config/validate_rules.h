// Internal to the validator: the Megatron flag names, the message helpers and the per-group
// rule checks that Validate() (validate.cc) runs in order. Each check appends its violations to
// the borrowed ValidationResult; the rules live in validate_parallel.cc, validate_pipeline.cc,
// validate_features.cc and validate_memory.cc, the helpers in validate.cc.
#ifndef TRAINSCOPE_CONFIG_VALIDATE_RULES_H_
#define TRAINSCOPE_CONFIG_VALIDATE_RULES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"
#include "trainscope/config/validate.h"

namespace trainscope::config::internal {

// Megatron-LM flag spellings (megatron/training/arguments.py) plus trainscope's own run flags.
inline constexpr char kNumGpus[] = "--num-gpus";
inline constexpr char kDp[] = "--data-parallel-size";
inline constexpr char kTp[] = "--tensor-model-parallel-size";
inline constexpr char kPp[] = "--pipeline-model-parallel-size";
inline constexpr char kVpp[] = "--num-virtual-stages-per-pipeline-rank";
inline constexpr char kCp[] = "--context-parallel-size";
inline constexpr char kCpCommType[] = "--cp-comm-type";
inline constexpr char kHierCp[] = "--hierarchical-context-parallel-sizes";
inline constexpr char kEp[] = "--expert-model-parallel-size";
inline constexpr char kEtp[] = "--expert-tensor-parallel-size";
inline constexpr char kTpPpDpMapping[] = "--use-tp-pp-dp-mapping";
inline constexpr char kSp[] = "--sequence-parallel";
inline constexpr char kMbs[] = "--micro-batch-size";
inline constexpr char kGbs[] = "--global-batch-size";
inline constexpr char kSeqLength[] = "--seq-length";
inline constexpr char kVisionTokens[] = "--vision-tokens-per-sample";
inline constexpr char kMaxPositions[] = "--max-position-embeddings";
inline constexpr char kMbGroup[] = "--microbatch-group-size-per-virtual-pipeline-stage";
inline constexpr char kNoP2pOverlap[] = "--no-overlap-p2p-communication";
inline constexpr char kFirstStage[] = "--decoder-first-pipeline-num-layers";
inline constexpr char kPpLayout[] = "--pipeline-model-parallel-layout";
inline constexpr char kLastStage[] = "--decoder-last-pipeline-num-layers";
inline constexpr char kAccountEmbedding[] = "--account-for-embedding-in-pipeline-split";
inline constexpr char kAccountLoss[] = "--account-for-loss-in-pipeline-split";
inline constexpr char kFfn[] = "--ffn-hidden-size";
inline constexpr char kExpertFfn[] = "--moe-ffn-hidden-size";
inline constexpr char kSharedFfn[] = "--moe-shared-expert-intermediate-size";
inline constexpr char kDispatcher[] = "--moe-token-dispatcher-type";
inline constexpr char kGroupedGemm[] = "--moe-grouped-gemm";
inline constexpr char kCapacity[] = "--moe-expert-capacity-factor";
inline constexpr char kPadToCapacity[] = "--moe-pad-expert-input-to-capacity";
inline constexpr char kRouterPadding[] = "--moe-router-padding-for-quantization";
inline constexpr char kLoadBalancing[] = "--moe-router-load-balancing-type";
inline constexpr char kSharedOverlap[] = "--moe-shared-expert-overlap";
inline constexpr char kDeepEp[] = "--moe-enable-deepep";
inline constexpr char kFlexBackend[] = "--moe-flex-dispatcher-backend";
inline constexpr char kEpOverlap[] = "--overlap-moe-expert-parallel-comm";
inline constexpr char kHybridEpPermuteFusion[] = "--moe-permute-fusion-into-hybridep";
inline constexpr char kRankCapacity[] = "--moe-expert-rank-capacity-factor";
inline constexpr char kPagedStash[] = "--moe-paged-stash";
inline constexpr char kTeOpFuser[] = "--use-transformer-engine-op-fuser";
inline constexpr char kDelayWgrad[] = "--delay-wgrad-compute";
inline constexpr char kBf16[] = "--bf16";
inline constexpr char kFp8Format[] = "--fp8-format";
inline constexpr char kFp8Recipe[] = "--fp8-recipe";
inline constexpr char kFp8ParamGather[] = "--fp8-param-gather";
inline constexpr char kFp4Format[] = "--fp4-format";
inline constexpr char kFp4Recipe[] = "--fp4-recipe";
inline constexpr char kFp4ParamGather[] = "--fp4-param-gather";
inline constexpr char kFp8OutputProj[] = "--fp8-output-proj";
inline constexpr char kDistOpt[] = "--use-distributed-optimizer";
inline constexpr char kMegatronFsdp[] = "--use-megatron-fsdp";
inline constexpr char kTorchFsdp2[] = "--use-torch-fsdp2";
inline constexpr char kUntie[] = "--untie-embeddings-and-output-weights";
inline constexpr char kOverlapGrad[] = "--overlap-grad-reduce";
inline constexpr char kOverlapParam[] = "--overlap-param-gather";
inline constexpr char kTpCommOverlap[] = "--tp-comm-overlap";
inline constexpr char kBucketSize[] = "--ddp-bucket-size";
inline constexpr char kGranularity[] = "--recompute-granularity";
inline constexpr char kMethod[] = "--recompute-method";
inline constexpr char kRecomputeLayers[] = "--recompute-num-layers";
inline constexpr char kModules[] = "--recompute-modules";
inline constexpr char kDistributeSaved[] = "--distribute-saved-activations";
inline constexpr char kCpuOffloading[] = "--cpu-offloading";
inline constexpr char kCpuOffloadingNumLayers[] = "--cpu-offloading-num-layers";
inline constexpr char kDeterministic[] = "--deterministic-mode";
inline constexpr char kCore[] = "--megatron-core";
inline constexpr char kFramework[] = "--framework";
inline constexpr char kOptimizerCpuOffload[] = "--optimizer-cpu-offload";
inline constexpr char kPrecisionAware[] = "--use-precision-aware-optimizer";
inline constexpr char kBridge[] = "--megatron-bridge";
inline constexpr char kTorchCompile[] = "--training.compile";
inline constexpr char kMtp[] = "--mtp-num-layers";
inline constexpr char kLayout[] = "--sequence-layout";
inline constexpr char kGdnConv[] = "--linear-conv-kernel-dim";
inline constexpr char kGdnKeyDim[] = "--linear-key-head-dim";
inline constexpr char kGdnValueDim[] = "--linear-value-head-dim";
inline constexpr char kGdnKeyHeads[] = "--linear-num-key-heads";
inline constexpr char kGdnValueHeads[] = "--linear-num-value-heads";

// Appends an error (or a warning) to `result`.
void AddError(ValidationResult& result, std::string rule, std::vector<std::string> flags,
              std::string message, std::string fix);
void AddWarning(ValidationResult& result, std::string rule, std::vector<std::string> flags,
                std::string message, std::string fix);

// Divisors of `n` (n >= 1) in increasing order.
[[nodiscard]] std::vector<int64_t> Divisors(int64_t n);
[[nodiscard]] bool Contains(const std::vector<std::string>& modules, std::string_view name);
// "1, 2, 4 or 8".
[[nodiscard]] std::string JoinChoices(const std::vector<int64_t>& values);
// The multiples of `step` nearest to `value`: "96 or 104" (only the upper one below `step`).
[[nodiscard]] std::string NearestMultiples(int64_t value, int64_t step);
[[nodiscard]] bool IsCore017OrOlder(const TrainingConfig& training);
// True when t·p·c divides the world size.
[[nodiscard]] bool GridDivides(const ParallelSizes& parallel);

// Sizes, grids, TP/EP/ETP splits, dispatcher and EP overlap (validate_parallel.cc).
// T1: every size is positive. Returns false if any is not; later rules divide by them.
bool CheckSizes(const TrainingConfig& training, ValidationResult& result);
// C1, C2: the dense and expert grids fill the world.
void CheckWorldDivisibility(const ModelConfig& model, const TrainingConfig& training,
                            ValidationResult& result);
// C3, T2: the data-parallel sizes.
void CheckDataParallelSizes(const TrainingConfig& training, ValidationResult& result);
// C4, C5: the attention heads over tensor-parallel ranks.
void CheckAttentionHeads(const ModelConfig& model, const TrainingConfig& training,
                         ValidationResult& result);
// T3, T6, T9: the other widths a column- or row-parallel linear divides by t.
void CheckLinearSplits(const ModelConfig& model, const TrainingConfig& training,
                       ValidationResult& result);
// C8, C9, T4, T5: expert placement and the MoE weight splits.
void CheckExpertSplits(const ModelConfig& model, const TrainingConfig& training,
                       ValidationResult& result);
// C11, C12, C13: dispatcher and capacity options.
void CheckDispatcher(const ModelConfig& model, const TrainingConfig& training,
                     ValidationResult& result);
// C14: the requirements of --overlap-moe-expert-parallel-comm; C51: --delay-wgrad-compute needs it.
void CheckEpOverlap(const TrainingConfig& training, ValidationResult& result);
// C57: --moe-expert-rank-capacity-factor's backend and fused experts; C58: --moe-paged-stash's
// requirements; C59: HybridEP's core 0.18 options on an older core.
void CheckHybridEpOptions(const TrainingConfig& training, ValidationResult& result);

// Pipeline split, virtual stages and batch rules (validate_pipeline.cc).
// C20, C21: the interleaved schedule's pipeline size.
void CheckVirtualStages(const TrainingConfig& training, ValidationResult& result);
// C15-C19: the even or uneven split of the decoder layers over pipeline stages.
void CheckPipelineSplit(const ModelConfig& model, const TrainingConfig& training,
                        ValidationResult& result);
// C23, C22, T7, T10: global batch, micro-batch groups, sequence length and 64-bit op sizes.
void CheckBatch(const ModelConfig& model, const TrainingConfig& training, ValidationResult& result);

// Context parallelism and Gated DeltaNet (validate_features.cc).
// C24-C27: context parallelism.
void CheckContextParallel(const ModelConfig& model, const TrainingConfig& training,
                          ValidationResult& result);
// C28-C33: Gated DeltaNet dimensions, head splits, core-version and FP8 rules.
void CheckGdn(const ModelConfig& model, const TrainingConfig& training, ValidationResult& result);
// C52-C55: the FP4 (NVFP4) flags and --fp8-output-proj.
void CheckFp4(const TrainingConfig& training, ValidationResult& result);
void CheckCudaGraph(const ModelConfig& model, const TrainingConfig& training,
                    ValidationResult& result);
void CheckVision(const ModelConfig& model, const TrainingConfig& training,
                 ValidationResult& result);

// Memory and overlap options (validate_memory.cc).
// C7 (warning), C37: sequence parallelism and TP communication overlap.
void CheckSequenceParallel(const TrainingConfig& training, ValidationResult& result);
// C38, C39, T8: data-parallel wrappers and their overlap options.
void CheckDataParallel(const ModelConfig& model, const TrainingConfig& training,
                       ValidationResult& result);
// C40: recompute granularity, method and layer count.
void CheckRecomputeOptions(const TrainingConfig& training, ValidationResult& result);
// C41: selective-recompute modules.
void CheckRecomputeModules(const ModelConfig& model, const TrainingConfig& training,
                           ValidationResult& result);
// C42: CPU offloading.
void CheckCpuOffloading(const ModelConfig& model, const TrainingConfig& training,
                        ValidationResult& result);
// C43: the optimizer's CPU offload.
void CheckOptimizerOffload(const TrainingConfig& training, ValidationResult& result);

// Framework profiles (validate_framework.cc).
// MB1-MB3 (Megatron-Bridge's Qwen3.5 provider and export), AR1 (AReaL): each violation names its
// profile.
void CheckFrameworkRules(const ModelConfig& model, const TrainingConfig& training,
                         ValidationResult& result);

}  // namespace trainscope::config::internal

#endif  // TRAINSCOPE_CONFIG_VALIDATE_RULES_H_
