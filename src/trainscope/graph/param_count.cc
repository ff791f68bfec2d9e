#include "trainscope/graph/param_count.h"

#include <algorithm>

#include "trainscope/units.h"

namespace trainscope::graph {
namespace {

using config::LayerSpec;
using config::ModelConfig;

constexpr const char* kWhat = "parameter count";

int64_t Sum(const std::vector<WeightTensor>& tensors) {
  int64_t total = 0;
  for (const WeightTensor& tensor : tensors) total = CheckedAdd(total, tensor.Numel(), kWhat);
  return total;
}

void AddTo(ComponentCounts& counts, const std::vector<WeightTensor>& tensors) {
  for (const WeightTensor& tensor : tensors) {
    int64_t& slot = counts[static_cast<size_t>(tensor.component)];
    slot = CheckedAdd(slot, tensor.Numel(), kWhat);
  }
}

// Parameters of one layer a token touches: its routed experts count k of E copies.
int64_t ActiveSum(const ModelConfig& model, const std::vector<WeightTensor>& tensors) {
  int64_t total = 0;
  for (const WeightTensor& tensor : tensors) {
    int64_t numel = tensor.Numel();
    if (tensor.expert) numel = numel / tensor.copies * model.moe.top_k;
    total = CheckedAdd(total, numel, kWhat);
  }
  return total;
}

std::vector<LayerKindCount> CountLayerKinds(const ModelConfig& model) {
  std::vector<LayerKindCount> kinds;
  for (const LayerSpec& layer : model.layers) {
    auto it = std::find_if(kinds.begin(), kinds.end(),
                           [&](const LayerKindCount& kind) { return kind.kind == layer; });
    if (it != kinds.end()) {
      ++it->num_layers;
      continue;
    }
    const std::vector<WeightTensor> weights = DecoderLayerWeights(model, layer);
    kinds.push_back({.kind = layer,
                     .num_layers = 1,
                     .params_per_layer = Sum(weights),
                     .active_params_per_layer = ActiveSum(model, weights)});
  }
  return kinds;
}

}  // namespace

ParamCounts CountParams(const ModelConfig& model) {
  ParamCounts counts;
  counts.layer_kinds = CountLayerKinds(model);
  int64_t decoder = 0;
  int64_t decoder_active = 0;
  for (const LayerKindCount& kind : counts.layer_kinds) {
    decoder = CheckedAdd(decoder, CheckedMul(kind.params_per_layer, kind.num_layers, kWhat), kWhat);
    decoder_active = CheckedAdd(
        decoder_active, CheckedMul(kind.active_params_per_layer, kind.num_layers, kWhat), kWhat);
    for (int64_t i = 0; i < kind.num_layers; ++i) {
      AddTo(counts.by_component, DecoderLayerWeights(model, kind.kind));
    }
  }
  const std::vector<WeightTensor> embedding = EmbeddingWeights(model);
  const std::vector<WeightTensor> lm_head = LmHeadWeights(model);
  const std::vector<WeightTensor> final_norm = FinalNormWeights(model);
  const std::vector<WeightTensor> mtp = MtpLayerWeights(model);
  const std::vector<WeightTensor> vision = VisionWeights(model);
  counts.embedding = Sum(embedding);
  counts.lm_head = Sum(lm_head);
  counts.non_embedding = CheckedAdd(decoder, Sum(final_norm), kWhat);
  counts.text_total =
      CheckedAdd(CheckedAdd(counts.non_embedding, counts.embedding, kWhat), counts.lm_head, kWhat);
  counts.mtp = CheckedMul(Sum(mtp), model.num_mtp_layers, kWhat);
  counts.vision = Sum(vision);
  counts.total = CheckedAdd(CheckedAdd(counts.text_total, counts.mtp, kWhat), counts.vision, kWhat);
  counts.active = counts.text_total - decoder + decoder_active;
  AddTo(counts.by_component, embedding);
  AddTo(counts.by_component, lm_head);
  AddTo(counts.by_component, final_norm);
  AddTo(counts.by_component, vision);
  counts.by_component[static_cast<size_t>(Component::kMtp)] = counts.mtp;
  return counts;
}

int64_t PaddedVocabSize(int64_t vocab_size, int64_t tensor_parallel, int64_t divisor) {
  return RoundUp(vocab_size, divisor * tensor_parallel);
}

int64_t ShardNumel(const WeightTensor& tensor, const config::ParallelSizes& sizes,
                   int64_t padded_vocab) {
  const int64_t split_size = tensor.expert ? sizes.ExpertTensor() : sizes.tensor;
  const int64_t copies = tensor.expert ? tensor.copies / sizes.expert : tensor.copies;
  int64_t rows = tensor.rows;
  int64_t cols = tensor.cols;
  switch (tensor.split) {
    case Split::kReplicated:
      break;
    case Split::kColumn:
      rows = CeilDiv(rows, split_size);
      break;
    case Split::kRow:
      cols = CeilDiv(cols, split_size);
      break;
    case Split::kVocab:
      rows = padded_vocab / sizes.tensor;
      break;
  }
  return CheckedMul(CheckedMul(rows, cols, kWhat), copies, kWhat);
}

namespace {

void AddShards(const std::vector<WeightTensor>& tensors, const config::ParallelSizes& sizes,
               int64_t padded_vocab, int64_t repeat, StageParams& stage) {
  for (const WeightTensor& tensor : tensors) {
    const int64_t numel = CheckedMul(ShardNumel(tensor, sizes, padded_vocab), repeat, kWhat);
    stage.total = CheckedAdd(stage.total, numel, kWhat);
    int64_t& slot = stage.by_component[static_cast<size_t>(tensor.component)];
    slot = CheckedAdd(slot, numel, kWhat);
    if (tensor.expert) {
      stage.expert += numel;
      continue;
    }
    stage.dense += numel;
    if (tensor.split == Split::kReplicated) stage.replicated += numel;
  }
}

}  // namespace

std::vector<StageParams> CountParamsPerStage(const ModelConfig& model,
                                             const config::TrainingConfig& training,
                                             const config::PipelineLayout& layout) {
  const config::ParallelSizes& sizes = training.parallel;
  const int64_t padded_vocab =
      PaddedVocabSize(model.vocab_size, sizes.tensor, training.make_vocab_size_divisible_by);
  std::vector<StageParams> stages;
  for (int64_t r = 0; r < layout.pipeline_size; ++r) {
    StageParams stage{.pipeline_rank = r, .num_ranks = sizes.world_size / layout.pipeline_size};
    for (int64_t j = 0; j < layout.virtual_stages; ++j) {
      const config::ModelChunk& chunk = layout.Chunk(r, j);
      stage.num_decoder_layers += chunk.num_layers;
      for (int64_t i = 0; i < chunk.num_layers; ++i) {
        const LayerSpec& layer = model.layers[static_cast<size_t>(chunk.first_layer + i)];
        AddShards(TrainedLayerWeights(model, training, layer), sizes, padded_vocab, 1, stage);
      }
      if (chunk.has_embedding) AddShards(EmbeddingWeights(model), sizes, padded_vocab, 1, stage);
      if (chunk.has_vision) AddShards(VisionWeights(model), sizes, padded_vocab, 1, stage);
      if (chunk.has_lm_head) {
        AddShards(FinalNormWeights(model), sizes, padded_vocab, 1, stage);
        AddShards(LmHeadWeights(model), sizes, padded_vocab, 1, stage);
      }
      if (chunk.has_embedding_copy) {
        // The last stage's duplicate word embedding (language_module.py:208-325).
        AddShards(EmbeddingWeights(model), sizes, padded_vocab, 1, stage);
      }
      if (chunk.num_mtp_layers > 0) {
        AddShards(MtpLayerWeights(model), sizes, padded_vocab, chunk.num_mtp_layers, stage);
      }
    }
    stages.push_back(stage);
  }
  return stages;
}

}  // namespace trainscope::graph
