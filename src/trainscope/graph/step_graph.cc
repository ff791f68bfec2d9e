#include "trainscope/graph/step_graph.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "trainscope/config/pipeline_layout.h"
#include "trainscope/config/rank_mapping.h"
#include "trainscope/config/validate.h"
#include "trainscope/error.h"
#include "trainscope/graph/layer_ops.h"
#include "trainscope/graph/param_count.h"
#include "trainscope/graph/weights.h"
#include "trainscope/units.h"

namespace trainscope::graph {
namespace {

using config::GroupKind;
using config::ModelChunk;
using config::TrainingConfig;

// Adam step per fp32 main parameter (docs/workload.md "Optimizer"): grad unscale/clip 1, first
// moment 3, second moment 4, sqrt + eps + divide 3, weight decay and lr update 3 = 14 FLOPs.
constexpr int64_t kAdamFlopsPerParam = 14;
// Bytes per parameter: fp32 main param, exp_avg, exp_avg_sq each read and written (24), the fp32
// main grad read (4) and the bf16 model param written (2).
constexpr int64_t kAdamBytesPerParam = 3 * 2 * kFp32Bytes + kFp32Bytes + kBf16Bytes;
// Distributed-optimizer padding (param_layout.py:19-41).
constexpr int64_t kParamAlignment = 64;
constexpr int64_t kBucketAlignment = 128;
// Default DDP bucket size: max(40M, 1M·|dp×cp|) parameters (training.py:2179-2194).
constexpr int64_t kMinBucketParams = 40'000'000;
constexpr int64_t kBucketParamsPerDpRank = 1'000'000;

// One forward or backward pass of one (micro-batch, model chunk) on this rank.
struct Pass {
  bool forward = true;
  int64_t micro_batch = 0;
  int64_t chunk = 0;
};

// 1F1B (schedules.py:2147-2509): w = min(p−r−1, m) forwards, m−w (F, B) pairs, w backwards.
std::vector<Pass> OneFOneBSchedule(int64_t p, int64_t r, int64_t m) {
  const int64_t warmup = std::min(p - r - 1, m);
  std::vector<Pass> passes;
  for (int64_t i = 0; i < warmup; ++i) passes.push_back({true, i, 0});
  for (int64_t i = 0; i < m - warmup; ++i) {
    passes.push_back({true, warmup + i, 0});
    passes.push_back({false, i, 0});
  }
  for (int64_t i = m - warmup; i < m; ++i) passes.push_back({false, i, 0});
  return passes;
}

// Megatron's get_schedule_table (schedules.py): micro-batches in groups of G, each group
// visiting chunk 0..v−1 in turn. Entry k is the (micro-batch, chunk) of virtual micro-batch k.
std::vector<Pass> ScheduleTable(int64_t m, int64_t v, int64_t group) {
  std::vector<Pass> table;
  for (int64_t first = 0; first < m; first += group) {
    const int64_t end = first + group >= m ? m : first + group;
    for (int64_t chunk = 0; chunk < v; ++chunk) {
      for (int64_t i = first; i < end; ++i) table.push_back({true, i, chunk});
    }
  }
  return table;
}

// Interleaved (schedules.py:949-986, 1019-): w = min(2(p−r−1) + (v−1)·G + ω, m·v) forward
// passes, then (F, B) pairs, then the remaining backwards; backward k runs chunk v−1−chunk_k.
std::vector<Pass> InterleavedSchedule(int64_t p, int64_t r, int64_t v, int64_t m, int64_t group,
                                      int64_t extra_warmup) {
  const std::vector<Pass> table = ScheduleTable(m, v, group);
  const int64_t total = m * v;
  const int64_t warmup = std::min(2 * (p - r - 1) + (v - 1) * group + extra_warmup, total);
  auto backward = [&](int64_t k) {
    const Pass& entry = table[static_cast<size_t>(k)];
    return Pass{false, entry.micro_batch, v - 1 - entry.chunk};
  };
  std::vector<Pass> passes;
  for (int64_t k = 0; k < warmup; ++k) passes.push_back(table[static_cast<size_t>(k)]);
  for (int64_t k = 0; k < total - warmup; ++k) {
    passes.push_back(table[static_cast<size_t>(warmup + k)]);
    passes.push_back(backward(k));
  }
  for (int64_t k = total - warmup; k < total; ++k) passes.push_back(backward(k));
  return passes;
}

bool FullRecompute(const TrainingConfig& training, int64_t index_in_chunk) {
  const config::RecomputeConfig& recompute = training.recompute;
  if (recompute.granularity != config::RecomputeGranularity::kFull) return false;
  if (recompute.method == config::RecomputeMethod::kUniform) return true;
  return recompute.method == config::RecomputeMethod::kBlock &&
         index_in_chunk < recompute.num_layers.value_or(0);
}

void Append(std::vector<Op>& out, const std::vector<Op>& ops) {
  out.insert(out.end(), ops.begin(), ops.end());
}

// The compute and collective ops of one chunk's forward and backward pass (one micro-batch).
struct ChunkOps {
  std::vector<Op> forward;
  std::vector<Op> backward;
};

ChunkOps BuildChunkOps(const LayerOpContext& context, const ModelChunk& chunk) {
  ChunkOps ops;
  if (chunk.has_embedding) Append(ops.forward, EmbeddingForward(context));
  for (int64_t i = 0; i < chunk.num_layers; ++i) {
    Append(ops.forward, DecoderLayerForward(context, chunk.first_layer + i));
  }
  if (chunk.num_mtp_layers > 0) Append(ops.forward, MtpForward(context));
  if (chunk.has_lm_head) Append(ops.forward, LmHeadAndLossForward(context));
  if (chunk.has_lm_head) Append(ops.backward, LmHeadAndLossBackward(context));
  if (chunk.num_mtp_layers > 0) Append(ops.backward, MtpBackward(context));
  for (int64_t i = chunk.num_layers - 1; i >= 0; --i) {
    const int64_t layer = chunk.first_layer + i;
    Append(ops.backward, DecoderLayerRecompute(context, layer, FullRecompute(context.training, i)));
    Append(ops.backward, DecoderLayerBackward(context, layer));
  }
  if (chunk.has_embedding) Append(ops.backward, EmbeddingBackward(context));
  return ops;
}

int64_t ElementBytes(config::ParamDtype dtype) {
  return dtype == config::ParamDtype::kFp32 ? kFp32Bytes : kBf16Bytes;
}

int64_t GradBytes(const TrainingConfig& training) {
  return training.precision.grad_reduce_in_fp32 ? kFp32Bytes : kBf16Bytes;
}

// Appends ops to the graph, assigning ids and deps (deps sorted, unique, all < id).
class GraphWriter {
 public:
  explicit GraphWriter(std::vector<Op>& ops) : ops_(ops) {}

