// The Megatron-Bridge performance-recipe settings the step calibration applies to a published
// row (bench/bridge_recipes.h), against the recipe files they were read from.
#include "bridge_recipes.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "trainscope/config/pipeline_layout.h"
#include "trainscope/io/hf_config_loader.h"

namespace trainscope::bench {
namespace {

config::TrainingConfig Layout(int64_t tp, int64_t pp, int64_t vp, int64_t ep, int64_t mbs,
                              int64_t world = 256) {
  config::TrainingConfig t;
  t.parallel = {
      .world_size = world, .tensor = tp, .pipeline = pp, .virtual_stages = vp, .expert = ep};
  t.batch.micro_batch_size = mbs;
  return t;
}

TEST(BridgeRecipesTest, DeepSeekV3Gb300Mxfp8RunsTheFullIterationHybridEpRecipe) {
  // perf_recipes/deepseek/gb300/deepseek_v3.py deepseek_v3_pretrain_256gpu_gb300_fp8mx_config:
  // TP1 PP2 VP8 EP32 MBS1, recompute_modules [], then _enable_deepseek_full_iteration_mxfp8:
  // flex + hybridep, cuda_graph_impl full_iteration, overlap_moe_expert_parallel_comm.
  config::TrainingConfig t = Layout(1, 2, 8, 32, 1);
  EXPECT_EQ(ApplyBridgeRecipe("DeepSeek-V3", "GB300", "mxfp8", t).size(), 1U);
  EXPECT_EQ(t.moe.dispatcher, config::TokenDispatcher::kFlex);
  EXPECT_FALSE(t.moe.enable_deepep);
  EXPECT_TRUE(t.moe.overlap_expert_parallel_comm);
  EXPECT_EQ(t.cuda_graph.impl, config::CudaGraphImpl::kFullIteration);
  EXPECT_EQ(t.recompute.granularity, config::RecomputeGranularity::kNone);
  // _enable_deepseek_full_iteration_mxfp8(cfg, fp8_dot_product_attention=True, ...) and
  // comm_overlap.delay_wgrad_compute = True (deepseek/common.py).
  EXPECT_TRUE(t.precision.fp8_dot_product_attention);
  EXPECT_TRUE(t.moe.delay_wgrad_compute);
  // The GB200 MXFP8 recipe calls it with fp8_output_proj only: BF16 attention.
  config::TrainingConfig gb200 = Layout(1, 4, 4, 64, 1);
  EXPECT_EQ(ApplyBridgeRecipe("DeepSeek-V3", "GB200", "mxfp8", gb200).size(), 1U);
  EXPECT_FALSE(gb200.precision.fp8_dot_product_attention);
  EXPECT_TRUE(gb200.moe.delay_wgrad_compute);
}

TEST(BridgeRecipesTest, Llama3FsdpRecipesOffloadTheirLayers) {
  // configs/llama/llama3_workload_base_configs.py (v0.3.0 to v0.5.x):
  // LLAMA3_70B_PRETRAIN_CONFIG_GB200_FP8_CS_V2 MBS 2, Megatron-FSDP, cpu_offloading_num_layers 40;
  // GB300_FP8_CS_V2 MBS 2, 20; GB200_BF16_V2 MBS 1, 20.
  config::TrainingConfig t = Layout(1, 1, 1, 1, 2, 64);
  t.data_parallel.megatron_fsdp = true;
  ASSERT_TRUE(ApplyBridgeActivationOffload("Llama-3-70B", "GB200", "fp8", t).has_value());
  EXPECT_TRUE(t.cpu_offloading);
  EXPECT_EQ(t.cpu_offloading_num_layers, 40);
  config::TrainingConfig gb300 = Layout(1, 1, 1, 1, 2, 64);
  gb300.data_parallel.megatron_fsdp = true;
  ASSERT_TRUE(ApplyBridgeActivationOffload("Llama-3-70B", "GB300", "fp8-cs", gb300).has_value());
  EXPECT_EQ(gb300.cpu_offloading_num_layers, 20);
  config::TrainingConfig bf16 = Layout(1, 1, 1, 1, 1, 64);
  bf16.data_parallel.megatron_fsdp = true;
  ASSERT_TRUE(ApplyBridgeActivationOffload("Llama-3-70B", "GB200", "bf16", bf16).has_value());
  EXPECT_EQ(bf16.cpu_offloading_num_layers, 20);
  // Another layout (no FSDP, or the MXFP8 recipe's PP 4) ran no offloading.
  config::TrainingConfig plain = Layout(1, 1, 1, 1, 2, 64);
  EXPECT_FALSE(ApplyBridgeActivationOffload("Llama-3-70B", "GB200", "fp8", plain).has_value());
  EXPECT_FALSE(plain.cpu_offloading);
  config::TrainingConfig mx = Layout(1, 4, 5, 1, 1, 64);
  EXPECT_FALSE(ApplyBridgeActivationOffload("Llama-3-70B", "GB300", "mxfp8", mx).has_value());
  // Llama3.1-405B GB200 FP8-CS, TP 2, MBS 1: 95 layers in the 25.09 yaml, 92 from 25.11.
  config::TrainingConfig big = Layout(2, 1, 1, 1, 1, 128);
  big.data_parallel.megatron_fsdp = true;
  ASSERT_TRUE(ApplyBridgeActivationOffload("Llama-3.1-405B", "GB200", "fp8", big, "25.09"));
  EXPECT_EQ(big.cpu_offloading_num_layers, 95);
  ASSERT_TRUE(ApplyBridgeActivationOffload("Llama-3.1-405B", "GB200", "fp8", big, "25.11"));
  EXPECT_EQ(big.cpu_offloading_num_layers, 92);
}

TEST(BridgeRecipesTest, OnlyTheRecipesOwnLayoutTakesItsSettings) {
  // The same model, GPU and precision with a layout no recipe version ran (MBS 4): untouched.
  config::TrainingConfig t = Layout(1, 2, 8, 32, 4);
  const config::TrainingConfig before = t;
  EXPECT_TRUE(ApplyBridgeRecipe("DeepSeek-V3", "GB300", "mxfp8", t).empty());
  EXPECT_EQ(t, before);
  // MBS 2 is the 26.02 to 26.04.01 version (deepseek_workload_base_configs.py at v0.3.0 to
  // v0.4.2, GB300_FP8_MX_V2 = GB300_V2): HybridEP, no graphs, mla_up_proj, no full-iteration
  // helper, so no rank budget.
  config::TrainingConfig mbs2 = Layout(1, 2, 8, 32, 2);
  EXPECT_EQ(ApplyBridgeRecipe("DeepSeek-V3", "GB300", "mxfp8", mbs2, "26.04.01").size(), 1U);
  EXPECT_EQ(mbs2.moe.dispatcher, config::TokenDispatcher::kFlex);
  EXPECT_TRUE(mbs2.moe.HybridEpRuns());
  EXPECT_EQ(mbs2.cuda_graph.impl, config::CudaGraphImpl::kNone);
  EXPECT_EQ(mbs2.recompute.modules, (std::vector<std::string>{"mla_up_proj"}));
  EXPECT_FALSE(mbs2.moe.rank_capacity_factor.has_value());
  // B300 MXFP8 ran PP16 MBS 1 without graphs through 26.04 (v0.3.0 to v0.4.0, B300_V2 =
  // B300_V1) and PP8 MBS 2 with TE-scoped graphs from 26.04.01 (v0.4.2, B300_V2's override).
  config::TrainingConfig pp16 = Layout(1, 16, 1, 8, 1);
  EXPECT_EQ(ApplyBridgeRecipe("DeepSeek-V3", "B300", "mxfp8", pp16, "26.04").size(), 1U);
  EXPECT_EQ(pp16.cuda_graph.impl, config::CudaGraphImpl::kNone);
  config::TrainingConfig pp8 = Layout(1, 8, 1, 8, 2);
  EXPECT_EQ(ApplyBridgeRecipe("DeepSeek-V3", "B300", "mxfp8", pp8, "26.06").size(), 1U);
  EXPECT_EQ(pp8.cuda_graph.impl, config::CudaGraphImpl::kTransformerEngine);
  EXPECT_EQ(pp8.cuda_graph.modules,
            (std::vector<std::string>{"attn", "moe_router", "moe_preprocess"}));
  EXPECT_TRUE(pp8.moe.HybridEpRuns());
  // B200 MXFP8 (deepseek/b200/deepseek_v3.py): DeepEP, TE-scoped graphs, mla_up_proj + mlp.
  config::TrainingConfig b200 = Layout(1, 8, 2, 32, 1);
  EXPECT_EQ(ApplyBridgeRecipe("DeepSeek-V3", "B200", "fp8-mx", b200).size(), 1U);
  EXPECT_TRUE(b200.moe.enable_deepep);
  EXPECT_EQ(b200.cuda_graph.impl, config::CudaGraphImpl::kTransformerEngine);
  EXPECT_EQ(b200.recompute.modules, (std::vector<std::string>{"mla_up_proj", "mlp"}));
}

TEST(BridgeRecipesTest, DeepSeekV3Gb200Mxfp8BeforeTheFullIterationHelper) {
  // scripts/performance/configs/deepseek/deepseek_workload_base_configs.py at v0.3.0 (26.02)
  // and v0.3.1 (26.02.01): GB200_FP8_MX_V2 = GB200_V1 with global_batch_size 4096, i.e.
  // hybridep, moe_a2a_overlap False, recompute_modules ["mla_up_proj"], cuda_graph_impl
  // "transformer_engine", scope ["attn", "moe_router", "moe_preprocess"].
  for (const char* container : {"26.02", "26.02.01"}) {
    config::TrainingConfig t = Layout(1, 4, 4, 64, 1);
    ASSERT_EQ(ApplyBridgeRecipe("DeepSeek-V3", "GB200", "mxfp8", t, container).size(), 1U);
    EXPECT_TRUE(t.moe.HybridEpRuns()) << container;
    EXPECT_FALSE(t.moe.overlap_expert_parallel_comm) << container;
    EXPECT_FALSE(t.moe.delay_wgrad_compute) << container;
    EXPECT_EQ(t.cuda_graph.impl, config::CudaGraphImpl::kTransformerEngine) << container;
    EXPECT_EQ(t.cuda_graph.modules,
              (std::vector<std::string>{"attn", "moe_router", "moe_preprocess"}));
    EXPECT_EQ(t.recompute.modules, (std::vector<std::string>{"mla_up_proj"})) << container;
    EXPECT_FALSE(t.precision.fp8_output_proj) << container;
    EXPECT_FALSE(t.moe.te_op_fuser) << container;
    EXPECT_FALSE(t.moe.rank_capacity_factor.has_value()) << container;
  }
  // v0.4.0 (26.04) and v0.4.2 (26.04.01): GB200_V1's recompute_modules became ["mlp"].
  for (const char* container : {"26.04", "26.04.01"}) {
    config::TrainingConfig t = Layout(1, 4, 4, 64, 1);
    ASSERT_EQ(ApplyBridgeRecipe("DeepSeek-V3", "GB200", "mxfp8", t, container).size(), 1U);
    EXPECT_EQ(t.cuda_graph.impl, config::CudaGraphImpl::kTransformerEngine) << container;
    EXPECT_EQ(t.recompute.modules, (std::vector<std::string>{"mlp"})) << container;
    EXPECT_FALSE(t.moe.overlap_expert_parallel_comm) << container;
  }
  // The 25.11 tables' scripts (aea4832, GB200_BASE_CONFIG) graphed GB200's BF16 run at this
  // layout on moe_router + moe_preprocess only; the current recipe adds attn.
  config::TrainingConfig bf16 = Layout(1, 4, 4, 64, 1);
  ASSERT_EQ(ApplyBridgeRecipe("DeepSeek-V3", "GB200", "bf16", bf16, "25.11").size(), 1U);
  EXPECT_EQ(bf16.cuda_graph.modules, (std::vector<std::string>{"moe_router", "moe_preprocess"}));
  EXPECT_EQ(bf16.recompute.modules, (std::vector<std::string>{"mla_up_proj"}));
  EXPECT_FALSE(bf16.moe.overlap_expert_parallel_comm);
  // The 25.09 tables' scripts ran GB200 without graphs (deepseek_v3_llm_pretrain.yaml at
  // 2ce95f8: perf_matrix gb200 cuda_graphs false).
  config::TrainingConfig v2509 = Layout(1, 4, 4, 64, 1);
  ASSERT_EQ(ApplyBridgeRecipe("DeepSeek-V3", "GB200", "bf16", v2509, "25.09").size(), 1U);
  EXPECT_EQ(v2509.cuda_graph.impl, config::CudaGraphImpl::kNone);
  // run_script.py at 2ce95f8, dropless GB200: recompute_modules ["mla_up_proj", "mlp"]; with
  // token drop ["mla_up_proj"].
  EXPECT_EQ(v2509.recompute.modules, (std::vector<std::string>{"mla_up_proj", "mlp"}));
  config::TrainingConfig drop = Layout(1, 4, 4, 64, 1);
  drop.moe.capacity_factor = 1.0;
  ASSERT_EQ(ApplyBridgeRecipe("DeepSeek-V3", "GB200", "bf16", drop, "25.09").size(), 1U);
  EXPECT_EQ(drop.recompute.modules, (std::vector<std::string>{"mla_up_proj"}));
  // v0.5.0 (26.06) on: GB200_FP8_MX_V1 sets cuda_graph_impl "full_iteration" and
  // moe_a2a_overlap True, recompute ["mla_up_proj"]; fp8_output_proj in
  // deepseek_llm_pretrain.py.
  for (const char* container : {"26.06", "26.06.01", "26.08"}) {
    config::TrainingConfig t = Layout(1, 4, 4, 64, 1);
    ASSERT_EQ(ApplyBridgeRecipe("DeepSeek-V3", "GB200", "mxfp8", t, container).size(), 1U);
    EXPECT_EQ(t.cuda_graph.impl, config::CudaGraphImpl::kFullIteration) << container;
    EXPECT_TRUE(t.moe.overlap_expert_parallel_comm) << container;
    EXPECT_TRUE(t.precision.fp8_output_proj) << container;
    EXPECT_EQ(t.recompute.modules, (std::vector<std::string>{"mla_up_proj"})) << container;
  }
}

TEST(BridgeRecipesTest, MlaLayoutsMatchTheBridgeMaps) {
  // recipes/deepseek/h100/deepseek_v3.py _get_deepseek_v3_pipeline_layout, (4, 4):
  // [E + 4t] + 14 x [4t] + [t + m + L]; Kimi-K2 the same without m.
  const config::ModelConfig dsv3 = io::LoadPreset("DeepSeek-V3");
  const config::ModelConfig kimi = io::LoadPreset("Kimi-K2");
  EXPECT_EQ(BridgeMlaPipelineLayout(dsv3, 16), "Et*4|(t*4|)*14tm*1L");
  EXPECT_EQ(BridgeMlaPipelineLayout(kimi, 16), "Et*4|(t*4|)*14tL");
  EXPECT_FALSE(BridgeMlaPipelineLayout(dsv3, 12).has_value());
  const std::vector<config::LayoutStage> eight =
      config::ParsePipelineLayout(*BridgeMlaPipelineLayout(dsv3, 8));
  ASSERT_EQ(eight.size(), 8U);
  EXPECT_EQ(eight.front().decoder_layers, 8);
  EXPECT_EQ(eight.back().decoder_layers, 5);  // (8, 1): [decoder x 5 + mtp + loss]
  EXPECT_EQ(eight.back().mtp_layers, 1);
}

TEST(BridgeRecipesTest, DeepSeekV3RecipesInheritTheBaseHybridEpDispatcher) {
  // perf_recipes/deepseek/h100/deepseek_v3.py deepseek_v3_pretrain_1024gpu_h100_bf16_config sets
  // no dispatcher; its base (recipes/deepseek/h100/deepseek_v3.py) sets backend "hybridep" and
  // ends with apply_flex_dispatcher_backend, which makes it flex on compute capability 8-10.
  config::TrainingConfig t = Layout(2, 8, 4, 64, 1, 1024);
  EXPECT_EQ(ApplyBridgeRecipe("DeepSeek-V3", "H100", "bf16", t, "26.08").size(), 1U);
  EXPECT_EQ(t.moe.dispatcher, config::TokenDispatcher::kFlex);
  EXPECT_FALSE(t.moe.enable_deepep);
  // The 25.09 tables ran scripts/performance/run_script.py, which enabled DeepEP on H100.
  config::TrainingConfig old = Layout(2, 8, 4, 64, 1, 1024);
  EXPECT_EQ(ApplyBridgeRecipe("DeepSeek-V3", "H100", "bf16", old, "25.09").size(), 1U);
  EXPECT_EQ(old.moe.dispatcher, config::TokenDispatcher::kFlex);
  EXPECT_TRUE(old.moe.enable_deepep);
  // Its A2A_1F1B branch for H100 (added by "Malay/dsv3 2509", #669, before the 25.09 table of
  // fa0315ae2) set overlap_moe_expert_parallel_comm and delay_wgrad_compute, and every release
  // turns overlap_grad_reduce off for DeepSeek-V3 on H100, which rules out the param overlap.
  EXPECT_TRUE(old.moe.overlap_expert_parallel_comm);
  EXPECT_TRUE(old.moe.delay_wgrad_compute);
  EXPECT_FALSE(old.data_parallel.overlap_grad_reduce);
  EXPECT_FALSE(old.data_parallel.overlap_param_gather);
  EXPECT_FALSE(t.data_parallel.overlap_grad_reduce);
  // ... and alltoall elsewhere, whatever the layout (no recipe of MBS 3 exists).
  config::TrainingConfig b200 = Layout(1, 16, 1, 8, 3);
  EXPECT_EQ(ApplyBridgeRecipe("DeepSeek-V3", "B200", "bf16", b200, "25.09").size(), 1U);
  EXPECT_EQ(b200.moe.dispatcher, config::TokenDispatcher::kAllToAll);
  // The 25.11 tables (deepseek_workload_base_configs.py at aea4832): HybridEP on GB200.
  config::TrainingConfig gb200 = Layout(1, 8, 4, 32, 1);
  EXPECT_EQ(ApplyBridgeRecipe("DeepSeek-V3", "GB200", "fp8-mx", gb200, "25.11").size(), 1U);
  EXPECT_EQ(gb200.moe.dispatcher, config::TokenDispatcher::kFlex);
  EXPECT_FALSE(gb200.moe.enable_deepep);
}

TEST(BridgeRecipesTest, ContainerIsReadFromTheNotesOrTheSource) {
  io::CalibrationRow row;
  row.source = "NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md (26.06.01)";
  EXPECT_EQ(ContainerOf(row), "26.06.01");
  row.source = "NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md (26.06)";
  EXPECT_EQ(ContainerOf(row), "26.06");
  row.notes = "Pre-Training perf; NeMo container 25.11; FSDP=0";
  EXPECT_EQ(ContainerOf(row), "25.11");
  row = {};
  row.source = "examples/model_verification_cards/deepseek-v3/card.yaml (commit 067f987)";
  EXPECT_EQ(ContainerOf(row), "");
}

// GPT-OSS-120B BF16 in older containers (gpt_oss_workload_base_configs.py per release): GB200
// without EP overlap before 26.04; GB200 and B200 on HybridEP in 26.04, alltoall again in
// 26.04.01; the current recipe otherwise.
TEST(BridgeRecipesTest, GptOssRowsOfOlderContainersRunThatContainersDispatcher) {
  config::TrainingConfig gb200 = Layout(1, 1, 1, 64, 4, 64);
  ASSERT_EQ(ApplyBridgeRecipe("GPT-OSS-120B", "GB200", "bf16", gb200, "26.02.01").size(), 1U);
  EXPECT_EQ(gb200.moe.dispatcher, config::TokenDispatcher::kAllToAll);
  EXPECT_FALSE(gb200.moe.overlap_expert_parallel_comm);
  EXPECT_EQ(ApplyBridgeRecipe("GPT-OSS-120B", "GB200", "bf16", gb200, "26.04").size(), 1U);
  EXPECT_EQ(gb200.moe.dispatcher, config::TokenDispatcher::kFlex);
  EXPECT_FALSE(gb200.moe.enable_deepep);
  EXPECT_TRUE(gb200.moe.overlap_expert_parallel_comm);
  EXPECT_EQ(ApplyBridgeRecipe("GPT-OSS-120B", "GB200", "bf16", gb200, "26.04.01").size(), 1U);
  EXPECT_EQ(gb200.moe.dispatcher, config::TokenDispatcher::kAllToAll);
  EXPECT_TRUE(gb200.moe.overlap_expert_parallel_comm);
  config::TrainingConfig b200 = Layout(1, 1, 1, 8, 4, 64);
  EXPECT_EQ(ApplyBridgeRecipe("GPT-OSS-120B", "B200", "bf16", b200, "26.04").size(), 1U);
  EXPECT_EQ(b200.moe.dispatcher, config::TokenDispatcher::kFlex);
  EXPECT_FALSE(b200.moe.overlap_expert_parallel_comm);
  // 26.02's EP 64 layout on B200: alltoall with layernorm + moe_act recompute.
  config::TrainingConfig b200_ep64 = Layout(1, 1, 1, 64, 4, 64);
  ASSERT_EQ(ApplyBridgeRecipe("GPT-OSS-120B", "B200", "bf16", b200_ep64, "26.02").size(), 1U);
  EXPECT_EQ(b200_ep64.recompute.modules, (std::vector<std::string>{"layernorm", "moe_act"}));
}

// DeepSeek-V3 B200 MXFP8 before the 26.04.01 container: PP16 EP8 with the BF16 recipe's
// settings (HybridEP, no graphs, no EP overlap, mla_up_proj recompute); in a 25.11 row the older
// scripts' alltoall.
TEST(BridgeRecipesTest, DeepSeekV3B200Mxfp8Pp16RunsTheBf16Settings) {
  config::TrainingConfig t = Layout(1, 16, 1, 8, 1);
  ASSERT_EQ(ApplyBridgeRecipe("DeepSeek-V3", "B200", "mxfp8", t, "26.02").size(), 1U);
  EXPECT_EQ(t.moe.dispatcher, config::TokenDispatcher::kFlex);
  EXPECT_FALSE(t.moe.overlap_expert_parallel_comm);
  EXPECT_EQ(t.recompute.modules, (std::vector<std::string>{"mla_up_proj"}));
  config::TrainingConfig older = Layout(1, 16, 1, 8, 1);
  ASSERT_EQ(ApplyBridgeRecipe("DeepSeek-V3", "B200", "fp8-mx", older, "25.11").size(), 1U);
  EXPECT_EQ(older.moe.dispatcher, config::TokenDispatcher::kAllToAll);
  EXPECT_EQ(older.recompute.modules, (std::vector<std::string>{"mla_up_proj"}));
}

// Qwen3 rows of older containers (scripts/performance/configs/qwen/ per release): Qwen3-30B-A3B
// on GB300 at MBS 8 ran TE-scoped moe_router + moe_preprocess graphs without EP overlap before
// the 26.06 container, the full-iteration helper (op fuser on) since; Qwen3-235B-A22B on B300 at
// VP 1 ran alltoall in 26.04 and HybridEP in 26.04.01; 25.09's Qwen3-30B-A3B on B200 had
// Megatron's own per-layer graphs.
TEST(BridgeRecipesTest, QwenRowsOfOlderContainersRunThatContainersRecipe) {
  config::TrainingConfig old30b = Layout(1, 1, 1, 8, 8, 8);
  ASSERT_EQ(ApplyBridgeRecipe("Qwen3-30B-A3B", "GB300", "mxfp8", old30b, "26.04.01").size(), 1U);
  EXPECT_EQ(old30b.cuda_graph.impl, config::CudaGraphImpl::kTransformerEngine);
  EXPECT_EQ(old30b.cuda_graph.modules, (std::vector<std::string>{"moe_router", "moe_preprocess"}));
  EXPECT_FALSE(old30b.moe.overlap_expert_parallel_comm);
  EXPECT_FALSE(old30b.moe.te_op_fuser);
  EXPECT_FALSE(old30b.precision.fp8_dot_product_attention);
  config::TrainingConfig new30b = Layout(1, 1, 1, 8, 8, 8);
  ASSERT_EQ(ApplyBridgeRecipe("Qwen3-30B-A3B", "GB300", "mxfp8", new30b, "26.08").size(), 1U);
  EXPECT_EQ(new30b.cuda_graph.impl, config::CudaGraphImpl::kFullIteration);
  EXPECT_TRUE(new30b.moe.overlap_expert_parallel_comm);
  EXPECT_TRUE(new30b.moe.te_op_fuser);
  config::TrainingConfig b300 = Layout(1, 8, 1, 8, 2);
  ASSERT_EQ(ApplyBridgeRecipe("Qwen3-235B-A22B", "B300", "mxfp8", b300, "26.04").size(), 1U);
  EXPECT_EQ(b300.moe.dispatcher, config::TokenDispatcher::kAllToAll);
  ASSERT_EQ(ApplyBridgeRecipe("Qwen3-235B-A22B", "B300", "mxfp8", b300, "26.04.01").size(), 1U);
  EXPECT_EQ(b300.moe.dispatcher, config::TokenDispatcher::kFlex);
  config::TrainingConfig b200 = Layout(1, 1, 1, 8, 1, 8);
  ASSERT_EQ(ApplyBridgeRecipe("Qwen3-30B-A3B", "B200", "fp8-cs", b200, "25.09").size(), 1U);
  EXPECT_EQ(b200.cuda_graph.impl, config::CudaGraphImpl::kLocal);
  EXPECT_TRUE(b200.cuda_graph.modules.empty());
}

// A 64-GPU published row of a Megatron-Bridge table at TP 1: its notes, precision column and
// printed GBS, MBS, PP and EP (VP not printed).
io::CalibrationRow PublishedRow(std::string notes, std::string precision, int64_t gbs, int64_t mbs,
                                int64_t pp, int64_t ep) {
  io::CalibrationRow row;
  row.notes = std::move(notes);
  row.precision = std::move(precision);
  row.num_gpus = 64;
  row.gbs = gbs;
  row.mbs = mbs;
  row.tp = 1;
  row.pp = pp;
  row.ep = ep;
  return row;
}

TEST(BridgeRecipesTest, GptOss2511RowsRunTheirReleasesRecipeLayout) {
  // docs/performance-summary-archive.md, 25.11 tables, against Megatron-Bridge v0.2.0
  // scripts/performance/configs/gpt_oss/workload_base_configs.py.
  io::CalibrationRow published =
      PublishedRow("Pre-Training perf; NeMo container 25.11; FSDP=0; GA=2", "BF16", 512, 4, 4, 8);
  published.vp = 1;
  io::CalibrationRow h100 = published;
  // 64 / PP 4 = DP 16, and 512 / (16 x 4) = 8, not the printed GA 2; the recipe keeps MBS 1.
  ASSERT_TRUE(CorrectPublishedLayout("GPT-OSS-120B", "H100", h100).has_value());
  EXPECT_EQ(h100.mbs, 1);
  EXPECT_EQ(h100.pp, 4);
  EXPECT_EQ(h100.ep, 8);
  // The B200 row prints EP 8; GPT_OSS_120B_B200_BF16_BASE_CONFIG sets EP 64.
  io::CalibrationRow b200 = published;
  b200.pp = 1;
  ASSERT_TRUE(CorrectPublishedLayout("GPT-OSS-120B", "B200", b200).has_value());
  EXPECT_EQ(b200.ep, 64);
  EXPECT_EQ(b200.mbs, 4);
  // Any other container, precision or model keeps its published layout.
  for (const char* notes : {"NeMo container 26.02", "NeMo container 26.04.01"}) {
    io::CalibrationRow later = published;
    later.notes = notes;
    const io::CalibrationRow before = later;
    EXPECT_FALSE(CorrectPublishedLayout("GPT-OSS-120B", "H100", later).has_value());
    EXPECT_EQ(later, before);
  }
  io::CalibrationRow fp8 = published;
  fp8.precision = "FP8-CS";
  EXPECT_FALSE(CorrectPublishedLayout("GPT-OSS-120B", "H100", fp8).has_value());
  io::CalibrationRow other = published;
  EXPECT_FALSE(CorrectPublishedLayout("DeepSeek-V3", "H100", other).has_value());
  EXPECT_EQ(other.mbs, 4);
}

TEST(BridgeRecipesTest, Llama70bGb300RowsOf260201RunTheirRecipesInterleavedLayout) {
  // docs/performance-summary-archive.md, 26.02.01 tables, against Megatron-Bridge v0.3.1
  // scripts/performance/configs/llama/llama3_workload_base_configs.py
  // LLAMA3_70B_PRETRAIN_CONFIG_GB300_FP8_MX_V2 / _NVFP4_V2: PP 4, VP 5, MBS 1.
  io::CalibrationRow mxfp8 = PublishedRow("NeMo container 26.02.01", "MXFP8", 256, 2, 4, 1);
  io::CalibrationRow nvfp4 = mxfp8;
  nvfp4.precision = "NVFP4";
  nvfp4.pp = 1;
  for (io::CalibrationRow* row : {&mxfp8, &nvfp4}) {
    ASSERT_TRUE(CorrectPublishedLayout("Llama-3-70B", "GB300", *row).has_value());
    EXPECT_EQ(row->pp, 4);
    EXPECT_EQ(row->vp, 5);
    EXPECT_EQ(row->mbs, 1);
    EXPECT_EQ(row->tp, 1);
  }
  // The FP8 (current scaling) row of the same table ran what it prints (FSDP, MBS 2).
  io::CalibrationRow fp8 = mxfp8;
  fp8.precision = "FP8";
  fp8.pp = 1;
  EXPECT_FALSE(CorrectPublishedLayout("Llama-3-70B", "GB300", fp8).has_value());
  // GB200's rows of that table print the recipe's own layout (TP 2, PP 4, VP 5, MBS 1).
  io::CalibrationRow gb200 = mxfp8;
  gb200.tp = 2;
  gb200.vp = 5;
  gb200.mbs = 1;
  const io::CalibrationRow before = gb200;
  EXPECT_FALSE(CorrectPublishedLayout("Llama-3-70B", "GB200", gb200).has_value());
  EXPECT_EQ(gb200, before);
}

TEST(BridgeRecipesTest, Llama70bGb200MxRowOf2509RunsMicroBatchOne) {
  // docs/performance-summary-archive.md, 25.09: TP 2, PP 4, VP 5, MBS 2, GA 16 at GBS 128 on 64
  // GPUs. DP = 64 / 8 = 8, so GA 16 means 128 / 8 / 16 = 1 sequence per micro-batch, as in
  // v0.1.0rc4 scripts/performance/configs/llama3/llama3_70b_llm_pretrain.yaml (gb200 fp8_mx).
  io::CalibrationRow row = PublishedRow(
      "NeMo container 25.09; GA=16",
      "FP8-blockwise/MX (parenthesized variant: 32x32 MX on GB200/B200, 128x128/1x128 blockwise "
      "on H100)",
      128, 2, 4, 1);
  row.tp = 2;
  row.vp = 5;
  ASSERT_TRUE(CorrectPublishedLayout("Llama-3-70B", "GB200", row).has_value());
  EXPECT_EQ(row.mbs, 1);
  EXPECT_EQ(row.tp, 2);
  EXPECT_EQ(row.pp, 4);
  EXPECT_EQ(row.vp, 5);
}

}  // namespace
}  // namespace trainscope::bench
