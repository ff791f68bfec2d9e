#include "trainscope/study/rl_step.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>

#include "trainscope/error.h"
#include "trainscope/study/log_prob_budget.h"

namespace trainscope::study {
namespace {

constexpr std::array<const char*, 9> kPhaseNames = {
    "rollout",     "offload_onload", "ref_log_probs", "old_log_probs",    "actor_train",
    "weight_sync", "critic_values",  "critic_train",  "teacher_log_probs"};

// The busiest rank of a memory estimate (the stage with the highest peak).
const cost::RankMemory& Busiest(const cost::MemoryEstimate& memory) {
  return memory.stages.at(static_cast<size_t>(memory.max_peak_pipeline_rank));
}

// Bytes a colocated trainer moves to the host when it sleeps and back when it wakes up: the
// allocator's live footprint after clear_memory, i.e. params, grad buffers and the GPU share of
// the optimizer (slime actor.py sleep/wake_up through torch_memory_saver with CPU backup; AReaL
// MegatronEngine.offload/onload; verl offload_megatron_model_to_cpu / offload_megatron_optimizer).
double TrainerResidentBytes(const cost::RankMemory& rank) {
  return static_cast<double>(rank.weights_bytes + rank.grads_bytes + rank.optimizer_bytes);
}

// Global batches covering the rollout's samples and optimizer steps per RL step (RlTraining).
struct TrainSplit {
  int64_t global_batches = 1;
  int64_t optimizer_steps = 1;
};

// The global batch the split implies must be the training layout's: one line naming the flag
// and the value to pass otherwise.
void RequireGlobalBatch(int64_t samples_per_step, int64_t gbs, std::string_view why) {
  if (samples_per_step == gbs) return;
  throw InputError(fmt::format(
      "--global-batch-size {}: {} trains {} samples per optimizer step; pass --global-batch-size "
      "{}",
      gbs, why, samples_per_step, samples_per_step));
}

TrainSplit SplitOfRollout(const Study& study, const RlOptions& options) {
  const RlTraining& rl = options.training;
  const int64_t samples = options.rollout.num_prompts * options.rollout.samples_per_prompt;
  const int64_t gbs = study.training.GlobalBatchSize();
  if (rl.ppo_n_minibatches && rl.framework != config::Framework::kAreal) {
    throw UsageError("--ppo-n-minibatches: AReaL's setting; pass --framework areal");
  }
  if ((rl.ppo_mini_batch_size || rl.ppo_epochs != 1) && rl.framework != config::Framework::kVerl) {
    throw UsageError(
        "--ppo-mini-batch-size / --ppo-epochs: verl's settings; pass --framework verl");
  }
  if (rl.framework == config::Framework::kAreal) {
    const int64_t n = rl.ppo_n_minibatches.value_or(4);
    if (samples % n != 0) {
      throw InputError(
          fmt::format("--ppo-n-minibatches {}: prompts x samples per prompt = {} must split evenly",
                      n, samples));
    }
    RequireGlobalBatch(samples / n, gbs,
                       fmt::format("AReaL with --ppo-n-minibatches {} (default 4)", n));
    return {.global_batches = n, .optimizer_steps = n};
  }
  if (rl.framework == config::Framework::kVerl) {
    const int64_t mini = rl.ppo_mini_batch_size.value_or(256);
    if (options.rollout.num_prompts % mini != 0) {
      throw InputError(fmt::format(
          "--ppo-mini-batch-size {} (default 256): must divide --rollout-batch-size {} (verl "
          "train_batch_size)",
          mini, options.rollout.num_prompts));
    }
    RequireGlobalBatch(mini * options.rollout.samples_per_prompt, gbs,
                       fmt::format("verl with --ppo-mini-batch-size {} prompts", mini));
    const int64_t batches = options.rollout.num_prompts / mini;
    return {.global_batches = batches, .optimizer_steps = batches * rl.ppo_epochs};
  }
  if (samples % gbs != 0) {
    throw InputError(
        fmt::format("--rollout-batch-size: prompts x samples per prompt = {} must be a multiple of "
                    "--global-batch-size {} (slime: num_steps_per_rollout = rollout_batch_size x "
                    "n_samples_per_prompt / global_batch_size)",
                    samples, gbs));
  }
  return {.global_batches = samples / gbs, .optimizer_steps = samples / gbs};
}

RlPhase Phase(RlPhaseKind kind, double seconds, int64_t gpus, int64_t peak_bytes,
              int64_t memory_bytes, int64_t passes = 1) {
  RlPhase phase;
  phase.kind = kind;
  phase.seconds = seconds;
  phase.num_gpus = gpus;
  phase.peak_bytes = peak_bytes;
  phase.gpu_memory_bytes = memory_bytes;
  phase.passes = passes;
  return phase;
}

// Lays the phases on the step's timeline: back to back, except that an async step's rollout
// (of the next step) runs beside the trainer's phases, so the step is the longer of the two
// plus the weight sync, which waits for both.
double Schedule(std::vector<RlPhase>& phases, bool async) {
  double trainer_clock = 0;
  double rollout_seconds = 0;
  for (RlPhase& phase : phases) {
    if (async && phase.kind == RlPhaseKind::kRollout) {
      phase.start_seconds = 0;
      rollout_seconds = phase.seconds;
      continue;
    }
    if (async && phase.kind == RlPhaseKind::kWeightSync) {
      trainer_clock = std::max(trainer_clock, rollout_seconds);
    }
    phase.start_seconds = trainer_clock;
    trainer_clock += phase.seconds;
  }
  return std::max(trainer_clock, rollout_seconds);
}

// Bins of the sample-length histogram the rollout hands to dynamic batching.
constexpr int64_t kRolloutLengthBins = 64;

// The lengths of the samples the rollout produces: the prompt plus a response drawn from the
// rollout's response-length distribution, as a histogram of kRolloutLengthBins equal bins of
// the response axis (each at its midpoint, weighted by the survival function's drop over it).
cost::SequenceLengthHistogram RolloutSampleLengths(const cost::RolloutOptions& rollout) {
  cost::SequenceLengthHistogram histogram;
  const int64_t bins = std::min(kRolloutLengthBins, rollout.max_response_tokens);
  const double width = static_cast<double>(rollout.max_response_tokens) / static_cast<double>(bins);
  for (int64_t i = 0; i < bins; ++i) {
    const double begin = static_cast<double>(i) * width;
    const double share =
        cost::ResponseSurvival(rollout.mean_response_tokens, rollout.max_response_tokens, begin) -
        cost::ResponseSurvival(rollout.mean_response_tokens, rollout.max_response_tokens,
                               begin + width);
    if (share <= 0) continue;
    histogram.lengths.push_back(rollout.prompt_tokens +
                                std::max<int64_t>(1, std::llround(begin + width / 2)));
    histogram.counts.push_back(share);
  }
  return histogram;
}

// slime's rules (slime itself, and plain Megatron-Core / Megatron-Bridge runs, which `rl` models
// as slime's loop).
bool SlimeRules(config::Framework framework) {
  return framework != config::Framework::kAreal && framework != config::Framework::kVerl;
}

// The trainer's phases between the offload and the weight sync, in the framework's order:
// slime train.py runs the critic group's train (values, then its optimizer steps) before the
// actor's, whose train_actor runs ref → teacher → old log-probs → actor_train (actor.py);
// AReaL rl_trainer.py critic_values → ref_logp → teacher_logp → recompute_logp → train_step
// (actor ppo_update) → critic_train_step; verl ray_trainer.py fit old_log_prob → ref → values →
// update_critic → update_actor.
std::vector<RlPhaseKind> TrainerOrder(config::Framework framework) {
  using K = RlPhaseKind;
  if (framework == config::Framework::kAreal) {
    return {K::kCriticValues, K::kRefLogProbs, K::kTeacherLogProbs,
            K::kOldLogProbs,  K::kActorTrain,  K::kCriticTrain};
  }
  if (framework == config::Framework::kVerl) {
    return {K::kOldLogProbs, K::kRefLogProbs, K::kCriticValues, K::kCriticTrain, K::kActorTrain};
  }
  return {K::kCriticValues,    K::kCriticTrain, K::kRefLogProbs,
          K::kTeacherLogProbs, K::kOldLogProbs, K::kActorTrain};
}

// The studies an RL step reuses: one actor optimizer step, the log-prob pass (under the
// log-prob budget) and, with a critic, its value pass on the training micro-batches.
void RunStudies(const Study& study, const RlOptions& options, RlStep& step) {
  // Under dynamic batching the trainer packs the samples the rollout made: prompt + response
  // lengths, unless a --seq-length-distribution says otherwise.
  Study trained = study;
  if (study.training.batch.max_tokens_per_gpu && !study.sequence_lengths) {
    trained.sequence_lengths = RolloutSampleLengths(options.rollout);
  }
  step.train = RunStudy(trained);
  // One eval-mode pass over every rollout sample: a forward-only step over all the global
  // batches (once, whatever verl's ppo_epochs).
  Study forward = trained;
  forward.training.forward_only = true;
  forward.training.batch.global_batch_size =
      study.training.GlobalBatchSize() * step.num_global_batches;
  const Study log_probs =
      options.log_prob_max_tokens_per_gpu
          ? WithLogProbTokenBudget(forward, *options.log_prob_max_tokens_per_gpu)
          : forward;
  step.forward_only = RunStudy(log_probs);
  step.log_prob_micro_batches_per_rank = MicroBatchesPerRank(log_probs);
  if (options.critic) {
    step.critic_values =
        options.log_prob_max_tokens_per_gpu ? RunStudy(forward) : step.forward_only;
  }
}

// Copies between the rank's weights and their pinned host copies that the teacher pass pays:
// slime swaps the teacher in from its TensorBackuper tag and, unless the ref pass already does
// (it runs first), the actor back (actor.py _switch_model); AReaL onloads and offloads its
// teacher engine (rl_trainer.py _onload_model / _offload_model).
double TeacherWeightCopies(const RlOptions& options) {
  if (SlimeRules(options.training.framework) && options.ref_log_probs) return 1;
  return 2;
}

// Every trainer phase the options turn on (between the offload and the weight sync), unordered.
std::vector<RlPhase> TrainerPhases(const Study& study, const RlOptions& options,
                                   const RlStep& step) {
  const cost::RankMemory& train_rank = Busiest(step.train.memory);
  const cost::RankMemory& forward_rank = Busiest(step.forward_only.memory);
  const int64_t world = study.training.parallel.world_size;
  const int64_t gpu_memory = study.cluster.gpu.memory_bytes;
  const double weight_copy =
      static_cast<double>(train_rank.weights_bytes) / study.cluster.pcie_bytes_per_second;
  const double forward_seconds = step.forward_only.metrics.step_seconds;
  const double k = static_cast<double>(step.num_optimizer_steps);
  // AReaL keeps the critic onloaded from its value pass through its training and onloads the
  // actor before recompute_logp, so both models' state is on the GPU from then on.
  const bool areal_critic =
      options.critic && options.training.framework == config::Framework::kAreal;
  const int64_t other = areal_critic ? static_cast<int64_t>(TrainerResidentBytes(train_rank)) : 0;
  std::vector<RlPhase> phases;
  if (options.ref_log_probs) {
    // slime swaps the reference weights in from their pinned CPU backup and the actor's back
    // (TensorBackuper restore, an H2D copy of the rank's params each; actor.py _switch_model).
    phases.push_back(Phase(RlPhaseKind::kRefLogProbs, forward_seconds + 2 * weight_copy, world,
                           forward_rank.peak_bytes, gpu_memory));
  }
  if (options.teacher_log_probs) {
    phases.push_back(Phase(RlPhaseKind::kTeacherLogProbs,
                           forward_seconds + TeacherWeightCopies(options) * weight_copy, world,
                           forward_rank.peak_bytes, gpu_memory));
  }
  if (options.old_log_probs) {
    phases.push_back(Phase(RlPhaseKind::kOldLogProbs, forward_seconds, world,
                           forward_rank.peak_bytes + other, gpu_memory));
  }
  phases.push_back(Phase(RlPhaseKind::kActorTrain, step.train.metrics.step_seconds * k, world,
                         train_rank.peak_bytes + other, gpu_memory, step.num_optimizer_steps));
  if (options.critic) {
    // The critic is the actor's architecture and layout (docs/rl.md: its value head priced as
    // the LM head): its value pass and its optimizer steps cost the actor's.
    const StudyResult& values = *step.critic_values;
    phases.push_back(Phase(RlPhaseKind::kCriticValues, values.metrics.step_seconds, world,
                           Busiest(values.memory).peak_bytes, gpu_memory));
    phases.push_back(Phase(RlPhaseKind::kCriticTrain, step.train.metrics.step_seconds * k, world,
                           train_rank.peak_bytes + other, gpu_memory, step.num_optimizer_steps));
  }
  return phases;
}

// `phases` in the framework's order (TrainerOrder).
std::vector<RlPhase> Ordered(std::vector<RlPhase> phases, config::Framework framework) {
  std::vector<RlPhase> ordered;
  for (const RlPhaseKind kind : TrainerOrder(framework)) {
    for (const RlPhase& phase : phases) {
      if (phase.kind == kind) ordered.push_back(phase);
    }
  }
  return ordered;
}

// Rejects the options no framework runs: async with colocated engines, a teacher under verl.
void CheckRlOptions(const RlOptions& options) {
  if (options.async && options.sync.colocate) {
    throw UsageError(
        "--rl-async: rollout overlaps training only on separate GPUs (slime train_async.py "
        "asserts not colocate); drop --colocate");
  }
  if (options.teacher_log_probs && options.training.framework == config::Framework::kVerl) {
    throw UsageError(
        "--teacher-log-probs: verl's trainer has no teacher pass (slime --use-opd, AReaL "
        "teacher); pass --framework slime or areal");
  }
}

}  // namespace

std::string ToString(RlPhaseKind kind) { return kPhaseNames.at(static_cast<size_t>(kind)); }

RlStep RunRlStep(const Study& study, const RlOptions& options) {
  CheckRlOptions(options);
  RlStep step;
  const TrainSplit split = SplitOfRollout(study, options);
  step.num_optimizer_steps = split.optimizer_steps;
  step.num_global_batches = split.global_batches;
  RunStudies(study, options, step);
  step.rollout = cost::EstimateRollout(study.model, study.cluster, study.compute, options.rollout);
  step.sync = cost::EstimateWeightSync(study.model, study.training, study.cluster, options.sync);

  const cost::RankMemory& train_rank = Busiest(step.train.memory);
  const int64_t world = study.training.parallel.world_size;
  const int64_t gpu_memory = study.cluster.gpu.memory_bytes;
  const bool colocate = options.sync.colocate;
  std::vector<RlPhase>& phases = step.phases;
  phases.push_back(Phase(RlPhaseKind::kRollout, step.rollout.seconds, options.rollout.engine_gpus,
                         static_cast<int64_t>(step.rollout.peak_bytes_per_gpu), gpu_memory));
  // slime's --use-critic forces offload_train (utils/arguments.py), colocated or not.
  if (colocate || (options.critic && SlimeRules(options.training.framework))) {
    // Wake-up before the trainer's phases and sleep after them: one H2D and one D2H copy of
    // the trainer's resident bytes over each GPU's host link; a critic swaps its own likewise
    // (one model on the GPU at a time, so the peak is one model's).
    const double resident = TrainerResidentBytes(train_rank);
    const double models = options.critic ? 2 : 1;
    phases.push_back(Phase(RlPhaseKind::kOffload,
                           2 * models * resident / study.cluster.pcie_bytes_per_second, world,
                           static_cast<int64_t>(resident), gpu_memory));
  }
  for (RlPhase& phase : Ordered(TrainerPhases(study, options, step), options.training.framework)) {
    phases.push_back(phase);
  }
  // The sync holds the trainer's weights plus one bucket; colocated engines' weights share the GPU.
  const int64_t sync_peak =
      train_rank.weights_bytes + step.sync.bytes / std::max<int64_t>(step.sync.num_buckets, 1) +
      (colocate ? static_cast<int64_t>(step.rollout.weight_bytes_per_gpu) : 0);
  phases.push_back(Phase(RlPhaseKind::kWeightSync, step.sync.total_seconds,
                         colocate ? world : world + options.sync.rollout_gpus, sync_peak,
                         gpu_memory));

  step.step_seconds = Schedule(phases, options.async);
  const auto longest =
      std::max_element(phases.begin(), phases.end(),
                       [](const RlPhase& a, const RlPhase& b) { return a.seconds < b.seconds; });
  step.bottleneck = longest->kind;
  step.samples_per_second =
      static_cast<double>(options.rollout.num_prompts * options.rollout.samples_per_prompt) /
      step.step_seconds;
  return step;
}

}  // namespace trainscope::study