  int64_t Add(Op op, std::vector<int64_t> deps) {
    op.id = static_cast<int64_t>(ops_.size());
    deps.erase(std::remove(deps.begin(), deps.end(), int64_t{-1}), deps.end());
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    TRAINSCOPE_CHECK(deps.empty() || deps.back() < op.id, "dependency on a later op");
    op.deps = std::move(deps);
    ops_.push_back(std::move(op));
    return ops_.back().id;
  }

 private:
  std::vector<Op>& ops_;
};

// Everything the per-pass emitter needs about this rank's pipeline position.
struct PipelinePeers {
  int64_t p = 1;
  int64_t v = 1;
  int64_t r = 0;
  int64_t previous = -1;  // global rank of PP rank r−1 (wrapping)
  int64_t next = -1;      // global rank of PP rank r+1 (wrapping)
  int64_t message_bytes = 0;
};

PipelinePeers MakePeers(const config::RankMapping& mapping, const LayerOpContext& context,
                        int64_t rank) {
  const config::ParallelSizes& sizes = context.training.parallel;
  PipelinePeers peers{.p = sizes.pipeline, .v = sizes.virtual_stages};
  peers.r = mapping.Coordinates(rank).pp;
  const std::vector<int64_t> group = mapping.GroupOf(GroupKind::kPp, rank);
  peers.previous = group[static_cast<size_t>((peers.r + peers.p - 1) % peers.p)];
  peers.next = group[static_cast<size_t>((peers.r + 1) % peers.p)];
  // §4.1: P = s_c·b·h·β / (t if SP), β = params dtype (argument_utils.py:306).
  const int64_t split = context.SequenceParallel() ? sizes.tensor : 1;
  peers.message_bytes = context.TokensPerRank() * context.model.hidden_size *
                        ElementBytes(context.training.precision.params) / split;
  return peers;
}

Op P2pOp(const PipelinePeers& peers, const Pass& pass, bool send) {
  const bool towards_next = pass.forward == send;
  Op op;
  op.phase = pass.forward ? Phase::kForward : Phase::kBackward;
  op.micro_batch = pass.micro_batch;
  op.model_chunk = pass.chunk;
  op.name =
      std::string("pp.") + (send ? "send_" : "recv_") + (pass.forward ? "forward" : "backward");
  op.collective = send ? Collective::kSend : Collective::kRecv;
  op.group = GroupKind::kPp;
  op.group_size = peers.p;
  op.message_bytes = peers.message_bytes;
  op.peer = towards_next ? peers.next : peers.previous;
  return op;
}

// §4.3/§4.4: the very first stage (rank 0, chunk 0) has no upstream, the very last (rank p−1,
// chunk v−1) no downstream; every other pass exchanges with a neighbour (wrapping between chunks).
bool HasUpstream(const PipelinePeers& peers, int64_t chunk) {
  return peers.p > 1 && !(peers.r == 0 && chunk == 0);
}
bool HasDownstream(const PipelinePeers& peers, int64_t chunk) {
  return peers.p > 1 && !(peers.r == peers.p - 1 && chunk == peers.v - 1);
}

// Ids that link passes: the last op of the previous pass (compute runs in issue order) and the
// last op of each (micro-batch, chunk) forward, which its backward needs.
struct ScheduleState {
  int64_t previous_pass_end = -1;
  std::vector<int64_t> forward_end;  // index micro_batch·v + chunk
};

// Emits one pass: the receive it waits for, its ops chained in order, then the send.
void EmitPass(GraphWriter& writer, const Pass& pass, const std::vector<Op>& ops,
              const PipelinePeers& peers, ScheduleState& state) {
  const size_t stream = static_cast<size_t>(pass.micro_batch * peers.v + pass.chunk);
  std::vector<int64_t> deps = {state.previous_pass_end};
  if (!pass.forward) deps.push_back(state.forward_end[stream]);
  const bool receives =
      pass.forward ? HasUpstream(peers, pass.chunk) : HasDownstream(peers, pass.chunk);
  const bool sends =
      pass.forward ? HasDownstream(peers, pass.chunk) : HasUpstream(peers, pass.chunk);
  if (receives) deps.push_back(writer.Add(P2pOp(peers, pass, /*send=*/false), {}));
  int64_t last = *std::max_element(deps.begin(), deps.end());
  for (const Op& layer_op : ops) {
    Op op = layer_op;
    op.micro_batch = pass.micro_batch;
    op.model_chunk = pass.chunk;
    last = writer.Add(std::move(op), deps);
    deps = {last};
  }
  if (sends) writer.Add(P2pOp(peers, pass, /*send=*/true), {last});
  state.previous_pass_end = last;
  if (pass.forward) state.forward_end[stream] = last;
}

// Weight tensors of one chunk in Megatron's registration order (embedding, decoder layers,
// final norm, MTP, output layer); `shared_embedding` marks the word embedding kept in sync over
// the embedding group (language_module.py:208-325).
struct TensorGroup {
  std::vector<WeightTensor> tensors;
  int64_t repeat = 1;
  bool shared_embedding = false;
};

std::vector<TensorGroup> ChunkTensors(const config::ModelConfig& model, const ModelChunk& chunk,
                                      int64_t p) {
  const bool shared = p > 1 && (model.tied_embeddings || model.num_mtp_layers > 0);
  std::vector<TensorGroup> groups;
  if (chunk.has_embedding) groups.push_back({EmbeddingWeights(model), 1, shared});
  if (chunk.has_embedding_copy && !model.tied_embeddings) {
    groups.push_back({EmbeddingWeights(model), 1, true});  // MTP re-embeds on the last stage
  }
  if (chunk.has_vision) groups.push_back({VisionWeights(model), 1, false});
  for (int64_t i = 0; i < chunk.num_layers; ++i) {
    const config::LayerSpec spec = model.layers[static_cast<size_t>(chunk.first_layer + i)];
    groups.push_back({DecoderLayerWeights(model, spec), 1, false});
  }
  if (chunk.has_lm_head) groups.push_back({FinalNormWeights(model), 1, false});
  if (chunk.num_mtp_layers > 0) {
    groups.push_back({MtpLayerWeights(model), chunk.num_mtp_layers, false});
  }
  if (chunk.has_lm_head) groups.push_back({LmHeadWeights(model), 1, false});
  if (chunk.has_embedding_copy && model.tied_embeddings) {
    groups.push_back({EmbeddingWeights(model), 1, true});  // the tied output-layer copy
  }
  return groups;
}

// One DDP parameter on this rank; every local expert is its own parameter (TE GroupedLinear
// weight_i, SequentialMLP).
struct ParamEntry {
  int64_t numel = 0;
  bool expert_buffer = false;
  bool shared_embedding = false;
};

std::vector<ParamEntry> ChunkParams(const std::vector<TensorGroup>& groups,
                                    const config::ParallelSizes& sizes, int64_t padded_vocab) {
  // Expert weights get their own buffer when e > 1 or u ≠ t (§3.5).
  const bool separate = sizes.expert > 1 || sizes.ExpertTensor() != sizes.tensor;
  std::vector<ParamEntry> params;
  for (const TensorGroup& group : groups) {
    for (int64_t k = 0; k < group.repeat; ++k) {
      for (const WeightTensor& tensor : group.tensors) {
        const int64_t copies = tensor.expert ? tensor.copies / sizes.expert : tensor.copies;
        const int64_t numel = ShardNumel(tensor, sizes, padded_vocab) / copies;
        for (int64_t c = 0; c < copies; ++c) {
          params.push_back({numel, tensor.expert && separate, group.shared_embedding});
        }
      }
    }
  }
  return params;
}

// §5.1: parameters laid out in reverse (backprop) order; a bucket closes once it reaches
// `bucket_size`; with the distributed optimizer each parameter starts at a multiple of 64 and
// each bucket ends at a multiple of lcm(group, 128), and the shared embedding is its own bucket.
std::vector<int64_t> BucketNumels(const std::vector<ParamEntry>& params, bool expert_buffer,
                                  std::optional<int64_t> bucket_size, bool pad,
                                  int64_t group_size) {
  const int64_t bucket_alignment = std::lcm(group_size, kBucketAlignment);
  std::vector<int64_t> buckets;
  int64_t start = 0;
  int64_t end = 0;
  auto close = [&] {
    if (end == start) return;
    const int64_t padded_end = pad ? RoundUp(end, bucket_alignment) : end;
    buckets.push_back(padded_end - start);
    start = end = padded_end;
  };
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    if (it->expert_buffer != expert_buffer) continue;
    const bool own_bucket = pad && it->shared_embedding;
    if (own_bucket) close();
    end = CheckedAdd(pad ? RoundUp(end, kParamAlignment) : end, it->numel, "gradient buffer");
    if (own_bucket || (bucket_size && end - start >= *bucket_size)) close();
  }
  close();
  return buckets;
}

// One gradient buffer of one chunk: its reduction group and bucket sizes (elements).
struct GradBuffer {
  int64_t chunk = 0;
  GroupKind group = GroupKind::kDpCp;
  int64_t group_size = 1;
  std::vector<int64_t> bucket_numels;
};

std::vector<GradBuffer> ChunkGradBuffers(const std::vector<ParamEntry>& params,
                                         const ModelChunk& chunk, const TrainingConfig& training,
                                         const config::RankMapping& mapping) {
  const config::DataParallelConfig& dp = training.data_parallel;
  const int64_t dp_cp = mapping.GroupSize(GroupKind::kDpCp);
  std::optional<int64_t> bucket_size;
  // Bucketing only on chunk 0 of PP rank 0 with overlap (training.py:2504-2515).
  if (dp.overlap_grad_reduce && chunk.pipeline_rank == 0 && chunk.virtual_chunk == 0) {
    bucket_size =
        dp.bucket_size_params.value_or(std::max(kMinBucketParams, kBucketParamsPerDpRank * dp_cp));
  }
  std::vector<GradBuffer> buffers;
  for (const bool expert : {false, true}) {
    const GroupKind group = expert ? GroupKind::kExpertDp : GroupKind::kDpCp;
    GradBuffer buffer{chunk.virtual_chunk, group, mapping.GroupSize(group), {}};
    buffer.bucket_numels =
        BucketNumels(params, expert, bucket_size, dp.distributed_optimizer, buffer.group_size);
    if (!buffer.bucket_numels.empty()) buffers.push_back(buffer);
  }
  return buffers;
}

// What the once-per-step ops of this rank need to know about its parameters.
struct RankParams {
  std::vector<GradBuffer> buffers;  // chunk order; dense buffer before expert buffer
  int64_t tp_synced_numel = 0;      // §2.6: replicated grads that see different data per TP rank
  int64_t shared_embedding_numel = 0;  // §4.6: local shard of the shared word embedding
  int64_t num_moe_layers = 0;          // routers with an expert bias (decoder and MTP)
};

// §2.6: every replicated non-expert text weight under SP (norms, router, shared-expert gate);
// without SP only the q/k layernorms.
bool JoinsTpGradSync(const WeightTensor& tensor, bool sequence_parallel) {
  if (tensor.expert || tensor.split != Split::kReplicated) return false;
  if (tensor.component == Component::kVision) return false;
  if (sequence_parallel) return true;
  return tensor.name.find("q_layernorm") != std::string::npos ||
         tensor.name.find("k_layernorm") != std::string::npos;
}

void AddTensorTotals(const TensorGroup& group, const LayerOpContext& context, RankParams& params) {
  const config::ParallelSizes& sizes = context.training.parallel;
  for (const WeightTensor& tensor : group.tensors) {
    if (JoinsTpGradSync(tensor, context.SequenceParallel())) {
      params.tp_synced_numel += tensor.Numel() * group.repeat;
    }
    if (group.shared_embedding) {
      params.shared_embedding_numel += ShardNumel(tensor, sizes, context.PaddedVocab());
    }
    if (tensor.component == Component::kRouter ||
        (tensor.component == Component::kMtp && tensor.name.ends_with("mlp.router.weight"))) {
      params.num_moe_layers += group.repeat;
    }
  }
}

RankParams CollectRankParams(const LayerOpContext& context, const config::PipelineLayout& layout,
                             const config::RankMapping& mapping, int64_t pipeline_rank) {
  RankParams params;
  const config::ParallelSizes& sizes = context.training.parallel;
  for (int64_t j = 0; j < layout.virtual_stages; ++j) {
    const ModelChunk& chunk = layout.Chunk(pipeline_rank, j);
    const std::vector<TensorGroup> groups = ChunkTensors(context.model, chunk, sizes.pipeline);
    for (const TensorGroup& group : groups) AddTensorTotals(group, context, params);
    const std::vector<ParamEntry> entries = ChunkParams(groups, sizes, context.PaddedVocab());
    for (GradBuffer& buffer : ChunkGradBuffers(entries, chunk, context.training, mapping)) {
      params.buffers.push_back(std::move(buffer));
    }
  }
  return params;
}

Op StepOp(const std::string& name, Phase phase, Collective collective, GroupKind group,
          int64_t group_size, int64_t message_bytes) {
  Op op;
  op.phase = phase;
  op.name = name;
  op.collective = collective;
  op.group = group;
  op.group_size = group_size;
  op.message_bytes = message_bytes;
  return op;
}

// §5.2: per bucket, RS (distributed optimizer) or AR of bucket_numel·β_g, or after the step the
// AG of the updated bf16 params. Returns the id of the last op emitted (or `after`).
int64_t EmitBucketOps(GraphWriter& writer, const RankParams& params, const TrainingConfig& training,
                      bool param_gather, int64_t after) {
  const bool distributed = training.data_parallel.distributed_optimizer;
  if (param_gather && !distributed) return after;
  for (const GradBuffer& buffer : params.buffers) {
    if (buffer.group_size == 1) continue;
    const std::string prefix = buffer.group == GroupKind::kExpertDp ? "edp." : "dp.";
    for (size_t i = 0; i < buffer.bucket_numels.size(); ++i) {
      const int64_t numel = buffer.bucket_numels[i];
      Op op = StepOp(prefix + "grad_all_reduce", Phase::kGradSync, Collective::kAllReduce,
                     buffer.group, buffer.group_size, numel * GradBytes(training));
      if (distributed) {
        op.name = prefix + "grad_reduce_scatter";
        op.collective = Collective::kReduceScatter;
      }
      if (param_gather) {
        op.name = prefix + "param_all_gather";
        op.phase = Phase::kOptimizer;
        op.collective = Collective::kAllGather;
        op.message_bytes = numel * ElementBytes(training.precision.params);
      }
      op.name += ".bucket" + std::to_string(i);
      op.model_chunk = buffer.chunk;
      after = writer.Add(std::move(op), {after});
    }
  }
  return after;
}

// §5.3 items 1-3 (finalize_model_grads.py:640-687): TP AR of SP / qk-norm grads, the
// embedding-group AR, the expert-bias AR.
int64_t EmitFinalizeOps(GraphWriter& writer, const RankParams& params,
                        const LayerOpContext& context, const config::RankMapping& mapping,
                        int64_t rank, int64_t after) {
  const TrainingConfig& training = context.training;
  const config::ParallelSizes& sizes = training.parallel;
  if (sizes.tensor > 1 && params.tp_synced_numel > 0) {
    after = writer.Add(
        StepOp("tp.replicated_grad_all_reduce", Phase::kGradSync, Collective::kAllReduce,
               GroupKind::kTp, sizes.tensor, params.tp_synced_numel * GradBytes(training)),
        {after});
  }
  const int64_t embedding_group =
      static_cast<int64_t>(mapping.GroupOf(GroupKind::kEmbedding, rank).size());
  if (params.shared_embedding_numel > 0 && embedding_group > 1) {
    after = writer.Add(StepOp("embedding.grad_all_reduce", Phase::kGradSync, Collective::kAllReduce,
                              GroupKind::kEmbedding, embedding_group,
                              params.shared_embedding_numel * GradBytes(training)),
                       {after});
  }
  const int64_t tp_dp_cp = sizes.tensor * sizes.Data() * sizes.context;
  if (training.moe.router_enable_expert_bias && params.num_moe_layers > 0 && tp_dp_cp > 1) {
    // §3.1: fp32 token counts over tp×dp×cp.
    after = writer.Add(StepOp("moe.expert_bias_all_reduce", Phase::kGradSync,
                              Collective::kAllReduce, GroupKind::kTpDpCp, tp_dp_cp,
                              params.num_moe_layers * context.model.moe.num_experts * kFp32Bytes),
                       {after});
  }
  return after;
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

// §5.3 tail (clip_grads.py:99-132): one fp32 grad-norm AR per optimizer (dense; expert when it
// has its own buffer), then the Adam step, then (distributed optimizer) the param AG.
int64_t EmitOptimizerOps(GraphWriter& writer, const RankParams& params,
                         const TrainingConfig& training, int64_t after) {
  const config::ParallelSizes& sizes = training.parallel;
  const bool distributed = training.data_parallel.distributed_optimizer;
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
               Phase::kOptimizer, Collective::kAllReduce, group, group_size, kFp32Bytes),
        {after});
  }
  Op step = StepOp("optimizer.step", Phase::kOptimizer, Collective::kNone, GroupKind::kDpCp, 1, 0);
  const int64_t numel = OptimizerNumel(params, distributed);
  step.flops = CheckedMul(numel, kAdamFlopsPerParam, "optimizer FLOPs");
  step.bytes = CheckedMul(numel, kAdamBytesPerParam, "optimizer bytes");
  after = writer.Add(std::move(step), {after});
  return EmitBucketOps(writer, params, training, /*param_gather=*/true, after);
}

