#include "trainscope/config/training_config.h"

#include <cmath>

#include "trainscope/config/enum_names.h"
#include "trainscope/config/model_config.h"
#include "trainscope/error.h"
#include "trainscope/units.h"

namespace trainscope::config {

std::string ToString(CoreVersion version) { return NameOf(kCoreVersionNames, version); }
std::string ToString(TokenDispatcher dispatcher) { return NameOf(kDispatcherNames, dispatcher); }
std::string ToString(RecomputeGranularity granularity) {
  return NameOf(kRecomputeGranularityNames, granularity);
}
std::string ToString(RecomputeMethod method) { return NameOf(kRecomputeMethodNames, method); }
std::string ToString(CpCommType type) { return NameOf(kCpCommTypeNames, type); }
std::string ToString(SequenceLayout layout) { return NameOf(kSequenceLayoutNames, layout); }
std::string ToString(RankOrder order) { return NameOf(kRankOrderNames, order); }

int64_t OptimizerConfig::HostNumel(int64_t numel) const {
  return std::llround(HostFraction() * static_cast<double>(numel));
}

TrainingConfig UnsplitGdnTraining(const TrainingConfig& training) {
  TrainingConfig whole = training;
  whole.parallel.tensor = 1;
  whole.parallel.context = 1;
  whole.sequence_parallel = false;
  whole.framework = FrameworkProfile{};
  // Its GDN is the Hugging Face module, which --deterministic-mode does not switch to
  // Megatron-Core's torch-native path.
  whole.deterministic = false;
  return whole;
}

TrainingConfig WithFrameworkDefaults(TrainingConfig training) {
  switch (training.framework.framework) {
    case Framework::kAreal:
      if (!training.parallel.expert_tensor) training.parallel.expert_tensor = 1;
      training.sequence_parallel = training.sequence_parallel || training.parallel.tensor > 1;
      break;
    case Framework::kVerl:
      training.sequence_parallel = training.sequence_parallel || training.parallel.tensor > 1;
      break;
    case Framework::kSlime:
      training.data_parallel.distributed_optimizer = true;
      break;
    case Framework::kTorchtitan:
      // FSDP2 shards parameters, gradients and optimizer states over the data-parallel ranks
      // (torchtitan's data_parallel_shard_degree -1: all of them), which trainscope prices as
      // Megatron-FSDP's optim_grads_params (with the distributed optimizer it requires, T8).
      training.data_parallel.distributed_optimizer = true;
      training.data_parallel.megatron_fsdp = true;
      training.data_parallel.fsdp_strategy = FsdpStrategy::kOptimGradsParams;
      break;
    case Framework::kMegatronCore:
    case Framework::kMegatronBridge:
      break;
  }
  return training;
}

int64_t BytesOf(RouterDtype dtype) {
  switch (dtype) {
    case RouterDtype::kFp32:
      return kFp32Bytes;
    case RouterDtype::kFp64:
      return 2 * kFp32Bytes;
    case RouterDtype::kActivation:
      break;
  }
  return kBf16Bytes;
}

int64_t BytesOf(ParamDtype dtype) { return dtype == ParamDtype::kFp32 ? kFp32Bytes : kBf16Bytes; }

int64_t BytesOf(OptimizerDtype dtype) {
  switch (dtype) {
    case OptimizerDtype::kFp32:
      return kFp32Bytes;
    case OptimizerDtype::kFp16:
    case OptimizerDtype::kBf16:
      return kBf16Bytes;
    case OptimizerDtype::kFp8:
      break;
  }
  return kFp8Bytes;
}

bool RecomputeConfig::FullRecomputeLayer(int64_t index_in_chunk) const {
  if (granularity != RecomputeGranularity::kFull) return false;
  if (method == RecomputeMethod::kUniform) return true;
  return method == RecomputeMethod::kBlock && index_in_chunk < num_layers.value_or(0);
}

int64_t TrainingConfig::GlobalBatchSize() const {
  return batch.global_batch_size.value_or(batch.micro_batch_size * parallel.Data());
}

int64_t TrainingConfig::NumMicroBatches() const {
  const int64_t model_parallel = parallel.tensor * parallel.pipeline * parallel.context;
  TRAINSCOPE_CHECK(parallel.tensor > 0 && parallel.pipeline > 0 && parallel.context > 0 &&
                       batch.micro_batch_size > 0 && parallel.world_size % model_parallel == 0,
                   "NumMicroBatches needs a validated configuration");
  const int64_t batch_per_micro = batch.micro_batch_size * parallel.Data();
  TRAINSCOPE_CHECK(batch_per_micro > 0, "NumMicroBatches needs W >= t·p·c");
  return GlobalBatchSize() / batch_per_micro;
}

int64_t TrainingConfig::MicroBatchGroupSize() const {
  return batch.microbatch_group_size_per_vp_stage.value_or(parallel.pipeline);
}

int64_t TrainingConfig::GradReduceBytes() const {
  // Megatron-FSDP: --megatron-fsdp-grad-comm-dtype and main-grads dtype default to `auto` = the
  // params dtype (arguments.py:3687-3694); grad_reduce_in_fp32 applies to DDP only.
  if (data_parallel.megatron_fsdp) return BytesOf(precision.params);
  return precision.grad_reduce_in_fp32 ? kFp32Bytes : kBf16Bytes;
}

CudaGraphImpl CudaGraphConfig::EffectiveImpl() const {
  if (enable_cuda_graph) return CudaGraphImpl::kLocal;
  if (external_cuda_graph) return CudaGraphImpl::kTransformerEngine;
  for (const std::vector<std::string>* values : {&scope, &modules}) {
    for (const std::string& value : *values) {
      if (value == kCudaGraphScopeFullIteration) return CudaGraphImpl::kFullIteration;
    }
  }
  return impl;
}

std::vector<CudaGraphModule> CudaGraphConfig::EffectiveModules() const {
  std::vector<CudaGraphModule> result;
  for (const std::vector<std::string>* values : {&scope, &modules}) {
    for (const std::string& value : *values) {
      if (const std::optional<CudaGraphModule> module = ValueOf(kCudaGraphModuleNames, value)) {
        result.push_back(*module);
      }
    }
  }
  return result;
}

SequenceLayout TrainingConfig::ResolvedSequenceLayout(const ModelConfig& model) const {
  if (sequence_layout != SequenceLayout::kAuto) return sequence_layout;
  if (model.HasGdn()) {
    switch (framework.framework) {
      case Framework::kSlime:  // packed THD with cu_seqlens (slime/backends/megatron_utils/data.py)
        return SequenceLayout::kThd;
      case Framework::kAreal:  // PADDED for qwen3_5* (areal/engine/core/model.py)
      case Framework::kVerl:   // use_remove_padding: False for GDN (verl issue #7203)
        return SequenceLayout::kBshd;
      case Framework::kMegatronCore:
      case Framework::kMegatronBridge:
      case Framework::kTorchtitan:
        break;
    }
  }
  // Section 7.5 and C32: packed sequences with Gated DeltaNet need core >= 0.18, micro-batch 1
  // and no deterministic mode; auto picks THD only where it is legal.
  const bool packed_forbidden = model.HasGdn() && (core_version <= CoreVersion::kV0_17 ||
                                                   batch.micro_batch_size > 1 || deterministic);
  return packed_forbidden ? SequenceLayout::kBshd : SequenceLayout::kThd;
}

}  // namespace trainscope::config
