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
// optimizer, else every local parameter. `counts` picks what is counted per bucket: every element
// or the TE linear ones.
int64_t OptimizerNumel(const RankParams& params, bool distributed,
                       std::vector<int64_t> GradBuffer::*counts = &GradBuffer::bucket_numels) {
  int64_t numel = 0;
  for (const GradBuffer& buffer : params.buffers) {
    for (const int64_t bucket : buffer.*counts) {
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

namespace {

// Bytes one bucket's parameter all-gather moves: the params dtype, except the TE linear weights
// under --fp8-param-gather (per-tensor and blockwise recipes: the FP8 bytes, 1 per element;
// MXFP8 gathers bf16 values through the gradient buffer and quantizes after the gather,
// param_and_grad_buffer.py _post_param_sync with reuse_grad_buf_for_mxfp8_param_ag, which
// Megatron requires for MXFP8 parameters) and --fp4-param-gather (the packed NVFP4 row-wise bytes,
// half a byte per element; their scales are left out).
int64_t ParamGatherBytes(int64_t numel, int64_t te_linear, const config::PrecisionConfig& p) {
  const int64_t param_bytes = config::BytesOf(p.params);
  int64_t linear_bytes = te_linear * param_bytes;
  if (p.QuantizedParamGather()) {
    linear_bytes = p.fp4 != config::Fp4Format::kNone ? CeilDiv(te_linear, 2) : te_linear;
  }
  return (numel - te_linear) * param_bytes + linear_bytes;
}

}  // namespace

// DDP: per bucket, RS (distributed optimizer) or AR of bucket_numel·β_g, or after the step the
// AG of the updated params (ParamGatherBytes).
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
        op.message_bytes =
            ParamGatherBytes(numel, buffer.bucket_te_linear_numels[i], training.precision);
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

// Under --fp8-param-gather with a per-tensor or blockwise recipe the distributed optimizer casts
// its updated shard of each TE linear weight to FP8 before the gather (distrib_optimizer.py
// _copy_main_params_to_param_buffer → quantize_param_shard): the fp32 main shard read (4 B) and
// the FP8 shard written (1 B) per element; --fp4-param-gather likewise writes the packed NVFP4
// shard (half a byte; scales left out). After the gather, GPUs whose FP8 GEMMs need TN operands
// transpose each gathered weight once for the backward (TE's Float8Tensor column-wise copy): 1 B
// read and 1 B written per local element, all of it column-wise (Op::fp8_columnwise_bytes), so
// free where FP8 GEMMs take any layout. MXFP8 re-quantizes after its bf16 gather instead, the
// first micro-batch's cached weight cast (graph/fp8_ops.cc MakeFp8Settings). The amax all-reduce
// of current scaling (one float per weight) is left out.
int64_t EmitParamQuantize(GraphWriter& writer, const RankParams& params,
                          const TrainingConfig& training, int64_t after) {
  const config::PrecisionConfig& p = training.precision;
  if (!p.QuantizedParamGather()) return after;
  const bool fp4 = p.fp4 != config::Fp4Format::kNone;
  const int64_t shard = OptimizerNumel(params, training.data_parallel.distributed_optimizer,
                                       &GradBuffer::bucket_te_linear_numels);
  const int64_t local = OptimizerNumel(params, false, &GradBuffer::bucket_te_linear_numels);
  if (local == 0) return after;
  const char* what = "parameter quantize bytes";
  const int64_t written = fp4 ? CeilDiv(shard, 2) : shard;
  Op quantize = HostOp("optimizer.param_quantize", OpKind::kFp8Quantize, 0,
                       CheckedAdd(CheckedMul(shard, kFp32Bytes, what), written, what));
  quantize.num_launches = 1;
  after = writer.Add(std::move(quantize), {after});
  if (fp4) return after;
  Op transpose =
      HostOp("optimizer.param_transpose", OpKind::kFp8Quantize, 0, CheckedMul(local, 2, what));
  transpose.fp8_columnwise_bytes = transpose.bytes;
  return writer.Add(std::move(transpose), {after});
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
  after = EmitParamQuantize(writer, params, training, after);
  return EmitBucketOps(writer, params, training, /*param_gather=*/true, after);
}

}  // namespace trainscope::graph::internal
