// The planner's lower bound on a layout's step time from the cost model's prices, without
// scheduling: the simulator runs a stage's passes, and the ops of each pass, as one dependency
// chain (graph/step_schedule.cc) on in-order streams (sim/event_engine.cc), so a stage takes at
// least the compute and chained collectives of all its micro-batches, plus the forward and
// backward of the stages before and after it (the pipeline fill and drain). Pure; reads only
// its argument.
#ifndef TRAINSCOPE_PLAN_COMPUTE_BOUND_H_
#define TRAINSCOPE_PLAN_COMPUTE_BOUND_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "trainscope/study/study.h"

namespace trainscope::plan {

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

// The passes of one configuration, priced: each kind of decoder layer (with full recompute or
// not), the embedding, the LM head with its loss, and the MTP layers.
struct PricedPasses {
  std::map<std::tuple<config::MixerKind, config::FfnKind, bool>, PassSeconds> layers;
  PassSeconds embedding;
  PassSeconds lm_head;
  PassSeconds mtp;
};

// Memoises PricedPasses across the layouts of one search: layouts that differ only in the
// pipeline split or the data-parallel wrapper price their layers identically. Thread-safe. Valid
// for one model, cluster and cost model (one planner call); the caller owns it.
class LayerPriceCache {
 public:
  [[nodiscard]] std::shared_ptr<const PricedPasses> Get(const study::Study& study);

 private:
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const PricedPasses>> entries_;
};

// max over stages s of  m·(C_s + M_s) + s·F_min + (p−1−s)·B_min, where C_s is the compute
// seconds of one micro-batch on stage s (forward, backward and recompute of its layers,
// embedding, LM head and MTP), M_s the seconds of the TP/EP collectives in its dependency chain
// (max(C_s, M_s) instead of the sum when shared-expert or EP overlap takes them off the chain),
// F_min and B_min the cheapest forward and backward chain of one model chunk, and m the
// micro-batches per step. Ignores the rest of communication, interference, routing skew and the
// optimizer, which only add time. Precondition: Validate() accepted the configuration.
// `cache`, when given, must only ever see studies of the same model, cluster and cost options.
[[nodiscard]] double ComputeLowerBoundSeconds(const study::Study& study,
                                              LayerPriceCache* cache = nullptr);

}  // namespace trainscope::plan

#endif  // TRAINSCOPE_PLAN_COMPUTE_BOUND_H_
