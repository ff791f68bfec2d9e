// EstimateMemory: model states from the per-rank parameters and DDP buffers of graph/
// (megatron-semantics.md §5.1, §5.4), activations per chunk times the passes in flight (§4.3,
// §4.4), and the fixed buffers. Every term is listed in docs/memory.md.
#include "trainscope/cost/memory.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "trainscope/config/pipeline_layout.h"
#include "trainscope/config/rank_mapping.h"
#include "trainscope/config/validate.h"
#include "trainscope/cost/activation_memory.h"
#include "trainscope/graph/layer_ops.h"
#include "trainscope/graph/param_count.h"
#include "trainscope/graph/step_graph_internal.h"

namespace trainscope::cost {
namespace {

using config::FsdpStrategy;
using config::GroupKind;
using config::TrainingConfig;
using graph::internal::ElementBytes;
using graph::internal::GradBytes;
using graph::internal::RankParams;

constexpr const char* kWhat = "memory estimate";

struct ModelStates {
  int64_t weights_bytes = 0;
  int64_t grads_bytes = 0;
  int64_t optimizer_bytes = 0;
  int64_t unit_buffer_bytes = 0;  // Megatron-FSDP gathered units
};

int64_t Mul(int64_t a, int64_t b) { return CheckedMul(a, b, kWhat); }

// Adam's fp32 exp_avg and exp_avg_sq, plus the fp32 master copy of 16-bit params; and, when the
// main grads are 16-bit, the fp32 copy the optimizer makes for its .grad
// (_copy_model_grads_to_main_grads, optimizer.py and distrib_optimizer.py).
int64_t OptimizerBytesPerParam(const TrainingConfig& training) {
  if (training.precision.params == config::ParamDtype::kFp32) return 2 * kFp32Bytes;
  return 3 * kFp32Bytes + (GradBytes(training) < kFp32Bytes ? kFp32Bytes : 0);
}

// DDP (§5.1): param and grad buffers hold every local parameter; the distributed optimizer pads
// them (64-element params, lcm(group, 128) buckets) and each rank keeps bucket/group of the
// optimizer state per bucket.
ModelStates DdpStates(const graph::StageParams& stage, const RankParams& params,
                      const TrainingConfig& training) {
  const bool distributed = training.data_parallel.distributed_optimizer;
  int64_t padded = 0;
  int64_t shard = 0;
  for (const graph::internal::GradBuffer& buffer : params.buffers) {
    for (const int64_t bucket : buffer.bucket_numels) {
      padded = CheckedAdd(padded, bucket, kWhat);
      shard = CheckedAdd(shard, bucket / buffer.group_size, kWhat);
    }
  }
  const int64_t numel = distributed ? padded : stage.total;
  return {
      .weights_bytes = Mul(numel, ElementBytes(training.precision.params)),
      .grads_bytes = Mul(numel, GradBytes(training)),
      .optimizer_bytes = Mul(distributed ? shard : stage.total, OptimizerBytesPerParam(training))};
}

// Megatron-FSDP (§5.4): each chunk's dense buffer is sharded over dp×cp and its expert buffer
// over expert-DP. optim shards the optimizer, optim_grads also the grads, optim_grads_params
// also the weights; no_shard shards nothing.
ModelStates FsdpStates(const graph::StageParams& stage, const RankParams& params,
                       const TrainingConfig& training, const config::RankMapping& mapping) {
  const FsdpStrategy strategy = training.data_parallel.fsdp_strategy;
  const bool shard_grads =
      strategy == FsdpStrategy::kOptimGrads || strategy == FsdpStrategy::kOptimGradsParams;
  const bool shard_params = strategy == FsdpStrategy::kOptimGradsParams;
  std::vector<std::pair<int64_t, int64_t>> per_chunk;  // (dense, expert) numel by chunk
  int64_t root = 0, largest_unit = 0;
  for (const graph::internal::FsdpUnit& unit : params.fsdp_units) {
    if (per_chunk.size() <= static_cast<size_t>(unit.chunk)) per_chunk.resize(unit.chunk + 1);
    per_chunk[unit.chunk].first += unit.dense_numel;
    per_chunk[unit.chunk].second += unit.expert_numel;
    const int64_t numel = unit.dense_numel + unit.expert_numel;
    if (unit.layer < 0) root += numel;
    if (unit.layer >= 0) largest_unit = std::max(largest_unit, numel);
  }
  int64_t shard = 0;
  for (const auto& [dense, expert] : per_chunk) {
    shard += CeilDiv(dense, mapping.GroupSize(GroupKind::kDpCp)) +
             CeilDiv(expert, mapping.GroupSize(GroupKind::kExpertDp));
  }
  const int64_t param_bytes = ElementBytes(training.precision.params);
  ModelStates states{
      .weights_bytes = Mul(shard_params ? shard : stage.total, param_bytes),
      .grads_bytes = Mul(shard_grads ? shard : stage.total, GradBytes(training)),
      .optimizer_bytes = Mul(strategy == FsdpStrategy::kNoShard ? stage.total : shard,
                             OptimizerBytesPerParam(training))};
  // The root unit stays gathered for the step and one layer unit is gathered at a time; with
  // sharded grads one unit's full gradient exists before its reduce-scatter.
  if (shard_params) states.unit_buffer_bytes = Mul(root + largest_unit, param_bytes);
  if (shard_grads) states.unit_buffer_bytes += Mul(largest_unit, GradBytes(training));
  return states;
}

// Micro-batch group size G of the interleaved schedule (default p).
int64_t GroupSize(const TrainingConfig& training) {
  const int64_t g = training.batch.microbatch_group_size_per_vp_stage;
  return g > 0 ? g : training.parallel.pipeline;
}

// Forward passes held at the peak on PP rank r: 1F1B min(p − r, m) (§4.5); interleaved the
// warm-up w_r = min(2(p−r−1) + (v−1)G + ω, m·v) of §4.4 plus the first steady-state forward.
int64_t InFlightPasses(const TrainingConfig& training, int64_t v, int64_t r, int64_t m) {
  const int64_t p = training.parallel.pipeline;
  if (v == 1) return std::min(p - r, m);
  const int64_t omega = training.moe.overlap_expert_parallel_comm ? 1 : 0;
  const int64_t warmup = std::min(2 * (p - r - 1) + (v - 1) * GroupSize(training) + omega, m * v);
  return std::min(warmup + 1, m * v);
}

// Sums the activations of the first `passes` forward passes in schedule order; pass i runs
// chunk (i mod G·v) / G (schedules.py get_model_chunk_id).
void AddActivations(const graph::LayerOpContext& context, const config::PipelineLayout& layout,
                    int64_t m, RankMemory& rank) {
  const int64_t v = layout.virtual_stages;
  std::vector<internal::ChunkActivations> chunks;
  for (int64_t j = 0; j < v; ++j) {
    chunks.push_back(internal::ChunkActivationBytes(context, layout.Chunk(rank.pipeline_rank, j)));
    rank.activation_working_set_bytes =
        std::max(rank.activation_working_set_bytes, chunks.back().working_set_bytes);
    for (const ActivationBreakdown& part : chunks.back().parts) {
      auto it = std::find_if(rank.activations.begin(), rank.activations.end(),
                             [&](const ActivationBreakdown& a) { return a.kind == part.kind; });
      if (it == rank.activations.end()) {
        rank.activations.push_back(part);
      } else {
        it->num_layers += part.num_layers;
      }
    }
  }
  rank.in_flight_micro_batches = InFlightPasses(context.training, v, rank.pipeline_rank, m);
  const int64_t group = GroupSize(context.training);
  int64_t bytes = rank.activation_working_set_bytes;
  for (int64_t i = 0; i < rank.in_flight_micro_batches; ++i) {
    const int64_t chunk = v == 1 ? 0 : (i % (group * v)) / group;
    bytes = CheckedAdd(bytes, chunks[static_cast<size_t>(chunk)].bytes_per_micro_batch, kWhat);
  }
  rank.activations_bytes = bytes;
}

// NCCL communicators this rank creates: PyTorch initialises them lazily, so only groups of
// more than one rank that the step uses count (megatron-semantics.md §2-§6).
int64_t CountCommunicators(const graph::LayerOpContext& context, const config::RankMapping& mapping,
                           int64_t r) {
  const config::ModelConfig& model = context.model;
  const TrainingConfig& training = context.training;
  const bool moe = model.HasMoe();
  const bool alltoall = training.moe.dispatcher == config::TokenDispatcher::kAllToAll;
  const config::LoadBalancing balancing = training.moe.load_balancing;
  const bool aux = moe && model.moe.aux_loss_coef > 0;
  const bool local_aux = aux && (balancing == config::LoadBalancing::kAuxLoss ||
                                 balancing == config::LoadBalancing::kSeqAuxLoss);
  const bool global_stats = moe && ((aux && balancing == config::LoadBalancing::kGlobalAuxLoss) ||
                                    training.moe.router_enable_expert_bias);
  const bool embedding = (r == 0 || r == training.parallel.pipeline - 1) &&
                         (model.tied_embeddings || model.num_mtp_layers > 0);
  const bool distributed = training.data_parallel.distributed_optimizer;
  const std::pair<GroupKind, bool> uses[] = {
      {GroupKind::kTp, true},
      {GroupKind::kCp, true},
      {GroupKind::kDpCp, true},
      {GroupKind::kPp, true},
      {GroupKind::kEmbedding, embedding},
      {GroupKind::kEp, moe && alltoall},
      {GroupKind::kEtp, moe && alltoall},
      {GroupKind::kTpEp, moe && !alltoall},
      {GroupKind::kExpertDp, moe && graph::internal::SeparateExpertBuffer(training.parallel)},
      {GroupKind::kTpCp, local_aux},
      {GroupKind::kTpDpCp, global_stats},
      {distributed ? GroupKind::kWorld : GroupKind::kModelParallel, true},  // grad norm
  };
  int64_t count = 0;
  for (const auto& [kind, used] : uses) count += used && mapping.GroupSize(kind) > 1 ? 1 : 0;
  return count;
}

RankMemory StageMemory(const graph::LayerOpContext& context, const config::PipelineLayout& layout,
                       const config::RankMapping& mapping, const graph::StageParams& stage,
                       int64_t m, const MemoryOverheads& overheads) {
  RankMemory rank{.pipeline_rank = stage.pipeline_rank, .num_ranks = stage.num_ranks};
  const RankParams params =
      graph::internal::CollectRankParams(context, layout, mapping, stage.pipeline_rank);
  const ModelStates states = context.training.data_parallel.megatron_fsdp
                                 ? FsdpStates(stage, params, context.training, mapping)
                                 : DdpStates(stage, params, context.training);
  rank.weights_bytes = states.weights_bytes;
  rank.grads_bytes = states.grads_bytes;
  rank.optimizer_bytes = states.optimizer_bytes;
  AddActivations(context, layout, m, rank);
  rank.num_communicators = CountCommunicators(context, mapping, stage.pipeline_rank);
  int64_t allocated = 0;
  for (const int64_t bytes : {rank.weights_bytes, rank.grads_bytes, rank.optimizer_bytes,
                              rank.activations_bytes, states.unit_buffer_bytes}) {
    allocated = CheckedAdd(allocated, bytes, kWhat);
  }
  const auto reserve = static_cast<int64_t>(
      std::llround(static_cast<double>(allocated) * overheads.fragmentation_fraction));
  rank.buffers_bytes = overheads.cuda_context_bytes +
                       Mul(overheads.nccl_bytes_per_communicator, rank.num_communicators) +
                       reserve + states.unit_buffer_bytes;
  rank.peak_bytes = CheckedAdd(allocated - states.unit_buffer_bytes, rank.buffers_bytes, kWhat);
  return rank;
}

}  // namespace

MemoryEstimate EstimateMemory(const config::ModelConfig& model,
                              const config::TrainingConfig& training,
                              const MemoryOverheads& overheads) {
  const graph::LayerOpContext context = graph::MakeLayerOpContext(model, training);
  const config::PipelineLayout layout = config::BuildPipelineLayout(model, training);
  const config::RankMapping mapping(training.parallel);
  const int64_t m = config::NumMicroBatches(training);
  MemoryEstimate estimate;
  for (const graph::StageParams& stage : graph::CountParamsPerStage(model, training, layout)) {
    estimate.stages.push_back(StageMemory(context, layout, mapping, stage, m, overheads));
    const RankMemory& rank = estimate.stages.back();
    if (rank.peak_bytes > estimate.max_peak_bytes) {
      estimate.max_peak_bytes = rank.peak_bytes;
      estimate.max_peak_pipeline_rank = rank.pipeline_rank;
    }
  }
  return estimate;
}

}  // namespace trainscope::cost
