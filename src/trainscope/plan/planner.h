// The planner: searches the layouts of plan/search_space for the best way to train one model on
// one cluster. Each layout is validated (rejections counted per rule id) and bounded below
// (plan/compute_bound and Megatron's FLOPs at peak with the minimum bubble); in order of the
// bound, layouts have their memory estimated (those that do not fit the GPU counted as "oom")
// and are simulated with study::RunStudy on a pool of std::threads until no remaining bound can
// enter the top K (the rest counted as "bound"). Pure and deterministic: the result is the same
// whatever the thread count (candidates are ranked by a total order: score, then the canonical
// flags); the caller measures wall-clock time.
#ifndef TRAINSCOPE_PLAN_PLANNER_H_
#define TRAINSCOPE_PLAN_PLANNER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "trainscope/plan/compute_bound.h"
#include "trainscope/plan/search_space.h"
#include "trainscope/sim/step_simulator.h"
#include "trainscope/study/study.h"

namespace trainscope::plan {

struct PlanOptions {
  SearchSpaceOptions space;
  Objective objective = Objective::kThroughput;
  int64_t top_k = 10;   // candidates kept in the ranking (>= 1)
  int num_threads = 1;  // worker threads (>= 1)
};

// One simulated layout.
struct Candidate {
  int64_t rank = 0;   // 1-based position in the ranking
  std::string flags;  // LayoutFlags
  config::TrainingConfig training;
  double tokens_per_second_per_gpu = 0;
  double step_seconds = 0;
  double mfu = 0;
  int64_t peak_bytes = 0;      // busiest pipeline stage, per GPU
  int64_t headroom_bytes = 0;  // GPU memory minus peak (negative when it does not fit)
  bool fits = false;
  double lower_bound_seconds = 0;  // the bound the pruning used
  sim::Breakdown breakdown;        // of the busiest stage
};

// What happened to one enumerated layout: "ok" (simulated), a rule id, "oom" or "bound".
struct LayoutOutcome {
  std::string flags;
  std::string status;
  int64_t peak_bytes = 0;  // 0 when the layout failed validation
};

struct PlanResult {
  std::vector<Candidate> ranking;  // every simulated layout, best first (rank = index + 1)
  std::vector<Candidate> pareto;   // not dominated in (throughput, headroom); fastest first
  std::map<std::string, int64_t> rejected;  // rule id / "oom" / "bound" -> count
  std::vector<LayoutOutcome> outcomes;      // every enumerated layout, in flags order
  int64_t num_enumerated = 0;
  int64_t num_evaluated = 0;  // simulated
  int64_t num_pruned = 0;     // rejected["bound"]
};

// Called from the calling thread after each batch of work: layouts done so far, and in all.
using ProgressCallback = std::function<void(int64_t done, int64_t total)>;

// Searches the space around `base` (its model, cluster, cost options and training: world size,
// batch, precision and pinned dimensions). Preconditions: the cluster's GPU has a BF16 peak and
// memory (> 0); options.top_k >= 1 and num_threads >= 1. Throws nothing for valid input.
[[nodiscard]] PlanResult Plan(const study::Study& base, const PlanOptions& options,
                              const ProgressCallback& progress = nullptr);

// Simulates one layout with the study's inputs (the user's current layout for --compare).
// Precondition: config::Validate accepted `study`'s configuration.
[[nodiscard]] Candidate EvaluateLayout(const study::Study& study);

// The lower bound on the step time used for pruning: the larger of Megatron's model FLOPs per
// GPU at the best kernel efficiency of the cost model (FP8 with FP8), stretched by the minimum
// interleaved-1F1B bubble (p−1)/(v·m), and ComputeLowerBoundSeconds (plan/compute_bound.h).
// `cache` as for ComputeLowerBoundSeconds.
[[nodiscard]] double StepTimeLowerBound(const study::Study& study,
                                        LayerPriceCache* cache = nullptr);

// The position `candidate` would take in `result.ranking` under `objective` (1 = best).
[[nodiscard]] int64_t RankAmong(const PlanResult& result, const Candidate& candidate,
                                Objective objective);

// True when `a` ranks before `b` under `objective`: the score, then the flags.
[[nodiscard]] bool RanksBefore(const Candidate& a, const Candidate& b, Objective objective);

}  // namespace trainscope::plan

#endif  // TRAINSCOPE_PLAN_PLANNER_H_
