#include "calibration_rows.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

#include "bridge_recipes.h"
#include "trainscope/config/hardware.h"
#include "trainscope/config/pipeline_layout.h"
#include "trainscope/config/validate.h"
#include "trainscope/error.h"
#include "trainscope/io/hf_config_loader.h"
#include "trainscope/io/presets.h"

namespace trainscope::bench {
namespace {

bool Contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

// The integer after `key` in the notes ("GA=8" -> 8, "LBS2" -> 2), or nothing.
std::optional<int64_t> NumberAfter(const std::string& notes, std::string_view key) {
  const size_t at = notes.find(key);
  if (at == std::string::npos) return std::nullopt;
  size_t end = at + key.size();
  while (end < notes.size() && std::isdigit(static_cast<unsigned char>(notes[end]))) ++end;
  if (end == at + key.size()) return std::nullopt;
  return std::stoll(notes.substr(at + key.size(), end - at - key.size()));
}

std::string SourceFamily(const std::string& source) {
  const std::string lower = Lower(source);
  if (Contains(lower, "megatron-bridge")) return "megatron-bridge";
  if (Contains(lower, "torchtitan")) return "torchtitan";
  if (Contains(lower, "nvidia/nemo ") || Contains(lower, "nemo docs") ||
      Contains(lower, "docs.nvidia.com/nemo-framework")) {
    return "nemo";
  }
  if (Contains(lower, "automodel")) return "automodel";
  return "other";
}

// FP8 recipe from the precision label (as the Megatron-Bridge performance summaries write it);
// nothing for BF16 and for the "NVFP4" rows (BuildCase sets --fp4-format for those).
std::optional<config::Fp8Recipe> Fp8RecipeOf(const std::string& precision_lower) {
  if (!Contains(precision_lower, "fp8")) return std::nullopt;
  if (Contains(precision_lower, "mx")) return config::Fp8Recipe::kMxfp8;
  // torchao's row-wise recipe (torchtitan's float8 "rowwise").
  if (Contains(precision_lower, "rowwise")) return config::Fp8Recipe::kRowwise;
  if (Contains(precision_lower, "block")) return config::Fp8Recipe::kBlockwise;
  if (Contains(precision_lower, "cs") || Contains(precision_lower, "tensorwise") ||
      Contains(precision_lower, "torchao")) {
    return config::Fp8Recipe::kTensorwise;
  }
  return config::Fp8Recipe::kDelayed;
}

// The fabric a row's source, gpu or notes columns name: "RoCE" (torchtitan's Grand Teton rows,
// the Llama 3 paper), "EFA" (AWS runs); nothing else.
// Whole words only, so "default" does not name EFA.
bool ContainsWord(const std::string& haystack, std::string_view word) {
  for (size_t at = haystack.find(word); at != std::string::npos; at = haystack.find(word, at + 1)) {
    const size_t end = at + word.size();
    const bool starts = at == 0 || !std::isalpha(static_cast<unsigned char>(haystack[at - 1]));
    const bool ends =
        end == haystack.size() || !std::isalpha(static_cast<unsigned char>(haystack[end]));
    if (starts && ends) return true;
  }
  return false;
}

std::optional<config::ScaleOutFabric> FabricOf(const std::string& notes) {
  const std::string lower = Lower(notes);
  if (ContainsWord(lower, "roce")) return config::ScaleOutFabric::kRoce;
  if (ContainsWord(lower, "efa")) return config::ScaleOutFabric::kEfa;
  return std::nullopt;
}

void SetRecompute(const std::string& notes_lower, config::RecomputeConfig& recompute,
                  std::vector<std::string>& assumptions) {
  if (Contains(notes_lower, "full ac") || Contains(notes_lower, "full recompute")) {
    recompute = {.granularity = config::RecomputeGranularity::kFull,
                 .method = config::RecomputeMethod::kUniform,
                 .num_layers = 1};
    assumptions.push_back("full recompute");
  } else if (Contains(notes_lower, "selective") || Contains(notes_lower, "sac")) {
    recompute.granularity = config::RecomputeGranularity::kSelective;
    recompute.modules = {"core_attn"};
    if (Contains(notes_lower, "mlp")) recompute.modules.push_back("mlp");
    assumptions.push_back("selective recompute");
  }
}

// Megatron-Bridge splits layer counts that fit no even split (DeepSeek-V3 and Kimi-K2: 61
// layers, odd, so never over an even number of chunks) with --pipeline-model-parallel-layout,
// which trainscope does not model. The nearest layout it models: the largest v' dividing v for
// which --decoder-first/last-pipeline-num-layers give the first and last stages multiples of v'
// and every middle stage the same multiple of v' (C17-C19), the middle stages as full as the
// others. Returns false when none exists.
bool UnevenSplit(int64_t num_layers, config::TrainingConfig& t,
                 std::vector<std::string>& assumptions) {
  const int64_t p = t.parallel.pipeline;
  if (p < 2) return false;
  for (int64_t v = t.parallel.virtual_stages; v >= 1; --v) {
    if (t.parallel.virtual_stages % v != 0) continue;
    // Middle stages as full as an even split would make them (ceil(L/p) rounded up to v),
    // lowered until the two end stages can take the rest.
    for (int64_t middle = (num_layers + p * v - 1) / (p * v) * v; middle >= v; middle -= v) {
      const int64_t ends = num_layers - (p - 2) * middle;
      const int64_t last = ends / 2 / v * v;  // the last stage also holds the loss (and MTP)
      const int64_t first = ends - last;
      if (last < v || first < v || first % v != 0) continue;
      t.parallel.virtual_stages = v;
      t.split = {.first_stage_layers = first, .last_stage_layers = last};
      assumptions.push_back(fmt::format(
          "uneven split first={} last={} middle={} with vp={} (the recipe's pipeline layout is "
          "not modelled)",
          first, last, middle, v));
      return true;
    }
  }
  return false;
}

// NVIDIA-NeMo/Automodel's benchmark configurations behind its performance summary: the
// settings the summary's table does not show. examples/benchmark/configs/<name>.yaml at commit
// 8d9bfb90e (2025-10-08, the summary's first revisions), except Llama3-70B, whose row came with
// commit 2013a4dd6 (examples/llm_pretrain/custom_llama3_1_70b_pretrain_benchmark_8nodes.yaml).
// `expert`: distributed.ep_size where the table prints "-"; `deepep`: backend.enable_deepep;
// `full_recompute`: parallelizer.activation_checkpointing (a checkpoint wrapper around every
// block).
struct AutomodelRecipe {
  std::string_view preset;
  int64_t num_gpus;
  int64_t expert;  // 0 = the table's EP
  bool deepep;
  bool full_recompute;
};

constexpr std::array<AutomodelRecipe, 6> kAutomodelRecipes = {{
    {"DeepSeek-V3", 1024, 0, true, true},   // deepseek_v3_te_deepep_1024.yaml
    {"DeepSeek-V3", 256, 0, true, true},    // deepseek_v3_te_deepep.yaml
    {"Kimi-K2", 256, 0, true, true},        // kimi_k2_te_deepep.yaml
    {"GPT-OSS-20B", 8, 8, true, true},      // gptoss_20b_te_deepep.yaml
    {"GPT-OSS-120B", 64, 64, true, false},  // gptoss_120b_te_deepep.yaml
    {"Llama-3-70B", 64, 0, false, true},    // custom_llama3_1_70b_pretrain_benchmark_8nodes.yaml
}};

void ApplyAutomodelRecipe(const config::ModelConfig& model, config::TrainingConfig& t,
                          std::vector<std::string>& assumptions) {
  const auto recipe = std::find_if(
      kAutomodelRecipes.begin(), kAutomodelRecipes.end(), [&](const AutomodelRecipe& r) {
        return r.preset == model.name && r.num_gpus == t.parallel.world_size;
      });
  if (recipe == kAutomodelRecipes.end()) return;
  if (recipe->expert > 0 && t.parallel.expert == 1) {
    t.parallel.expert = recipe->expert;
    assumptions.push_back(fmt::format("ep={} (Automodel config's ep_size)", recipe->expert));
  }
  if (recipe->deepep && model.HasMoe()) {
    t.moe.dispatcher = config::TokenDispatcher::kFlex;
    assumptions.push_back("flex dispatcher (Automodel config: enable_deepep)");
  }
  if (recipe->full_recompute) {
    t.recompute = {.granularity = config::RecomputeGranularity::kFull,
                   .method = config::RecomputeMethod::kUniform,
                   .num_layers = 1};
    assumptions.push_back("full recompute (Automodel config: activation_checkpointing)");
  }
}

}  // namespace

std::string AutomodelPipelineLayout(int64_t num_layers, int64_t num_stages) {
  TRAINSCOPE_CHECK(num_stages >= 1 && num_stages <= num_layers,
                   "Automodel's split needs 1 <= stages <= layers");
  std::string layout;
  for (int64_t stage = 0; stage < num_stages; ++stage) {
    if (stage > 0) layout.push_back('|');
    if (stage == 0) layout.push_back('E');
    const int64_t layers = num_layers / num_stages + (stage < num_layers % num_stages ? 1 : 0);
    layout.append(static_cast<size_t>(layers), 't');
    if (stage == num_stages - 1) layout.push_back('L');
  }
  return layout;
}

std::string Lower(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

config::TrainingConfig BaseTraining(const config::ModelConfig& model, const io::CalibrationRow& row,
                                    std::vector<std::string>& assumptions) {
  config::TrainingConfig t;
  t.parallel = {.world_size = row.num_gpus.value_or(1),
                .tensor = row.tp.value_or(1),
                .pipeline = row.pp.value_or(1),
                .virtual_stages = row.vp.value_or(1),
                .context = row.cp.value_or(1),
                .expert = row.ep.value_or(1),
                .expert_tensor = row.etp};
  const bool interleaved_label =
      std::any_of(row.qualifiers.begin(), row.qualifiers.end(),
                  [](const std::string& q) { return q.rfind("vp:", 0) == 0; });
  if (const std::optional<int64_t> vpp = NumberAfter(row.notes, "VPP"); !row.vp && vpp) {
    t.parallel.virtual_stages = *vpp;
    assumptions.push_back(fmt::format("vp={} from the notes", *vpp));
  } else if (!row.vp && interleaved_label) {
    t.parallel.virtual_stages = 2;
    assumptions.push_back("vp=2 for 'interleaved'");
  }
  t.batch.seq_length = row.seq_len.value_or(4096);
  t.batch.micro_batch_size = row.mbs.value_or(1);
  if (!row.mbs) assumptions.push_back("mbs=1");
  const int64_t data = t.parallel.Data();
  if (row.gbs) {
    t.batch.global_batch_size = row.gbs;
  } else if (const std::optional<int64_t> local = NumberAfter(row.notes, "LBS")) {
    t.batch.global_batch_size = *local * data;
    assumptions.push_back(fmt::format("gbs=LBS{}·d", *local));
  }
  // Uneven layer counts (Llama-3.1-405B: 126 layers) use the embedding/loss slots, as
  // torchtitan and Megatron-Bridge recipes do.
  const std::string family = SourceFamily(row.source);
  const int64_t chunks = t.parallel.pipeline * t.parallel.virtual_stages;
  if (model.NumLayers() % chunks != 0 && (model.NumLayers() + 2) % chunks == 0) {
    t.split.account_for_embedding = true;
    t.split.account_for_loss = true;
    assumptions.push_back("account for embedding+loss in the split");
  } else if (model.NumLayers() % chunks != 0 && family == "automodel") {
    // The summary's PP x VP stages (its 1,024-GPU DeepSeek-V3 row prints VP 8, where the
    // config at 8d9bfb90e, layers_per_stage 4, would give 16 stages: the published VP is kept).
    const std::string layout = AutomodelPipelineLayout(model.NumLayers(), chunks);
    t.split.layout = config::ParsePipelineLayout(layout);
    t.split.layout_text = layout;
    assumptions.push_back(
        fmt::format("Automodel's AutoPipeline split: {} stages of {} or {} layers", chunks,
                    model.NumLayers() / chunks + 1, model.NumLayers() / chunks));
  } else if (const std::optional<std::string> layout = BridgeMlaPipelineLayout(model, chunks);
             model.NumLayers() % chunks != 0 && layout && family == "megatron-bridge") {
    // Megatron-Bridge's DeepSeek-V3 / Kimi-K2 recipes place the 61 layers with
    // --pipeline-model-parallel-layout.
    t.split.layout = config::ParsePipelineLayout(*layout);
    t.split.layout_text = *layout;
    assumptions.push_back(fmt::format("Megatron-Bridge pipeline layout {}", *layout));
  } else if (model.NumLayers() % chunks != 0 && (model.family != config::ModelFamily::kDeepSeekV3 ||
                                                 !UnevenSplit(model.NumLayers(), t, assumptions))) {
    t.split.account_for_embedding = true;  // rejected by C15, reported as the skip reason
    t.split.account_for_loss = true;
  }
  t.sequence_parallel = t.parallel.tensor > 1;
  if (model.HasMla()) {
    // Pretraining runs feed unpacked BSHD micro-batches; for MLA, THD differs (V padded to the
    // q/k head dim), so the layout is stated rather than left to auto.
    t.sequence_layout = config::SequenceLayout::kBshd;
    assumptions.push_back("BSHD (unpacked pretraining batches)");
  }
  t.data_parallel.distributed_optimizer = true;
  // Gradient reduction dtype as the performance scripts set it: Megatron-Bridge's
  // `_benchmark_common` (perf_recipes/_common.py; scripts/performance before) reduces in bf16,
  // except Kimi-K2's recipe, which sets it back to fp32; NeMo 2.0's `set_precision_configs`
  // (scripts/performance/helpers.py) reduces in bf16 for FP8 runs only.
  const bool fp8 = Contains(Lower(row.precision), "fp8");
  if ((family == "megatron-bridge" && model.name != "Kimi-K2") || (family == "nemo" && fp8)) {
    t.precision.grad_reduce_in_fp32 = false;
    assumptions.push_back("bf16 gradient reduction (performance scripts)");
  }
  // The loss kernel: Megatron-Bridge's performance scripts force TE's (`_benchmark_common`,
  // perf_recipes/_common.py; scripts/performance/utils/overrides.py before v0.6.0:
  // cross_entropy_loss_fusion True, cross_entropy_fusion_impl "te"); NeMo 2.0's GPTConfig fuses
  // it with Megatron's native kernels (nemo/collections/llm/gpt/model/base.py,
  // cross_entropy_loss_fusion = True). Megatron-LM's own default, and so the papers' runs, is the
  // unfused path.
  if (family == "megatron-bridge") {
    // TransformerEngine#3193 (fp32 gradient buffer) merged on 2026-07-08: containers up to
    // 26.06.01 ran the in-place kernel; 26.08 and the verification cards are taken to run it.
    const std::string container = ContainerOf(row);
    const bool fp32_gradient = container.empty() || container >= "26.08";
    t.cross_entropy = {.loss_fusion = true,
                       .fusion_impl = config::CrossEntropyFusionImpl::kTe,
                       .te_fp32_gradient = fp32_gradient};
    assumptions.push_back(fp32_gradient
                              ? "TE cross-entropy, fp32 gradient buffer (performance scripts)"
                              : "TE cross-entropy, gradient over the bf16 logits (performance "
                                "scripts, TE before #3193)");
  } else if (family == "nemo") {
    t.cross_entropy = {.loss_fusion = true, .fusion_impl = config::CrossEntropyFusionImpl::kNative};
    assumptions.push_back("native fused cross-entropy (NeMo 2.0 GPTConfig)");
  }
  const std::optional<int64_t> fsdp = NumberAfter(row.notes, "FSDP=");
  if ((fsdp && *fsdp > 0) || family == "torchtitan" || family == "automodel") {
    // FSDP2 / Megatron-FSDP shard parameters, gradients and optimizer states over DP (ZeRO-3):
    // Megatron-FSDP with optim_grads_params.
    t.data_parallel.distributed_optimizer = false;
    t.data_parallel.megatron_fsdp = true;
    t.data_parallel.fsdp_strategy = config::FsdpStrategy::kOptimGradsParams;
    assumptions.push_back("FSDP as Megatron-FSDP optim_grads_params");
  }
  if (family == "torchtitan") {
    // torchtitan's own modules and kernels (graph/torch_native_ops.cc). Its benchmarks compile
    // the layers in every run except the plain "FSDP" rows of the December 2024 Tables 1 and 3
    // (benchmarks/llama3_h100_202412_torchtitan.md; the async-TP page runs every command with
    // --training.compile).
    t.framework.framework = config::Framework::kTorchtitan;
    const std::string first = Lower(row.notes.substr(0, row.notes.find(';')));
    t.framework.torch_compile = first != "fsdp";
    assumptions.push_back(t.framework.torch_compile ? "torchtitan, torch.compile"
                                                    : "torchtitan, eager");
  }
  if (model.HasMoe()) {
    // Rows that name DeepEP or HybridEP ran Megatron's flex dispatcher; the others the alltoall
    // dispatcher of the Megatron-Bridge performance recipes.
    const std::string notes = Lower(row.notes);
    const bool flex =
        Contains(notes, "deepep") || Contains(notes, "hybridep") || Contains(notes, "hybrid-ep");
    t.moe.dispatcher = flex ? config::TokenDispatcher::kFlex : config::TokenDispatcher::kAllToAll;
    if (flex) {
      const bool hybridep = Contains(notes, "hybridep") || Contains(notes, "hybrid-ep");
      t.moe.flex_backend = hybridep ? config::FlexBackend::kHybridEp : config::FlexBackend::kDeepEp;
      assumptions.push_back(hybridep ? "flex dispatcher, HybridEP (in the notes)"
                                     : "flex dispatcher, DeepEP (in the notes)");
    }
    t.moe.grouped_gemm = true;
    if (Contains(Lower(row.model), "tokendrop")) {
      // The 25.09 tables' "(tokendrop)" runs: capacity factor 1.0 with each expert's input padded
      // to capacity (scripts/performance at the 25.09 release: moe_expert_capacity_factor 1.0,
      // moe_pad_expert_input_to_capacity True).
      t.moe.capacity_factor = 1.0;
      t.moe.pad_expert_input_to_capacity = true;
      assumptions.push_back("token drop: capacity factor 1.0, padded to capacity");
    }
    // DeepSeek-V3's aux-loss-free balancing: Megatron-Bridge's recipes turn on
    // --moe-router-enable-expert-bias for models whose router carries the expert bias.
    t.moe.router_enable_expert_bias = model.moe.router_score_bias;
  }
  SetRecompute(Lower(row.notes), t.recompute, assumptions);
  if (family == "automodel") ApplyAutomodelRecipe(model, t, assumptions);
  if (Contains(row.source, "cases_april2021")) {
    t.recompute = {.granularity = config::RecomputeGranularity::kFull,
                   .method = config::RecomputeMethod::kUniform,
                   .num_layers = 1};
  }
  return t;
}

std::optional<std::string> PresetFor(const std::string& csv_model) {
  // "GPT-3 175B" (Korthikanti et al.) is the GPT-175B preset; "GPT-175B" alone is MegaScale's
  // modified model, which has no layout columns and stays skipped.
  if (csv_model.rfind("GPT-3 175B", 0) == 0) return std::string("GPT-175B");
  // MT-NLG 530B (Korthikanti et al.: 105 layers of 20480, 128 heads) is Narayanan et al.'s 530B.
  if (csv_model.rfind("MT-NLG 530B", 0) == 0) return std::string("GPT-530B");
  // The Megatron-Core weak-scaling family (vocabulary 131,072, sequence 4096) shares names with
  // Narayanan et al.'s models ("GPT-1.7B") but not their architecture, which is not published.
  if (Contains(csv_model, "weak-scaling")) return std::nullopt;
  std::string name = csv_model.substr(0, csv_model.find_first_of(" ([", 0));
  if (name.rfind("Llama", 0) == 0 && name.size() > 5 &&
      std::isdigit(static_cast<unsigned char>(name[5]))) {
    name = "Llama-" + name.substr(5);
  }
  const std::optional<io::PresetText> preset = io::FindPreset(name);
  if (!preset) return std::nullopt;
  return std::string(preset->name);
}

std::optional<std::string> GpuPresetFor(const std::string& csv_gpu) {
  const std::string first = csv_gpu.substr(0, csv_gpu.find_first_of(" (", 0));
  std::string name = first;
  if (first == "H100" && Contains(csv_gpu, "96GB")) name = "H100-96GB";
  const std::optional<config::GpuSpec> gpu = config::FindGpu(name);
  if (!gpu) return std::nullopt;
  return gpu->name;
}

// Megatron-Bridge's performance scripts run three FP8 recipes from the 25.11 container on
// (scripts/performance/utils/precision.py get_precision_config at v0.2.0 to v0.5.x, and
// perf_recipes/_common.py _perf_precision at v0.6.0): "fp8_cs" (bf16_with_fp8_current_scaling_mixed
// with the first and last layers back in FP8), "fp8_mx" (bf16_with_mxfp8_mixed) and "fp8_sc"
// (blockwise), so a table's plain "FP8" is current scaling, not delayed. The current-scaling and
// MXFP8 configs gather FP8 parameters (fp8_param_gather; MXFP8 with
// reuse_grad_buf_for_mxfp8_param_ag), the blockwise one does not (training/mixed_precision.py at
// each release).
void BridgeFp8(const std::string& container, config::PrecisionConfig& precision,
               std::vector<std::string>& assumptions) {
  if (precision.fp8_recipe == config::Fp8Recipe::kDelayed && !container.empty() &&
      container >= "25.11") {
    precision.fp8_recipe = config::Fp8Recipe::kTensorwise;
    assumptions.push_back(
        "FP8 is current scaling (the performance scripts run no delayed scaling)");
  }
  if (precision.fp8_recipe == config::Fp8Recipe::kTensorwise ||
      precision.fp8_recipe == config::Fp8Recipe::kMxfp8) {
    precision.fp8_param_gather = true;
    assumptions.push_back("FP8 parameters gathered (fp8_param_gather)");
  }
}

CaseOrSkip BuildCase(const io::CalibrationRow& row) {
  const std::optional<std::string> preset = PresetFor(row.model);
  if (!preset) return {std::nullopt, "no preset for model " + row.model};
  const std::optional<std::string> gpu = GpuPresetFor(row.gpu);
  if (!gpu) return {std::nullopt, "no GPU preset for " + row.gpu};
  const std::string precision = Lower(row.precision);
  if (!row.num_gpus || !row.tp || !row.pp || !row.seq_len) {
    return {std::nullopt, "missing num_gpus, tp, pp or seq_len"};
  }
  if (Contains(Lower(row.model), "lora")) return {std::nullopt, "LoRA fine-tuning not modelled"};
  // The table itself footnotes these two as a known regression of that container
  // (docs/performance-summary-archive.md [^gpt-oss-note], NVIDIA/cudnn-frontend#256: the CuTeDSL
  // grouped dGLU kernel about 10x slower in cudnn-frontend 1.24); the recipe is 26.06's.
  if (*preset == "GPT-OSS-120B" && ContainerOf(row) == "26.06.01" && Contains(precision, "mx")) {
    return {std::nullopt,
            "container 26.06.01's footnoted GPT-OSS regression (NVIDIA/cudnn-frontend#256)"};
  }

  CalibrationCase c;
  c.row = row;
  c.preset = *preset;
  c.gpu = *gpu;
  c.source_family = SourceFamily(row.source);
  c.scale_out_fabric = FabricOf(row.source + " " + row.gpu + " " + row.notes);
  if (c.scale_out_fabric) {
    c.assumptions.push_back("scale-out fabric " + config::ToString(*c.scale_out_fabric) +
                            " from the notes");
  }
  c.model = io::LoadPreset(*preset);
  if (c.source_family == "automodel" && c.model.num_mtp_layers > 0) {
    // Automodel's DeepseekV3Model builds the num_hidden_layers blocks and no MTP module
    // (nemo_automodel/components/models/deepseek_v3/model.py at 8d9bfb90e).
    c.model.num_mtp_layers = 0;
    c.assumptions.push_back("no MTP layer (Automodel's model builds none)");
  }
  if (Contains(row.source, "cases_april2021")) {
    // Narayanan et al. 2021 (SC21) ran every Table 1 model with activation recomputation and
    // credit 96·B·s·l·h²(1 + s/6h + V/16lh) FLOPs per iteration: 4 passes of the forward's 24,
    // against Megatron's 3.
    c.source_flops_factor = 4.0 / 3.0;
    c.assumptions.push_back("full recompute; the paper's FLOPs include the recompute pass");
  }
  if (!row.gbs && !NumberAfter(row.notes, "LBS")) return {std::nullopt, "no global batch size"};
  if (c.source_family == "megatron-bridge") {
    if (std::optional<std::string> fix = CorrectPublishedLayout(c.preset, c.gpu, c.row)) {
      c.assumptions.push_back(std::move(*fix));
    }
  }
  c.training = BaseTraining(c.model, c.row, c.assumptions);
  config::TrainingConfig& t = c.training;
  // Megatron-Bridge performance recipes overlap DP and TP communication.
  t.data_parallel.overlap_grad_reduce = true;
  t.data_parallel.overlap_param_gather = true;
  t.overlap.tp_comm_overlap = t.sequence_parallel && c.source_family == "megatron-bridge";
  const std::string notes = Lower(row.notes);
  if (c.model.HasMoe() && (Contains(notes, "ep overlap") || Contains(notes, "a2a overlap"))) {
    t.moe.overlap_expert_parallel_comm = true;  // --overlap-moe-expert-parallel-comm
    c.assumptions.push_back("EP A2A overlap from the notes");
  }
  if (const std::optional<config::Fp8Recipe> recipe = Fp8RecipeOf(precision)) {
    t.precision.fp8 = config::Fp8Format::kHybrid;
    t.precision.fp8_recipe = *recipe;
    if (c.source_family == "megatron-bridge") {
      BridgeFp8(ContainerOf(row), t.precision, c.assumptions);
    }
  } else if (Contains(precision, "fp4")) {
    // Megatron-Bridge's performance "nvfp4" (mixed_precision.py bf16_with_nvfp4_mixed): fp4
    // "e2m1", fp4_recipe "nvfp4"; fp4_param_gather True from v0.4.2, the 26.04.01 container
    // (v0.2.0 to v0.4.1 set only fp8_param_gather False).
    t.precision.fp4 = config::Fp4Format::kE2m1;
    const std::string container = ContainerOf(row);
    t.precision.fp4_param_gather = container.empty() || container >= "26.04.01";
    c.assumptions.push_back(t.precision.fp4_param_gather
                                ? "NVFP4: bf16_with_nvfp4_mixed (fp4_param_gather)"
                                : "NVFP4: bf16_with_nvfp4_mixed, parameters gathered in bf16");
  }
  if (c.source_family == "megatron-bridge") {
    for (std::string& setting :
         ApplyBridgeRecipe(c.preset, c.gpu, precision, t, ContainerOf(row))) {
      c.assumptions.push_back(std::move(setting));
    }
    if (std::optional<std::string> offload =
            ApplyBridgeActivationOffload(c.preset, c.gpu, precision, t, ContainerOf(row))) {
      c.assumptions.push_back(std::move(*offload));
    }
  }
  const config::ValidationResult result = config::Validate(c.model, t);
  if (!result.ok()) {
    const config::Violation& first = result.errors.front();
    return {std::nullopt, "layout rejected: " + first.rule + " " + first.message};
  }
  return {std::move(c), ""};
}

MemoryFigure MemoryFigureOf(const io::CalibrationRow& row) {
  const std::string notes = Lower(row.notes);
  const auto says = [&](std::string_view word) { return notes.find(word) != std::string::npos; };
  if (says("allocated")) return MemoryFigure::kAllocated;
  if (says("nvidia-smi") || says("observed gpu memory")) return MemoryFigure::kNvidiaSmi;
  if (says("reserved") || row.source.find("torchtitan") != std::string::npos) {
    return MemoryFigure::kReserved;
  }
  return MemoryFigure::kAllocated;
}

std::string_view ToString(MemoryFigure figure) {
  switch (figure) {
    case MemoryFigure::kAllocated:
      return "allocated";
    case MemoryFigure::kReserved:
      return "reserved";
    case MemoryFigure::kNvidiaSmi:
      return "nvidia-smi";
  }
  return "";
}

}  // namespace trainscope::bench
