// The planner's lower bound on a layout's step time from the cost model's prices, without
// scheduling: the simulator runs a stage's passes, and the ops of each pass, as one dependency
// chain (graph/step_schedule.cc) on in-order streams (sim/event_engine.cc), so a stage takes at
// least the compute and chained collectives of all its micro-batches, plus the forward and
// backward of the stages before and after it (the pipeline fill and drain). Pure; reads only
// its argument.
#ifndef TRAINSCOPE_PLAN_COMPUTE_BOUND_H_
#define TRAINSCOPE_PLAN_COMPUTE_BOUND_H_

#include "trainscope/study/study.h"

namespace trainscope::plan {

// max over stages s of  m·(C_s + M_s) + s·F_min + (p−1−s)·B_min, where C_s is the compute
// seconds of one micro-batch on stage s (forward, backward and recompute of its layers,
// embedding, LM head and MTP), M_s the seconds of the TP/EP collectives in its dependency chain
// (max(C_s, M_s) instead of the sum when shared-expert or EP overlap takes them off the chain),
// F_min and B_min the cheapest forward and backward chain of one model chunk, and m the
// micro-batches per step. Ignores the rest of communication, interference, routing skew and the
// optimizer, which only add time. Precondition: Validate() accepted the configuration.
[[nodiscard]] double ComputeLowerBoundSeconds(const study::Study& study);

}  // namespace trainscope::plan

#endif  // TRAINSCOPE_PLAN_COMPUTE_BOUND_H_
