// EstimateMemory: model states from the per-rank parameters and DDP buffers of graph/
// (Megatron-LM param_and_grad_buffer.py, megatron_fsdp.py), activations per chunk times the
// passes in flight (pipeline_parallel/schedules.py), and the fixed buffers. Every term is listed in
// docs/memory.md.
#include "trainscope/cost/memory.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "trainscope/config/pipeline_layout.h"
#include "trainscope/config/rank_mapping.h"
#include "trainscope/cost/activation_memory.h"
#include "trainscope/error.h"
#include "trainscope/graph/layer_ops.h"
#include "trainscope/graph/param_count.h"
#include "trainscope/graph/step_graph_internal.h"

namespace trainscope::cost {
namespace {

using config::FsdpStrategy;
using config::GroupKind;
using config::TrainingConfig;
using graph::internal::RankParams;

constexpr const char* kWhat = "memory estimate";
// Granularity of the caching allocator's segments (kRoundLarge, kSmallBuffer).
constexpr int64_t kAllocatorSegmentBytes = 2 * kBytesPerMiB;

struct ModelStates {
  int64_t weights_bytes = 0;
  int64_t grads_bytes = 0;
  int64_t optimizer_bytes = 0;
  int64_t unit_buffer_bytes = 0;     // Megatron-FSDP gathered units
  int64_t optimizer_step_bytes = 0;  // fp32 grad copy alive only during the optimizer step
  int64_t host_optimizer_bytes = 0;  // pinned host state of the CPU-offloaded share
};

int64_t Mul(int64_t a, int64_t b) { return CheckedMul(a, b, kWhat); }

// True when TE's FusedAdam holds the master weights and reads the grads in place
// (use_precision_aware_optimizer_no_fp8_or_ds_fp8, optimizer_config.py:407-414): the precision-
// aware optimizer unless Megatron keeps fp32 master weights for a non-delayed FP8 recipe.
bool TeManagesMasterWeights(const config::PrecisionConfig& precision) {
  return precision.precision_aware_optimizer &&
         (precision.main_params != config::OptimizerDtype::kFp32 ||
          precision.fp8 == config::Fp8Format::kNone ||
          precision.fp8_recipe == config::Fp8Recipe::kDelayed);
}

// Optimizer state per parameter of the local shard: Adam's exp_avg and exp_avg_sq (fp32, or the
// precision-aware dtypes) plus the master copy of 16-bit params: fp32, or under TE's FusedAdam
// main_params_dtype, where fp32 masters of bf16 params keep only the 16-bit remainder
// (store_param_remainders, default on, optimizer_config.py:192).
// SGD keeps one fp32 momentum buffer, none at momentum 0 (torch.optim.SGD / apex FusedSGD,
// megatron/core/optimizer/__init__.py).
int64_t MomentBytesPerParam(const TrainingConfig& training) {
  if (training.optimizer.kind == config::OptimizerKind::kSgd) {
    return training.optimizer.sgd_momentum > 0 ? kFp32Bytes : 0;
  }
  const config::PrecisionConfig& precision = training.precision;
  return precision.precision_aware_optimizer
             ? config::BytesOf(precision.exp_avg) + config::BytesOf(precision.exp_avg_sq)
             : 2 * kFp32Bytes;
}

int64_t OptimizerBytesPerParam(const TrainingConfig& training) {
  const config::PrecisionConfig& precision = training.precision;
  const int64_t moments = MomentBytesPerParam(training);
  if (precision.params == config::ParamDtype::kFp32) return moments;
  if (!TeManagesMasterWeights(precision)) return moments + kFp32Bytes;
  if (precision.main_params == config::OptimizerDtype::kFp32 &&
      precision.params == config::ParamDtype::kBf16) {
    return moments + kBf16Bytes;
  }
  return moments + config::BytesOf(precision.main_params);
}

// Pinned host bytes per offloaded parameter (HybridDeviceOptimizer, param_update_in_fp32): the fp32
// master copy, the CPU optimizer's fp32 state (Adam exp_avg + exp_avg_sq; SGD's momentum) and the
// pinned fp32 grad buffer: 16 for Adam.
int64_t HostBytesPerParam(const TrainingConfig& training) {
  const bool sgd = training.optimizer.kind == config::OptimizerKind::kSgd;
  const int64_t state =
      sgd ? (training.optimizer.sgd_momentum > 0 ? kFp32Bytes : 0) : 2 * kFp32Bytes;
  return kFp32Bytes + state + kFp32Bytes;
}

// Moves the CPU-offloaded share of `optimizer_numel` parameters' state from the GPU to the host:
// the GPU keeps the master and moments of the rest; the model params and grads stay on the GPU.
void OffloadOptimizer(const TrainingConfig& training, int64_t optimizer_numel,
                      ModelStates& states) {
  const int64_t host = training.optimizer.HostNumel(optimizer_numel);
  states.optimizer_bytes = Mul(optimizer_numel - host, OptimizerBytesPerParam(training));
  states.host_optimizer_bytes = Mul(host, HostBytesPerParam(training));
}

// With 16-bit main grads the optimizer step casts the shard's grads to an fp32 .grad
// (_copy_model_grads_to_main_grads, optimizer.py and distrib_optimizer.py), freed by the next
// zero_grad; TE's FusedAdam reads the 16-bit grads in place (decoupled_grad) instead.
int64_t StepCopyBytesPerParam(const TrainingConfig& training) {
  const bool fp32_grads = training.GradReduceBytes() >= kFp32Bytes;
  if (fp32_grads || TeManagesMasterWeights(training.precision)) return 0;
  return kFp32Bytes;
}

// Elements of this stage's TE linear weights (graph::IsTeLinear), the weights FP8 quantizes.
int64_t TeLinearNumel(const graph::LayerOpContext& context, const config::PipelineLayout& layout,
                      int64_t pipeline_rank) {
  int64_t numel = 0;
  for (int64_t j = 0; j < layout.virtual_stages; ++j) {
    for (const graph::internal::TensorGroup& group : graph::internal::ChunkTensors(
             context.model, context.training, layout.Chunk(pipeline_rank, j))) {
      for (const graph::WeightTensor& tensor : group.tensors) {
        if (!graph::IsTeLinear(tensor)) continue;
        numel = CheckedAdd(
            numel, graph::ShardNumel(tensor, context.training.parallel, context.PaddedVocab()),
            kWhat);
      }
    }
  }
  return numel;
}

// FP8 change to the weights of `linear` TE linear elements (TE linear.py quantize_weight; the
// columnwise copy is the transpose Hopper's FP8 GEMMs need for dgrad). With --fp8-param-gather
// the weight itself is FP8 (1 byte instead of 2) plus its cached transpose (1 byte): no change
// for per-tensor recipes. Otherwise TE caches an FP8 workspace across micro-batches, rowwise
// and columnwise: +2 bytes. MXFP8 adds an E8M0 scale per 32 elements to each copy.
//
// NVFP4 (--fp4-format): each copy is half a byte per element plus an E4M3 scale per 16x16 block
// (2D weight quantization): without --fp4-param-gather the two cached copies add
// 2·(linear/2 + linear/256); with it they replace the bf16 weight (2 B).
//
// torchao's row-wise recipe caches no FP8 weight (each GEMM casts the bf16 weight it reads): no
// change.
int64_t Fp8WeightDeltaBytes(const config::PrecisionConfig& precision, int64_t linear) {
  if (precision.fp4 != config::Fp4Format::kNone) {
    const int64_t copies = Mul(2, CheckedAdd(CeilDiv(linear, 2), CeilDiv(linear, 256), kWhat));
    return precision.fp4_param_gather ? copies - Mul(2, linear) : copies;
  }
  if (precision.fp8 == config::Fp8Format::kNone ||
      precision.fp8_recipe == config::Fp8Recipe::kRowwise) {
    return 0;
  }
  const int64_t scales =
      precision.fp8_recipe == config::Fp8Recipe::kMxfp8 ? CeilDiv(linear, 32) : 0;
  if (precision.fp8_param_gather) return 2 * scales;
  return Mul(2, CheckedAdd(linear, scales, kWhat));
}

// DDP (param_and_grad_buffer.py, param_layout.py): param and grad buffers hold every local
// parameter; the distributed optimizer pads them (64-element params, lcm(group, 128) buckets) and
// each rank keeps bucket/group of the optimizer state per bucket.
ModelStates DdpStates(const graph::StageParams& stage, const RankParams& params,
                      const TrainingConfig& training, int64_t linear) {
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
  const int64_t optimizer_numel = distributed ? shard : stage.total;
  const int64_t weights = Mul(numel, config::BytesOf(training.precision.params));
  ModelStates states{
      .weights_bytes = CheckedAdd(weights, Fp8WeightDeltaBytes(training.precision, linear), kWhat),
      .grads_bytes = Mul(numel, training.GradReduceBytes()),
      .optimizer_bytes = Mul(optimizer_numel, OptimizerBytesPerParam(training)),
      .optimizer_step_bytes = Mul(optimizer_numel, StepCopyBytesPerParam(training))};
  OffloadOptimizer(training, optimizer_numel, states);
  return states;
}

// Megatron-FSDP (megatron_fsdp.py): each chunk's dense buffer is sharded over dp×cp and its expert
// buffer over expert-DP. optim shards the optimizer, optim_grads also the grads, optim_grads_params
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
  const int64_t param_bytes = config::BytesOf(training.precision.params);
  const int64_t optimizer_numel = strategy == FsdpStrategy::kNoShard ? stage.total : shard;
  ModelStates states{
      .weights_bytes = Mul(shard_params ? shard : stage.total, param_bytes),
      .grads_bytes = Mul(shard_grads ? shard : stage.total, training.GradReduceBytes()),
      .optimizer_bytes = Mul(optimizer_numel, OptimizerBytesPerParam(training)),
      .optimizer_step_bytes = Mul(optimizer_numel, StepCopyBytesPerParam(training))};
  OffloadOptimizer(training, optimizer_numel, states);
  // The root unit stays gathered for the step and one layer unit is gathered at a time; with
  // sharded grads one unit's full gradient exists before its reduce-scatter.
  if (shard_params) states.unit_buffer_bytes = Mul(root + largest_unit, param_bytes);
  if (shard_grads) states.unit_buffer_bytes += Mul(largest_unit, training.GradReduceBytes());
  return states;
}

// Forward passes held at the peak on PP rank r: 1F1B min(p − r, m) (schedules.py:2277-2279);
// interleaved the warm-up w_r = min(2(p−r−1) + (v−1)G + ω, m·v) (schedules.py:949-986) plus the
// first steady-state forward.
int64_t InFlightPasses(const TrainingConfig& training, int64_t v, int64_t r, int64_t m) {
  const int64_t p = training.parallel.pipeline;
  if (v == 1) return std::min(p - r, m);
  const int64_t omega = training.moe.overlap_expert_parallel_comm ? 1 : 0;
  const int64_t warmup =
      std::min(2 * (p - r - 1) + (v - 1) * training.MicroBatchGroupSize() + omega, m * v);
  return std::min(warmup + 1, m * v);
}

// The model chunk of forward pass i: (i mod G·v) / G (schedules.py get_model_chunk_id).
int64_t PassChunk(int64_t i, int64_t v, int64_t group) {
  return v == 1 ? 0 : (i % (group * v)) / group;
}

// Sums the activations of the first `passes` forward passes in schedule order; pass i runs
// chunk PassChunk(i).
void AddActivations(const graph::LayerOpContext& context, const config::PipelineLayout& layout,
                    int64_t m, double moe_load_factor, RankMemory& rank) {
  const int64_t v = layout.virtual_stages;
  std::vector<internal::ChunkActivations> chunks;
  for (int64_t j = 0; j < v; ++j) {
    chunks.push_back(internal::ChunkActivationBytes(context, layout.Chunk(rank.pipeline_rank, j),
                                                    moe_load_factor));
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
  // The chunk whose working set is held (the first with the largest).
  const auto working = std::ranges::max_element(
      chunks, {}, [](const internal::ChunkActivations& c) { return c.working_set_bytes; });
  rank.logits_bytes = working->logits_working_set_bytes;
  if (context.training.forward_only) {
    // Eval mode saves nothing for backward: the working set plus one block's activations of
    // one micro-batch (the largest), alive while that block runs.
    int64_t block = 0;
    for (const ActivationBreakdown& part : rank.activations) {
      block = std::max(block, part.bytes_per_micro_batch);
    }
    rank.in_flight_micro_batches = 0;
    rank.activations_bytes = CheckedAdd(rank.activation_working_set_bytes, block, kWhat);
    return;
  }
  rank.in_flight_micro_batches = InFlightPasses(context.training, v, rank.pipeline_rank, m);
  const int64_t group = context.training.MicroBatchGroupSize();
  int64_t bytes = rank.activation_working_set_bytes;
  for (int64_t i = 0; i < rank.in_flight_micro_batches; ++i) {
    const internal::ChunkActivations& pass = chunks[static_cast<size_t>(PassChunk(i, v, group))];
    bytes = CheckedAdd(bytes, pass.bytes_per_micro_batch, kWhat);
    rank.moe_permute_bytes =
        CheckedAdd(rank.moe_permute_bytes, pass.moe_permute_bytes_per_micro_batch, kWhat);
    rank.logits_bytes = CheckedAdd(rank.logits_bytes, pass.logits_bytes_per_micro_batch, kWhat);
    rank.host_activation_bytes =
        CheckedAdd(rank.host_activation_bytes, pass.host_bytes_per_micro_batch, kWhat);
  }
  rank.activations_bytes = bytes;
}

// Decoder-layer regions one per-layer CUDA graph captures (local or transformer_engine,
// cuda_graphs.py TECudaGraphHelper / CudaGraphManager): the whole layer without modules, else
// the mixer when `attn` (attention or GDN) or `mamba` (GDN) is captured and the FFN when `mlp`
// (dense), `moe` or `moe_router` / `moe_preprocess` (one router graph) is; as
// cost/launch_overhead.cc's ModuleCovers.
int64_t GraphedRegions(const std::vector<config::CudaGraphModule>& modules,
                       config::LayerSpec spec) {
  if (modules.empty()) return 1;
  const auto has = [&](config::CudaGraphModule m) { return std::ranges::count(modules, m) > 0; };
  using M = config::CudaGraphModule;
  const bool gdn = spec.mixer == config::MixerKind::kGatedDeltaNet;
  const bool mixer = has(M::kAttn) || (gdn && has(M::kMamba));
  const bool ffn = spec.ffn == config::FfnKind::kMoe
                       ? has(M::kMoe) || has(M::kMoeRouter) || has(M::kMoePreprocess)
                       : has(M::kMlp);
  return (mixer ? 1 : 0) + (ffn ? 1 : 0);
}

// Static buffers of per-layer CUDA graphs (--cuda-graph-impl local | transformer_engine): each
// graphed region's static input, the [S_sp, b, h] hidden states copied in before a replay, is
// held per (region, pass in flight): Megatron reuses an input buffer only after that pass's
// backward (cuda_graphs.py _get_sample_arguments). With TE >= 2.7
// (_reuse_graph_input_output_buffers, graph.py make_graphed_callables) one static grad-output
// buffer per signature is reused and the previous backward's grad input is released, so two
// more [S_sp, b, h] buffers are held once. full_iteration captures the whole step, whose
// buffers are the eager ones: 0.
int64_t CudaGraphStaticBytes(const graph::LayerOpContext& context,
                             const config::PipelineLayout& layout, const RankMemory& rank) {
  const TrainingConfig& training = context.training;
  const config::CudaGraphImpl impl = training.cuda_graph.EffectiveImpl();
  if (impl != config::CudaGraphImpl::kLocal && impl != config::CudaGraphImpl::kTransformerEngine) {
    return 0;
  }
  const std::vector<config::CudaGraphModule> modules = training.cuda_graph.EffectiveModules();
  const int64_t tokens = context.TokensPerRank();
  const int64_t sp_tokens =
      context.SequenceParallel() ? CeilDiv(tokens, training.parallel.tensor) : tokens;
  const int64_t region_bytes = Mul(Mul(sp_tokens, context.model.hidden_size), kBf16Bytes);
  const int64_t v = layout.virtual_stages;
  const int64_t passes = std::max<int64_t>(rank.in_flight_micro_batches, 1);
  int64_t regions = 0;
  for (int64_t i = 0; i < passes; ++i) {
    const config::ModelChunk& chunk =
        layout.Chunk(rank.pipeline_rank, PassChunk(i, v, training.MicroBatchGroupSize()));
    for (int64_t l = 0; l < chunk.num_layers; ++l) {
      regions +=
          GraphedRegions(modules, context.model.layers[static_cast<size_t>(chunk.first_layer + l)]);
    }
  }
  if (regions == 0) return 0;
  const int64_t grad_buffers = training.forward_only ? 0 : 2;
  return Mul(regions + grad_buffers, region_bytes);
}

// Transformer Engine's cuBLAS workspaces, allocated with torch.empty and cached for the process
// (cpp_extensions/gemm.py get_cublas_workspace): one for the GEMMs, one per compute stream (4,
// common/util/multi_stream.cpp) for grouped GEMMs (MoE with --moe-grouped-gemm), and three
// for the userbuffers GEMMs of --tp-comm-overlap.
int64_t CublasWorkspaceBytes(const graph::LayerOpContext& context, const MemoryOverheads& o) {
  const TrainingConfig& training = context.training;
  int64_t workspaces = 1;
  if (context.model.HasMoe() && training.moe.grouped_gemm) workspaces += 4;
  if (training.overlap.tp_comm_overlap && training.parallel.tensor > 1) workspaces += 3;
  return Mul(workspaces, TeCublasWorkspaceBytes(o.gpu_compute_capability_major));
}

// NCCL communicators this rank creates: PyTorch initialises them lazily, so only groups of
// more than one rank that the step uses count (the groups of docs/rank-mapping.md).
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

// Whether a forward-only pass runs inside the training engine with its gradient buffers and
// GPU optimizer state allocated. slime's and AReaL's log-prob passes do: slime's
// compute_log_prob runs the DDP-wrapped actor of MegatronTrainRayActor
// (slime/backends/megatron_utils/actor.py), whose grad buffers live for the process (offloaded
// only when the trainer sleeps); AReaL's PPOActor.compute_logp runs its MegatronEngine likewise.
// verl loads the params without grads for them (load_grad=False in megatron_workers.py), and a
// plain Megatron-Core eval is counted like verl's.
bool KeepsTrainingStatesInForwardOnly(const TrainingConfig& training) {
  const config::Framework framework = training.framework.framework;
  return framework == config::Framework::kSlime || framework == config::Framework::kAreal;
}

// PyTorch's caching allocator (c10/cuda/CUDACachingAllocator.cpp) reserves whole segments:
// 2 MiB for small blocks (kSmallBuffer), 20 MiB for 1-10 MiB requests (kLargeBuffer) and larger
// requests rounded up to 2 MiB (kRoundLarge); freed blocks stay cached and split blocks leave
// unusable gaps. Modelled as reserved = RoundUp(allocated·(1 + fragmentation), 2 MiB).
int64_t ReservedBytes(int64_t allocated_bytes, double fragmentation_fraction) {
  const auto reserve = static_cast<int64_t>(
      std::llround(static_cast<double>(allocated_bytes) * fragmentation_fraction));
  return RoundUp(CheckedAdd(allocated_bytes, reserve, kWhat), kAllocatorSegmentBytes);
}

// The three figures of `rank` from its categories and named terms: allocated (the model states,
// CUDA-graph static buffers and cuBLAS workspaces, which live through both phases, plus the
// larger of forward/backward with the activations and FSDP unit buffers and the optimizer
// step), reserved, and nvidia-smi with the CUDA context and NCCL buffers; then buffers_bytes.
void SetFigures(int64_t states_bytes, int64_t unit_buffer_bytes, const MemoryOverheads& overheads,
                RankMemory& rank) {
  const int64_t persistent = CheckedAdd(
      states_bytes, CheckedAdd(rank.cuda_graph_bytes, rank.cublas_workspace_bytes, kWhat), kWhat);
  const int64_t training_phase =
      CheckedAdd(persistent, CheckedAdd(rank.activations_bytes, unit_buffer_bytes, kWhat), kWhat);
  const int64_t step_phase = CheckedAdd(persistent, rank.optimizer_step_bytes, kWhat);
  rank.allocated_bytes = std::max(training_phase, step_phase);
  rank.reserved_bytes = ReservedBytes(rank.allocated_bytes, overheads.fragmentation_fraction);
  rank.fragmentation_bytes = rank.reserved_bytes - rank.allocated_bytes;
  rank.cuda_context_bytes = overheads.cuda_context_bytes.value_or(
      DefaultCudaContextBytes(overheads.gpu_compute_capability_major));
  rank.nccl_bytes = Mul(overheads.nccl_bytes_per_communicator, rank.num_communicators);
  rank.peak_bytes = CheckedAdd(rank.reserved_bytes,
                               CheckedAdd(rank.cuda_context_bytes, rank.nccl_bytes, kWhat), kWhat);
  rank.buffers_bytes = rank.peak_bytes - states_bytes - rank.activations_bytes;
}

RankMemory StageMemory(const graph::LayerOpContext& context, const config::PipelineLayout& layout,
                       const config::RankMapping& mapping, const graph::StageParams& stage,
                       int64_t m, const MemoryOverheads& overheads) {
  RankMemory rank{.pipeline_rank = stage.pipeline_rank, .num_ranks = stage.num_ranks};
  const RankParams params =
      graph::internal::CollectRankParams(context, layout, mapping, stage.pipeline_rank);
  const ModelStates states = context.training.data_parallel.megatron_fsdp
                                 ? FsdpStates(stage, params, context.training, mapping)
                                 : DdpStates(stage, params, context.training,
                                             TeLinearNumel(context, layout, stage.pipeline_rank));
  rank.weights_bytes = states.weights_bytes;
  // A forward-only pass (eval mode) needs no gradients and no optimizer step; slime and AReaL
  // keep the training states allocated through it.
  if (!context.training.forward_only || KeepsTrainingStatesInForwardOnly(context.training)) {
    rank.grads_bytes = states.grads_bytes;
    rank.optimizer_bytes = states.optimizer_bytes;
    rank.host_optimizer_bytes = states.host_optimizer_bytes;
  }
  if (!context.training.forward_only) rank.optimizer_step_bytes = states.optimizer_step_bytes;
  AddActivations(context, layout, m, overheads.moe_load_factor, rank);
  rank.num_communicators = CountCommunicators(context, mapping, stage.pipeline_rank);
  // Two phases: forward/backward holds the activations (and FSDP unit buffers), the optimizer
  // step its fp32 grad copy; the allocator's peak is the larger one.
  int64_t states_bytes = 0;
  for (const int64_t bytes : {rank.weights_bytes, rank.grads_bytes, rank.optimizer_bytes}) {
    states_bytes = CheckedAdd(states_bytes, bytes, kWhat);
  }
  rank.cuda_graph_bytes = CudaGraphStaticBytes(context, layout, rank);
  rank.cublas_workspace_bytes = CublasWorkspaceBytes(context, overheads);
  SetFigures(states_bytes, states.unit_buffer_bytes, overheads, rank);
  return rank;
}

}  // namespace

int64_t DefaultCudaContextBytes(int compute_capability_major) {
  if (compute_capability_major >= 10) return 576 * kBytesPerMiB;
  if (compute_capability_major == 9) return 512 * kBytesPerMiB;
  return 448 * kBytesPerMiB;
}

int64_t TeCublasWorkspaceBytes(int compute_capability_major) {
  return compute_capability_major >= 9 ? 32 * kBytesPerMiB + kBytesPerKiB : 4 * kBytesPerMiB;
}

int64_t OffloadedLayerBytes(const config::ModelConfig& model,
                            const config::TrainingConfig& training, int64_t layer,
                            double moe_load_factor) {
  TRAINSCOPE_CHECK(layer >= 0 && layer < model.NumLayers(), "layer index out of range");
  const graph::LayerOpContext context = graph::MakeLayerOpContext(model, training);
  return internal::LayerActivationBytes(context, model.layers[static_cast<size_t>(layer)],
                                        moe_load_factor);
}

MemoryEstimate EstimateMemory(const config::ModelConfig& model,
                              const config::TrainingConfig& training,
                              const MemoryOverheads& overheads) {
  const graph::LayerOpContext context = graph::MakeLayerOpContext(model, training);
  const config::PipelineLayout layout = config::BuildPipelineLayout(model, training);
  const config::RankMapping mapping(training.parallel);
  const int64_t m = training.NumMicroBatches();
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
