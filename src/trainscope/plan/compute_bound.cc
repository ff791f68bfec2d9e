#include "trainscope/plan/compute_bound.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "trainscope/config/pipeline_layout.h"
#include "trainscope/graph/layer_ops.h"
#include "trainscope/plan/search_space.h"
#include "trainscope/sim/op_costs.h"

namespace trainscope::plan {
namespace {

// Prices the passes of one configuration's layers, embedding, LM head and MTP.
class Pricer {
 public:
  explicit Pricer(const study::Study& study)
      : study_(study),
        context_(graph::MakeLayerOpContext(study.model, study.training)),
        costs_(sim::BindHardwareCosts(study.model, study.training, study::CostOptions(study))) {}

  // Every kind of decoder layer of the model (with and without full recompute when the
  // configuration uses it), the embedding, the LM head and the MTP layers.
  PricedPasses All() const {
    PricedPasses out;
    const config::RecomputeConfig& r = study_.training.recompute;
    const bool full_recompute = r.granularity == config::RecomputeGranularity::kFull;
    for (int64_t layer = 0; layer < study_.model.NumLayers(); ++layer) {
      const config::LayerSpec& spec = study_.model.layers[static_cast<size_t>(layer)];
      for (const bool full : {false, true}) {
        if (full && !full_recompute) continue;
        const auto key = std::make_tuple(spec.mixer, spec.ffn, full);
        if (out.layers.count(key) > 0) continue;
        PassSeconds seconds = Price(graph::DecoderLayerForward(context_, layer),
                                    graph::DecoderLayerBackward(context_, layer));
        seconds.Add(Price({}, graph::DecoderLayerRecompute(context_, layer, full)));
        out.layers.emplace(key, seconds);
      }
    }
    out.embedding = Price(graph::EmbeddingForward(context_), graph::EmbeddingBackward(context_));
    out.lm_head =
        Price(graph::LmHeadAndLossForward(context_), graph::LmHeadAndLossBackward(context_));
    if (study_.model.num_mtp_layers > 0) {
      out.mtp = Price(graph::MtpForward(context_), graph::MtpBackward(context_));
    }
    return out;
  }

 private:
  PassSeconds Price(const std::vector<graph::Op>& forward,
                    const std::vector<graph::Op>& backward) const {
    return {Compute(forward), Compute(backward), Comm(forward), Comm(backward)};
  }

  // Cached FP8 weight casts run on a chunk's first micro-batch only (graph::internal::EmitPass),
  // so they are left out of the per-micro-batch bound.
  double Compute(const std::vector<graph::Op>& ops) const {
    double seconds = 0;
    for (const graph::Op& op : ops) {
      if (op.IsComm() || op.role.operand == graph::Fp8Operand::kCachedWeight) continue;
      seconds += costs_.compute_seconds(op);
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
};

// One model chunk: its layers plus the embedding, LM head and MTP it holds.
PassSeconds ChunkSeconds(const study::Study& study, const PricedPasses& priced,
                         const config::ModelChunk& chunk) {
  PassSeconds out;
  const config::RecomputeConfig& r = study.training.recompute;
  for (int64_t i = 0; i < chunk.num_layers; ++i) {
    const bool full =
        r.granularity == config::RecomputeGranularity::kFull && r.FullRecomputeLayer(i);
    const config::LayerSpec& spec = study.model.layers[static_cast<size_t>(chunk.first_layer + i)];
    out.Add(priced.layers.at(std::make_tuple(spec.mixer, spec.ffn, full)));
  }
  if (chunk.has_embedding) out.Add(priced.embedding);
  if (chunk.has_lm_head) out.Add(priced.lm_head);
  if (chunk.num_mtp_layers > 0) out.Add(priced.mtp);
  return out;
}

// What the layer prices depend on: the training configuration without the pipeline split and
// the data-parallel wrapper (the model, cluster and cost options are those of one search).
std::string PriceKey(const study::Study& study) {
  config::TrainingConfig t = study.training;
  t.parallel.pipeline = 1;
  t.parallel.virtual_stages = 1;
  t.parallel.data.reset();
  t.split = {};
  t.data_parallel = {};
  t.batch.global_batch_size.reset();
  return LayoutFlags(study.model, t) + fmt::format(" W{} s{} {}", t.parallel.world_size,
                                                   t.batch.seq_length,
                                                   static_cast<int>(t.parallel.order));
}

}  // namespace

std::shared_ptr<const PricedPasses> LayerPriceCache::Get(const study::Study& study) {
  const std::string key = PriceKey(study);
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto it = entries_.find(key);
    if (it != entries_.end()) return it->second;
  }
  // Priced outside the lock; a concurrent duplicate computes the same value.
  auto priced = std::make_shared<const PricedPasses>(Pricer(study).All());
  const std::lock_guard<std::mutex> lock(mutex_);
  return entries_.emplace(key, std::move(priced)).first->second;
}

double ComputeLowerBoundSeconds(const study::Study& study, LayerPriceCache* cache) {
  const config::TrainingConfig& t = study.training;
  // Without shared-expert or EP overlap the simulator runs every op of a pass (and the passes
  // of a stage) as one dependency chain, so its compute and chained collectives add up; with
  // them, only the busier of the two streams counts.
  const bool chained = !t.moe.shared_expert_overlap && !t.moe.overlap_expert_parallel_comm;
  const config::PipelineLayout layout = config::BuildPipelineLayout(study.model, t);
  const std::shared_ptr<const PricedPasses> priced =
      cache != nullptr ? cache->Get(study)
                       : std::make_shared<const PricedPasses>(Pricer(study).All());
  const int64_t p = layout.pipeline_size;
  std::vector<double> stage_seconds(static_cast<size_t>(p), 0.0);
  double forward_min = std::numeric_limits<double>::infinity();
  double backward_min = forward_min;
  for (const config::ModelChunk& chunk : layout.chunks) {
    const PassSeconds s = ChunkSeconds(study, *priced, chunk);
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
