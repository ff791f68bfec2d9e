// The RL step (study/rl_step.h): phases composed from the studies they reuse, the number of
// optimizer steps per rollout (slime's rule), back-to-back versus async scheduling, and the
// input rules.
#include "trainscope/study/rl_step.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "tiny_study.h"
#include "trainscope/error.h"
#include "trainscope/io/cluster_file.h"
#include "trainscope/study/log_prob_budget.h"

namespace trainscope::study {
namespace {

using testing_configs::TinyStudy;

RlOptions TinyRl(int64_t prompts, bool colocate) {
  RlOptions options;
  options.rollout = cost::RolloutOptions{.num_prompts = prompts,
                                         .samples_per_prompt = 4,
                                         .prompt_tokens = 64,
                                         .max_response_tokens = 256,
                                         .mean_response_tokens = 128.5,
                                         .engine_gpus = 8,
                                         .engine_tp = 2};
  options.sync = cost::WeightSyncOptions{.rollout_gpus = 8, .rollout_tp = 2, .colocate = colocate};
  options.ref_log_probs = true;
  return options;
}

double Seconds(const RlStep& step, RlPhaseKind kind) {
  for (const RlPhase& phase : step.phases) {
    if (phase.kind == kind) return phase.seconds;
  }
  return -1;
}

TEST(RlStepTest, PhasesRunBackToBackAndReuseTheStudies) {
  const Study study = TinyStudy();
  const int64_t gbs = study.training.GlobalBatchSize();
  // prompts x 4 samples = 3 global batches: three optimizer steps (slime num_steps_per_rollout).
  const RlOptions options = TinyRl(3 * gbs / 4, /*colocate=*/true);
  const RlStep step = RunRlStep(study, options);
  EXPECT_EQ(step.num_optimizer_steps, 3);
  EXPECT_DOUBLE_EQ(Seconds(step, RlPhaseKind::kActorTrain),
                   3 * RunStudy(study).simulation.step_seconds);
  // The log-prob pass is one forward-only step over all 3 global batches.
  Study forward = study;
  forward.training.forward_only = true;
  forward.training.batch.global_batch_size = 3 * gbs;
  EXPECT_DOUBLE_EQ(Seconds(step, RlPhaseKind::kOldLogProbs),
                   RunStudy(forward).simulation.step_seconds);
  double sum = 0;
  double clock = 0;
  for (const RlPhase& phase : step.phases) {
    EXPECT_DOUBLE_EQ(phase.start_seconds, clock);
    clock += phase.seconds;
    sum += phase.seconds;
  }
  EXPECT_DOUBLE_EQ(step.step_seconds, sum);
  EXPECT_GT(Seconds(step, RlPhaseKind::kOffload), 0);  // colocated: the trainer sleeps
  for (const RlPhase& phase : step.phases) {
    EXPECT_LE(phase.seconds, Seconds(step, step.bottleneck));  // the longest phase
  }
}

TEST(RlStepTest, AsyncOverlapsTheRolloutWithTraining) {
  const Study study = TinyStudy();
  const int64_t gbs = study.training.GlobalBatchSize();
  RlOptions options = TinyRl(gbs / 4, /*colocate=*/false);
  const RlStep sync = RunRlStep(study, options);
  options.async = true;
  const RlStep async = RunRlStep(study, options);
  const double rollout = Seconds(async, RlPhaseKind::kRollout);
  const double trainer = Seconds(async, RlPhaseKind::kRefLogProbs) +
                         Seconds(async, RlPhaseKind::kOldLogProbs) +
                         Seconds(async, RlPhaseKind::kActorTrain);
  EXPECT_DOUBLE_EQ(async.step_seconds,
                   std::max(rollout, trainer) + Seconds(async, RlPhaseKind::kWeightSync));
  EXPECT_DOUBLE_EQ(sync.step_seconds, rollout + trainer + Seconds(sync, RlPhaseKind::kWeightSync));
  EXPECT_EQ(Seconds(async, RlPhaseKind::kOffload), -1);  // separate GPUs: nothing to swap
}

TEST(RlStepTest, RejectsAPartialGlobalBatchAndAsyncColocation) {
  const Study study = TinyStudy();
  RlOptions options = TinyRl(study.training.GlobalBatchSize() / 4 + 1, /*colocate=*/true);
  EXPECT_THROW((void)RunRlStep(study, options), InputError);
  options = TinyRl(study.training.GlobalBatchSize() / 4, /*colocate=*/true);
  options.async = true;
  EXPECT_THROW((void)RunRlStep(study, options), UsageError);
}

}  // namespace

TEST(RlStepTest, ArealSplitsTheRolloutIntoPpoMinibatches) {
  // AReaL: actor.ppo_n_minibatches optimizer steps (default 4), each over samples / n; the
  // log-prob pass still covers every sample once.
  const Study study = TinyStudy();
  const int64_t gbs = study.training.GlobalBatchSize();
  RlOptions options = TinyRl(gbs, /*colocate=*/true);  // gbs prompts x 4 samples = 4 batches
  options.training.framework = config::Framework::kAreal;
  const RlStep step = RunRlStep(study, options);
  EXPECT_EQ(step.num_optimizer_steps, 4);
  EXPECT_EQ(step.num_global_batches, 4);
  EXPECT_DOUBLE_EQ(Seconds(step, RlPhaseKind::kActorTrain),
                   4 * RunStudy(study).simulation.step_seconds);
  // Two minibatches would need a global batch of 2·gbs: a one-line error naming the flag.
  options.training.ppo_n_minibatches = 2;
  EXPECT_THROW((void)RunRlStep(study, options), InputError);
}

TEST(RlStepTest, VerlRepeatsMiniBatchesOverPpoEpochs) {
  // verl: train_batch_size / ppo_mini_batch_size mini-batches (prompts, times rollout.n samples)
  // per epoch, ppo_epochs epochs; the log-prob passes run once.
  const Study study = TinyStudy();
  const int64_t gbs = study.training.GlobalBatchSize();
  RlOptions options = TinyRl(gbs / 2, /*colocate=*/true);  // 2 mini-batches of gbs / 4 prompts
  options.training = {
      .framework = config::Framework::kVerl, .ppo_mini_batch_size = gbs / 4, .ppo_epochs = 3};
  const RlStep step = RunRlStep(study, options);
  EXPECT_EQ(step.num_global_batches, 2);
  EXPECT_EQ(step.num_optimizer_steps, 6);
  EXPECT_DOUBLE_EQ(Seconds(step, RlPhaseKind::kActorTrain),
                   6 * RunStudy(study).simulation.step_seconds);
  Study forward = study;
  forward.training.forward_only = true;
  forward.training.batch.global_batch_size = 2 * gbs;
  EXPECT_DOUBLE_EQ(Seconds(step, RlPhaseKind::kOldLogProbs),
                   RunStudy(forward).simulation.step_seconds);
  // verl's keys under another framework are a usage error.
  options.training.framework = config::Framework::kSlime;
  EXPECT_THROW((void)RunRlStep(study, options), UsageError);
}

}  // namespace trainscope::study

