// One RL step (GRPO/PPO) around the Megatron-Core training step: rollout, the forward-only
// log-prob passes (ref, teacher, old policy), PPO's critic value pass and critic training, k
// actor optimizer steps, weight sync, and in colocated runs the trainer's offload and onload;
// in which order the framework runs them and which overlap. Composes
// studies of the same training layout (study.h) with the rollout decode model (cost/rollout.h)
// and the weight-sync estimate (cost/weight_sync.h). Pure and re-entrant. Formulas, sources and
// omissions: docs/rl.md ("The RL step").
#ifndef TRAINSCOPE_STUDY_RL_STEP_H_
#define TRAINSCOPE_STUDY_RL_STEP_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/config/framework.h"
#include "trainscope/cost/rollout.h"
#include "trainscope/cost/weight_sync.h"
#include "trainscope/study/study.h"

namespace trainscope::study {

// How the trainer splits one rollout into optimizer steps, per framework: slime (and plain
// Megatron-Core / Megatron-Bridge) num_steps_per_rollout = prompts·samples / global batch
// (slime/utils/arguments.py); AReaL actor.ppo_n_minibatches steps (default 4,
// areal/api/cli_args.py PPOActorConfig); verl train_batch_size / ppo_mini_batch_size steps per
// epoch, ppo_mini_batch_size in prompts (default 256) times ppo_epochs (default 1;
// verl/trainer/config/actor/actor.yaml).
struct RlTraining {
  config::Framework framework = config::Framework::kSlime;
  std::optional<int64_t> ppo_n_minibatches;    // AReaL
  std::optional<int64_t> ppo_mini_batch_size;  // verl, prompts
  int64_t ppo_epochs = 1;                      // verl
};

struct RlOptions {
  cost::RolloutOptions rollout;  // prompts, samples, lengths and the engines
  cost::WeightSyncOptions sync;  // the rollout layout and transport of the weight sync
  bool ref_log_probs = false;    // slime: --use-kl-loss or --kl-coef != 0
  bool old_log_probs = true;     // slime computes them unless --use-rollout-logprobs
  // Rollout of step n+1 overlaps training on step n (slime train_async.py, AReaL with
  // max_head_offpolicyness > 0, verl fully async). Needs separate rollout GPUs.
  bool async = false;
  // PPO: a critic of the actor's architecture and layout runs a value pass over the rollout and
  // as many optimizer steps as the actor (slime --advantage-estimator ppo; AReaL critic; verl
  // critic, whose ppo_epochs and mini-batches follow the actor's).
  bool critic = false;
  // On-policy distillation: a forward-only pass of a teacher of the actor's architecture (slime
  // --use-opd --opd-type megatron; AReaL teacher). verl has none.
  bool teacher_log_probs = false;
  // Token budget per GPU of the forward-only log-prob passes (verl
  // log_prob_max_token_len_per_gpu); unset = the training micro-batches (study/log_prob_budget.h).
  std::optional<int64_t> log_prob_max_tokens_per_gpu;
  RlTraining training;
};

enum class RlPhaseKind {
  kRollout,
  kOffload,  // colocated: trainer paused (and the engine resumed) around the rollout
  kRefLogProbs,
  kOldLogProbs,
  kActorTrain,
  kWeightSync,
  kCriticValues,  // the critic's forward-only value pass
  kCriticTrain,   // the critic's optimizer steps
  kTeacherLogProbs,
};

// "rollout", "offload_onload", "ref_log_probs", "old_log_probs", "actor_train", "weight_sync",
// "critic_values", "critic_train", "teacher_log_probs".
[[nodiscard]] std::string ToString(RlPhaseKind kind);

struct RlPhase {
  RlPhaseKind kind = RlPhaseKind::kRollout;
  double seconds = 0;
  double start_seconds = 0;      // on the step's timeline
  int64_t num_gpus = 0;          // GPUs busy in the phase
  int64_t peak_bytes = 0;        // per GPU
  int64_t gpu_memory_bytes = 0;  // usable memory of the phase's GPUs
  int64_t passes = 1;            // optimizer steps / forward passes the phase repeats
  [[nodiscard]] bool Fits() const { return peak_bytes <= gpu_memory_bytes; }
  [[nodiscard]] double GpuSeconds() const { return seconds * static_cast<double>(num_gpus); }
};

struct RlStep {
  std::vector<RlPhase> phases;  // in the order the step runs them
  double step_seconds = 0;
  RlPhaseKind bottleneck = RlPhaseKind::kRollout;  // the longest phase
  int64_t num_optimizer_steps = 1;                 // k, per framework (RlTraining)
  int64_t num_global_batches = 1;                  // global batches covering the samples
  cost::RolloutEstimate rollout;
  cost::WeightSyncEstimate sync;
  StudyResult train;         // one actor optimizer step
  StudyResult forward_only;  // one log-prob pass over all the global batches
  // The critic's value pass: forward_only on the training micro-batches (the log-prob budget
  // does not apply to it); set with RlOptions::critic.
  std::optional<StudyResult> critic_values;
  int64_t log_prob_micro_batches_per_rank = 0;  // of forward_only
  double samples_per_second = 0;                // prompts·samples / step
};

// The RL step of `study`'s training layout. Preconditions: Validate() accepted the layout,
// the GPU has a BF16 peak. Throws InputError when prompts·samples is not a multiple of the
// global batch size (slime asserts it) or the log-prob budget cannot batch the passes
// (WithLogProbTokenBudget); UsageError for async with colocated engines, another framework's
// keys, or --teacher-log-probs under verl.
[[nodiscard]] RlStep RunRlStep(const Study& study, const RlOptions& options);

}  // namespace trainscope::study

#endif  // TRAINSCOPE_STUDY_RL_STEP_H_
