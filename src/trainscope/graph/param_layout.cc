// The parameters one rank holds per model chunk and how they are laid out for gradient
// synchronisation: DDP gradient buffers and buckets with the distributed optimizer's padding
// (param_layout.py:19-41), the Megatron-FSDP units (megatron_fsdp.py) and the totals of replicated,
// shared-embedding and router parameters the once-per-step reductions need.
#include <algorithm>
#include <numeric>
#include <optional>

#include "trainscope/graph/param_count.h"
#include "trainscope/graph/step_graph_internal.h"
#include "trainscope/units.h"

namespace trainscope::graph::internal {
namespace {

using config::GroupKind;
using config::ModelChunk;

// Distributed-optimizer padding (param_layout.py:19-41).
constexpr int64_t kParamAlignment = 64;
constexpr int64_t kBucketAlignment = 128;
// Default DDP bucket size: max(40M, 1M·|dp×cp|) parameters (training.py:2179-2194).
constexpr int64_t kMinBucketParams = 40'000'000;
constexpr int64_t kBucketParamsPerDpRank = 1'000'000;

// One DDP parameter on this rank; every local expert is its own parameter (TE GroupedLinear
// weight_i, SequentialMLP).
struct ParamEntry {
  int64_t numel = 0;
  bool expert_buffer = false;
  bool shared_embedding = false;
  bool te_linear = false;  // IsTeLinear: gathered in FP8 / FP4 under --fp8/--fp4-param-gather
};

std::vector<ParamEntry> ChunkParams(const std::vector<TensorGroup>& groups,
                                    const config::ParallelSizes& sizes, int64_t padded_vocab) {
  const bool separate = SeparateExpertBuffer(sizes);
  std::vector<ParamEntry> params;
  for (const TensorGroup& group : groups) {
    for (const WeightTensor& tensor : group.tensors) {
      const int64_t copies = tensor.expert ? tensor.copies / sizes.expert : tensor.copies;
      const int64_t numel = ShardNumel(tensor, sizes, padded_vocab) / copies;
      const bool te_linear = IsTeLinear(tensor);
      for (int64_t c = 0; c < copies; ++c) {
        params.push_back({numel, tensor.expert && separate, group.shared_embedding, te_linear});
      }
    }
  }
  return params;
}

// Bucket layout: parameters laid out in reverse (backprop) order; a bucket closes once it reaches
// `bucket_size`; with the distributed optimizer each parameter starts at a multiple of 64 and
// each bucket ends at a multiple of lcm(group, 128), and the shared embedding is its own bucket.
// Fills `buffer`'s bucket numels and, per bucket, the TE linear elements among them.
void LayOutBuckets(const std::vector<ParamEntry>& params, bool expert_buffer,
                   std::optional<int64_t> bucket_size, bool pad, GradBuffer& buffer) {
  const int64_t bucket_alignment = std::lcm(buffer.group_size, kBucketAlignment);
  int64_t start = 0;
  int64_t end = 0;
  int64_t te_linear = 0;
  auto close = [&] {
    if (end == start) return;
    const int64_t padded_end = pad ? RoundUp(end, bucket_alignment) : end;
    buffer.bucket_numels.push_back(padded_end - start);
    buffer.bucket_te_linear_numels.push_back(te_linear);
    start = end = padded_end;
    te_linear = 0;
  };
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    if (it->expert_buffer != expert_buffer) continue;
    const bool own_bucket = pad && it->shared_embedding;
    if (own_bucket) close();
    end = CheckedAdd(pad ? RoundUp(end, kParamAlignment) : end, it->numel, "gradient buffer");
    if (it->te_linear) te_linear += it->numel;
    if (own_bucket || (bucket_size && end - start >= *bucket_size)) close();
  }
  close();
}

std::vector<GradBuffer> ChunkGradBuffers(const std::vector<ParamEntry>& params,
                                         const ModelChunk& chunk,
                                         const config::TrainingConfig& training,
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
    GradBuffer buffer{
        .chunk = chunk.virtual_chunk, .group = group, .group_size = mapping.GroupSize(group)};
    LayOutBuckets(params, expert, bucket_size, dp.distributed_optimizer, buffer);
    if (!buffer.bucket_numels.empty()) buffers.push_back(buffer);
  }
  return buffers;
}

