// The RL step (study/rl_step.h): phases composed from the studies they reuse, the number of
// optimizer steps per rollout (slime's rule), back-to-back versus async scheduling, and the
// input rules.
#include "trainscope/study/rl_step.h"

#include <gtest/gtest.h>

#include "tiny_study.h"
#include "trainscope/error.h"
#include "trainscope/io/cluster_file.h"

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
