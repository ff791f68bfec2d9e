// The search space: the layouts of small cases counted by hand, pins, and the canonical flags.
#include "trainscope/plan/search_space.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "trainscope/io/hf_config_loader.h"

namespace trainscope::plan {
namespace {

config::TrainingConfig Base(int64_t world, int64_t gbs) {
  config::TrainingConfig t;
  t.parallel.world_size = world;
  t.batch = {.micro_batch_size = 1, .global_batch_size = gbs, .seq_length = 4096};
  return t;
}

// A restricted space: TP <= 2, no recompute, distributed optimizer only, micro-batch 1, VPP
// pinned to 1.
SearchSpaceOptions Restricted() {
  SearchSpaceOptions o;
  o.max_tensor = 2;
  o.recompute = RecomputeAllowance::kNone;
  o.megatron_fsdp = false;
  o.micro_batch_sizes = {1};
  o.pins.virtual_stages = true;
  return o;
}

std::set<std::string> FlagsOf(const config::ModelConfig& model,
                              const std::vector<config::TrainingConfig>& layouts) {
  std::set<std::string> out;
  for (const config::TrainingConfig& t : layouts) out.insert(LayoutFlags(model, t));
  return out;
}

TEST(SearchSpaceTest, EnumeratesTheHandCountedDenseSpace) {
  // Qwen3-0.6B: 28 layers. W = 8: t in {1, 2}; p divides 8/t. Even splits: p = 1, 2, 4 (28 % p
  // == 0); p = 2 with embedding and loss accounted (30 slots) puts 14 layers on each stage, the
  // plain split again, so it is not repeated; p = 8 has no legal even split (28, 29, 30 slots),
  // so it is enumerated once, plain, for the validator to reject.
  const config::ModelConfig model = io::LoadPreset("Qwen3-0.6B");
  const std::string dp =
      " --micro-batch-size 1 --use-distributed-optimizer --overlap-grad-reduce "
      "--overlap-param-gather";
  const std::string t1 = "--tensor-model-parallel-size 1";
  const std::string t2 = "--tensor-model-parallel-size 2 --sequence-parallel --tp-comm-overlap";
  const std::set<std::string> expected = {
      t1 + " --pipeline-model-parallel-size 1" + dp, t1 + " --pipeline-model-parallel-size 2" + dp,
      t1 + " --pipeline-model-parallel-size 4" + dp, t1 + " --pipeline-model-parallel-size 8" + dp,
      t2 + " --pipeline-model-parallel-size 1" + dp, t2 + " --pipeline-model-parallel-size 2" + dp,
      t2 + " --pipeline-model-parallel-size 4" + dp,
  };
  const std::vector<config::TrainingConfig> layouts =
      EnumerateLayouts(model, Base(8, 64), Restricted());
  EXPECT_EQ(layouts.size(), expected.size());
  EXPECT_EQ(FlagsOf(model, layouts), expected);
}

TEST(SearchSpaceTest, VirtualStagesDivideTheLayersOfAStage) {
  // p = 4 over 28 layers: 7 per stage, so v in {1, 7}.
  const config::ModelConfig model = io::LoadPreset("Qwen3-0.6B");
  SearchSpaceOptions o = Restricted();
  o.pins = {.tensor = true, .pipeline = true};
  config::TrainingConfig base = Base(8, 64);
  base.parallel.pipeline = 4;
  std::set<int64_t> v;
  for (const config::TrainingConfig& t : EnumerateLayouts(model, base, o)) {
    v.insert(t.parallel.virtual_stages);
  }
  EXPECT_EQ(v, (std::set<int64_t>{1, 7}));
}

TEST(SearchSpaceTest, EnumeratesExpertLayoutsThatFillTheWorld) {
  // Qwen3-30B-A3B: 128 experts. W = 8, t = 2 and p = 1 pinned: u in {1, 2}; e divides 128 and
  // u·e divides 8: u = 1 -> e in {1, 2, 4, 8}; u = 2 -> e in {1, 2, 4}. Seven layouts.
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  SearchSpaceOptions o = Restricted();
  o.pins.tensor = true;
  o.pins.pipeline = true;
  o.dispatchers = {config::TokenDispatcher::kAllToAll};
  config::TrainingConfig base = Base(8, 64);
  base.parallel.tensor = 2;
  std::set<std::pair<int64_t, int64_t>> expert_grid;
  for (const config::TrainingConfig& t : EnumerateLayouts(model, base, o)) {
    expert_grid.insert({t.parallel.ExpertTensor(), t.parallel.expert});
    EXPECT_TRUE(t.moe.grouped_gemm);
    EXPECT_TRUE(t.sequence_parallel);
  }
  const std::set<std::pair<int64_t, int64_t>> expected = {{1, 1}, {1, 2}, {1, 4}, {1, 8},
                                                          {2, 1}, {2, 2}, {2, 4}};
  EXPECT_EQ(expert_grid, expected);
}

TEST(SearchSpaceTest, PinnedDimensionsKeepTheBaseValue) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-0.6B");
  SearchSpaceOptions o;
  o.pins = {.tensor = true, .micro_batch = true, .recompute = true};
  config::TrainingConfig base = Base(8, 64);
  base.parallel.tensor = 4;
  base.batch.micro_batch_size = 2;
  const std::vector<config::TrainingConfig> layouts = EnumerateLayouts(model, base, o);
  ASSERT_FALSE(layouts.empty());
  for (const config::TrainingConfig& t : layouts) {
    EXPECT_EQ(t.parallel.tensor, 4);
    EXPECT_EQ(t.batch.micro_batch_size, 2);
    EXPECT_EQ(t.recompute.granularity, config::RecomputeGranularity::kNone);
  }
}

TEST(SearchSpaceTest, ContextParallelOnlyForLongSequences) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-0.6B");
  const SearchSpaceOptions o = Restricted();
  config::TrainingConfig base = Base(8, 64);
  for (const config::TrainingConfig& t : EnumerateLayouts(model, base, o)) {
    EXPECT_EQ(t.parallel.context, 1);
  }
  base.batch.seq_length = 16384;  // 16k / 4096 = up to 4 context ranks
  std::set<int64_t> c;
  for (const config::TrainingConfig& t : EnumerateLayouts(model, base, o)) {
    c.insert(t.parallel.context);
  }
  EXPECT_EQ(c, (std::set<int64_t>{1, 2, 4}));
}

TEST(SearchSpaceTest, LayoutsAreUniqueAndSortedByFlags) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-0.6B");
  const std::vector<config::TrainingConfig> layouts =
      EnumerateLayouts(model, Base(8, 64), SearchSpaceOptions{});
  std::vector<std::string> flags;
  for (const config::TrainingConfig& t : layouts) flags.push_back(LayoutFlags(model, t));
  EXPECT_TRUE(std::is_sorted(flags.begin(), flags.end()));
  EXPECT_EQ(std::adjacent_find(flags.begin(), flags.end()), flags.end());
}

}  // namespace
}  // namespace trainscope::plan
