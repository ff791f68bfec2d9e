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

// Seconds of one micro-batch: compute, and the model-parallel collectives that sit in the pass's
// dependency chain, forward and backward (recompute included).
struct PassSeconds {
  double forward_compute = 0;
  double backward_compute = 0;
  double forward_comm = 0;
  double backward_comm = 0;
  void Add(const PassSeconds& o) {
    forward_compute += o.forward_compute;
    backward_compute += o.backward_compute;
    forward_comm += o.forward_comm;
    backward_comm += o.backward_comm;
  }
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
    PassSeconds seconds = Price(graph::DecoderLayerForward(context_, layer),
                                graph::DecoderLayerBackward(context_, layer));
    seconds.Add(Price({}, graph::DecoderLayerRecompute(context_, layer, full)));
    layers_.emplace(key, seconds);
    return seconds;
  }

  // One model chunk: its layers plus the embedding, LM head and MTP it holds.
  PassSeconds Chunk(const config::ModelChunk& chunk) {
    PassSeconds out;
    for (int64_t i = 0; i < chunk.num_layers; ++i) out.Add(Layer(chunk.first_layer + i, i));
    if (chunk.has_embedding) {
      out.Add(Price(graph::EmbeddingForward(context_), graph::EmbeddingBackward(context_)));
    }
    if (chunk.has_lm_head) {
      out.Add(Price(graph::LmHeadAndLossForward(context_), graph::LmHeadAndLossBackward(context_)));
    }
    if (chunk.num_mtp_layers > 0) {
      out.Add(Price(graph::MtpForward(context_), graph::MtpBackward(context_)));
    }
    return out;
  }

 private:
  PassSeconds Price(const std::vector<graph::Op>& forward,
                    const std::vector<graph::Op>& backward) const {
    return {Compute(forward), Compute(backward), Comm(forward), Comm(backward)};
  }

  double Compute(const std::vector<graph::Op>& ops) const {
    double seconds = 0;
    for (const graph::Op& op : ops) {
      if (!op.IsComm()) seconds += costs_.compute_seconds(op);
    }
    return seconds;
  }

  // The collectives the simulator keeps in the pass's chain on the model-parallel stream: TP
  // (unless --tp-comm-overlap pipelines them with their GEMMs), EP / ETP exchanges and the TP
  // statistics reductions. CP (its ring is pipelined with attention) and data-parallel traffic
  // are left out. Priced for rank 0: every stage's groups have the same shape.
  double Comm(const std::vector<graph::Op>& ops) const {
    using config::GroupKind;
    const config::TrainingConfig& t = study_.training;
    double seconds = 0;
    for (const graph::Op& op : ops) {
      if (!op.IsComm() || op.phase == graph::Phase::kGradSync ||
          op.collective == graph::Collective::kRecv) {
        continue;
      }
      const GroupKind g = op.group;
      const bool counted = (g == GroupKind::kTp && !t.overlap.tp_comm_overlap) ||
                           g == GroupKind::kEp || g == GroupKind::kTpEp || g == GroupKind::kEtp ||
                           g == GroupKind::kTpCp;
      if (counted) seconds += costs_.comm_cost(op, 0).seconds;
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
  // Without shared-expert or EP overlap the simulator runs every op of a pass (and the passes
  // of a stage) as one dependency chain, so its compute and chained collectives add up; with
  // them, only the busier of the two streams counts.
  const bool chained = !t.moe.shared_expert_overlap && !t.moe.overlap_expert_parallel_comm;
  const config::PipelineLayout layout = config::BuildPipelineLayout(study.model, t);
  StagePricer pricer(study);
  const int64_t p = layout.pipeline_size;
  std::vector<double> stage_seconds(static_cast<size_t>(p), 0.0);
  double forward_min = std::numeric_limits<double>::infinity();
  double backward_min = forward_min;
  for (const config::ModelChunk& chunk : layout.chunks) {
    const PassSeconds s = pricer.Chunk(chunk);
    const double compute = s.forward_compute + s.backward_compute;
    const double comm = s.forward_comm + s.backward_comm;
    stage_seconds[static_cast<size_t>(chunk.pipeline_rank)] +=
        chained ? compute + comm : std::max(compute, comm);
    forward_min = std::min(forward_min, s.forward_compute + (chained ? s.forward_comm : 0));
    backward_min = std::min(backward_min, s.backward_compute + (chained ? s.backward_comm : 0));
  }
  const double m = static_cast<double>(t.NumMicroBatches());
  double bound = 0;
  for (int64_t s = 0; s < p; ++s) {
    const double fill = static_cast<double>(s) * forward_min;
    const double drain = static_cast<double>(p - 1 - s) * backward_min;
    bound = std::max(bound, m * stage_seconds[static_cast<size_t>(s)] + fill + drain);
  }
  return bound;
}

}  // namespace trainscope::plan
