#include "trainscope/plan/compute_bound.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

#include "trainscope/config/pipeline_layout.h"
#include "trainscope/graph/layer_ops.h"
#include "trainscope/sim/op_costs.h"

namespace trainscope::plan {
namespace {

// Forward and backward (recompute included) compute seconds of one micro-batch, and the
// seconds its model-parallel communication occupies that stream.
struct PassSeconds {
  double forward = 0;
  double backward = 0;
  double model_parallel_comm = 0;
};

class StagePricer {
 public:
  explicit StagePricer(const study::Study& study)
      : study_(study),
        context_(graph::MakeLayerOpContext(study.model, study.training)),
        costs_(sim::BindHardwareCosts(study.training, study::CostOptions(study))) {}

  // One decoder layer; layers of the same kind and recompute cost the same, so each kind is
  // priced once.
  PassSeconds Layer(int64_t layer, int64_t index_in_chunk) {
    const config::RecomputeConfig& r = study_.training.recompute;
    const bool full = r.granularity == config::RecomputeGranularity::kFull &&
                      r.FullRecomputeLayer(index_in_chunk);
    const config::LayerSpec& spec = study_.model.layers[static_cast<size_t>(layer)];
    const auto key = std::make_tuple(spec.mixer, spec.ffn, full);
    const auto it = layers_.find(key);
    if (it != layers_.end()) return it->second;
    const std::vector<graph::Op> forward = graph::DecoderLayerForward(context_, layer);
    const std::vector<graph::Op> backward = graph::DecoderLayerBackward(context_, layer);
    const std::vector<graph::Op> recompute = graph::DecoderLayerRecompute(context_, layer, full);
    const PassSeconds seconds{Sum(forward), Sum(backward) + Sum(recompute),
                              CommSum(forward) + CommSum(backward) + CommSum(recompute)};
    layers_.emplace(key, seconds);
    return seconds;
  }

  // One model chunk: its layers plus the embedding, LM head and MTP it holds.
  PassSeconds Chunk(const config::ModelChunk& chunk) {
    PassSeconds out;
    for (int64_t i = 0; i < chunk.num_layers; ++i) {
      const PassSeconds layer = Layer(chunk.first_layer + i, i);
      out.forward += layer.forward;
      out.backward += layer.backward;
      out.model_parallel_comm += layer.model_parallel_comm;
    }
    if (chunk.has_embedding) {
      out.forward += Sum(graph::EmbeddingForward(context_));
      out.backward += Sum(graph::EmbeddingBackward(context_));
    }
    if (chunk.has_lm_head) {
      out.forward += Sum(graph::LmHeadAndLossForward(context_));
      out.backward += Sum(graph::LmHeadAndLossBackward(context_));
    }
    if (chunk.num_mtp_layers > 0) {
      out.forward += Sum(graph::MtpForward(context_));
      out.backward += Sum(graph::MtpBackward(context_));
    }
    return out;
  }

 private:
  double Sum(const std::vector<graph::Op>& ops) const {
    double seconds = 0;
    for (const graph::Op& op : ops) {
      if (!op.IsComm()) seconds += costs_.compute_seconds(op);
    }
    return seconds;
  }

  // Seconds on the simulator's model-parallel stream (sim/step_simulator.h), which runs one
  // collective at a time: TP and EP collectives of the layer, except those the simulator
  // pipelines with compute (TP with --tp-comm-overlap, EP with
  // --overlap-moe-expert-parallel-comm); CP is left out. Priced for rank 0: every stage's groups
  // have the same shape.
  double CommSum(const std::vector<graph::Op>& ops) const {
    const config::TrainingConfig& t = study_.training;
    double seconds = 0;
    for (const graph::Op& op : ops) {
      if (!op.IsComm() || op.phase == graph::Phase::kGradSync) continue;
      const config::GroupKind g = op.group;
      const bool tp = g == config::GroupKind::kTp;
      const bool ep = g == config::GroupKind::kEp || g == config::GroupKind::kTpEp;
      if ((tp && !t.overlap.tp_comm_overlap) || (ep && !t.moe.overlap_expert_parallel_comm)) {
        seconds += costs_.comm_cost(op, 0).seconds;
      }
    }
    return seconds;
  }

  const study::Study& study_;
  graph::LayerOpContext context_;
  sim::OpCostModel costs_;
  std::map<std::tuple<config::MixerKind, config::FfnKind, bool>, PassSeconds> layers_;
};

}  // namespace

double ComputeLowerBoundSeconds(const study::Study& study) {
  const config::TrainingConfig& t = study.training;
  const config::PipelineLayout layout = config::BuildPipelineLayout(study.model, t);
  StagePricer pricer(study);
  const int64_t p = layout.pipeline_size;
  std::vector<double> stage_seconds(static_cast<size_t>(p), 0.0);
  std::vector<double> stage_comm_seconds(static_cast<size_t>(p), 0.0);
  double forward_min = std::numeric_limits<double>::infinity();
  double backward_min = forward_min;
  for (const config::ModelChunk& chunk : layout.chunks) {
    const PassSeconds seconds = pricer.Chunk(chunk);
    stage_seconds[static_cast<size_t>(chunk.pipeline_rank)] += seconds.forward + seconds.backward;
    stage_comm_seconds[static_cast<size_t>(chunk.pipeline_rank)] += seconds.model_parallel_comm;
    forward_min = std::min(forward_min, seconds.forward);
    backward_min = std::min(backward_min, seconds.backward);
  }
  const double m = static_cast<double>(t.NumMicroBatches());
  double bound = 0;
  for (int64_t s = 0; s < p; ++s) {
    const double fill = static_cast<double>(s) * forward_min;
    const double drain = static_cast<double>(p - 1 - s) * backward_min;
    const double busiest_stream = std::max(stage_seconds[static_cast<size_t>(s)],
                                           stage_comm_seconds[static_cast<size_t>(s)]);
    bound = std::max(bound, m * busiest_stream + fill + drain);
  }
  return bound;
}

}  // namespace trainscope::plan
