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

constexpr char kLayoutFlag[] = "--pipeline-model-parallel-layout";
constexpr int64_t kMaxLayoutRepeat = 100'000;
constexpr size_t kMaxLayoutChars = 1'000'000;

// The decimal count after a '*' at text[pos], advancing pos past it.
int64_t RepeatCount(std::string_view text, size_t& pos) {
  const size_t start = pos;
  int64_t count = 0;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
    count = count * 10 + (text[pos] - '0');
    if (count > kMaxLayoutRepeat) {
      throw UsageError(fmt::format("{}: a repeat count exceeds {}", kLayoutFlag, kMaxLayoutRepeat));
    }
    ++pos;
  }
  if (pos == start) {
    throw UsageError(fmt::format("{} {}: '*' must be followed by a count", kLayoutFlag, text));
  }
  return count;
}

void AppendRepeated(std::string& out, std::string_view piece, int64_t count) {
  if (out.size() + piece.size() * static_cast<size_t>(count) > kMaxLayoutChars) {
    throw UsageError(fmt::format("{}: the layout expands to more than {} characters", kLayoutFlag,
                                 kMaxLayoutChars));
  }
  for (int64_t i = 0; i < count; ++i) out.append(piece);
}

// Pass 1 of parse_str_to_list: "(group)*n" -> group repeated n times.
std::string ExpandGroups(std::string_view text) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    if (text[pos] == ')') {
      throw UsageError(fmt::format("{} {}: ')' without '('", kLayoutFlag, text));
    }
    if (text[pos] != '(') {
      AppendRepeated(out, text.substr(pos, 1), 1);
      ++pos;
      continue;
    }
    const size_t close = text.find(')', pos + 1);
    const std::string_view group = close == std::string_view::npos
                                       ? std::string_view{}
                                       : text.substr(pos + 1, close - pos - 1);
    if (close == std::string_view::npos || group.find('(') != std::string_view::npos ||
        group.empty() || close + 1 >= text.size() || text[close + 1] != '*') {
      throw UsageError(
          fmt::format("{} {}: a group must read (stages)*n, without nesting", kLayoutFlag, text));
    }
    size_t count_pos = close + 2;
    const int64_t count = RepeatCount(text, count_pos);
    AppendRepeated(out, group, count);
    pos = count_pos;
  }
  return out;
}

// Pass 2: "x*n" -> x repeated n times.
std::string ExpandCharacters(std::string_view text) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    if (pos + 1 < text.size() && text[pos + 1] == '*') {
      size_t count_pos = pos + 2;
      const int64_t count = RepeatCount(text, count_pos);
      AppendRepeated(out, text.substr(pos, 1), count);
      pos = count_pos;
    } else if (text[pos] == '*') {
      throw UsageError(
          fmt::format("{} {}: '*' must follow a letter or a group", kLayoutFlag, text));
    } else {
      AppendRepeated(out, text.substr(pos, 1), 1);
      ++pos;
    }
  }
  return out;
}

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

std::vector<LayoutStage> ParsePipelineLayout(std::string_view text) {
  std::string compact;
  for (const char c : text) {
    if (c != ',') compact.push_back(c);
  }
  const std::string expanded = ExpandCharacters(ExpandGroups(compact));
  // Order rules of validate_layer_layout that the per-stage counts cannot show: the embedding
  // is the first layer, the loss the last, and no decoder layer follows an MTP layer.
  const size_t first_letter = expanded.find_first_not_of('|');
  const size_t last_letter = expanded.find_last_not_of('|');
  const size_t embedding = expanded.find('E');
  const size_t loss = expanded.rfind('L');
  const size_t first_mtp = expanded.find('m');
  if (embedding != std::string::npos && embedding != first_letter) {
    throw UsageError(
        fmt::format("{} {}: E (the embedding) must be the first layer", kLayoutFlag, text));
  }
  if (loss != std::string::npos && loss != last_letter) {
    throw UsageError(fmt::format("{} {}: L (the loss) must be the last layer", kLayoutFlag, text));
  }
  if (first_mtp != std::string::npos && expanded.find('t', first_mtp) != std::string::npos) {
    throw UsageError(fmt::format("{} {}: decoder layers (t) must be placed before MTP layers (m)",
                                 kLayoutFlag, text));
  }
  std::vector<LayoutStage> stages(1);
  for (const char c : expanded) {
    LayoutStage& stage = stages.back();
    switch (c) {
      case '|':
        stages.emplace_back();
        break;
      case 'E':
        stage.embedding = true;
        break;
      case 't':
        ++stage.decoder_layers;
        break;
      case 'm':
        ++stage.mtp_layers;
        break;
      case 'L':
        stage.loss = true;
        break;
      default:
        throw UsageError(
            fmt::format("{} {}: '{}' is not a layer letter (E embedding, t decoder, m MTP, L loss)",
                        kLayoutFlag, text, c));
    }
  }
  return stages;
}

namespace {

// The chunks a validated --pipeline-model-parallel-layout describes: stage k is virtual stage
// k / p of pipeline rank k % p (PipelineParallelLayerLayout.__init__), layer ids in that order.
PipelineLayout LayoutFromStages(const ModelConfig& model, const TrainingConfig& training) {
  const std::vector<LayoutStage>& stages = training.split.layout;
  const int64_t p = training.parallel.pipeline;
  const int64_t v = static_cast<int64_t>(stages.size()) / p;
  PipelineLayout layout{.pipeline_size = p, .virtual_stages = v, .chunks = {}};
  layout.chunks.resize(static_cast<size_t>(p * v));
  int64_t next_layer = 0;
  for (int64_t k = 0; k < p * v; ++k) {
    const LayoutStage& stage = stages[static_cast<size_t>(k)];
    const int64_t r = k % p;
    const int64_t j = k / p;
    ModelChunk& chunk = layout.chunks[static_cast<size_t>(r * v + j)];
    chunk.pipeline_rank = r;
    chunk.virtual_chunk = j;
    chunk.first_layer = next_layer;
    chunk.num_layers = stage.decoder_layers;
    next_layer += stage.decoder_layers;
    chunk.has_embedding = stage.embedding;
    chunk.has_vision = stage.embedding && model.vision.Present();
    chunk.has_lm_head = stage.loss;
    chunk.num_mtp_layers = stage.mtp_layers;
    // The output layer's (or MTP's) copy of the word embedding lives where the loss is.
    chunk.has_embedding_copy =
        stage.loss && p > 1 && (model.tied_embeddings || model.num_mtp_layers > 0);
  }
  return layout;
}

}  // namespace

PipelineLayout BuildPipelineLayout(const ModelConfig& model, const TrainingConfig& training) {
  if (!training.split.layout.empty()) return LayoutFromStages(model, training);
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
