#include "trainscope/plan/planner.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "trainscope/config/validate.h"
#include "trainscope/error.h"
#include "trainscope/plan/compute_bound.h"
#include "trainscope/plan/parallel_for.h"
#include "trainscope/sim/step_metrics.h"

namespace trainscope::plan {
namespace {

// Layouts simulated between two updates of the pruning threshold. A constant (not the thread
// count) so that which layouts are pruned does not depend on the number of threads.
constexpr int64_t kWaveSize = 8;
// Layouts screened (validated and bounded, or memory-estimated) between two progress reports.
constexpr int64_t kScreenBatch = 256;

constexpr char kOk[] = "ok";
constexpr char kOom[] = "oom";
constexpr char kBound[] = "bound";

// What the planner knows of one layout.
struct Screened {
  std::string status = kOk;  // "ok", a rule id, "oom" or "bound"
  int64_t peak_bytes = 0;    // 0 until estimated
  double lower_bound_seconds = 0;
};

study::Study WithTraining(const study::Study& base, const config::TrainingConfig& training) {
  study::Study study = base;
  study.training = training;
  return study;
}

// Validation for every layout, then the lower bound (throughput objective: memory waits until
// the layout's turn) or the memory, which is the score (memory-headroom objective).
Screened Screen(const study::Study& study, Objective objective, LayerPriceCache& cache) {
  Screened out;
  const config::ValidationResult validation = config::Validate(study.model, study.training);
  if (!validation.ok()) {
    out.status = validation.errors.front().rule;
    return out;
  }
  if (objective == Objective::kThroughput) {
    out.lower_bound_seconds = StepTimeLowerBound(study, &cache);
    return out;
  }
  out.peak_bytes = study::EstimateStudyMemory(study).max_peak_bytes;
  if (out.peak_bytes > study.cluster.gpu.memory_bytes) out.status = kOom;
  return out;
}

// Screens every layout, in parallel, reporting progress per batch.
std::vector<Screened> ScreenAll(const study::Study& base,
                                const std::vector<config::TrainingConfig>& layouts,
                                const PlanOptions& options, const ProgressCallback& progress) {
  const int64_t n = static_cast<int64_t>(layouts.size());
  std::vector<Screened> screened(layouts.size());
  LayerPriceCache cache;
  for (int64_t begin = 0; begin < n; begin += kScreenBatch) {
    const int64_t count = std::min(kScreenBatch, n - begin);
    ParallelFor(count, options.num_threads, [&](int64_t i) {
      screened[begin + i] =
          Screen(WithTraining(base, layouts[begin + i]), options.objective, cache);
    });
    if (progress) progress(begin + count, n);
  }
  return screened;
}

// The order in which survivors are considered: most promising first (smallest bound for
// throughput, largest headroom for memory headroom), ties by flags.
std::vector<int64_t> SimulationOrder(const std::vector<Screened>& screened,
                                     const std::vector<std::string>& flags, Objective objective) {
  std::vector<int64_t> order;
  for (size_t i = 0; i < screened.size(); ++i) {
    if (screened[i].status == kOk) order.push_back(static_cast<int64_t>(i));
  }
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const Screened& x = screened[a];
    const Screened& y = screened[b];
    if (objective == Objective::kThroughput) {
      if (x.lower_bound_seconds != y.lower_bound_seconds) {
        return x.lower_bound_seconds < y.lower_bound_seconds;
      }
    } else if (x.peak_bytes != y.peak_bytes) {
      return x.peak_bytes < y.peak_bytes;
    }
    return flags[a] < flags[b];
  });
  return order;
}

// The K-th best score among `scores`, or nothing when there are fewer than K.
std::optional<double> KthBest(std::vector<double> scores, int64_t k) {
  if (static_cast<int64_t>(scores.size()) < k) return std::nullopt;
  std::nth_element(scores.begin(), scores.begin() + (k - 1), scores.end(), std::greater<>());
  return scores[k - 1];
}

// Recompute only adds work in the simulator, so for throughput a layout with recompute cannot
// beat its twin with less recompute when that twin fits. Remembers, per group of layouts that
// differ only in recompute, the least recompute that fitted.
class RecomputeTwins {
 public:
  explicit RecomputeTwins(const config::ModelConfig& model) : model_(model) {}

  // True when a twin with less recompute already fitted; otherwise records this one.
  bool Dominated(const config::TrainingConfig& t) {
    config::TrainingConfig twin = t;
    twin.recompute = {};
    const auto [it, inserted] = least_.emplace(LayoutFlags(model_, twin), t.recompute.granularity);
    if (inserted) return false;
    if (it->second < t.recompute.granularity) return true;
    it->second = t.recompute.granularity;
    return false;
  }

 private:
  const config::ModelConfig& model_;
  std::map<std::string, config::RecomputeGranularity> least_;
};

