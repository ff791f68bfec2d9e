// The one table per enum that maps configuration enums to and from their command-line / JSON
// spelling. ToString() and the flag parser both read these tables; nothing else spells them.
#ifndef TRAINSCOPE_CONFIG_ENUM_NAMES_H_
#define TRAINSCOPE_CONFIG_ENUM_NAMES_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "trainscope/config/training_config.h"

namespace trainscope::config {

template <typename Enum>
struct EnumName {
  Enum value;
  std::string_view name;
};

inline constexpr EnumName<CoreVersion> kCoreVersionNames[] = {
    {CoreVersion::kV0_16, "0.16"}, {CoreVersion::kV0_17, "0.17"}, {CoreVersion::kV0_18, "0.18"}};
inline constexpr EnumName<Framework> kFrameworkNames[] = {
    {Framework::kMegatronCore, "megatron-core"},
    {Framework::kMegatronBridge, "megatron-bridge"},
    {Framework::kAreal, "areal"},
    {Framework::kSlime, "slime"},
    {Framework::kVerl, "verl"},
    {Framework::kTorchtitan, "torchtitan"}};
inline constexpr EnumName<BridgeVersion> kBridgeVersionNames[] = {
    {BridgeVersion::kV0_4, "0.4"}, {BridgeVersion::kV0_5, "0.5"}, {BridgeVersion::kV0_6, "0.6"}};
inline constexpr EnumName<OptimizerKind> kOptimizerKindNames[] = {{OptimizerKind::kAdam, "adam"},
                                                                  {OptimizerKind::kSgd, "sgd"}};
inline constexpr EnumName<TokenDispatcher> kDispatcherNames[] = {
    {TokenDispatcher::kAllGather, "allgather"},
    {TokenDispatcher::kAllToAll, "alltoall"},
    {TokenDispatcher::kFlex, "flex"}};
inline constexpr EnumName<FlexBackend> kFlexBackendNames[] = {{FlexBackend::kDeepEp, "deepep"},
                                                              {FlexBackend::kHybridEp, "hybridep"}};
inline constexpr EnumName<RecomputeGranularity> kRecomputeGranularityNames[] = {
    {RecomputeGranularity::kNone, "none"},
    {RecomputeGranularity::kSelective, "selective"},
    {RecomputeGranularity::kFull, "full"}};
inline constexpr EnumName<RecomputeMethod> kRecomputeMethodNames[] = {
    {RecomputeMethod::kNone, "none"},
    {RecomputeMethod::kUniform, "uniform"},
    {RecomputeMethod::kBlock, "block"}};
inline constexpr EnumName<CudaGraphImpl> kCudaGraphImplNames[] = {
    {CudaGraphImpl::kNone, "none"},
    {CudaGraphImpl::kLocal, "local"},
    {CudaGraphImpl::kTransformerEngine, "transformer_engine"},
    {CudaGraphImpl::kFullIteration, "full_iteration"}};
inline constexpr EnumName<CudaGraphModule> kCudaGraphModuleNames[] = {
    {CudaGraphModule::kAttn, "attn"},
    {CudaGraphModule::kMlp, "mlp"},
    {CudaGraphModule::kMoe, "moe"},
    {CudaGraphModule::kMoeRouter, "moe_router"},
    {CudaGraphModule::kMoePreprocess, "moe_preprocess"},
    {CudaGraphModule::kMamba, "mamba"}};
// Deprecated --cuda-graph-scope / --cuda-graph-modules values (cuda_graph_config.py).
inline constexpr std::string_view kCudaGraphScopeFull = "full";
inline constexpr std::string_view kCudaGraphScopeFullIteration = "full_iteration";
inline constexpr std::string_view kCudaGraphScopeFullIterationInference =
    "full_iteration_inference";
inline constexpr EnumName<CpCommType> kCpCommTypeNames[] = {{CpCommType::kP2p, "p2p"},
                                                            {CpCommType::kAllGather, "all_gather"},
                                                            {CpCommType::kA2a, "a2a"},
                                                            {CpCommType::kA2aP2p, "a2a+p2p"}};
inline constexpr EnumName<CrossEntropyFusionImpl> kCrossEntropyFusionImplNames[] = {
    {CrossEntropyFusionImpl::kNative, "native"}, {CrossEntropyFusionImpl::kTe, "te"}};
inline constexpr EnumName<SequenceLayout> kSequenceLayoutNames[] = {
    {SequenceLayout::kAuto, "auto"},
    {SequenceLayout::kThd, "thd"},
    {SequenceLayout::kBshd, "bshd"}};
inline constexpr EnumName<RankOrder> kRankOrderNames[] = {
    {RankOrder::kTpCpEpDpPp, "tp-cp-ep-dp-pp"}, {RankOrder::kTpCpEpPpDp, "tp-cp-ep-pp-dp"}};
inline constexpr EnumName<LoadBalancing> kLoadBalancingNames[] = {
    {LoadBalancing::kAuxLoss, "aux_loss"},
    {LoadBalancing::kSeqAuxLoss, "seq_aux_loss"},
    {LoadBalancing::kGlobalAuxLoss, "global_aux_loss"},
    {LoadBalancing::kSinkhorn, "sinkhorn"},
    {LoadBalancing::kNone, "none"}};
inline constexpr EnumName<RouterDtype> kRouterDtypeNames[] = {
    {RouterDtype::kActivation, "none"}, {RouterDtype::kFp32, "fp32"}, {RouterDtype::kFp64, "fp64"}};
inline constexpr EnumName<Fp8Format> kFp8FormatNames[] = {
    {Fp8Format::kNone, "none"}, {Fp8Format::kE4m3, "e4m3"}, {Fp8Format::kHybrid, "hybrid"}};
inline constexpr EnumName<Fp8Recipe> kFp8RecipeNames[] = {{Fp8Recipe::kDelayed, "delayed"},
                                                          {Fp8Recipe::kTensorwise, "tensorwise"},
                                                          {Fp8Recipe::kMxfp8, "mxfp8"},
                                                          {Fp8Recipe::kBlockwise, "blockwise"},
                                                          {Fp8Recipe::kRowwise, "rowwise"}};
inline constexpr EnumName<Fp4Format> kFp4FormatNames[] = {{Fp4Format::kNone, "none"},
                                                          {Fp4Format::kE2m1, "e2m1"}};
inline constexpr EnumName<Fp4Recipe> kFp4RecipeNames[] = {{Fp4Recipe::kNvfp4, "nvfp4"},
                                                          {Fp4Recipe::kCustom, "custom"}};
inline constexpr EnumName<FsdpStrategy> kFsdpStrategyNames[] = {
    {FsdpStrategy::kNoShard, "no_shard"},
    {FsdpStrategy::kOptim, "optim"},
    {FsdpStrategy::kOptimGrads, "optim_grads"},
    {FsdpStrategy::kOptimGradsParams, "optim_grads_params"}};

// Returns the spelling of `value` in `table`.
template <typename Enum, size_t N>
[[nodiscard]] std::string NameOf(const EnumName<Enum> (&table)[N], Enum value) {
  for (const EnumName<Enum>& entry : table) {
    if (entry.value == value) return std::string(entry.name);
  }
  return "unknown";
}

// Returns the enum spelled `name` in `table`, or nothing.
template <typename Enum, size_t N>
[[nodiscard]] std::optional<Enum> ValueOf(const EnumName<Enum> (&table)[N], std::string_view name) {
  for (const EnumName<Enum>& entry : table) {
    if (entry.name == name) return entry.value;
  }
  return std::nullopt;
}

// "a|b|c": the accepted spellings, for error messages.
template <typename Enum, size_t N>
[[nodiscard]] std::string Choices(const EnumName<Enum> (&table)[N]) {
  std::string out;
  for (const EnumName<Enum>& entry : table) {
    if (!out.empty()) out += "|";
    out += entry.name;
  }
  return out;
}

}  // namespace trainscope::config

#endif  // TRAINSCOPE_CONFIG_ENUM_NAMES_H_