namespace trainscope::study {
namespace {

std::vector<RlPhaseKind> Kinds(const RlStep& step) {
  std::vector<RlPhaseKind> kinds;
  for (const RlPhase& phase : step.phases) kinds.push_back(phase.kind);
  return kinds;
}

const RlPhase& PhaseOf(const RlStep& step, RlPhaseKind kind) {
  for (const RlPhase& phase : step.phases) {
    if (phase.kind == kind) return phase;
  }
  throw std::runtime_error("no phase " + ToString(kind));
}

// The forward-only study of every rollout sample: `batches` global batches of `study`.
Study ForwardOver(const Study& study, int64_t batches) {
  Study forward = study;
  forward.training.forward_only = true;
  forward.training.batch.global_batch_size = batches * study.training.GlobalBatchSize();
  return forward;
}

}  // namespace

TEST(RlStepTest, CriticAddsAValuePassAndTrainsAsOftenAsTheActor) {
  // Separate rollout GPUs under AReaL (no forced offload): the critic is the actor's model, so
  // its value pass is one forward-only pass over the 4 global batches (the ref pass without its
  // two weight copies) and its training 4 optimizer steps of the training study.
  const Study study = TinyStudy();
  const int64_t gbs = study.training.GlobalBatchSize();
  RlOptions options = TinyRl(gbs, /*colocate=*/false);
  options.training.framework = config::Framework::kAreal;
  const RlStep grpo = RunRlStep(study, options);
  options.critic = true;
  const RlStep ppo = RunRlStep(study, options);
  const double forward = RunStudy(ForwardOver(study, 4)).simulation.step_seconds;
  const double train = RunStudy(study).simulation.step_seconds;
  EXPECT_DOUBLE_EQ(Seconds(ppo, RlPhaseKind::kCriticValues), forward);
  EXPECT_DOUBLE_EQ(Seconds(ppo, RlPhaseKind::kCriticValues),
                   Seconds(ppo, RlPhaseKind::kOldLogProbs));
  EXPECT_DOUBLE_EQ(Seconds(ppo, RlPhaseKind::kCriticTrain), 4 * train);
  EXPECT_DOUBLE_EQ(Seconds(ppo, RlPhaseKind::kCriticTrain), Seconds(ppo, RlPhaseKind::kActorTrain));
  EXPECT_EQ(PhaseOf(ppo, RlPhaseKind::kCriticTrain).passes, 4);
  EXPECT_DOUBLE_EQ(ppo.step_seconds, grpo.step_seconds + forward + 4 * train);
  // AReaL keeps the critic onloaded through the actor's update: the actor's peak carries the
  // critic's params, grads and optimizer state.
  const cost::RankMemory& rank =
      ppo.train.memory.stages.at(static_cast<size_t>(ppo.train.memory.max_peak_pipeline_rank));
  EXPECT_EQ(PhaseOf(ppo, RlPhaseKind::kActorTrain).peak_bytes,
            rank.peak_bytes + rank.weights_bytes + rank.grads_bytes + rank.optimizer_bytes);
  EXPECT_EQ(Seconds(grpo, RlPhaseKind::kCriticValues), -1);  // off by default: GRPO
}

TEST(RlStepTest, EachFrameworkRunsTheCriticAndTeacherInItsOwnOrder) {
  const Study study = TinyStudy();
  const int64_t gbs = study.training.GlobalBatchSize();
  RlOptions options = TinyRl(gbs / 4, /*colocate=*/true);
  options.critic = true;
  options.teacher_log_probs = true;
  using K = RlPhaseKind;
  // slime train.py: the critic group trains before the actor's train_actor (ref, teacher, old).
  EXPECT_EQ(
      Kinds(RunRlStep(study, options)),
      (std::vector<K>{K::kRollout, K::kOffload, K::kCriticValues, K::kCriticTrain, K::kRefLogProbs,
                      K::kTeacherLogProbs, K::kOldLogProbs, K::kActorTrain, K::kWeightSync}));
  // AReaL rl_trainer.py: critic_values, ref_logp, teacher_logp, recompute_logp, ppo_update,
  // critic_train_step.
  options.training.framework = config::Framework::kAreal;
  options.training.ppo_n_minibatches = 1;
  EXPECT_EQ(Kinds(RunRlStep(study, options)),
            (std::vector<K>{K::kRollout, K::kOffload, K::kCriticValues, K::kRefLogProbs,
                            K::kTeacherLogProbs, K::kOldLogProbs, K::kActorTrain, K::kCriticTrain,
                            K::kWeightSync}));
  // verl fit: old_log_prob, ref, values, update_critic, update_actor; no teacher pass.
  options.training = {.framework = config::Framework::kVerl, .ppo_mini_batch_size = gbs / 4};
  EXPECT_THROW((void)RunRlStep(study, options), UsageError);
  options.teacher_log_probs = false;
  EXPECT_EQ(Kinds(RunRlStep(study, options)),
            (std::vector<K>{K::kRollout, K::kOffload, K::kOldLogProbs, K::kRefLogProbs,
                            K::kCriticValues, K::kCriticTrain, K::kActorTrain, K::kWeightSync}));
}

TEST(RlStepTest, SlimeCriticForcesTheOffloadOfBothModels) {
  // slime's --use-critic forces offload_train even on separate GPUs: the actor and the critic
  // each copy their params, grads and optimizer state to the host and back.
  const Study study = TinyStudy();
  RlOptions options = TinyRl(study.training.GlobalBatchSize() / 4, /*colocate=*/false);
  options.critic = true;
  const RlStep step = RunRlStep(study, options);
  const cost::RankMemory& rank =
      step.train.memory.stages.at(static_cast<size_t>(step.train.memory.max_peak_pipeline_rank));
  const double resident =
      static_cast<double>(rank.weights_bytes + rank.grads_bytes + rank.optimizer_bytes);
  EXPECT_DOUBLE_EQ(Seconds(step, RlPhaseKind::kOffload),
                   2 * 2 * resident / study.cluster.pcie_bytes_per_second);
}

TEST(RlStepTest, TeacherPassIsAForwardPassPlusItsWeightSwaps) {
  // slime (OPD, megatron): _switch_model("ref"), ("teacher"), then back to the actor: three
  // H2D copies of the rank's params, two charged to the ref pass and one to the teacher's.
  const Study study = TinyStudy();
  const int64_t gbs = study.training.GlobalBatchSize();
  RlOptions options = TinyRl(gbs / 4, /*colocate=*/true);
  options.teacher_log_probs = true;
  const RlStep step = RunRlStep(study, options);
  const double forward = RunStudy(ForwardOver(study, 1)).simulation.step_seconds;
  const cost::RankMemory& rank =
      step.train.memory.stages.at(static_cast<size_t>(step.train.memory.max_peak_pipeline_rank));
  const double copy = static_cast<double>(rank.weights_bytes) / study.cluster.pcie_bytes_per_second;
  EXPECT_DOUBLE_EQ(Seconds(step, RlPhaseKind::kRefLogProbs), forward + 2 * copy);
  EXPECT_DOUBLE_EQ(Seconds(step, RlPhaseKind::kTeacherLogProbs), forward + copy);
  options.ref_log_probs = false;  // the teacher swaps in and the actor back: two copies
  EXPECT_DOUBLE_EQ(Seconds(RunRlStep(study, options), RlPhaseKind::kTeacherLogProbs),
                   forward + 2 * copy);
}

TEST(RlStepTest, VerlLogProbBudgetSetsTheForwardMicroBatches) {
  // TinyStudy: DP 2, s = 256, CP 1, GBS 8. gbs / 2 = 4 prompts x 4 samples in 2 mini-batches
  // of gbs / 4 = 2 prompts: 16 samples, 8 per DP rank, 8 x 256 = 2048 tokens per rank.
  const Study study = TinyStudy();
  const int64_t gbs = study.training.GlobalBatchSize();
  ASSERT_EQ(gbs, 8);
  RlOptions options = TinyRl(gbs / 2, /*colocate=*/true);
  options.training = {.framework = config::Framework::kVerl, .ppo_mini_batch_size = gbs / 4};
  options.critic = true;
  const RlStep training_batches = RunRlStep(study, options);
  EXPECT_EQ(training_batches.log_prob_micro_batches_per_rank, 8);  // micro-batch 1
  // Budget 600: min(8, ceil(2048 / 600)) = 4 micro-batches of 2 samples (verl
  // rearrange_micro_batches).
  options.log_prob_max_tokens_per_gpu = 600;
  const RlStep budget = RunRlStep(study, options);
  EXPECT_EQ(budget.log_prob_micro_batches_per_rank, 4);
  Study forward = ForwardOver(study, 2);
  forward.training.batch.micro_batch_size = 2;
  EXPECT_DOUBLE_EQ(Seconds(budget, RlPhaseKind::kOldLogProbs),
                   RunStudy(forward).simulation.step_seconds);
  // The critic's value pass keeps the training micro-batches (verl critic
  // forward_max_token_len_per_gpu, not the log-prob budget).
  EXPECT_DOUBLE_EQ(Seconds(budget, RlPhaseKind::kCriticValues),
                   Seconds(training_batches, RlPhaseKind::kCriticValues));
  // 700: ceil(2048 / 700) = 3 micro-batches; equal ones of the largest divisor of 8 within
  // ceil(8 / 3) = 3 samples: 2, so 4 again. 1100: 2 micro-batches of 4. 4096: 1 of 8.
  options.log_prob_max_tokens_per_gpu = 700;
  EXPECT_EQ(RunRlStep(study, options).log_prob_micro_batches_per_rank, 4);
  options.log_prob_max_tokens_per_gpu = 1100;
  EXPECT_EQ(RunRlStep(study, options).log_prob_micro_batches_per_rank, 2);
  options.log_prob_max_tokens_per_gpu = 4096;
  EXPECT_EQ(RunRlStep(study, options).log_prob_micro_batches_per_rank, 1);
  // Below one sample: verl asserts max_token_len >= the sequence length.
  options.log_prob_max_tokens_per_gpu = 255;
  EXPECT_THROW((void)RunRlStep(study, options), InputError);
}

TEST(RlStepTest, VerlMicroBatchCountFollowsRearrangeMicroBatches) {
  EXPECT_EQ(VerlMicroBatchCount(8, 2048, 600, 1), 4);    // ceil(2048 / 600)
  EXPECT_EQ(VerlMicroBatchCount(3, 30000, 1000, 1), 3);  // at most one per sample
  EXPECT_EQ(VerlMicroBatchCount(16, 5000, 1000, 4), 8);  // 5 rounded up to a multiple of 4
}

}  // namespace trainscope::study
