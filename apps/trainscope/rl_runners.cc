// The RL runners: `weight-sync` (one trainer-to-rollout weight sync) and `rl` (one RL step per
// phase). Flags -> options -> the library (cost/weight_sync, study/rl_step) -> a report.
#include <fmt/format.h>

#include <optional>

#include "runner_support.h"
#include "runners.h"
#include "trainscope/cost/weight_sync.h"
#include "trainscope/error.h"
#include "trainscope/io/study_inputs.h"
#include "trainscope/report/rl_report.h"
#include "trainscope/report/weight_sync_report.h"
#include "trainscope/study/rl_step.h"
#include "trainscope/units.h"

namespace trainscope::app {
namespace {

// The weight-sync options from the flags; UsageError naming the flag when one is missing or the
// rollout layout cannot exist.
cost::WeightSyncOptions WeightSyncOptionsOf(const io::CliRequest& request,
                                            const config::ModelConfig& model) {
  const io::WeightSyncFlags& flags = request.weight_sync;
  // Colocated engines default to every training GPU (slime --colocate sets rollout_num_gpus to
  // the actor's GPUs).
  const std::optional<int64_t> rollout_gpus =
      flags.rollout_gpus ? flags.rollout_gpus
      : flags.colocate   ? std::optional<int64_t>(request.training.parallel.world_size)
                         : std::nullopt;
  if (!rollout_gpus) {
    throw UsageError(
        fmt::format("--rollout-gpus: required by `{}` (or --colocate)", request.command));
  }
  if (!flags.rollout_tp) {
    throw UsageError(fmt::format("--rollout-tp: required by `{}`", request.command));
  }
  const cost::WeightSyncOptions options{
      .rollout_gpus = *rollout_gpus,
      .rollout_tp = *flags.rollout_tp,
      .rollout_ep = flags.rollout_ep,
      .colocate = flags.colocate,
      .transport = flags.transport,
      .bucket_bytes = flags.bucket_mib ? *flags.bucket_mib * kBytesPerMiB
                                       : cost::WeightSyncOptions{}.bucket_bytes,
      .dtype = flags.dtype};
  if (options.rollout_gpus % options.rollout_tp != 0) {
    throw UsageError(fmt::format("--rollout-tp: must divide --rollout-gpus {} (got {})",
                                 options.rollout_gpus, options.rollout_tp));
  }
  if (options.rollout_tp % options.rollout_ep != 0) {
    throw UsageError(fmt::format(
        "--rollout-ep: must divide --rollout-tp {}, the engine's expert parallelism runs inside "
        "its TP group (got {})",
        options.rollout_tp, options.rollout_ep));
  }
  if (options.rollout_ep > 1 && !model.HasMoe()) {
    throw UsageError(
        fmt::format("--rollout-ep: {} has no experts (got {})", model.name, options.rollout_ep));
  }
  if (options.transport == cost::SyncTransport::kIpc && !options.colocate) {
    throw UsageError("--transport ipc: needs --colocate (CUDA IPC shares memory on one GPU)");
  }
  if (options.colocate && options.rollout_gpus > request.training.parallel.world_size) {
    throw UsageError(
        fmt::format("--rollout-gpus: colocated engines share the {} training GPUs (got {})",
                    request.training.parallel.world_size, options.rollout_gpus));
  }
  return options;
}

}  // namespace

CommandOutput RunWeightSync(const io::CliRequest& request) {
  const Checked c = CheckValid(request);
  const cost::WeightSyncOptions options = WeightSyncOptionsOf(c.request, c.model);
  const study::Study study = io::LoadStudy(c.request, c.model);
  const cost::WeightSyncEstimate estimate =
      cost::EstimateWeightSync(c.model, c.request.training, study.cluster, options);
  const report::WeightSyncReportInput input{c.model, options, estimate};
  return Output(
      request.json ? report::RenderWeightSyncJson(input) : report::RenderWeightSyncText(input),
      c.notes);
}

namespace {

// The RL-step options from the flags; UsageError naming the flag when one is missing or out of
// range.
study::RlOptions RlOptionsOf(const io::CliRequest& request, const config::ModelConfig& model) {
  const io::RlFlags& flags = request.rl;
  if (!flags.rollout_batch_size) throw UsageError("--rollout-batch-size: required by `rl`");
  if (!flags.max_response_len) throw UsageError("--rollout-max-response-len: required by `rl`");
  const double max_response = static_cast<double>(*flags.max_response_len);
  const double mean_response = flags.mean_response_len.value_or((max_response + 1) / 2);
  if (mean_response > max_response) {
    throw UsageError(
        fmt::format("--rollout-mean-response-len: at most --rollout-max-response-len {} (got {})",
                    *flags.max_response_len, mean_response));
  }
  study::RlOptions options;
  options.sync = WeightSyncOptionsOf(request, model);
  options.rollout = cost::RolloutOptions{
      .num_prompts = *flags.rollout_batch_size,
      .samples_per_prompt = flags.samples_per_prompt,
      .prompt_tokens = flags.prompt_len,
      .max_response_tokens = *flags.max_response_len,
      .mean_response_tokens = mean_response,
      .engine_gpus = options.sync.rollout_gpus,
      .engine_tp = options.sync.rollout_tp,
      .memory_fraction = flags.mem_fraction_static,
      .weight_bytes_per_param = options.sync.dtype == cost::RolloutDtype::kFp8 ? 1 : 2};
  options.ref_log_probs = flags.use_kl_loss || flags.kl_coef != 0;
  options.old_log_probs = !flags.use_rollout_logprobs;
  options.async = flags.async;
  options.critic = flags.critic;
  options.teacher_log_probs = flags.teacher_log_probs;
  options.log_prob_max_tokens_per_gpu = flags.log_prob_max_token_len_per_gpu;
  options.training = study::RlTraining{.framework = request.training.framework.framework,
                                       .ppo_n_minibatches = flags.ppo_n_minibatches,
                                       .ppo_mini_batch_size = flags.ppo_mini_batch_size,
                                       .ppo_epochs = flags.ppo_epochs};
  return options;
}

}  // namespace

CommandOutput RunRl(const io::CliRequest& request) {
  const Checked c = CheckValid(request);
  const study::RlOptions options = RlOptionsOf(c.request, c.model);
  const study::Study study = io::LoadStudy(c.request, c.model);
  RequireBf16Peak(study);
  const study::RlStep step = study::RunRlStep(study, options);
  const report::RlReportInput input{study, options, step};
  CommandOutput out =
      Output(request.json ? report::RenderRlJson(input) : report::RenderRlText(input), c.notes);
  if (request.simulate.trace_path) {
    out.files.push_back({*request.simulate.trace_path, report::RenderRlTrace(input)});
  }
  return out;
}

}  // namespace trainscope::app
