// Which figure a calibration row's peak memory is (bench/calibration_rows.h), from notes worded
// as the rows of data/calibration/calibration_runs.csv word them.
#include "calibration_rows.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "trainscope/config/pipeline_layout.h"
#include "trainscope/io/hf_config_loader.h"

namespace trainscope::bench {
namespace {

io::CalibrationRow Row(std::string source, std::string notes) {
  io::CalibrationRow row;
  row.source = std::move(source);
  row.notes = std::move(notes);
  return row;
}

TEST(CalibrationRowsTest, NotesNamingAllocatedAndReservedGiveTheAllocatedFigure) {
  // Line 233: "peak 59.0 GiB allocated / 69.344 GiB reserved", peak_mem_gib 59.0.
  EXPECT_EQ(MemoryFigureOf(Row("NVIDIA-NeMo/Megatron-Bridge examples/model_verification",
                               "step 27588.58 ms; peak 59.0 GiB allocated / 69.344 GiB reserved")),
            MemoryFigure::kAllocated);
}

TEST(CalibrationRowsTest, ObservedGpuMemoryIsTheNvidiaSmiFigure) {
  // Line 242: "peak observed GPU memory 80,999 MiB".
  EXPECT_EQ(MemoryFigureOf(Row("NVIDIA-NeMo/Megatron-Bridge examples/model_verification",
                               "peak observed GPU memory 80,999 MiB (=79.1 GiB)")),
            MemoryFigure::kNvidiaSmi);
  EXPECT_EQ(MemoryFigureOf(Row("some run", "nvidia-smi reading at step 100")),
            MemoryFigure::kNvidiaSmi);
}

TEST(CalibrationRowsTest, WithoutANoteTheFrameworkDecides) {
  EXPECT_EQ(MemoryFigureOf(Row("pytorch/torchtitan benchmarks/llama3_h100", "FSDP8; selective AC")),
            MemoryFigure::kReserved);
  EXPECT_EQ(MemoryFigureOf(Row("NVIDIA-NeMo/Megatron-Bridge skills/nemo-mbridge-perf", "DP1")),
            MemoryFigure::kAllocated);
  EXPECT_EQ(MemoryFigureOf(Row("some Megatron run", "peak 70 GiB reserved")),
            MemoryFigure::kReserved);
}

TEST(CalibrationRowsTest, FigureNames) {
  EXPECT_EQ(ToString(MemoryFigure::kAllocated), "allocated");
  EXPECT_EQ(ToString(MemoryFigure::kReserved), "reserved");
  EXPECT_EQ(ToString(MemoryFigure::kNvidiaSmi), "nvidia-smi");
}

// torchtitan's benchmark rows run its own modules (--framework torchtitan); every run compiles
// the layers except the plain "FSDP" rows of benchmarks/llama3_h100_202412_torchtitan.md Tables
// 1 and 3 (line 262: "FSDP; FSDP8; ...", line 263: "FSDP+compile; ...").
TEST(CalibrationRowsTest, TorchtitanRowsRunItsModulesCompiledUnlessPlainFsdp) {
  const io::CalibrationRow eager =
      Row("pytorch/torchtitan benchmarks/llama3_h100_202412", "FSDP; FSDP8; LBS2; selective AC");
  const io::CalibrationRow compiled = Row("pytorch/torchtitan benchmarks/llama3_h100_202412",
                                          "FSDP+compile; FSDP8; LBS2; selective AC");
  const io::CalibrationRow table5 =
      Row("pytorch/torchtitan benchmarks/llama3_h100_202412", "FSDP8 TP8 PP8 interleaved 1F1B");
  const config::ModelConfig model = io::LoadPreset("Llama-3.1-8B");
  std::vector<std::string> assumptions;
  const config::TrainingConfig e = BaseTraining(model, eager, assumptions);
  EXPECT_EQ(e.framework.framework, config::Framework::kTorchtitan);
  EXPECT_FALSE(e.framework.torch_compile);
  EXPECT_TRUE(BaseTraining(model, compiled, assumptions).framework.torch_compile);
  EXPECT_TRUE(BaseTraining(model, table5, assumptions).framework.torch_compile);
  EXPECT_EQ(BaseTraining(model, Row("NVIDIA-NeMo/Megatron-Bridge docs", "DP1"), assumptions)
                .framework.framework,
            config::Framework::kMegatronCore);
}

// Automodel's configs at the summary's commit (8d9bfb90e): gptoss_120b_te_deepep.yaml has
// ep_size 64, enable_deepep and no activation checkpointing; deepseek_v3_te_deepep.yaml has
// enable_deepep and activation_checkpointing; the table's own EP (64) stays.
TEST(CalibrationRowsTest, AutomodelRowsRunTheirConfigsSettings) {
  const std::string source = "NVIDIA-NeMo/Automodel docs/performance-summary.mdx";
  std::vector<std::string> assumptions;
  io::CalibrationRow gpt_oss = Row(source, "FSDP64; step 4.30 s");
  gpt_oss.num_gpus = 64;
  const config::TrainingConfig g =
      BaseTraining(io::LoadPreset("GPT-OSS-120B"), gpt_oss, assumptions);
  EXPECT_EQ(g.parallel.expert, 64);
  EXPECT_EQ(g.moe.dispatcher, config::TokenDispatcher::kFlex);
  EXPECT_EQ(g.recompute.granularity, config::RecomputeGranularity::kNone);
  io::CalibrationRow deepseek = Row(source, "FSDP64; LBS8 GA1; step 8.18 s");
  deepseek.num_gpus = 256;
  deepseek.pp = 4;
  deepseek.ep = 64;
  const config::TrainingConfig d =
      BaseTraining(io::LoadPreset("DeepSeek-V3"), deepseek, assumptions);
  EXPECT_EQ(d.parallel.expert, 64);
  EXPECT_EQ(d.moe.dispatcher, config::TokenDispatcher::kFlex);
  EXPECT_EQ(d.recompute.granularity, config::RecomputeGranularity::kFull);
  // Another source with the same model and size keeps its own settings.
  const config::TrainingConfig bridge = BaseTraining(
      io::LoadPreset("GPT-OSS-120B"),
      [&] {
        io::CalibrationRow r = Row("NVIDIA-NeMo/Megatron-Bridge docs", "FSDP=0");
        r.num_gpus = 64;
        return r;
      }(),
      assumptions);
  EXPECT_EQ(bridge.parallel.expert, 1);
  EXPECT_EQ(bridge.moe.dispatcher, config::TokenDispatcher::kAllToAll);
}

// The 25.09 tables' "(tokendrop)" rows ran capacity factor 1.0 with padding to capacity.
TEST(CalibrationRowsTest, TokenDropRowsPadEveryExpertToCapacity) {
  io::CalibrationRow row = Row("NVIDIA-NeMo/Megatron-Bridge docs (25.09)", "GA=64");
  row.model = "Qwen3-30B-A3B (tokendrop)";
  row.num_gpus = 8;
  row.ep = 8;
  std::vector<std::string> assumptions;
  const config::TrainingConfig t = BaseTraining(io::LoadPreset("Qwen3-30B-A3B"), row, assumptions);
  EXPECT_EQ(t.moe.capacity_factor, 1.0);
  EXPECT_TRUE(t.moe.pad_expert_input_to_capacity);
  row.model = "Qwen3-30B-A3B";
  EXPECT_FALSE(BaseTraining(io::LoadPreset("Qwen3-30B-A3B"), row, assumptions)
                   .moe.pad_expert_input_to_capacity);
}

TEST(CalibrationRowsTest, AutomodelSplitsLayersAsItsAutoPipelineDoes) {
  // generate_hf_model_fqn_per_model_part: 5 layers over 3 stages are 5 // 3 = 1 each plus one
  // more on the first 5 % 3 = 2 stages; the embedding with stage 0, the loss with the last.
  EXPECT_EQ(AutomodelPipelineLayout(5, 3), "Ett|tt|tL");
  // DeepSeek-V3's 61 layers over PP 4 x VP 8 = 32 stages (deepseek_v3_te_deepep.yaml,
  // layers_per_stage 2: ceil(61 / 2) + 1 = 32 stages): 29 stages of 2, then 3 of 1.
  const std::vector<config::LayoutStage> stages =
      config::ParsePipelineLayout(AutomodelPipelineLayout(61, 32));
  ASSERT_EQ(stages.size(), 32U);
  int64_t layers = 0;
  for (size_t s = 0; s < stages.size(); ++s) {
    EXPECT_EQ(stages[s].decoder_layers, s < 29 ? 2 : 1) << "stage " << s;
    EXPECT_EQ(stages[s].embedding, s == 0);
    EXPECT_EQ(stages[s].loss, s == 31);
    layers += stages[s].decoder_layers;
  }
  EXPECT_EQ(layers, 61);
}

// A 64-GPU Llama3-70B row of a Megatron-Bridge or NeMo table at TP 1, PP 4, VP 5, MBS 1.
io::CalibrationRow LlamaRow(std::string source, std::string precision) {
  io::CalibrationRow row = Row(std::move(source), "Pre-Training perf");
  row.model = "Llama3-70B";
  row.gpu = "GB300";
  row.precision = std::move(precision);
  row.num_gpus = 64;
  row.seq_len = 8192;
  row.gbs = 256;
  row.mbs = 1;
  row.tp = 1;
  row.pp = 4;
  row.vp = 5;
  return row;
}

config::PrecisionConfig PrecisionOfCase(const io::CalibrationRow& row) {
  const CaseOrSkip built = BuildCase(row);
  EXPECT_TRUE(built.calibration_case.has_value()) << built.skip_reason;
  return built.calibration_case ? built.calibration_case->training.precision
                                : config::PrecisionConfig{};
}

// Megatron-Bridge's performance scripts from the 25.11 container run fp8_cs, fp8_mx, fp8_sc and
// nvfp4 only (scripts/performance/utils/precision.py get_precision_config, v0.2.0 to v0.5.x;
// perf_recipes/_common.py at v0.6.0), with training/mixed_precision.py's parameter gathers.
TEST(CalibrationRowsTest, BridgeFp8RowsRunTheScriptsRecipesAndParameterGathers) {
  const std::string bridge = "NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md";
  // A plain "FP8" of 26.04 is current scaling with FP8 parameters.
  const config::PrecisionConfig fp8 = PrecisionOfCase(LlamaRow(bridge + " (26.04)", "FP8"));
  EXPECT_EQ(fp8.fp8_recipe, config::Fp8Recipe::kTensorwise);
  EXPECT_TRUE(fp8.fp8_param_gather);
  const config::PrecisionConfig mx = PrecisionOfCase(LlamaRow(bridge + " (26.04)", "MXFP8"));
  EXPECT_EQ(mx.fp8_recipe, config::Fp8Recipe::kMxfp8);
  EXPECT_TRUE(mx.fp8_param_gather);
  // bf16_with_fp8_subchannel_scaling_mixed keeps fp8_param_gather False.
  EXPECT_FALSE(PrecisionOfCase(LlamaRow(bridge + " (26.04)", "FP8-blockwise")).fp8_param_gather);
  // NVFP4 gathers FP4 parameters from v0.4.2 (26.04.01) on.
  EXPECT_FALSE(PrecisionOfCase(LlamaRow(bridge + " (26.04)", "NVFP4")).fp4_param_gather);
  EXPECT_TRUE(PrecisionOfCase(LlamaRow(bridge + " (26.04.01)", "NVFP4")).fp4_param_gather);
  // Another framework's plain "FP8" stays delayed scaling, without parameter gathers.
  const config::PrecisionConfig nemo =
      PrecisionOfCase(LlamaRow("NVIDIA/NeMo docs/source/performance", "FP8"));
  EXPECT_EQ(nemo.fp8_recipe, config::Fp8Recipe::kDelayed);
  EXPECT_FALSE(nemo.fp8_param_gather);
}

}  // namespace
}  // namespace trainscope::bench
