#include "trainscope/report/rl_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "trainscope/report/format.h"
#include "trainscope/units.h"

namespace trainscope::report {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kTimelineColumns = 48;

std::string Gib(int64_t bytes) {
  return fmt::format("{:.1f}", static_cast<double>(bytes) / kBytesPerGiB);
}

// The phase's span on a `kTimelineColumns`-wide bar of the step.
std::string Bar(const study::RlPhase& phase, double step_seconds) {
  std::string bar(kTimelineColumns, '.');
  if (step_seconds <= 0) return bar;
  const double scale = kTimelineColumns / step_seconds;
  const int begin = std::clamp(static_cast<int>(std::floor(phase.start_seconds * scale)), 0,
                               kTimelineColumns - 1);
  const int end =
      std::clamp(static_cast<int>(std::ceil((phase.start_seconds + phase.seconds) * scale)),
                 begin + 1, kTimelineColumns);
  std::fill(bar.begin() + begin, bar.begin() + end, '#');
  return bar;
}

// The guard's per-pass figures (simulate's comm_guard keys), or null when it is off.
Json GuardJson(const std::optional<study::CommGuardReport>& guard) {
  if (!guard) return nullptr;
  return Json{{"guarded_calls", guard->guarded_calls},
              {"free_bytes_at_peak", guard->free_bytes_at_peak},
              {"clear_fraction", guard->clear_fraction},
              {"clears", guard->clears},
              {"seconds", guard->seconds}};
}

}  // namespace

std::string RenderRlText(const RlReportInput& input) {
  const study::RlStep& step = input.step;
  const study::RlOptions& o = input.options;
  const cost::RolloutEstimate& r = step.rollout;
  std::string out = fmt::format(
      "{}: one RL step under {} ({}{}), {} prompts x {} samples, {} optimizer step{}\n\n",
      input.study.model.name, config::ToString(input.study.training.framework.framework),
      o.sync.colocate ? "colocated" : "separate rollout GPUs", o.async ? ", async" : "",
      o.rollout.num_prompts, o.rollout.samples_per_prompt, step.num_optimizer_steps,
      step.num_optimizer_steps == 1 ? "" : "s");
  out += fmt::format("  {:<17} {:>11} {:>6} {:>11}  {:>8} {:>8} {:<5} {}\n", "phase", "seconds",
                     "GPUs", "GPU-s", "peak GiB", "of GiB", "fits", "timeline");
  for (const study::RlPhase& phase : step.phases) {
    out += fmt::format("  {:<17} {:>11.3f} {:>6} {:>11.1f}  {:>8} {:>8} {:<5} {}\n",
                       study::ToString(phase.kind), phase.seconds, phase.num_gpus,
                       phase.GpuSeconds(), Gib(phase.peak_bytes), Gib(phase.gpu_memory_bytes),
                       phase.Fits() ? "yes" : "NO", Bar(phase, step.step_seconds));
  }
  out += fmt::format("\n  step time           {:.3f} s ({:.2f} samples/s)\n", step.step_seconds,
                     step.samples_per_second);
  out += fmt::format("  bottleneck          {}\n", study::ToString(step.bottleneck));
  out += fmt::format(
      "  rollout             {} engine{} of TP{}, {} requests each, at most {} running "
      "({} wave{}), prefill {:.3f} s + decode {:.3f} s\n",
      r.num_engines, r.num_engines == 1 ? "" : "s", o.rollout.engine_tp, r.requests_per_engine,
      r.max_running_requests, r.num_waves, r.num_waves == 1 ? "" : "s", r.prefill_seconds,
      r.decode_seconds);
  out += fmt::format("  actor train         {:.3f} s per optimizer step; log-prob pass {:.3f} s\n",
                     step.train.metrics.step_seconds, step.forward_only.metrics.step_seconds);
  out += fmt::format("  log-prob passes     {} micro-batches per data-parallel rank{}\n",
                     step.log_prob_micro_batches_per_rank,
                     o.log_prob_max_tokens_per_gpu ? fmt::format(" (budget {} tokens per GPU)",
                                                                 *o.log_prob_max_tokens_per_gpu)
                                                   : std::string());
  out += fmt::format("  weight sync         {:.2f} GB in {} buckets over {}\n",
                     static_cast<double>(step.sync.bytes) / kBytesPerGB, step.sync.num_buckets,
                     cost::ToString(o.sync.transport));
  return out;
}

