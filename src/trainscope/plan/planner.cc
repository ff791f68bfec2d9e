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
// Layouts screened (validated and memory-estimated) between two progress reports.
constexpr int64_t kScreenBatch = 256;

constexpr char kOk[] = "ok";
constexpr char kOom[] = "oom";
constexpr char kBound[] = "bound";

// The outcome of the cheap stages for one layout.
struct Screened {
  std::string status = kOk;  // "ok", a rule id or "oom"
  int64_t peak_bytes = 0;
  double lower_bound_seconds = 0;
};

study::Study WithTraining(const study::Study& base, const config::TrainingConfig& training) {
  study::Study study = base;
  study.training = training;
  return study;
}

Screened Screen(const study::Study& study) {
  Screened out;
  const config::ValidationResult validation = config::Validate(study.model, study.training);
  if (!validation.ok()) {
    out.status = validation.errors.front().rule;
    return out;
  }
  out.peak_bytes = study::EstimateStudyMemory(study).max_peak_bytes;
  if (out.peak_bytes > study.cluster.gpu.memory_bytes) {
    out.status = kOom;
    return out;
  }
  out.lower_bound_seconds = StepTimeLowerBound(study);
  return out;
}

// Validates and estimates every layout, in parallel, reporting progress per batch.
std::vector<Screened> ScreenAll(const study::Study& base,
                                const std::vector<config::TrainingConfig>& layouts,
                                const PlanOptions& options, const ProgressCallback& progress) {
  const int64_t n = static_cast<int64_t>(layouts.size());
  std::vector<Screened> screened(layouts.size());
  for (int64_t begin = 0; begin < n; begin += kScreenBatch) {
    const int64_t count = std::min(kScreenBatch, n - begin);
    ParallelFor(count, options.num_threads, [&](int64_t i) {
      screened[begin + i] = Screen(WithTraining(base, layouts[begin + i]));
    });
    if (progress) progress(begin + count, n);
  }
  return screened;
}

// Recompute only adds work in the simulator, so for throughput a layout with recompute cannot
// beat its twin with less recompute when that twin fits: keeps, per group of layouts that differ
// only in recompute, the one with the least recompute that passed the cheap stages and marks
// the others "bound".
void KeepLeastRecompute(const study::Study& base,
                        const std::vector<config::TrainingConfig>& layouts,
                        std::vector<Screened>& screened) {
  std::map<std::string, size_t> least;  // recompute-free flags -> layout index
  for (size_t i = 0; i < layouts.size(); ++i) {
    if (screened[i].status != kOk) continue;
    config::TrainingConfig twin = layouts[i];
    twin.recompute = {};
    const auto [it, inserted] = least.emplace(LayoutFlags(base.model, twin), i);
    if (inserted) continue;
    const auto level = [&](size_t j) { return layouts[j].recompute.granularity; };
    size_t dropped = i;
    if (level(i) < level(it->second)) std::swap(it->second, dropped);
    screened[dropped].status = kBound;
  }
}

double Score(const Candidate& c, Objective objective) {
  return objective == Objective::kThroughput ? c.tokens_per_second_per_gpu
                                             : static_cast<double>(c.headroom_bytes);
}

// The order in which survivors are simulated: most promising first (smallest bound for
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

// The K-th best score among `scores` (all finite), or nothing when there are fewer than K.
std::optional<double> KthBest(std::vector<double> scores, int64_t k) {
  if (static_cast<int64_t>(scores.size()) < k) return std::nullopt;
  std::nth_element(scores.begin(), scores.begin() + (k - 1), scores.end(), std::greater<>());
  return scores[k - 1];
}

// Step 3 and 4 of the pipeline: simulates survivors in `order`, wave by wave, pruning those
// whose best possible score cannot reach the K-th best simulated (throughput) or known
// (memory headroom) score. Marks pruned layouts "bound" in `screened`.
std::vector<Candidate> SimulateSurvivors(const study::Study& base,
                                         const std::vector<config::TrainingConfig>& layouts,
                                         std::vector<Screened>& screened,
                                         const std::vector<int64_t>& order,
                                         const PlanOptions& options,
                                         const ProgressCallback& progress) {
  const int64_t gpu_bytes = base.cluster.gpu.memory_bytes;
  const auto best_possible = [&](int64_t i) {
    const Screened& s = screened[i];
    if (options.objective == Objective::kMemoryHeadroom) {
      return static_cast<double>(gpu_bytes - s.peak_bytes);
    }
    const config::TrainingConfig& t = layouts[i];
    const double tokens = static_cast<double>(t.GlobalBatchSize() * t.batch.seq_length);
    return tokens / (s.lower_bound_seconds * static_cast<double>(t.parallel.world_size));
  };
  std::optional<double> threshold;
  if (options.objective == Objective::kMemoryHeadroom) {
    std::vector<double> headrooms;
    for (const int64_t i : order) headrooms.push_back(best_possible(i));
    threshold = KthBest(headrooms, options.top_k);
  }
  std::vector<Candidate> simulated;
  std::vector<double> scores;
  const int64_t n = static_cast<int64_t>(order.size());
  int64_t next = 0;
  while (next < n) {
    std::vector<int64_t> wave;
    for (; next < n && static_cast<int64_t>(wave.size()) < kWaveSize; ++next) {
      if (threshold && best_possible(order[next]) < *threshold) break;
      wave.push_back(order[next]);
    }
    std::vector<Candidate> results(wave.size());
    ParallelFor(static_cast<int64_t>(wave.size()), options.num_threads, [&](int64_t w) {
      results[w] = EvaluateLayout(WithTraining(base, layouts[wave[w]]));
    });
    for (Candidate& c : results) {
      scores.push_back(Score(c, options.objective));
      simulated.push_back(std::move(c));
    }
    if (options.objective == Objective::kThroughput) threshold = KthBest(scores, options.top_k);
    if (static_cast<int64_t>(wave.size()) < kWaveSize && next < n) break;  // the rest is pruned
    if (progress) progress(next, n);
  }
  for (; next < n; ++next) screened[order[next]].status = kBound;
  if (progress) progress(n, n);
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

double StepTimeLowerBound(const study::Study& study) {
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
  TRAINSCOPE_CHECK(peak > 0, "planner: the GPU has no peak FLOP/s");
  const double flops = sim::ComputeStepMetrics(study.model, t, 1.0, peak).model_flops_per_step;
  const double compute_seconds = flops / static_cast<double>(t.parallel.world_size) / peak;
  const double p = static_cast<double>(t.parallel.pipeline);
  const double vm = static_cast<double>(t.parallel.virtual_stages * t.NumMicroBatches());
  // Interleaved 1F1B bubble share (Narayanan et al. 2021, eq. 3): (p−1)/(v·m) of the ideal time.
  const double flops_bound = compute_seconds * (1 + (p - 1) / vm);
  return std::max(flops_bound, ComputeLowerBoundSeconds(study));
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
  if (options.objective == Objective::kThroughput) KeepLeastRecompute(base, layouts, screened);
  const std::vector<int64_t> order = SimulationOrder(screened, flags, options.objective);
  PlanResult result;
  result.ranking = SimulateSurvivors(base, layouts, screened, order, options, progress);
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
