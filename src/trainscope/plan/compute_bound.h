// The planner's lower bound on a layout's step time from the cost model's prices, without
// scheduling: every pipeline stage runs its compute ops one after another on one stream and its
// TP/EP collectives one after another on another, and waits at least the forward and backward
// of the stages before and after it (the pipeline fill and drain). Pure; reads only its
// argument.
#ifndef TRAINSCOPE_PLAN_COMPUTE_BOUND_H_
#define TRAINSCOPE_PLAN_COMPUTE_BOUND_H_

#include "trainscope/study/study.h"

namespace trainscope::plan {

// max over stages s of  m·max(C_s, M_s) + s·F_min + (p−1−s)·B_min, where C_s is the compute
// seconds of one micro-batch on stage s (forward, backward and recompute of its layers,
// embedding, LM head and MTP), M_s the seconds its TP/EP collectives occupy the model-parallel
// stream, F_min and B_min the smallest forward and backward compute seconds of one model chunk,
// and m the micro-batches per step. Ignores the rest of communication, interference, routing
// skew and the optimizer, which only add time. Precondition: Validate() accepted the
// configuration.
[[nodiscard]] double ComputeLowerBoundSeconds(const study::Study& study);

}  // namespace trainscope::plan

#endif  // TRAINSCOPE_PLAN_COMPUTE_BOUND_H_
