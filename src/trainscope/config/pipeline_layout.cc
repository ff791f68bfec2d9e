#include "trainscope/config/pipeline_layout.h"

#include <fmt/format.h>

#include "trainscope/error.h"

namespace trainscope::config {

const ModelChunk& PipelineLayout::Chunk(int64_t pipeline_rank, int64_t virtual_chunk) const {
  TRAINSCOPE_CHECK(pipeline_rank >= 0 && pipeline_rank < pipeline_size, "pipeline rank");
  TRAINSCOPE_CHECK(virtual_chunk >= 0 && virtual_chunk < virtual_stages, "virtual chunk");
  return chunks[static_cast<size_t>(pipeline_rank * virtual_stages + virtual_chunk)];
}

int64_t PipelineLayout::LayersOnRank(int64_t pipeline_rank) const {
  int64_t total = 0;
  for (int64_t chunk = 0; chunk < virtual_stages; ++chunk) {
    total += Chunk(pipeline_rank, chunk).num_layers;
  }
  return total;
}

std::vector<int64_t> LayersPerPipelineRank(int64_t num_layers, const ParallelSizes& parallel,
                                           const PipelineSplit& split) {
  const int64_t p = parallel.pipeline;
  std::vector<int64_t> per_rank(static_cast<size_t>(p), -1);
  const bool uneven = split.first_stage_layers.has_value() || split.last_stage_layers.has_value();
  if (!uneven) {
    // Even split over L + a_e + a_l slots (transformer_config.py:2370-2414).
    const int64_t slots =
        num_layers + (split.account_for_embedding ? 1 : 0) + (split.account_for_loss ? 1 : 0);
    if (slots % p != 0) return per_rank;
    for (int64_t r = 0; r < p; ++r) per_rank[static_cast<size_t>(r)] = slots / p;
    if (split.account_for_embedding) per_rank.front() -= 1;
    if (split.account_for_loss) per_rank.back() -= 1;
    return per_rank;
  }
  // Uneven split: the given first/last counts, the rest shared by the remaining ranks
  // (transformer_block.py get_num_layers_to_build).
  int64_t remaining_layers = num_layers;
  int64_t remaining_ranks = p;
  if (split.first_stage_layers) {
    remaining_layers -= *split.first_stage_layers;
    remaining_ranks -= 1;
  }
  if (split.last_stage_layers) {
    remaining_layers -= *split.last_stage_layers;
    remaining_ranks -= 1;
  }
  int64_t middle = 0;
  if (remaining_ranks > 0) {
    if (remaining_layers < 0 || remaining_layers % remaining_ranks != 0) return per_rank;
    middle = remaining_layers / remaining_ranks;
  } else if (remaining_layers != 0) {
    return per_rank;
  }
  for (int64_t r = 0; r < p; ++r) per_rank[static_cast<size_t>(r)] = middle;
  if (split.first_stage_layers) per_rank.front() = *split.first_stage_layers;
  if (split.last_stage_layers) per_rank.back() = *split.last_stage_layers;
  return per_rank;
}

namespace {

// Decoder layers in chunk `j` of a rank holding `rank_layers` layers over `v` chunks. With the
// account-for options the embedding takes a slot of chunk 0 on rank 0 and the loss a slot of the
// last chunk on the last rank.
int64_t LayersInChunk(int64_t rank, int64_t chunk, int64_t rank_layers,
                      const ParallelSizes& parallel, const PipelineSplit& split) {
  const int64_t p = parallel.pipeline;
  const int64_t v = parallel.virtual_stages;
  int64_t slots = rank_layers;
  const bool embedding_slot = split.account_for_embedding && rank == 0;
  const bool loss_slot = split.account_for_loss && rank == p - 1;
  slots += (embedding_slot ? 1 : 0) + (loss_slot ? 1 : 0);
  if (slots % v != 0) {
    throw InputError(fmt::format(
        "--num-virtual-stages-per-pipeline-rank: {} layer slots on pipeline rank {} do not divide "
        "into {} virtual stages",
        slots, rank, v));
  }
  int64_t layers = slots / v;
  if (embedding_slot && chunk == 0) layers -= 1;
  if (loss_slot && chunk == v - 1) layers -= 1;
  return layers;
}

}  // namespace

PipelineLayout BuildPipelineLayout(const ModelConfig& model, const TrainingConfig& training) {
  const ParallelSizes& parallel = training.parallel;
  const int64_t p = parallel.pipeline;
  const int64_t v = parallel.virtual_stages;
  const std::vector<int64_t> per_rank =
      LayersPerPipelineRank(model.NumLayers(), parallel, training.split);
  for (int64_t r = 0; r < p; ++r) {
    if (per_rank[static_cast<size_t>(r)] < 0) {
      throw InputError(fmt::format(
          "--pipeline-model-parallel-size: {} decoder layers cannot be split over {} pipeline "
          "stages with the given first/last stage counts",
          model.NumLayers(), p));
    }
  }
  PipelineLayout layout{.pipeline_size = p, .virtual_stages = v, .chunks = {}};
  layout.chunks.resize(static_cast<size_t>(p * v));
  // Layers are assigned round by round: virtual chunk j outer, PP rank r inner.
  int64_t next_layer = 0;
  for (int64_t j = 0; j < v; ++j) {
    for (int64_t r = 0; r < p; ++r) {
      ModelChunk& chunk = layout.chunks[static_cast<size_t>(r * v + j)];
      chunk.pipeline_rank = r;
      chunk.virtual_chunk = j;
      chunk.first_layer = next_layer;
      chunk.num_layers =
          LayersInChunk(r, j, per_rank[static_cast<size_t>(r)], parallel, training.split);
      next_layer += chunk.num_layers;
      const bool first = r == 0 && j == 0;
      const bool last = r == p - 1 && j == v - 1;
      chunk.has_embedding = first;
      chunk.has_vision = first && model.vision.Present();
      chunk.has_lm_head = last;
      chunk.num_mtp_layers = last ? model.num_mtp_layers : 0;
      chunk.has_embedding_copy =
          last && p > 1 && (model.tied_embeddings || model.num_mtp_layers > 0);
    }
  }
  if (next_layer != model.NumLayers()) {
    throw InputError(fmt::format("pipeline split places {} of {} decoder layers", next_layer,
                                 model.NumLayers()));
  }
  return layout;
}

}  // namespace trainscope::config
