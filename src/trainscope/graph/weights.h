// Weight tensors of every model part as Megatron-Core builds them: shape, how tensor parallelism
// splits each tensor (column, row, vocab, replicated) and whether it is an expert weight sharded
// over EP/ETP. The single source for parameter counts (global and per rank) and, later, for
// gradient and optimizer sizes. Pure functions of a ModelConfig; the returned vectors are owned
// by the caller.
#ifndef TRAINSCOPE_GRAPH_WEIGHTS_H_
#define TRAINSCOPE_GRAPH_WEIGHTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"

namespace trainscope::graph {

// Component a weight is reported under in the parameter breakdown.
enum class Component {
  kEmbedding,
  kLmHead,
  kAttention,
  kGdn,
  kDenseMlp,
  kRoutedExperts,
  kSharedExperts,
  kRouter,
  kNorms,
  kMtp,
  kVision,
};
inline constexpr int kNumComponents = 11;

// How a tensor is divided over its parallel group.
enum class Split {
  kReplicated,  // every TP rank holds all of it (norms, router, gates, vision embeddings)
  kColumn,      // output dimension (rows) divided by TP (or ETP for experts)
  kRow,         // input dimension (cols) divided by TP (or ETP for experts)
  kVocab,       // vocab rows divided by TP after padding the vocab to a multiple of 128·t
};

struct WeightTensor {
  std::string name;  // Megatron-Core parameter name within its module
  Component component = Component::kNorms;
  int64_t rows = 0;    // output dimension ([out, in] like PyTorch)
  int64_t cols = 1;    // input dimension (1 for vectors)
  int64_t copies = 1;  // identical tensors (E routed experts)
  Split split = Split::kReplicated;
  bool expert = false;  // routed-expert weight: copies divided by EP, split by ETP

  // Unsharded element count of all copies. Throws InputError on 64-bit overflow.
  [[nodiscard]] int64_t Numel() const;
};

// The weights of one decoder layer of the given kind, including its two norms.
[[nodiscard]] std::vector<WeightTensor> DecoderLayerWeights(const config::ModelConfig& model,
                                                            config::LayerSpec layer);
// The same layer's weights as `training` holds them: under slime's duplicated Gated DeltaNet
// (FrameworkProfile::DuplicatesGdn) the GDN weights are plain nn.Linear modules replicated on
// every TP rank (slime_plugins/models/hf_attention.py), not TP-split.
[[nodiscard]] std::vector<WeightTensor> TrainedLayerWeights(const config::ModelConfig& model,
                                                            const config::TrainingConfig& training,
                                                            config::LayerSpec layer);
// Word embedding [V, H] (unpadded vocab; per-rank code pads).
[[nodiscard]] std::vector<WeightTensor> EmbeddingWeights(const config::ModelConfig& model);
// Output layer [V, H]; empty when embeddings are tied.
[[nodiscard]] std::vector<WeightTensor> LmHeadWeights(const config::ModelConfig& model);
// The final norm [H].
[[nodiscard]] std::vector<WeightTensor> FinalNormWeights(const config::ModelConfig& model);
// One MTP layer: enorm, hnorm, eh_proj [H, 2H], final norm, and a full-attention decoder layer
// with the model's FFN; every tensor reported under Component::kMtp.
[[nodiscard]] std::vector<WeightTensor> MtpLayerWeights(const config::ModelConfig& model);
// The vision tower (patch embed, position embed, blocks, merger); empty without one.
[[nodiscard]] std::vector<WeightTensor> VisionWeights(const config::ModelConfig& model);

// Whether `tensor` is a Transformer Engine linear's GEMM weight, the weights FP8 and FP4 recipes
// quantize: qkv and proj, the GDN in/out projections, dense, shared and routed fc1/fc2, MTP
// eh_proj; not the embedding, output layer, norms, router, conv1d or the vision tower.
[[nodiscard]] bool IsTeLinear(const WeightTensor& tensor);

[[nodiscard]] std::string ToString(Component component);

}  // namespace trainscope::graph

#endif  // TRAINSCOPE_GRAPH_WEIGHTS_H_
