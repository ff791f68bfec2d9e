// Placement of decoder layers, embedding, LM head, MTP and vision tower over pipeline ranks and
// virtual chunks, exactly as Megatron-Core's get_num_layers_to_build / get_transformer_layer_offset
// assign them (transformer_block.py:76-203, transformer_layer.py:65-219). A PipelineLayout is a
// plain value computed from a validated configuration.
#ifndef TRAINSCOPE_CONFIG_PIPELINE_LAYOUT_H_
#define TRAINSCOPE_CONFIG_PIPELINE_LAYOUT_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"

namespace trainscope::config {

// One model chunk: the part of the model one PP rank runs for one virtual stage.
struct ModelChunk {
  int64_t pipeline_rank = 0;
  int64_t virtual_chunk = 0;
  int64_t first_layer = 0;          // global index of its first decoder layer
  int64_t num_layers = 0;           // decoder layers it builds (may be 0)
  bool has_embedding = false;       // word embedding (chunk 0 of PP rank 0)
  bool has_lm_head = false;         // final norm, output layer, loss (last chunk of last rank)
  bool has_embedding_copy = false;  // last stage's duplicate word embedding (tied or MTP, p > 1)
  int64_t num_mtp_layers = 0;       // MTP layers (last chunk of last rank)
  bool has_vision = false;          // vision tower (chunk 0 of PP rank 0)
  friend bool operator==(const ModelChunk&, const ModelChunk&) = default;
};

struct PipelineLayout {
  int64_t pipeline_size = 1;
  int64_t virtual_stages = 1;
  std::vector<ModelChunk> chunks;  // chunk j of rank r at index r·v + j

  [[nodiscard]] const ModelChunk& Chunk(int64_t pipeline_rank, int64_t virtual_chunk) const;
  // Decoder layers held by one PP rank over all its chunks.
  [[nodiscard]] int64_t LayersOnRank(int64_t pipeline_rank) const;
  friend bool operator==(const PipelineLayout&, const PipelineLayout&) = default;
};

// Layer slots per PP rank before the division over virtual chunks, honouring the uneven
// first/last counts and the account-for-embedding/loss options. Returns one entry per PP rank;
// an entry is -1 when the split does not divide evenly (Validate() reports why).
[[nodiscard]] std::vector<int64_t> LayersPerPipelineRank(int64_t num_layers,
                                                         const ParallelSizes& parallel,
                                                         const PipelineSplit& split);

// Parses a --pipeline-model-parallel-layout string the way Megatron-Core's
// PipelineParallelLayerLayout.parse_str_to_list does: commas are cosmetic, "(...)*n" repeats a
// group (no nesting), "x*n" repeats one character, '|' separates stages, and each stage is a
// sequence of E, t, m and L. Throws UsageError naming the flag on any other character, a
// nested or unclosed group, a repeat count over 10^5 or an expansion over 10^6 characters.
[[nodiscard]] std::vector<LayoutStage> ParsePipelineLayout(std::string_view text);

// Builds the layout. Precondition: Validate() accepted the split rules (C15-C20, C36).
// Throws InputError if the layers cannot be split as requested.
[[nodiscard]] PipelineLayout BuildPipelineLayout(const ModelConfig& model,
                                                 const TrainingConfig& training);

}  // namespace trainscope::config

#endif  // TRAINSCOPE_CONFIG_PIPELINE_LAYOUT_H_
