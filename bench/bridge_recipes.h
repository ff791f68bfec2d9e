// The software settings of Megatron-Bridge's performance recipes (the runs behind its published
// performance tables) that change step time: token dispatcher, CUDA-graph implementation and
// scope, EP communication overlap, selective-recompute modules and the pipeline layout. Read
// from NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/perf_recipes/<model>/<gpu>/*.py at commit
// 067f987df03b8355b03192d88d70f1709fedf51a (2026-08-22). A recipe describes one layout, so its
// settings are applied only to a published row whose layout matches it exactly; a row of another
// layout ran another recipe version whose settings are unknown and keeps the bench's defaults.
// Benchmark-side knowledge about how those publications ran, not part of the library.
#ifndef TRAINSCOPE_BENCH_BRIDGE_RECIPES_H_
#define TRAINSCOPE_BENCH_BRIDGE_RECIPES_H_

#include <optional>
#include <string>
#include <vector>

#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"
#include "trainscope/io/calibration_csv.h"

namespace trainscope::bench {

// Megatron-Bridge's DeepSeek-V3 / Kimi-K2 pipeline layout for p·v stages (recipes/deepseek/
// h100/deepseek_v3.py _get_deepseek_v3_pipeline_layout; the 1,024-GPU H100 recipes'
// "Et|(tt|)*30mL" for 32 stages), with "m" only when the model has an MTP layer. nullopt for a
// stage count the recipes do not define or a model without 61 layers.
[[nodiscard]] std::optional<std::string> BridgeMlaPipelineLayout(const config::ModelConfig& model,
                                                                 int64_t stages);

// Applies the recipe whose (model preset, GPU, precision, TP, PP, VP, EP, micro-batch) matches
// the row to `training` and returns what it set, for the assumptions list; empty when no recipe
// matches. `precision_lower` is the row's precision column in lower case.
// `container` is the NeMo container of the published row ("26.08"; empty = the recipes' own):
// DeepSeek-V3 rows from containers before 26.02 take the dispatcher of the performance scripts
// of their time.
[[nodiscard]] std::vector<std::string> ApplyBridgeRecipe(const std::string& preset,
                                                         const std::string& gpu,
                                                         const std::string& precision_lower,
                                                         config::TrainingConfig& training,
                                                         const std::string& container = "");

// Applies the activation offloading of Megatron-Bridge's Llama3-70B and Llama3.1-405B
// Megatron-FSDP recipes (cpu_offloading_num_layers; scripts/performance/configs/llama3/
// llama3_70b_llm_pretrain.yaml and llama31/llama31_405b_llm_pretrain.yaml at v0.1.0rc3/rc4, the
// 25.09 container; configs/llama3/ and llama31/workload_base_configs.py at v0.2.0;
// configs/llama/llama3_workload_base_configs.py and llama31_workload_base_configs.py from v0.3.0
// to v0.5.x): 70B GB300 BF16 30, GB300 FP8-CS 20, GB200 BF16 20, GB200 FP8-CS 40, B200 FP8-CS 5
// layers; 405B GB300 BF16 40, GB300 FP8-CS 10, GB200 FP8-CS 95 (25.09) or 92 (from 25.11); each
// for its recipe's layout (PP 1, Megatron-FSDP, the recipe's TP and micro-batch). `container` as
// for ApplyBridgeRecipe. Returns the assumption line, or nullopt when the row ran no such recipe.
[[nodiscard]] std::optional<std::string> ApplyBridgeActivationOffload(
    const std::string& preset, const std::string& gpu, const std::string& precision_lower,
    config::TrainingConfig& training, const std::string& container = "");
// Corrects a published row whose layout the performance scripts of its own release contradict,
// in place, and returns the assumption line; nullopt leaves the row as published. Only rows
// with two independent witnesses are corrected: the release's recipe file and either the
// table's own arithmetic or the measured throughput of the recipe's layout in a later table.
// `preset` and `gpu` are the row's presets; the container is read from the row.
[[nodiscard]] std::optional<std::string> CorrectPublishedLayout(const std::string& preset,
                                                                const std::string& gpu,
                                                                io::CalibrationRow& row);

// The NeMo container a row names ("NeMo container 25.11" in its notes, "(26.06.01)" in its
// source: "25.11", "26.06"), or "" when it names none.
[[nodiscard]] std::string ContainerOf(const io::CalibrationRow& row);

}  // namespace trainscope::bench

#endif  // TRAINSCOPE_BENCH_BRIDGE_RECIPES_H_
