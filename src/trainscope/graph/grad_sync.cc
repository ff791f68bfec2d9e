// The once-per-step ops after the last backward (finalize_model_grads.py): DDP
// gradient reduction per bucket, the finalize_model_grads reductions, the grad-norm reductions,
// the Adam step and the distributed optimizer's parameter all-gather.
#include "trainscope/graph/op_sink.h"
#include "trainscope/graph/step_graph_internal.h"
#include "trainscope/units.h"

namespace trainscope::graph::internal {
namespace {

using config::GroupKind;
using config::TrainingConfig;

// Adam step per fp32 main parameter (docs/workload.md "Optimizer"): grad unscale/clip 1, first
// moment 3, second moment 4, sqrt + eps + divide 3, weight decay and lr update 3 = 14 FLOPs.
constexpr int64_t kAdamFlopsPerParam = 14;
// Bytes per parameter: fp32 main param, exp_avg, exp_avg_sq each read and written (24), the fp32
// main grad read (4) and the bf16 model param written (2).
constexpr int64_t kAdamBytesPerParam = 3 * 2 * kFp32Bytes + kFp32Bytes + kBf16Bytes;

// SGD step per fp32 main parameter (torch.optim.SGD with momentum and weight decay): grad
// unscale/clip 1, weight decay 2, momentum 2, lr update 2 = 7 FLOPs; at momentum 0, 5.
// Bytes: fp32 main param read and written (8), the momentum read and written (8), the fp32 main
// grad read (4) and the bf16 model param written (2).
constexpr int64_t kSgdFlopsPerParam = 7;
constexpr int64_t kSgdBytesPerParam = 2 * kFp32Bytes + 2 * kFp32Bytes + kFp32Bytes + kBf16Bytes;
// Per offloaded parameter and step (HybridDeviceOptimizer.step): the grad copied into its pinned
// fp32 CPU buffer (D2H) and the updated bf16 param copied back (H2D). The dtype of the D2H copy
// of a bf16 grad is unverified (docs/frameworks.md).
constexpr int64_t kHostGradBytesPerParam = kFp32Bytes;
constexpr int64_t kHostParamBytesPerParam = kBf16Bytes;

int64_t StepFlopsPerParam(const config::OptimizerConfig& optimizer) {
  if (optimizer.kind == config::OptimizerKind::kAdam) return kAdamFlopsPerParam;
  return optimizer.sgd_momentum > 0 ? kSgdFlopsPerParam : kSgdFlopsPerParam - 2;
}

int64_t StepBytesPerParam(const config::OptimizerConfig& optimizer) {
  if (optimizer.kind == config::OptimizerKind::kAdam) return kAdamBytesPerParam;
  return optimizer.sgd_momentum > 0 ? kSgdBytesPerParam : kSgdBytesPerParam - 2 * kFp32Bytes;
}

// Parameters this rank's optimizer updates: its shard of every bucket with the distributed
// optimizer, else every local parameter.
int64_t OptimizerNumel(const RankParams& params, bool distributed) {
  int64_t numel = 0;
  for (const GradBuffer& buffer : params.buffers) {
    for (const int64_t bucket : buffer.bucket_numels) {
      numel += distributed ? bucket / buffer.group_size : bucket;
    }
  }
  return numel;
}

}  // namespace

Op StepOp(const std::string& name, OpRole role, Phase phase, Collective collective, GroupKind group,
          int64_t group_size, int64_t message_bytes) {
  Op op;
  op.phase = phase;
  op.name = name;
  if (collective != Collective::kNone) role.kind = OpKind::kCollective;
  op.role = role;
  op.collective = collective;
  op.group = group;
  op.group_size = group_size;
  op.message_bytes = message_bytes;
  return op;
}

// DDP: per bucket, RS (distributed optimizer) or AR of bucket_numel·β_g, or after the step the
// AG of the updated bf16 params.
int64_t EmitBucketOps(GraphWriter& writer, const RankParams& params, const TrainingConfig& training,
                      bool param_gather, int64_t after) {
  const bool distributed = training.data_parallel.distributed_optimizer;
  if (param_gather && !distributed) return after;
  for (const GradBuffer& buffer : params.buffers) {
    if (buffer.group_size == 1) continue;
    const bool expert = buffer.group == GroupKind::kExpertDp;
    const std::string prefix = expert ? "edp." : "dp.";
    const OpBlock block = expert ? OpBlock::kExpertDataParallel : OpBlock::kDataParallel;
    for (size_t i = 0; i < buffer.bucket_numels.size(); ++i) {
      const int64_t numel = buffer.bucket_numels[i];
      Op op = StepOp(prefix + "grad_all_reduce", CommRole(block, CommPurpose::kGradBucket),
                     Phase::kGradSync, Collective::kAllReduce, buffer.group, buffer.group_size,
                     numel * training.GradReduceBytes());
      if (distributed) {
        op.name = prefix + "grad_reduce_scatter";
        op.collective = Collective::kReduceScatter;
      }
      if (param_gather) {
        op.name = prefix + "param_all_gather";
        op.role.purpose = CommPurpose::kParamBucket;
        op.phase = Phase::kOptimizer;
        op.collective = Collective::kAllGather;
        op.message_bytes = numel * config::BytesOf(training.precision.params);
      }
      op.name += ".bucket" + std::to_string(i);
      op.model_chunk = buffer.chunk;
      after = writer.Add(std::move(op), {after});
    }
  }
  return after;
}

// TP, embedding and expert-bias ARs (finalize_model_grads.py:640-687).
int64_t EmitFinalizeOps(GraphWriter& writer, const RankParams& params,
                        const LayerOpContext& context, const config::RankMapping& mapping,
                        int64_t rank, int64_t after) {
  const TrainingConfig& training = context.training;
  const config::ParallelSizes& sizes = training.parallel;
  if (sizes.tensor > 1 && params.tp_synced_numel > 0) {
    after = writer.Add(StepOp("tp.replicated_grad_all_reduce",
                              CommRole(OpBlock::kTensorParallel, CommPurpose::kReplicatedGrad),
                              Phase::kGradSync, Collective::kAllReduce, GroupKind::kTp,
                              sizes.tensor, params.tp_synced_numel * training.GradReduceBytes()),
                       {after});
  }
  const int64_t embedding_group =
      static_cast<int64_t>(mapping.GroupOf(GroupKind::kEmbedding, rank).size());
  if (params.shared_embedding_numel > 0 && embedding_group > 1) {
    after = writer.Add(
        StepOp("embedding.grad_all_reduce",
               CommRole(OpBlock::kEmbedding, CommPurpose::kEmbeddingGrad), Phase::kGradSync,
               Collective::kAllReduce, GroupKind::kEmbedding, embedding_group,
               params.shared_embedding_numel * training.GradReduceBytes()),
        {after});
  }
  const int64_t tp_dp_cp = sizes.tensor * sizes.Data() * sizes.context;
  if (training.moe.router_enable_expert_bias && params.num_moe_layers > 0 && tp_dp_cp > 1) {
    // finalize_model_grads.py:683-687: fp32 token counts over tp×dp×cp.
    after =
        writer.Add(StepOp("moe.expert_bias_all_reduce",
                          CommRole(OpBlock::kMoeRouter, CommPurpose::kExpertBias), Phase::kGradSync,
                          Collective::kAllReduce, GroupKind::kTpDpCp, tp_dp_cp,
                          params.num_moe_layers * context.model.moe.num_experts * kFp32Bytes),
                   {after});
  }
  return after;
}

namespace {

Op HostOp(const std::string& name, OpKind kind, int64_t flops, int64_t bytes) {
  Op op = StepOp(name, KernelRole(kind, OpBlock::kOptimizer), Phase::kOptimizer, Collective::kNone,
                 GroupKind::kDpCp, 1, 0);
  op.flops = flops;
  op.bytes = bytes;
  // The GPU step is one multi-tensor-apply launch; host transfers and the CPU step are priced on
  // the host already.
  op.num_launches = kind == OpKind::kOptimizer ? 1 : 0;
  return op;
}

// The optimizer step of `gpu_numel` parameters on the GPU and, with --optimizer-cpu-offload,
// `host_numel` on the host (HybridDeviceOptimizer.step, hybrid_optimizer.py): grad D2H, GPU step,
// CPU step, param H2D in order; with --overlap-cpu-optimizer-d2h-h2d one CPU optimizer per
// parameter pipelines them, so a single CPU op carries the D2H bytes it overlaps.
int64_t EmitOptimizerStep(GraphWriter& writer, int64_t gpu_numel, int64_t host_numel,
                          const config::OptimizerConfig& optimizer, int64_t after) {
  const char* what = "optimizer bytes";
  const int64_t d2h = CheckedMul(host_numel, kHostGradBytesPerParam, what);
  const int64_t h2d = CheckedMul(host_numel, kHostParamBytesPerParam, what);
  const int64_t cpu_flops = CheckedMul(host_numel, StepFlopsPerParam(optimizer), what);
  const bool host = host_numel > 0;
  const bool serial = host && !optimizer.overlap_d2h_h2d;
  if (serial) {
    after = writer.Add(HostOp("optimizer.grad_d2h", OpKind::kHostTransfer, 0, d2h), {after});
  }
  if (gpu_numel > 0 || !host) {
    after = writer.Add(HostOp("optimizer.step", OpKind::kOptimizer,
                              CheckedMul(gpu_numel, StepFlopsPerParam(optimizer), what),
                              CheckedMul(gpu_numel, StepBytesPerParam(optimizer), what)),
                       {after});
  }
  if (!host) return after;
  after = writer.Add(
      HostOp("optimizer.cpu_step", OpKind::kCpuOptimizer, cpu_flops, serial ? 0 : d2h), {after});
  if (serial) {
    after = writer.Add(HostOp("optimizer.param_h2d", OpKind::kHostTransfer, 0, h2d), {after});
  }
  return after;
}

}  // namespace

// Optimizer (clip_grads.py:99-132): one fp32 grad-norm AR per optimizer (dense; expert when it
// has its own buffer), then the Adam step, then the param AG (distributed optimizer per bucket;
// Megatron-FSDP per buffer).
int64_t EmitOptimizerOps(GraphWriter& writer, const RankParams& params,
                         const TrainingConfig& training, const config::RankMapping& mapping,
                         int64_t after) {
  const config::ParallelSizes& sizes = training.parallel;
  const bool distributed = training.data_parallel.distributed_optimizer;
  const bool fsdp = training.data_parallel.megatron_fsdp;
  // Grad-stats group: all ranks with the distributed optimizer, else the model-parallel group
  // tp×pp.
  const GroupKind group = distributed ? GroupKind::kWorld : GroupKind::kModelParallel;
  const int64_t group_size = distributed ? sizes.world_size : sizes.tensor * sizes.pipeline;
  bool has_expert_buffer = false;
  for (const GradBuffer& buffer : params.buffers) {
    has_expert_buffer = has_expert_buffer || buffer.group == GroupKind::kExpertDp;
  }
  for (int64_t i = 0; group_size > 1 && i < (has_expert_buffer ? 2 : 1); ++i) {
    after = writer.Add(
        StepOp(i == 0 ? "optimizer.grad_norm_all_reduce" : "optimizer.expert_grad_norm_all_reduce",
               CommRole(OpBlock::kOptimizer, CommPurpose::kGradNorm), Phase::kOptimizer,
               Collective::kAllReduce, group, group_size, kFp32Bytes),
        {after});
  }
  const int64_t numel =
      fsdp ? FsdpOptimizerNumel(params, training, mapping) : OptimizerNumel(params, distributed);
  const int64_t host_numel = training.optimizer.HostNumel(numel);
  after = EmitOptimizerStep(writer, numel - host_numel, host_numel, training.optimizer, after);
  if (fsdp) return EmitFsdpParamGather(writer, params, training, mapping, after);
  return EmitBucketOps(writer, params, training, /*param_gather=*/true, after);
}

}  // namespace trainscope::graph::internal