// Steps 2 to 5 for the throughput objective, wave by wave in `order`: stops at the first layout
// whose best possible throughput is below the K-th best simulated; estimates the memory of the
// wave (rejecting OOM layouts), skips recompute twins, and simulates the rest.
std::vector<Candidate> SearchThroughput(const study::Study& base,
                                        const std::vector<config::TrainingConfig>& layouts,
                                        std::vector<Screened>& screened,
                                        const std::vector<int64_t>& order,
                                        const PlanOptions& options,
                                        const ProgressCallback& progress) {
  const auto best_possible = [&](int64_t i) {
    const config::TrainingConfig& t = layouts[i];
    const double tokens = static_cast<double>(t.GlobalBatchSize() * t.batch.seq_length);
    return tokens / (screened[i].lower_bound_seconds * static_cast<double>(t.parallel.world_size));
  };
  RecomputeTwins twins(base.model);
  std::optional<double> threshold;
  std::vector<Candidate> simulated;
  std::vector<double> scores;
  const int64_t n = static_cast<int64_t>(order.size());
  int64_t next = 0;
  bool stopped = false;
  while (next < n && !stopped) {
    std::vector<int64_t> wave;
    for (; next < n && static_cast<int64_t>(wave.size()) < kWaveSize; ++next) {
      stopped = threshold && best_possible(order[next]) < *threshold;
      if (stopped) break;
      wave.push_back(order[next]);
    }
    ParallelFor(static_cast<int64_t>(wave.size()), options.num_threads, [&](int64_t w) {
      const study::Study study = WithTraining(base, layouts[wave[w]]);
      screened[wave[w]].peak_bytes = study::EstimateStudyMemory(study).max_peak_bytes;
    });
    std::vector<int64_t> to_simulate;
    for (const int64_t i : wave) {
      if (screened[i].peak_bytes > base.cluster.gpu.memory_bytes) {
        screened[i].status = kOom;
      } else if (twins.Dominated(layouts[i])) {
        screened[i].status = kBound;
      } else {
        to_simulate.push_back(i);
      }
    }
    std::vector<Candidate> results(to_simulate.size());
    ParallelFor(static_cast<int64_t>(to_simulate.size()), options.num_threads, [&](int64_t w) {
      results[w] = EvaluateLayout(WithTraining(base, layouts[to_simulate[w]]));
    });
    for (Candidate& c : results) {
      scores.push_back(c.tokens_per_second_per_gpu);
      simulated.push_back(std::move(c));
    }
    threshold = KthBest(scores, options.top_k);
    if (progress) progress(next, n);
  }
  for (; next < n; ++next) screened[order[next]].status = kBound;
  return simulated;
}

// Steps 4 and 5 for the memory-headroom objective: the headroom is known for every layout, so
// every layout whose headroom reaches the K-th largest is simulated and the rest are pruned.
std::vector<Candidate> SearchHeadroom(const study::Study& base,
                                      const std::vector<config::TrainingConfig>& layouts,
                                      std::vector<Screened>& screened,
                                      const std::vector<int64_t>& order,
                                      const PlanOptions& options) {
  std::vector<double> headrooms;
  for (const int64_t i : order) {
    headrooms.push_back(
        static_cast<double>(base.cluster.gpu.memory_bytes - screened[i].peak_bytes));
  }
  const std::optional<double> threshold = KthBest(headrooms, options.top_k);
  std::vector<int64_t> to_simulate;
  for (size_t k = 0; k < order.size(); ++k) {
    if (threshold && headrooms[k] < *threshold) {
      screened[order[k]].status = kBound;
    } else {
      to_simulate.push_back(order[k]);
    }
  }
  std::vector<Candidate> simulated(to_simulate.size());
  ParallelFor(static_cast<int64_t>(to_simulate.size()), options.num_threads, [&](int64_t w) {
    simulated[w] = EvaluateLayout(WithTraining(base, layouts[to_simulate[w]]));
  });
  return simulated;
}

std::vector<Candidate> ParetoFront(const std::vector<Candidate>& ranking) {
  std::vector<Candidate> front;
  for (const Candidate& c : ranking) {
    const bool dominated = std::any_of(ranking.begin(), ranking.end(), [&](const Candidate& d) {
      return d.tokens_per_second_per_gpu >= c.tokens_per_second_per_gpu &&
             d.headroom_bytes >= c.headroom_bytes &&
             (d.tokens_per_second_per_gpu > c.tokens_per_second_per_gpu ||
              d.headroom_bytes > c.headroom_bytes);
    });
    if (!dominated) front.push_back(c);
  }
  std::sort(front.begin(), front.end(), [](const Candidate& a, const Candidate& b) {
    return RanksBefore(a, b, Objective::kThroughput);
  });
  return front;
}

}  // namespace

bool RanksBefore(const Candidate& a, const Candidate& b, Objective objective) {
  if (objective == Objective::kMemoryHeadroom && a.headroom_bytes != b.headroom_bytes) {
    return a.headroom_bytes > b.headroom_bytes;
  }
  if (a.tokens_per_second_per_gpu != b.tokens_per_second_per_gpu) {
    return a.tokens_per_second_per_gpu > b.tokens_per_second_per_gpu;
  }
  return a.flags < b.flags;
}

