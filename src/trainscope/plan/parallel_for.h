// A minimal fork-join loop over std::thread for the planner: runs fn(i) for every i in [0, n)
// on up to `num_threads` threads (the caller's included) and returns when all are done. The
// first exception thrown by fn is rethrown in the caller after every thread has joined. No
// state outlives the call.
#ifndef TRAINSCOPE_PLAN_PARALLEL_FOR_H_
#define TRAINSCOPE_PLAN_PARALLEL_FOR_H_

#include <cstdint>
#include <functional>

namespace trainscope::plan {

// Precondition: num_threads >= 1; fn is safe to call concurrently for different i.
void ParallelFor(int64_t n, int num_threads, const std::function<void(int64_t)>& fn);

}  // namespace trainscope::plan

#endif  // TRAINSCOPE_PLAN_PARALLEL_FOR_H_