std::string RenderRlJson(const RlReportInput& input) {
  const study::RlStep& step = input.step;
  const study::RlOptions& o = input.options;
  const cost::RolloutEstimate& r = step.rollout;
  Json phases = Json::array();
  for (const study::RlPhase& phase : step.phases) {
    phases.push_back(Json{{"name", study::ToString(phase.kind)},
                          {"seconds", phase.seconds},
                          {"start_seconds", phase.start_seconds},
                          {"passes", phase.passes},
                          {"num_gpus", phase.num_gpus},
                          {"gpu_seconds", phase.GpuSeconds()},
                          {"peak_bytes", phase.peak_bytes},
                          {"gpu_memory_bytes", phase.gpu_memory_bytes},
                          {"fits", phase.Fits()}});
  }
  Json out{{"model", input.study.model.name},
           {"framework", config::ToString(input.study.training.framework.framework)},
           {"colocate", o.sync.colocate},
           {"async", o.async},
           {"num_optimizer_steps", step.num_optimizer_steps},
           {"critic", o.critic},
           {"log_prob_micro_batches_per_rank", step.log_prob_micro_batches_per_rank},
           {"step_seconds", step.step_seconds},
           {"samples_per_second", step.samples_per_second},
           {"bottleneck", study::ToString(step.bottleneck)},
           {"phases", phases},
           {"rollout", Json{{"engines", r.num_engines},
                            {"requests_per_engine", r.requests_per_engine},
                            {"max_running_requests", r.max_running_requests},
                            {"waves", r.num_waves},
                            {"prefill_seconds", r.prefill_seconds},
                            {"decode_seconds", r.decode_seconds},
                            {"generated_tokens", r.generated_tokens},
                            {"kv_bytes_per_token", r.kv_bytes_per_token},
                            {"weight_bytes_per_gpu", r.weight_bytes_per_gpu}}},
           {"weight_sync", Json{{"bytes", step.sync.bytes},
                                {"num_buckets", step.sync.num_buckets},
                                {"gather_seconds", step.sync.gather_seconds},
                                {"transfer_seconds", step.sync.transfer_seconds},
                                {"overhead_seconds", step.sync.overhead_seconds},
                                {"total_seconds", step.sync.total_seconds}}}};
  if (step.train.comm_guard) {
    out["comm_guard"] = Json{{"mode", sim::ToString(step.train.comm_guard->mode)},
                             {"actor_train_step", GuardJson(step.train.comm_guard)},
                             {"log_prob_pass", GuardJson(step.forward_only.comm_guard)}};
  }
  return out.dump(2) + "\n";
}

namespace {

// Process ids of the trace: the training GPUs, and the rollout engines when they have their own.
constexpr int kTrainerPid = 1;
constexpr int kRolloutPid = 2;

}  // namespace

std::string RenderRlTrace(const RlReportInput& input) {
  const study::RlStep& step = input.step;
  const bool colocate = input.options.sync.colocate;
  std::string out = fmt::format(
      R"({{"displayTimeUnit":"ms","otherData":{{"tool":"trainscope rl","step_time_us":{}}},)",
      Micros(Nanoseconds(step.step_seconds)));
  out += "\"traceEvents\":[\n";
  out += fmt::format(
      R"j({{"ph":"M","name":"process_name","pid":{},"args":{{"name":"training GPUs ({}){}"}}}})j",
      kTrainerPid, input.study.training.parallel.world_size, colocate ? ", rollout colocated" : "");
  if (!colocate) {
    out += fmt::format(
        ",\n"
        R"j({{"ph":"M","name":"process_name","pid":{},"args":{{"name":"rollout GPUs ({})"}}}})j",
        kRolloutPid, input.options.rollout.engine_gpus);
  }
  const auto slice = [&](const std::string& name, int pid, int64_t start_ns, int64_t duration_ns) {
    out += fmt::format(
        ",\n"
        R"({{"ph":"X","name":"{}","cat":"rl","pid":{},"tid":1,"ts":{},"dur":{}}})",
        name, pid, Micros(start_ns), Micros(duration_ns));
  };
  for (const study::RlPhase& phase : step.phases) {
    const bool rollout_side = phase.kind == study::RlPhaseKind::kRollout && !colocate;
    const int64_t start = Nanoseconds(phase.start_seconds);
    const int64_t duration = Nanoseconds(phase.seconds);
    slice(study::ToString(phase.kind), rollout_side ? kRolloutPid : kTrainerPid, start, duration);
    if (phase.kind == study::RlPhaseKind::kWeightSync && !colocate) {
      slice(study::ToString(phase.kind), kRolloutPid, start, duration);  // the engines receive
    }
    const bool trains = phase.kind == study::RlPhaseKind::kActorTrain ||
                        phase.kind == study::RlPhaseKind::kCriticTrain;
    if (trains && phase.passes > 1) {
      const int64_t each = duration / phase.passes;
      for (int64_t i = 0; i < phase.passes; ++i) {
        slice(fmt::format("optimizer step {}", i + 1), kTrainerPid, start + i * each, each);
      }
    }
  }
  out += "\n]}\n";
  return out;
}

}  // namespace trainscope::report