double StepTimeLowerBound(const study::Study& study, LayerPriceCache* cache) {
  const config::TrainingConfig& t = study.training;
  const config::GpuSpec& gpu = study.cluster.gpu;
  // No compute kernel of the cost model runs faster than its efficiency times the peak, and the
  // most efficient is a GEMM (cost/compute_cost.h).
  const cost::ComputeEfficiency& e = study.compute;
  const double best_bf16 =
      std::max({e.bf16_gemm_efficiency, e.fused_kernel_efficiency, e.attention_forward_efficiency,
                e.attention_backward_efficiency, 1e-9});
  double peak = gpu.bf16_flops_per_second * std::min(best_bf16, 1.0);
  if (t.precision.fp8 != config::Fp8Format::kNone) {
    peak = std::max(peak, gpu.fp8_flops_per_second * std::min(e.fp8_gemm_efficiency, 1.0));
  }
  if (t.precision.fp4 != config::Fp4Format::kNone) {
    const double fp4 = e.fp8_gemm_efficiency * cost::Fp4OverFp8Efficiency(gpu, e);
    peak = std::max(peak, gpu.fp4_flops_per_second * std::min(fp4, 1.0));
  }
  TRAINSCOPE_CHECK(peak > 0, "planner: the GPU has no peak FLOP/s");
  const double flops = sim::ComputeStepMetrics(study.model, t, 1.0, peak).model_flops_per_step;
  const double compute_seconds = flops / static_cast<double>(t.parallel.world_size) / peak;
  const double p = static_cast<double>(t.parallel.pipeline);
  const double vm = static_cast<double>(t.parallel.virtual_stages * t.NumMicroBatches());
  // Interleaved 1F1B bubble share (Narayanan et al. 2021, eq. 3): (p−1)/(v·m) of the ideal time.
  const double flops_bound = compute_seconds * (1 + (p - 1) / vm);
  return std::max(flops_bound, ComputeLowerBoundSeconds(study, cache));
}

Candidate EvaluateLayout(const study::Study& study) {
  const study::StudyResult result = study::RunStudy(study);
  Candidate c;
  c.flags = LayoutFlags(study.model, study.training);
  c.training = study.training;
  c.tokens_per_second_per_gpu = result.metrics.tokens_per_second_per_gpu;
  c.step_seconds = result.metrics.step_seconds;
  c.mfu = result.metrics.mfu;
  c.peak_bytes = result.memory.max_peak_bytes;
  c.headroom_bytes = study.cluster.gpu.memory_bytes - c.peak_bytes;
  c.fits = c.headroom_bytes >= 0;
  c.lower_bound_seconds = StepTimeLowerBound(study);
  c.breakdown = result.simulation.breakdown;
  return c;
}

int64_t RankAmong(const PlanResult& result, const Candidate& candidate, Objective objective) {
  int64_t rank = 1;
  for (const Candidate& c : result.ranking) rank += RanksBefore(c, candidate, objective);
  return rank;
}

PlanResult Plan(const study::Study& base, const PlanOptions& options,
                const ProgressCallback& progress) {
  TRAINSCOPE_CHECK(options.top_k >= 1 && options.num_threads >= 1, "planner: bad options");
  const std::vector<config::TrainingConfig> layouts =
      EnumerateLayouts(base.model, base.training, options.space);
  std::vector<std::string> flags;
  for (const config::TrainingConfig& t : layouts) flags.push_back(LayoutFlags(base.model, t));
  std::vector<Screened> screened = ScreenAll(base, layouts, options, progress);
  const std::vector<int64_t> order = SimulationOrder(screened, flags, options.objective);
  PlanResult result;
  result.ranking = options.objective == Objective::kThroughput
                       ? SearchThroughput(base, layouts, screened, order, options, progress)
                       : SearchHeadroom(base, layouts, screened, order, options);
  std::sort(
      result.ranking.begin(), result.ranking.end(),
      [&](const Candidate& a, const Candidate& b) { return RanksBefore(a, b, options.objective); });
  for (size_t i = 0; i < result.ranking.size(); ++i) result.ranking[i].rank = i + 1;
  result.pareto = ParetoFront(result.ranking);
  for (size_t i = 0; i < layouts.size(); ++i) {
    const std::string& status = screened[i].status;
    result.outcomes.push_back({flags[i], status, screened[i].peak_bytes});
    if (status != kOk) ++result.rejected[status];
  }
  result.num_enumerated = static_cast<int64_t>(layouts.size());
  result.num_evaluated = static_cast<int64_t>(result.ranking.size());
  result.num_pruned = result.rejected.count(kBound) ? result.rejected.at(kBound) : 0;
  return result;
}

}  // namespace trainscope::plan