std::vector<Pass> RankSchedule(const TrainingConfig& training, const PipelinePeers& peers,
                               int64_t m) {
  if (peers.v == 1) return OneFOneBSchedule(peers.p, peers.r, m);
  const int64_t group = training.batch.microbatch_group_size_per_vp_stage > 0
                            ? training.batch.microbatch_group_size_per_vp_stage
                            : peers.p;
  const int64_t extra = training.moe.overlap_expert_parallel_comm ? 1 : 0;
  return InterleavedSchedule(peers.p, peers.r, peers.v, m, group, extra);
}

}  // namespace

StepGraph BuildStepGraph(const config::ModelConfig& model, const TrainingConfig& training,
                         int64_t rank) {
  const config::PipelineLayout layout = config::BuildPipelineLayout(model, training);
  const config::RankMapping mapping(training.parallel);
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const PipelinePeers peers = MakePeers(mapping, context, rank);
  StepGraph graph{.rank = rank,
                  .pipeline_rank = peers.r,
                  .num_micro_batches = config::NumMicroBatches(training),
                  .ops = {}};
  // Per-chunk op templates are built once and copied per micro-batch.
  std::vector<ChunkOps> chunk_ops;
  for (int64_t j = 0; j < peers.v; ++j) {
    chunk_ops.push_back(BuildChunkOps(context, layout.Chunk(peers.r, j)));
  }
  GraphWriter writer(graph.ops);
  ScheduleState state;
  state.forward_end.assign(static_cast<size_t>(graph.num_micro_batches * peers.v), -1);
  for (const Pass& pass : RankSchedule(training, peers, graph.num_micro_batches)) {
    const ChunkOps& ops = chunk_ops[static_cast<size_t>(pass.chunk)];
    EmitPass(writer, pass, pass.forward ? ops.forward : ops.backward, peers, state);
  }
  const RankParams params = CollectRankParams(context, layout, mapping, peers.r);
  int64_t last =
      EmitBucketOps(writer, params, training, /*param_gather=*/false, state.previous_pass_end);
  last = EmitFinalizeOps(writer, params, context, mapping, rank, last);
  EmitOptimizerOps(writer, params, training, last);
  return graph;
}

