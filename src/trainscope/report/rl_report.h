// Renders an RL step (study/rl_step.h) as a per-phase table with a timeline, or as the
// `rl --json` contract. Pure: returns the bytes to print.
#ifndef TRAINSCOPE_REPORT_RL_REPORT_H_
#define TRAINSCOPE_REPORT_RL_REPORT_H_

#include <string>

#include "trainscope/study/rl_step.h"

namespace trainscope::report {

struct RlReportInput {
  const study::Study& study;
  const study::RlOptions& options;
  const study::RlStep& step;
};

[[nodiscard]] std::string RenderRlText(const RlReportInput& input);
// Keys: model, framework, colocate, async, num_optimizer_steps, critic,
// log_prob_micro_batches_per_rank, step_seconds,
// samples_per_second, bottleneck, phases[{name, seconds, start_seconds, passes, num_gpus,
// gpu_seconds, peak_bytes, gpu_memory_bytes, fits}], rollout{engines, requests_per_engine,
// max_running_requests, waves, prefill_seconds, decode_seconds, generated_tokens,
// kv_bytes_per_token, weight_bytes_per_gpu}, weight_sync{bytes, num_buckets, gather_seconds,
// transfer_seconds, overhead_seconds, total_seconds}, and with --comm-memory-guard
// comm_guard{mode, actor_train_step{...}, log_prob_pass{...}} (guarded_calls,
// free_bytes_at_peak, clear_fraction, clears, seconds).
[[nodiscard]] std::string RenderRlJson(const RlReportInput& input);

// The step's timeline as Chrome trace event JSON (Perfetto, chrome://tracing): one process for
// the training GPUs and one for the rollout engines (one when colocated), an X slice per phase
// on its timeline, and inside actor_train and critic_train one slice per optimizer step.
// Integer-nanosecond times printed as microseconds, so the same step gives the same bytes.
[[nodiscard]] std::string RenderRlTrace(const RlReportInput& input);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_RL_REPORT_H_