// FSDP units: one unit per decoder / MTP layer and one root unit for everything else in the chunk;
// units without parameters are dropped.
std::vector<FsdpUnit> ChunkFsdpUnits(const std::vector<TensorGroup>& groups, int64_t chunk,
                                     const config::ParallelSizes& sizes, int64_t padded_vocab) {
  const bool separate = SeparateExpertBuffer(sizes);
  std::vector<FsdpUnit> units = {FsdpUnit{.chunk = chunk, .layer = -1}};
  for (const TensorGroup& group : groups) {
    if (group.layer >= 0) units.push_back(FsdpUnit{.chunk = chunk, .layer = group.layer});
    FsdpUnit& unit = group.layer >= 0 ? units.back() : units.front();
    for (const WeightTensor& tensor : group.tensors) {
      int64_t& numel = tensor.expert && separate ? unit.expert_numel : unit.dense_numel;
      numel = CheckedAdd(numel, ShardNumel(tensor, sizes, padded_vocab), "FSDP unit");
    }
  }
  std::erase_if(
      units, [](const FsdpUnit& unit) { return unit.dense_numel == 0 && unit.expert_numel == 0; });
  return units;
}

// TP grad AR: every replicated non-expert text weight under SP (norms, router, shared-expert gate);
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
      params.tp_synced_numel += tensor.Numel();
    }
    if (group.shared_embedding) {
      params.shared_embedding_numel += ShardNumel(tensor, sizes, context.PaddedVocab());
    }
    if (tensor.component == Component::kRouter ||
        (tensor.component == Component::kMtp && tensor.name.ends_with("mlp.router.weight"))) {
      params.num_moe_layers += 1;
    }
  }
}

}  // namespace

std::vector<TensorGroup> ChunkTensors(const config::ModelConfig& model,
                                      const config::TrainingConfig& training,
                                      const ModelChunk& chunk) {
  const int64_t p = training.parallel.pipeline;
  const bool shared = p > 1 && (model.tied_embeddings || model.num_mtp_layers > 0);
  std::vector<TensorGroup> groups;
  if (chunk.has_embedding) groups.push_back({EmbeddingWeights(model), -1, shared});
  if (chunk.has_embedding_copy && !model.tied_embeddings) {
    groups.push_back({EmbeddingWeights(model), -1, true});  // MTP re-embeds on the last stage
  }
  if (chunk.has_vision) groups.push_back({VisionWeights(model), -1, false});
  for (int64_t i = 0; i < chunk.num_layers; ++i) {
    const config::LayerSpec spec = model.layers[static_cast<size_t>(chunk.first_layer + i)];
    groups.push_back({TrainedLayerWeights(model, training, spec), chunk.first_layer + i, false});
  }
  if (chunk.has_lm_head) groups.push_back({FinalNormWeights(model), -1, false});
  for (int64_t i = 0; i < chunk.num_mtp_layers; ++i) {
    groups.push_back({MtpLayerWeights(model), model.NumLayers() + i, false});
  }
  if (chunk.has_lm_head) groups.push_back({LmHeadWeights(model), -1, false});
  if (chunk.has_embedding_copy && model.tied_embeddings) {
    groups.push_back({EmbeddingWeights(model), -1, true});  // the tied output-layer copy
  }
  return groups;
}

bool SeparateExpertBuffer(const config::ParallelSizes& sizes) {
  return sizes.expert > 1 || sizes.ExpertTensor() != sizes.tensor;
}

RankParams CollectRankParams(const LayerOpContext& context, const config::PipelineLayout& layout,
                             const config::RankMapping& mapping, int64_t pipeline_rank) {
  RankParams params;
  const config::ParallelSizes& sizes = context.training.parallel;
  for (int64_t j = 0; j < layout.virtual_stages; ++j) {
    const ModelChunk& chunk = layout.Chunk(pipeline_rank, j);
    const std::vector<TensorGroup> groups = ChunkTensors(context.model, context.training, chunk);
    for (const TensorGroup& group : groups) AddTensorTotals(group, context, params);
    const std::vector<ParamEntry> entries = ChunkParams(groups, sizes, context.PaddedVocab());
    for (GradBuffer& buffer : ChunkGradBuffers(entries, chunk, context.training, mapping)) {
      params.buffers.push_back(std::move(buffer));
    }
    if (context.training.data_parallel.megatron_fsdp) {
      for (const FsdpUnit& unit : ChunkFsdpUnits(groups, j, sizes, context.PaddedVocab())) {
        params.fsdp_units.push_back(unit);
      }
    }
  }
  return params;
}

}  // namespace trainscope::graph::internal