namespace {

// §8.1 layer counts over L' = L + D: MoE vs dense FFN (the MTP layers take the last layer's
// FFN) and linear vs softmax attention, the MTP layers indexed by Megatron's
// linear_attention_freq pattern ((i+1) % freq == 0 is softmax) even though it builds them as
// attention (the documented quirk).
struct FlopsLayerCounts {
  int64_t moe = 0, dense = 0, linear = 0, softmax = 0;
};

FlopsLayerCounts CountFlopsLayers(const config::ModelConfig& model) {
  FlopsLayerCounts counts;
  const int64_t num_layers = model.NumLayers();
  const int64_t mtp = model.num_mtp_layers;
  counts.moe = model.CountLayers(config::FfnKind::kMoe);
  counts.dense = num_layers - counts.moe;
  const bool last_moe = num_layers > 0 && model.layers.back().ffn == config::FfnKind::kMoe;
  (last_moe ? counts.moe : counts.dense) += mtp;
  if (!model.HasGdn()) {
    counts.softmax = num_layers + mtp;
    return counts;
  }
  // linear_attention_freq: the first softmax-attention layer sits at index freq − 1.
  int64_t freq = 0;
  for (int64_t i = 0; i < num_layers && freq == 0; ++i) {
    if (model.layers[static_cast<size_t>(i)].mixer != config::MixerKind::kGatedDeltaNet) {
      freq = i + 1;
    }
  }
  counts.linear = model.CountLayers(config::MixerKind::kGatedDeltaNet);
  for (int64_t i = num_layers; i < num_layers + mtp; ++i) {
    const bool softmax = freq > 0 && (i + 1) % freq == 0;
    (softmax ? counts.softmax : counts.linear) += 1;
  }
  counts.softmax += num_layers - model.CountLayers(config::MixerKind::kGatedDeltaNet);
  return counts;
}

}  // namespace

