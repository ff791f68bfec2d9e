// Megatron-FSDP (megatron_fsdp.py, mcore_fsdp_adapter.py): the per-unit parameter
// all-gathers and gradient reduce-scatters of each micro-batch, the root unit's once-per-step
// gather and reduction, and the per-buffer reductions of the no_shard / optim strategies, which
// replace the DDP bucket collectives.
#include "trainscope/graph/op_sink.h"
#include "trainscope/graph/step_graph_internal.h"
#include "trainscope/units.h"

namespace trainscope::graph::internal {
namespace {

using config::FsdpStrategy;
using config::GroupKind;
using config::TrainingConfig;

// optim_grads_params (ZeRO-3) gathers each unit's parameters before its forward and backward.
bool GathersParamsPerMicroBatch(const TrainingConfig& training) {
  return training.data_parallel.fsdp_strategy == FsdpStrategy::kOptimGradsParams;
}

// optim_grads and optim_grads_params reduce-scatter every micro-batch (megatron_fsdp.py:758-762);
// optim and no_shard reduce once, on the last micro-batch.
bool ReducesGradsPerMicroBatch(const TrainingConfig& training) {
  const FsdpStrategy strategy = training.data_parallel.fsdp_strategy;
  return strategy == FsdpStrategy::kOptimGrads || strategy == FsdpStrategy::kOptimGradsParams;
}

// One half of a unit: dense parameters over dp×cp or expert parameters over expert-DP.
struct UnitPart {
  std::string prefix;
  GroupKind group = GroupKind::kDpCp;
  int64_t group_size = 1;
  int64_t numel = 0;
};

std::vector<UnitPart> Parts(const FsdpUnit& unit, const config::RankMapping& mapping) {
  std::vector<UnitPart> parts;
  if (unit.dense_numel > 0) {
    parts.push_back(
        {"fsdp.", GroupKind::kDpCp, mapping.GroupSize(GroupKind::kDpCp), unit.dense_numel});
  }
  if (unit.expert_numel > 0) {
    parts.push_back({"fsdp.expert_", GroupKind::kExpertDp, mapping.GroupSize(GroupKind::kExpertDp),
                     unit.expert_numel});
  }
  return parts;
}

// One collective per part of `unit` (parts over a single rank are skipped), named
// <prefix><what>, with message numel·element_bytes; a gather (all-gather) or a reduction.
std::vector<Op> UnitCollectives(const FsdpUnit& unit, const std::string& what, Phase phase,
                                Collective collective, int64_t element_bytes,
                                const config::RankMapping& mapping) {
  std::vector<Op> ops;
  const CommPurpose purpose =
      collective == Collective::kAllGather ? CommPurpose::kFsdpGather : CommPurpose::kFsdpReduce;
  for (const UnitPart& part : Parts(unit, mapping)) {
    if (part.group_size == 1) continue;
    Op op =
        StepOp(part.prefix + what, CommRole(OpBlock::kFsdp, purpose), phase, collective, part.group,
               part.group_size, CheckedMul(part.numel, element_bytes, "FSDP message"));
    op.layer = unit.layer;
    op.model_chunk = unit.chunk;
    ops.push_back(std::move(op));
  }
  return ops;
}

// Chains `ops` after `after`; returns the last id (or `after`).
int64_t Chain(GraphWriter& writer, const std::vector<Op>& ops, int64_t after) {
  for (const Op& op : ops) after = writer.Add(op, {after});
  return after;
}

// One unit per chunk holding the chunk's whole parameter buffer (layer -1).
std::vector<FsdpUnit> ChunkBuffers(const RankParams& params) {
  std::vector<FsdpUnit> buffers;
  for (const FsdpUnit& unit : params.fsdp_units) {
    if (buffers.empty() || buffers.back().chunk != unit.chunk) {
      buffers.push_back(FsdpUnit{.chunk = unit.chunk, .layer = -1});
    }
    FsdpUnit& buffer = buffers.back();
    buffer.dense_numel = CheckedAdd(buffer.dense_numel, unit.dense_numel, "FSDP buffer");
    buffer.expert_numel = CheckedAdd(buffer.expert_numel, unit.expert_numel, "FSDP buffer");
  }
  return buffers;
}

}  // namespace

FsdpOpsByLayer BuildFsdpLayerOps(const RankParams& params, const TrainingConfig& training,
                                 const config::RankMapping& mapping) {
  FsdpOpsByLayer by_layer;
  if (!training.data_parallel.megatron_fsdp) return by_layer;
  const int64_t param_bytes = config::BytesOf(training.precision.params);
  for (const FsdpUnit& unit : params.fsdp_units) {
    if (unit.layer < 0) continue;
    FsdpUnitOps& ops = by_layer[unit.layer];
    if (GathersParamsPerMicroBatch(training)) {
      ops.forward_gather = UnitCollectives(unit, "param_all_gather", Phase::kForward,
                                           Collective::kAllGather, param_bytes, mapping);
      ops.backward_gather = UnitCollectives(unit, "param_all_gather", Phase::kBackward,
                                            Collective::kAllGather, param_bytes, mapping);
    }
    if (ReducesGradsPerMicroBatch(training)) {
      ops.grad_reduce =
          UnitCollectives(unit, "grad_reduce_scatter", Phase::kBackward, Collective::kReduceScatter,
                          training.GradReduceBytes(), mapping);
    }
  }
  return by_layer;
}

int64_t EmitFsdpRootGather(GraphWriter& writer, const RankParams& params,
                           const TrainingConfig& training, const config::RankMapping& mapping) {
  int64_t last = -1;
  if (!training.data_parallel.megatron_fsdp || !GathersParamsPerMicroBatch(training)) return last;
  for (const FsdpUnit& unit : params.fsdp_units) {
    if (unit.layer >= 0) continue;
    last = Chain(
        writer,
        UnitCollectives(unit, "root_param_all_gather", Phase::kForward, Collective::kAllGather,
                        config::BytesOf(training.precision.params), mapping),
        last);
  }
  return last;
}

int64_t EmitFsdpGradSync(GraphWriter& writer, const RankParams& params,
                         const TrainingConfig& training, const config::RankMapping& mapping,
                         int64_t after) {
  const int64_t grad_bytes = training.GradReduceBytes();
  if (ReducesGradsPerMicroBatch(training)) {
    for (const FsdpUnit& unit : params.fsdp_units) {
      if (unit.layer >= 0) continue;
      after = Chain(writer,
                    UnitCollectives(unit, "root_grad_reduce_scatter", Phase::kGradSync,
                                    Collective::kReduceScatter, grad_bytes, mapping),
                    after);
    }
    return after;
  }
  const bool no_shard = training.data_parallel.fsdp_strategy == FsdpStrategy::kNoShard;
  for (const FsdpUnit& buffer : ChunkBuffers(params)) {
    after = Chain(writer,
                  UnitCollectives(buffer, no_shard ? "grad_all_reduce" : "grad_reduce_scatter",
                                  Phase::kGradSync,
                                  no_shard ? Collective::kAllReduce : Collective::kReduceScatter,
                                  grad_bytes, mapping),
                  after);
  }
  return after;
}

int64_t EmitFsdpParamGather(GraphWriter& writer, const RankParams& params,
                            const TrainingConfig& training, const config::RankMapping& mapping,
                            int64_t after) {
  // optim_grads_params keeps parameters sharded (gathered per unit in the next step); no_shard
  // updates every parameter on every rank.
  const FsdpStrategy strategy = training.data_parallel.fsdp_strategy;
  if (strategy == FsdpStrategy::kOptimGradsParams || strategy == FsdpStrategy::kNoShard) {
    return after;
  }
  for (const FsdpUnit& buffer : ChunkBuffers(params)) {
    after =
        Chain(writer,
              UnitCollectives(buffer, "param_all_gather", Phase::kOptimizer, Collective::kAllGather,
                              config::BytesOf(training.precision.params), mapping),
              after);
  }
  return after;
}

int64_t FsdpOptimizerNumel(const RankParams& params, const TrainingConfig& training,
                           const config::RankMapping& mapping) {
  const bool sharded = training.data_parallel.fsdp_strategy != FsdpStrategy::kNoShard;
  int64_t numel = 0;
  for (const FsdpUnit& buffer : ChunkBuffers(params)) {
    for (const UnitPart& part : Parts(buffer, mapping)) {
      numel += sharded ? CeilDiv(part.numel, part.group_size) : part.numel;
    }
  }
  return numel;
}

}  // namespace trainscope::graph::internal
