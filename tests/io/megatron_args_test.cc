// Megatron-LM flag parsing: verbatim names, aliases, lists, ignored flags, and usage errors.
#include "trainscope/io/megatron_args.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trainscope/error.h"
#include "trainscope/io/hf_config_loader.h"

namespace trainscope::io {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

CliRequest Parse(std::vector<std::string> args) { return ParseCommandLine(args); }

TEST(MegatronArgsTest, AcceptsMegatronLaunchArgumentsVerbatim) {
  const CliRequest request = Parse({"validate",
                                    "--model",
                                    "Qwen3-235B-A22B",
                                    "--tensor-model-parallel-size",
                                    "2",
                                    "--pipeline-model-parallel-size",
                                    "8",
                                    "--num-virtual-stages-per-pipeline-rank",
                                    "4",
                                    "--expert-model-parallel-size",
                                    "32",
                                    "--sequence-parallel",
                                    "--account-for-embedding-in-pipeline-split",
                                    "--account-for-loss-in-pipeline-split",
                                    "--num-gpus",
                                    "256",
                                    "--micro-batch-size",
                                    "1",
                                    "--global-batch-size=512",
                                    "--seq-length",
                                    "4096",
                                    "--moe-token-dispatcher-type",
                                    "alltoall",
                                    "--moe-grouped-gemm",
                                    "--moe-permute-fusion",
                                    "--recompute-granularity",
                                    "selective",
                                    "--recompute-modules",
                                    "core_attn",
                                    "moe_act",
                                    "--use-distributed-optimizer",
                                    "--overlap-grad-reduce",
                                    "--overlap-moe-expert-parallel-comm",
                                    "--delay-wgrad-compute",
                                    "--bf16"});
  const config::TrainingConfig& t = request.training;
  EXPECT_EQ(request.command, "validate");
  EXPECT_EQ(t.parallel.tensor, 2);
  EXPECT_EQ(t.parallel.pipeline, 8);
  EXPECT_EQ(t.parallel.virtual_stages, 4);
  EXPECT_EQ(t.parallel.expert, 32);
  EXPECT_EQ(t.parallel.world_size, 256);
  EXPECT_TRUE(t.sequence_parallel);
  EXPECT_TRUE(t.split.account_for_embedding && t.split.account_for_loss);
  EXPECT_EQ(t.batch.global_batch_size, 512);
  EXPECT_EQ(t.moe.dispatcher, config::TokenDispatcher::kAllToAll);
  EXPECT_TRUE(t.moe.grouped_gemm);
  EXPECT_TRUE(t.moe.permute_fusion);
  EXPECT_TRUE(t.moe.overlap_expert_parallel_comm);
  EXPECT_TRUE(t.moe.delay_wgrad_compute);
  EXPECT_EQ(t.recompute.granularity, config::RecomputeGranularity::kSelective);
  EXPECT_THAT(t.recompute.modules, ElementsAre("core_attn", "moe_act"));
  EXPECT_TRUE(t.data_parallel.distributed_optimizer);
  EXPECT_TRUE(request.parallel_flags_given);
}

TEST(MegatronArgsTest, CpuOffloadingNumLayersTurnsOffloadingOn) {
  // arguments.py: cpu_offloading_num_layers > 0 sets cpu_offloading; 0 (the default) does not.
  const CliRequest on =
      Parse({"validate", "--model", "Qwen3-8B", "--cpu-offloading-num-layers", "20"});
  EXPECT_TRUE(on.training.cpu_offloading);
  EXPECT_EQ(on.training.cpu_offloading_num_layers, 20);
  EXPECT_EQ(on.training.OffloadedLayers(), 20);
  const CliRequest zero =
      Parse({"validate", "--model", "Qwen3-8B", "--cpu-offloading-num-layers", "0"});
  EXPECT_FALSE(zero.training.cpu_offloading);
  EXPECT_EQ(zero.training.OffloadedLayers(), 0);
  EXPECT_THAT(
      [] {
        Parse({"validate", "--model", "Qwen3-8B", "--cpu-offloading-num-layers", "-1"});
      },
      ThrowsMessage<UsageError>(HasSubstr("--cpu-offloading-num-layers")));
}

TEST(MegatronArgsTest, ShortAliasesSetTheSameFields) {
  const CliRequest request = Parse(
      {"params", "--model", "x", "--tp", "4", "--pp",  "2", "--vpp", "2",  "--cp",  "2",   "--ep",
       "8",      "--etp",   "1", "--dp", "4", "--mbs", "2", "--gbs", "64", "--seq", "8192"});
  const config::ParallelSizes& p = request.training.parallel;
  EXPECT_EQ(p.tensor, 4);
  EXPECT_EQ(p.pipeline, 2);
  EXPECT_EQ(p.virtual_stages, 2);
  EXPECT_EQ(p.context, 2);
  EXPECT_EQ(p.expert, 8);
  EXPECT_EQ(p.ExpertTensor(), 1);
  EXPECT_EQ(p.data, 4);
  EXPECT_EQ(request.training.batch.micro_batch_size, 2);
  EXPECT_EQ(request.training.batch.seq_length, 8192);
  // No --num-gpus: W = lcm(t·c·p·d, u·e·p) = lcm(4·2·2·4, 1·8·2) = 64.
  EXPECT_EQ(p.world_size, 64);
}

TEST(MegatronArgsTest, DefaultWorldSizeFitsTheExpertGrid) {
  // t 1, e 16: the dense grid needs 1 rank, the expert grid 16 -> W = 16.
  EXPECT_EQ(Parse({"params", "--ep", "16"}).training.parallel.world_size, 16);
}

TEST(MegatronArgsTest, ListsIgnoredFlagsAndSkipsTheirValues) {
  const CliRequest request = Parse({"params", "--lr", "3e-4", "--tp", "2", "--save", "/ckpt",
                                    "--use-flash-attn", "--split=98,2,0"});
  EXPECT_THAT(request.ignored_flags, ElementsAre("--lr", "--save", "--use-flash-attn", "--split"));
  EXPECT_EQ(request.training.parallel.tensor, 2);
}

TEST(MegatronArgsTest, ParsesPerLayerCpCommTypesAndVersionProfile) {
  const CliRequest request = Parse({"validate", "--cp-comm-type", "a2a", "p2p", "--megatron-core",
                                    "0.17", "--sequence-layout", "bshd", "--grad-reduce-in-bf16"});
  EXPECT_THAT(request.training.context.comm_types,
              ElementsAre(config::CpCommType::kA2a, config::CpCommType::kP2p));
  EXPECT_EQ(request.training.core_version, config::CoreVersion::kV0_17);
  EXPECT_EQ(request.training.sequence_layout, config::SequenceLayout::kBshd);
  EXPECT_FALSE(request.training.precision.grad_reduce_in_fp32);
}

TEST(MegatronArgsTest, ParsesFp8AndPrecisionAwareOptimizerFlags) {
  const CliRequest request =
      Parse({"memory", "--fp8-format", "hybrid", "--fp8-recipe", "tensorwise", "--fp8-param-gather",
             "--use-precision-aware-optimizer", "--main-grads-dtype", "bf16", "--main-params-dtype",
             "fp16", "--exp-avg-dtype", "fp8", "--exp-avg-sq-dtype", "bf16"});
  const config::PrecisionConfig& precision = request.training.precision;
  EXPECT_TRUE(precision.fp8_param_gather);
  EXPECT_TRUE(precision.precision_aware_optimizer);
  EXPECT_EQ(precision.main_grads, config::OptimizerDtype::kBf16);
  EXPECT_FALSE(precision.grad_reduce_in_fp32);  // bf16 main grads: no fp32 accumulation
  EXPECT_EQ(precision.main_params, config::OptimizerDtype::kFp16);
  EXPECT_EQ(precision.exp_avg, config::OptimizerDtype::kFp8);
  EXPECT_EQ(precision.exp_avg_sq, config::OptimizerDtype::kBf16);
}

// Megatron-LM's spellings (TransformerConfig fp4 -> --fp4-format, fp4_recipe, fp4_param ->
// --fp4-param-gather); the recipe defaults to nvfp4.
TEST(MegatronArgsTest, ParsesTeOpFuserAndFp8OutputProj) {
  const CliRequest request =
      Parse({"memory", "--use-transformer-engine-op-fuser", "--fp8-output-proj"});
  EXPECT_TRUE(request.training.moe.te_op_fuser);
  EXPECT_TRUE(request.training.precision.fp8_output_proj);
}

TEST(MegatronArgsTest, ParsesFp4Flags) {
  const config::PrecisionConfig precision =
      Parse({"memory", "--fp4-format", "e2m1", "--fp4-param-gather"}).training.precision;
  EXPECT_EQ(precision.fp4, config::Fp4Format::kE2m1);
  EXPECT_EQ(precision.fp4_recipe, config::Fp4Recipe::kNvfp4);
  EXPECT_TRUE(precision.fp4_param_gather);
  EXPECT_EQ(Parse({"memory", "--fp4-format", "e2m1", "--fp4-recipe", "custom"})
                .training.precision.fp4_recipe,
            config::Fp4Recipe::kCustom);
}

TEST(MegatronArgsTest, RejectsOptimizerDtypesOutsideEachFlagsChoices) {
  EXPECT_THAT(
      [] {
        (void)Parse({"memory", "--main-params-dtype", "bf16"});
      },
      ThrowsMessage<UsageError>(
          HasSubstr("--main-params-dtype: unsupported value \"bf16\" (expected fp32|fp16)")));
  EXPECT_THAT(
      [] {
        (void)Parse({"memory", "--main-grads-dtype", "fp8"});
      },
      ThrowsMessage<UsageError>(HasSubstr("--main-grads-dtype")));
  EXPECT_THAT(
      [] {
        (void)Parse({"memory", "--exp-avg-dtype", "int8"});
      },
      ThrowsMessage<UsageError>(HasSubstr("--exp-avg-dtype: unknown value \"int8\"")));
}

TEST(MegatronArgsTest, DefaultsFollowMegatron) {
  const CliRequest request = Parse({"params"});
  EXPECT_EQ(request.training.moe.dispatcher, config::TokenDispatcher::kAllGather);
  EXPECT_TRUE(request.training.precision.grad_reduce_in_fp32);
  EXPECT_EQ(request.training.core_version, config::CoreVersion::kV0_18);
  EXPECT_FALSE(request.parallel_flags_given);
}

struct BadArgs {
  std::vector<std::string> args;
  const char* expected;
};

TEST(MegatronArgsTest, RejectsBadUsageNamingTheFlag) {
  const BadArgs cases[] = {
      {{"params", "--tensor-parallel", "2"}, "unknown flag --tensor-parallel"},
      {{"params", "--tp"}, "--tp: missing value"},
      {{"params", "--tp", "two"}, "--tp: expected an integer (got \"two\")"},
      {{"params", "--tp", "0"}, "--tp: must be at least 1 (got 0)"},
      {{"params", "--pp", "-2"}, "--pp: must be at least 1 (got -2)"},
      {{"params", "--num-gpus", "99999999999999999999999"}, "--num-gpus: absurd value"},
      {{"params", "--moe-token-dispatcher-type", "nccl"},
       "--moe-token-dispatcher-type: unknown value \"nccl\" (expected allgather|alltoall|flex)"},
      {{"params", "--megatron-core", "0.15"}, "--megatron-core: unknown value \"0.15\""},
      {{"params", "--sequence-parallel=1"}, "--sequence-parallel: takes no value"},
      {{"params", "stray"}, "unexpected argument \"stray\""},
      {{"params", "-o", ""}, "-o: empty path"},
      {{"params", "--model-config", ""}, "--model-config: empty path"},
      {{"simulate", "--trace", ""}, "--trace: empty path"},
      {{"simulate", "--cluster", ""}, "--cluster: empty path"},
      {{}, "missing command"},
  };
  for (const BadArgs& bad : cases) {
    EXPECT_THAT([&] { (void)ParseCommandLine(bad.args); },
                ThrowsMessage<UsageError>(HasSubstr(bad.expected)));
  }
}

TEST(MegatronArgsTest, ChecksArchitectureFlagsAgainstTheModel) {
  const config::ModelConfig model = LoadPreset("Qwen3-235B-A22B");
  CliRequest agree = Parse({"params", "--num-layers", "94", "--hidden-size", "4096",
                            "--num-experts", "128", "--moe-router-topk", "8"});
  EXPECT_NO_THROW(ApplyModelDependentFlags(model, agree));
  CliRequest contradict = Parse({"params", "--num-layers", "96"});
  EXPECT_THAT([&] { ApplyModelDependentFlags(model, contradict); },
              ThrowsMessage<InputError>(HasSubstr("--num-layers: contradicts model")));
}

TEST(MegatronArgsTest, ConvertsLayersPerVirtualStageToVpp) {
  // 94 layers + embedding + loss = 96 slots; p 8, 3 layers per virtual stage -> v = 4 (C16).
  const config::ModelConfig model = LoadPreset("Qwen3-235B-A22B");
  CliRequest request =
      Parse({"params", "--pp", "8", "--num-layers-per-virtual-pipeline-stage", "3",
             "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"});
  ApplyModelDependentFlags(model, request);
  EXPECT_EQ(request.training.parallel.virtual_stages, 4);
}

TEST(MegatronArgsTest, RejectsSizesAboveTheirBoundsNamingFlagAndBound) {
  const BadArgs cases[] = {
      {{"params", "--num-gpus", "10000001"},
       "--num-gpus: absurd value (got 10000001, expected "
       "at most 10000000)"},
      {{"params", "--etp", "2147483647"}, "--etp: absurd value"},
      {{"params", "--tp", "2147483648", "--pp", "2147483648"}, "--tp: absurd value"},
      {{"params", "--seq", "1000000000"},
       "--seq: absurd value (got 1000000000, expected at "
       "most 100000000)"},
      {{"params", "--mbs", "10000000"}, "--mbs: absurd value"},
      {{"params", "--gbs", "10000000000"}, "--gbs: absurd value"},
      {{"params", "--rank", "10000000"}, "--rank: absurd value"},
      {{"params", "--scale-out-gbps", "1e-320"}, "--scale-out-gbps: expected a number in"},
      {{"params", "--scale-out-latency-us", "1e308"}, "--scale-out-latency-us: expected a number"},
      {{"params", "--moe-expert-capacity-factor", "nan"}, "--moe-expert-capacity-factor"},
      {{"params", "--memory-fragmentation", "1e-320"}, "--memory-fragmentation: expected"},
  };
  for (const BadArgs& bad : cases) {
    SCOPED_TRACE(bad.expected);
    EXPECT_THAT([&] { (void)ParseCommandLine(bad.args); },
                ThrowsMessage<UsageError>(HasSubstr(bad.expected)));
  }
}

TEST(MegatronArgsTest, RejectsGridsWhoseProductOverflowsTheWorldSize) {
  EXPECT_THAT(
      [] {
        (void)Parse({"params", "--tp", "10000000", "--pp", "10000000"});
      },
      ThrowsMessage<UsageError>(HasSubstr("--tp x --cp x --pp x --dp: the product exceeds "
                                          "the largest world size")));
  EXPECT_THAT(
      [] {
        (void)Parse({"params", "--ep", "4000", "--etp", "4000", "--num-gpus", "8"});
      },
      ThrowsMessage<UsageError>(HasSubstr("--etp x --ep x --pp")));
  EXPECT_THAT(
      [] {
        (void)Parse({"params", "--tp", "1024", "--etp", "1", "--ep", "9999"});
      },
      ThrowsMessage<UsageError>(HasSubstr("--num-gpus: the default world size")));
}

TEST(MegatronArgsTest, RejectsHierarchicalSizesWhoseProductOverflows) {
  EXPECT_THAT(
      [] {
        (void)Parse(
            {"params", "--hierarchical-context-parallel-sizes", "4000000", "4000000", "4000000"});
      },
      ThrowsMessage<UsageError>(
          HasSubstr("--hierarchical-context-parallel-sizes: the product of the sizes exceeds")));
}

TEST(MegatronArgsTest, AcceptsZeroScaleOutLatency) {
  EXPECT_EQ(Parse({"params", "--scale-out-latency-us", "0"}).hardware.scale_out_latency_us, 0.0);
}

// Megatron-Core's flex backend and SM-count flags (TransformerConfig
// moe_flex_dispatcher_backend, moe_flex_dispatcher_num_sms and its deprecated per-backend
// aliases); a backend trainscope does not model is a usage error naming the flag.
TEST(MegatronArgsTest, ParsesTheFlexDispatcherBackendAndItsSmCount) {
  const CliRequest request =
      Parse({"simulate", "--moe-token-dispatcher-type", "flex", "--moe-flex-dispatcher-backend",
             "hybridep", "--moe-hybridep-num-sms", "32"});
  EXPECT_EQ(request.training.moe.flex_backend, config::FlexBackend::kHybridEp);
  EXPECT_EQ(request.training.moe.flex_num_sms, 32);
  EXPECT_EQ(Parse({"simulate", "--moe-flex-dispatcher-num-sms", "16"}).training.moe.flex_num_sms,
            16);
  EXPECT_EQ(Parse({"simulate"}).training.moe.flex_backend, config::FlexBackend::kDeepEp);
  EXPECT_THROW(Parse({"simulate", "--moe-flex-dispatcher-backend", "ncclep"}), UsageError);
}

// Megatron-Core 0.18's HybridEP options, spelled as its TransformerConfig fields
// (moe_permute_fusion_into_hybridep, moe_expert_rank_capacity_factor, moe_paged_stash,
// moe_paged_stash_buffer_size_factor_cuda with its default 1.10).
TEST(MegatronArgsTest, ParsesHybridEpRankBudgetAndPagedStash) {
  const CliRequest request =
      Parse({"simulate", "--moe-permute-fusion-into-hybridep", "--moe-expert-rank-capacity-factor",
             "1.5", "--moe-paged-stash", "--moe-paged-stash-buffer-size-factor-cuda", "-1.2"});
  EXPECT_TRUE(request.training.moe.permute_fusion_into_hybridep);
  EXPECT_EQ(request.training.moe.rank_capacity_factor, 1.5);
  EXPECT_TRUE(request.training.moe.paged_stash);
  EXPECT_EQ(request.training.moe.paged_stash_buffer_factor, -1.2);
  EXPECT_EQ(Parse({"simulate"}).training.moe.paged_stash_buffer_factor, 1.10);
  EXPECT_FALSE(Parse({"simulate"}).training.moe.rank_capacity_factor.has_value());
  // A budget under the balanced rows, or a stash of no size, is refused.
  EXPECT_THROW(Parse({"simulate", "--moe-expert-rank-capacity-factor", "0.5"}), UsageError);
  EXPECT_THROW(Parse({"simulate", "--moe-paged-stash-buffer-size-factor-cuda", "0"}), UsageError);
}

}  // namespace

TEST(MegatronArgsTest, PipelineLayoutSetsVirtualStages) {
  // arguments.py: v = stages / p when --num-virtual-stages-per-pipeline-rank is not given.
  const CliRequest request =
      Parse({"simulate", "--model", "DeepSeek-V3", "--pp", "2", "--ep", "32", "--num-gpus", "256",
             "--pipeline-model-parallel-layout", "Et*4|(t*4|)*14tmL"});
  EXPECT_EQ(request.training.parallel.virtual_stages, 8);
  EXPECT_EQ(request.training.split.layout.size(), 16U);
  EXPECT_EQ(request.training.split.layout_text, "Et*4|(t*4|)*14tmL");
  EXPECT_THROW(Parse({"simulate", "--pipeline-model-parallel-layout", "Etq|L"}), UsageError);
}

}  // namespace trainscope::io