long double MegatronModelFlopsPerStep(const config::ModelConfig& model,
                                      const TrainingConfig& training) {
  using Wide = __int128;  // Megatron computes with Python ints; 64 bits overflow at scale
  const config::ParallelSizes& sizes = training.parallel;
  const Wide s = training.batch.seq_length;
  const Wide gbs =
      training.batch.global_batch_size.value_or(training.batch.micro_batch_size * sizes.Data());
  const Wide tokens = gbs * s;  // N
  const Wide h = model.hidden_size;
  const Wide mtp = model.num_mtp_layers;
  const Wide vocab =
      PaddedVocabSize(model.vocab_size, sizes.tensor, training.make_vocab_size_divisible_by);
  const FlopsLayerCounts n = CountFlopsLayers(model);
  const config::AttentionConfig& a = model.attention;
  const config::GdnConfig& g = model.gdn;
  const config::MoeConfig& moe = model.moe;
  constexpr int64_t kSwiGlu = 3;  // f (training.py:1070)
  const Wide ffn = 6 * h *
                   (Wide{model.ffn_hidden_size} * kSwiGlu * n.dense +
                    (Wide{moe.expert_ffn_hidden_size} * moe.top_k * kSwiGlu +
                     Wide{moe.shared_expert_ffn_hidden_size} * kSwiGlu) *
                        n.moe);
  const Wide attention_linear =
      6 * (h * (a.QueryWidth() + 2 * a.KvWidth() + a.GateWidth()) + Wide{a.QueryWidth()} * h);
  const Wide gdn_linear =
      6 * (h * g.InProjWidth() + Wide{g.conv_kernel} * g.ConvChannels() +
           Wide{4} * g.num_value_heads * g.value_head_dim * g.value_head_dim + h * g.ValueWidth());
  const Wide per_token = ffn + gdn_linear * n.linear + attention_linear * n.softmax +
                         6 * mtp * (3 * h + 2 * h * h) + 6 * h * vocab * (mtp + 1);
  const Wide core = tokens * s * 6 * a.QueryWidth() * n.softmax;
  return static_cast<long double>(tokens * per_token + core);
}

}  // namespace trainscope::graph
