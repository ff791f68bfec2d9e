#include "bridge_recipes.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <string_view>

#include "calibration_rows.h"
#include "trainscope/config/pipeline_layout.h"

namespace trainscope::bench {
namespace {

enum class Precision { kBf16, kFp8CurrentScaling, kMxfp8, kOther };

Precision PrecisionOf(const std::string& lower) {
  const auto has = [&](std::string_view part) { return lower.find(part) != std::string::npos; };
  if (has("mx")) return Precision::kMxfp8;
  if (has("bf16")) return Precision::kBf16;
  if (has("cs") || has("current")) return Precision::kFp8CurrentScaling;
  return Precision::kOther;
}

enum class Dispatch { kAllToAll, kHybridEp, kDeepEp };
// kLocalLayers: Megatron-Core's own per-layer graphs (cuda_graph_impl "local", whole layers).
enum class Graphs {
  kNone,
  kTeAttnRouterPreprocess,
  kTeRouterPreprocess,
  kFullIteration,
  kLocalLayers
};

// One performance recipe: the layout it describes and the settings that change step time.
struct Recipe {
  std::string_view preset;
  std::string_view gpu;
  Precision precision;
  int64_t tp, pp, vp, ep, mbs;
  Dispatch dispatch;
  Graphs graphs;
  bool ep_overlap;
  std::vector<std::string_view> recompute;  // selective modules; empty = none
  // mixed_precision.fp8_dot_product_attention: set by the "full iteration MXFP8" helpers of
  // Qwen3 (qwen/common.py _enable_hybridep_full_iteration_mxfp8) and GPT-OSS
  // (_apply_gpt_oss_120b_full_iter_fp8mx_configs), and by DeepSeek-V3's GB300 and B300 MXFP8
  // recipes (_enable_deepseek_full_iteration_mxfp8(cfg, fp8_dot_product_attention=True)); not by
  // DeepSeek-V3's GB200 one.
  bool fp8_attention = false;
  // model.fp8_output_proj (the LM head in MXFP8): set by GPT-OSS's full-iteration MXFP8 helper
  // and by every DeepSeek-V3 full-iteration MXFP8 recipe (deepseek/{gb200,gb300,b300}:
  // _enable_deepseek_full_iteration_mxfp8(cfg, ..., fp8_output_proj=True)); not by Qwen3's.
  bool fp8_output_proj = false;
  // SMs of the flex kernels (moe_hybridep_num_sms, which Megatron-Core routes to
  // moe_flex_dispatcher_num_sms); 0 = by dispatcher (SetDispatch).
  int64_t flex_num_sms = 0;
};

// perf_recipes/<model>/<gpu>/<file>.py at the commit in the header, function
// <model>_pretrain_<n>gpu_<gpu>_<precision>_config. "full iteration MXFP8" is
// deepseek/common.py _enable_deepseek_full_iteration_mxfp8 and gpt_oss/common.py
// _apply_gpt_oss_120b_full_iter_fp8mx_configs: flex dispatcher with the HybridEP backend,
// cuda_graph_impl full_iteration, overlap_moe_expert_parallel_comm and delay_wgrad_compute.
// Recipes that do not set the dispatcher keep their base recipe's: DeepSeek-V3's base
// (recipes/deepseek/h100/deepseek_v3.py deepseek_v3_pretrain_1024gpu_h100_bf16_config, which
// every DeepSeek-V3 perf recipe starts from) sets moe_flex_dispatcher_backend "hybridep" and ends
// with training/flex_dispatcher_backend.py apply_flex_dispatcher_backend, which switches the
// dispatcher to flex on every GPU with compute capability 8-10 (Megatron-Bridge #2288, in the
// release branch from the 26.02.01 container; the 26.02 container's scripts passed "hybridep"
// directly, which #1888 allowed on SM 10.0); GPT-OSS's and Kimi-K2's bases keep the bridge's
// "alltoall"
// (models/gpt_oss/gpt_oss_bridge.py, recipes/kimi/h100/kimi_k2.py).
const std::vector<Recipe>& Recipes() {
  using enum Precision;
  using enum Dispatch;
  using enum Graphs;
  // clang-format off
  static const std::vector<Recipe> recipes = {
      // deepseek/gb300/deepseek_v3.py
      {"DeepSeek-V3", "GB300", kBf16, 1, 4, 4, 64, 1, kHybridEp, kTeAttnRouterPreprocess, false, {"moe_act"}},
      {"DeepSeek-V3", "GB300", kFp8CurrentScaling, 1, 2, 8, 32, 2, kHybridEp, kNone, false, {"mla_up_proj"}},
      {"DeepSeek-V3", "GB300", kMxfp8, 1, 2, 8, 32, 1, kHybridEp, kFullIteration, true, {}, true, true},
      // GB300 MXFP8 from the 26.02 to the 26.04.01 container (scripts/performance/configs/
      // deepseek/deepseek_workload_base_configs.py at v0.3.0 to v0.4.2:
      // DEEPSEEK_V3_PRETRAIN_CONFIG_GB300_FP8_MX_V2 = GB300_V2, the FP8-CS layout and settings).
      {"DeepSeek-V3", "GB300", kMxfp8, 1, 2, 8, 32, 2, kHybridEp, kNone, false, {"mla_up_proj"}},
      // deepseek/gb200/deepseek_v3.py
      {"DeepSeek-V3", "GB200", kBf16, 1, 4, 4, 64, 1, kHybridEp, kTeAttnRouterPreprocess, false, {"mla_up_proj"}},
      {"DeepSeek-V3", "GB200", kFp8CurrentScaling, 1, 4, 4, 64, 1, kHybridEp, kTeAttnRouterPreprocess, false, {"mlp"}},
      {"DeepSeek-V3", "GB200", kMxfp8, 1, 4, 4, 64, 1, kHybridEp, kFullIteration, true, {"mla_up_proj"}, false, true},
      // deepseek/b300/deepseek_v3.py (_enable_deepseek_transformer_engine_graph for BF16/FP8-CS)
      {"DeepSeek-V3", "B300", kBf16, 1, 8, 2, 8, 1, kHybridEp, kTeAttnRouterPreprocess, false, {"mla_up_proj"}},
      {"DeepSeek-V3", "B300", kFp8CurrentScaling, 1, 8, 2, 8, 1, kHybridEp, kTeAttnRouterPreprocess, false, {"mla_up_proj"}},
      {"DeepSeek-V3", "B300", kMxfp8, 1, 8, 2, 8, 1, kHybridEp, kFullIteration, true, {"mla_up_proj"}, true, true},
      // B300 MXFP8 in the 26.02 to 26.04 containers (the same file at v0.3.0 to v0.4.0:
      // B300_FP8_MX_V2 = B300_V2, PP16 EP8 with B200's settings), then in 26.04.01 and 26.06
      // (v0.4.2 to v0.5.0: B300_V2 turned PP8 MBS 2 with TE-scoped graphs).
      {"DeepSeek-V3", "B300", kMxfp8, 1, 16, 1, 8, 1, kHybridEp, kNone, false, {"mla_up_proj"}},
      {"DeepSeek-V3", "B300", kMxfp8, 1, 8, 1, 8, 2, kHybridEp, kTeAttnRouterPreprocess, false, {"mla_up_proj"}},
      // deepseek/b200/deepseek_v3.py
      {"DeepSeek-V3", "B200", kBf16, 1, 16, 1, 8, 1, kHybridEp, kNone, false, {"mla_up_proj"}},
      {"DeepSeek-V3", "B200", kFp8CurrentScaling, 1, 16, 1, 8, 1, kHybridEp, kNone, false, {"mla_up_proj"}},
      {"DeepSeek-V3", "B200", kMxfp8, 1, 8, 2, 32, 1, kDeepEp, kTeAttnRouterPreprocess, true, {"mla_up_proj", "mlp"}, false, false, 16},
      // B200 MXFP8 before the 26.04.01 container (scripts/performance/configs/deepseek/
      // deepseek_workload_base_configs.py at v0.2.0 to v0.4.0): the BF16 layout and settings.
      {"DeepSeek-V3", "B200", kMxfp8, 1, 16, 1, 8, 1, kHybridEp, kNone, false, {"mla_up_proj"}},
      // deepseek/h100/deepseek_v3.py
      {"DeepSeek-V3", "H100", kBf16, 2, 8, 4, 64, 1, kHybridEp, kNone, false, {"mla_up_proj", "mlp"}},
      {"DeepSeek-V3", "H100", kFp8CurrentScaling, 2, 8, 4, 64, 1, kHybridEp, kNone, false, {"mla_up_proj", "mlp"}},
      // kimi/gb300/kimi_k2.py, kimi/gb200/kimi_k2.py, kimi/b200/kimi_k2.py
      {"Kimi-K2", "GB300", kBf16, 1, 4, 4, 64, 2, kHybridEp, kNone, false, {"mla_up_proj"}},
      {"Kimi-K2", "GB300", kFp8CurrentScaling, 1, 4, 4, 64, 2, kHybridEp, kNone, false, {"mla_up_proj"}},
      {"Kimi-K2", "GB300", kMxfp8, 1, 4, 4, 64, 2, kHybridEp, kNone, false, {"mla_up_proj"}},
      {"Kimi-K2", "GB200", kBf16, 1, 4, 4, 64, 1, kHybridEp, kTeRouterPreprocess, false, {"mla_up_proj"}},
      {"Kimi-K2", "GB200", kFp8CurrentScaling, 1, 4, 4, 64, 1, kHybridEp, kTeRouterPreprocess, false, {"mla_up_proj"}},
      {"Kimi-K2", "GB200", kMxfp8, 1, 4, 4, 64, 1, kHybridEp, kTeRouterPreprocess, false, {"mla_up_proj"}},
      {"Kimi-K2", "B200", kBf16, 1, 16, 1, 16, 1, kAllToAll, kNone, false, {"mla_up_proj"}},
      {"Kimi-K2", "B200", kFp8CurrentScaling, 1, 16, 1, 16, 1, kAllToAll, kNone, false, {"mla_up_proj"}},
      {"Kimi-K2", "B200", kMxfp8, 1, 16, 1, 16, 1, kAllToAll, kNone, false, {"mla_up_proj"}},
      // gpt_oss/<gpu>/gpt_oss.py, 120B
      {"GPT-OSS-120B", "GB300", kBf16, 1, 1, 1, 64, 4, kAllToAll, kTeAttnRouterPreprocess, false, {}},
      {"GPT-OSS-120B", "GB300", kMxfp8, 1, 1, 1, 16, 4, kHybridEp, kFullIteration, true, {}, true, true},
      {"GPT-OSS-120B", "GB200", kBf16, 1, 1, 1, 64, 4, kAllToAll, kNone, true, {"layernorm", "moe_act"}},
      {"GPT-OSS-120B", "GB200", kMxfp8, 1, 1, 1, 64, 4, kHybridEp, kFullIteration, true, {}, true, true},
      {"GPT-OSS-120B", "B300", kBf16, 1, 1, 1, 8, 4, kHybridEp, kTeAttnRouterPreprocess, false, {}},
      {"GPT-OSS-120B", "B300", kMxfp8, 1, 1, 1, 8, 4, kHybridEp, kTeAttnRouterPreprocess, false, {}},
      {"GPT-OSS-120B", "B200", kBf16, 1, 1, 1, 8, 4, kAllToAll, kNone, false, {"layernorm", "moe_act"}},
      {"GPT-OSS-120B", "B200", kMxfp8, 1, 1, 1, 8, 4, kAllToAll, kNone, false, {"layernorm", "moe_act"}},
      {"GPT-OSS-120B", "H100", kBf16, 1, 4, 1, 8, 1, kAllToAll, kNone, false, {"layernorm", "moe_act"}},
      {"GPT-OSS-120B", "H100", kFp8CurrentScaling, 1, 4, 1, 8, 1, kAllToAll, kNone, false, {"layernorm", "moe_act"}},
      // Only the 26.02 container's tables ran EP 64 on B300 / B200 (scripts/performance/configs/
      // gpt_oss/gpt_oss_workload_base_configs.py at v0.3.0, 21b02e0cf; EP 8 since 904597bd3).
      {"GPT-OSS-120B", "B300", kBf16, 1, 1, 1, 64, 4, kAllToAll, kTeAttnRouterPreprocess, false, {}},
      {"GPT-OSS-120B", "B200", kBf16, 1, 1, 1, 64, 4, kAllToAll, kNone, false, {"layernorm", "moe_act"}},
      // qwen/<gpu>/qwen3_moe.py (the independent Qwen check: never fitted); "full iteration
      // MXFP8" is qwen/common.py _enable_hybridep_full_iteration_mxfp8 (full_iteration graphs,
      // overlap_moe_expert_parallel_comm). No recompute in any of them.
      {"Qwen3-30B-A3B", "GB300", kMxfp8, 1, 1, 1, 8, 8, kHybridEp, kFullIteration, true, {}, true},
      {"Qwen3-30B-A3B", "GB300", kBf16, 1, 1, 1, 8, 8, kHybridEp, kTeRouterPreprocess, false, {}},
      {"Qwen3-30B-A3B", "GB300", kFp8CurrentScaling, 1, 1, 1, 8, 8, kHybridEp, kTeRouterPreprocess, false, {}},
      {"Qwen3-30B-A3B", "GB200", kMxfp8, 1, 1, 1, 8, 4, kHybridEp, kFullIteration, true, {}, true},
      {"Qwen3-30B-A3B", "GB200", kBf16, 1, 1, 1, 8, 4, kHybridEp, kTeAttnRouterPreprocess, false, {}},
      {"Qwen3-30B-A3B", "B300", kMxfp8, 1, 1, 1, 8, 8, kHybridEp, kFullIteration, true, {}, true},
      {"Qwen3-30B-A3B", "B200", kMxfp8, 1, 1, 1, 8, 4, kHybridEp, kTeAttnRouterPreprocess, true, {}},
      {"Qwen3-30B-A3B", "B200", kBf16, 1, 1, 1, 8, 4, kHybridEp, kTeAttnRouterPreprocess, false, {}},
      {"Qwen3-30B-A3B", "H100", kFp8CurrentScaling, 1, 1, 1, 16, 1, kHybridEp, kTeAttnRouterPreprocess, false, {}},
      {"Qwen3-235B-A22B", "GB300", kMxfp8, 1, 4, 12, 32, 2, kHybridEp, kFullIteration, true, {}, true},
      {"Qwen3-235B-A22B", "GB300", kBf16, 1, 4, 1, 32, 2, kHybridEp, kTeAttnRouterPreprocess, false, {}},
      {"Qwen3-235B-A22B", "GB200", kMxfp8, 1, 8, 3, 32, 1, kHybridEp, kFullIteration, true, {}, true},
      {"Qwen3-235B-A22B", "B300", kMxfp8, 1, 8, 3, 8, 2, kHybridEp, kFullIteration, true, {}, true},
      // Layouts only older containers' tables ran (scripts/performance/configs/qwen/ at the
      // release of each container: 25.11 = v0.2.0, 26.02 = v0.3.0, 26.02.01 = v0.3.1, 26.04.01 =
      // v0.4.2); container splits inside them are in OlderQwenRecipe.
      {"Qwen3-30B-A3B", "GB300", kMxfp8, 1, 1, 1, 8, 4, kHybridEp, kTeRouterPreprocess, false, {}},  // 25.11
      {"Qwen3-30B-A3B", "B200", kMxfp8, 1, 1, 1, 8, 1, kAllToAll, kTeRouterPreprocess, false, {}},  // 25.11, 26.02
      {"Qwen3-30B-A3B", "B200", kFp8CurrentScaling, 1, 1, 1, 8, 1, kAllToAll, kLocalLayers, false, {}},  // 25.09
      {"Qwen3-235B-A22B", "GB300", kBf16, 1, 4, 12, 16, 2, kHybridEp, kTeRouterPreprocess, false, {}},  // 25.11
      {"Qwen3-235B-A22B", "GB300", kMxfp8, 1, 4, 1, 32, 2, kHybridEp, kTeAttnRouterPreprocess, false, {}},  // 26.02, 26.02.01
      {"Qwen3-235B-A22B", "B300", kMxfp8, 1, 8, 4, 8, 1, kAllToAll, kNone, true, {}},  // 26.02, 26.02.01
      {"Qwen3-235B-A22B", "B300", kMxfp8, 1, 8, 1, 8, 2, kHybridEp, kNone, false, {}},  // 26.04.01 (26.04: alltoall)
      {"Qwen3-235B-A22B", "B200", kMxfp8, 1, 8, 1, 8, 1, kAllToAll, kNone, false, {}},  // 26.02 to 26.04.01
      {"Qwen3-235B-A22B", "B200", kMxfp8, 1, 8, 2, 8, 1, kAllToAll, kNone, true, {}},  // 25.11 (25.09: no overlap)
      {"Qwen3-235B-A22B", "B200", kFp8CurrentScaling, 1, 8, 2, 8, 1, kAllToAll, kNone, false, {}},  // 25.09
      {"Qwen3-235B-A22B", "B200", kMxfp8, 1, 8, 3, 8, 1, kHybridEp, kFullIteration, true, {}, true},
      {"Qwen3-235B-A22B", "B200", kBf16, 1, 8, 4, 8, 1, kAllToAll, kNone, false, {}},
      {"Qwen3-235B-A22B", "H100", kBf16, 2, 8, 4, 32, 1, kAllToAll, kNone, true, {}},
      {"Qwen3-235B-A22B", "H100", kFp8CurrentScaling, 2, 8, 4, 32, 1, kAllToAll, kNone, true, {}},
  };
  // clang-format on
  return recipes;
}

// The DeepSeek-V3 dispatcher of a row published from an older container than the recipes
// (before Megatron-Bridge #2288, the 26.02 container): scripts/performance at 2ce95f8
// (2025-10, the 25.09 tables: run_script.py enables DeepEP on H100 for dropless runs, alltoall
// elsewhere, with A2A_1F1B on H100: overlap_moe_expert_parallel_comm and delay_wgrad_compute,
// since #669 of 2025-09-24, also in the v0.1.0rc3 / rc4 tags) and at aea4832 (2025-12, the 25.11
// tables: configs/deepseek/deepseek_workload_base_configs.py: HybridEP on GB200 / GB300, DeepEP
// with moe_a2a_overlap on H100, which utils/overrides.py _set_moe_a2a_overlap_overrides pairs
// with delay_wgrad_compute; alltoall on B200). nullopt = the recipe's own.
struct OlderDispatch {
  Dispatch dispatch;
  bool ep_overlap;
};
std::optional<OlderDispatch> OlderDeepSeekDispatch(std::string_view gpu,
                                                   std::string_view container) {
  if (container.empty() || container >= "26.02") return std::nullopt;
  if (gpu == "H100") return OlderDispatch{Dispatch::kDeepEp, true};
  if ((gpu == "GB200" || gpu == "GB300") && container >= "25.11") {
    return OlderDispatch{Dispatch::kHybridEp, false};
  }
  return OlderDispatch{Dispatch::kAllToAll, false};
}

// The GPT-OSS-120B BF16 dispatcher and EP overlap of a row from an older container than the
// recipes, where they differed (scripts/performance/configs/gpt_oss/
// gpt_oss_workload_base_configs.py at each release; docs/releases/software-versions.md maps
// containers to releases): GB200 had no EP overlap before the 26.04 container (7260d6214,
// 2026-03-23, added it); 26.04 (v0.4.0) ran GB200 and B200 on HybridEP (back to alltoall in
// 26.04.01: 1513a1026, 14b537eac); 26.02.01's B300 recipe named HybridEP, which the v0.3.x
// scripts never read (904597bd3), so it ran alltoall. nullopt = the recipe's own.
std::optional<OlderDispatch> OlderGptOssDispatch(std::string_view gpu, Precision precision,
                                                 std::string_view container) {
  if (container.empty() || precision != Precision::kBf16) return std::nullopt;
  if (container == "26.04" && (gpu == "GB200" || gpu == "B200")) {
    return OlderDispatch{Dispatch::kHybridEp, gpu == "GB200"};
  }
  if (gpu == "GB200" && container < "26.04") return OlderDispatch{Dispatch::kAllToAll, false};
  if (gpu == "B300" && container == "26.02.01") return OlderDispatch{Dispatch::kAllToAll, false};
  return std::nullopt;
}

// A DeepSeek-V3 GB200 MXFP8 row (TP1 PP4 VP4 EP64 MBS 1) from the 26.02 to the 26.04.01
// container ran that release's GB200_V1 settings, not the full-iteration helper, which arrived
// with the 26.06 container (scripts/performance/configs/deepseek/
// deepseek_workload_base_configs.py: at v0.3.0 and v0.3.1 GB200_FP8_MX_V1 = GB200_V1, recompute
// mla_up_proj; at v0.4.0 and v0.4.2 the same with recompute "mlp"; both HybridEP,
// moe_a2a_overlap False, TE-scoped graphs on attn + moe_router + moe_preprocess; v0.5.0's
// GB200_FP8_MX_V1 adds cuda_graph_impl "full_iteration", moe_a2a_overlap and, in
// deepseek_llm_pretrain.py, fp8_output_proj).
// A GB200 BF16 row of the 25.11 tables at the same layout graphed only moe_router +
// moe_preprocess (the same file at aea4832: GB200_BASE_CONFIG, the scripts of those tables);
// the 25.09 tables' GB200 runs had no CUDA graphs (configs/deepseek/deepseek_v3_llm_pretrain.yaml
// at 2ce95f8: cuda_graphs false) and recomputed mla_up_proj + mlp when dropless, mla_up_proj
// alone with token drop (run_script.py there).
void ApplyOlderDeepSeekRecipe(std::string_view gpu, std::string_view container, bool token_drop,
                              Recipe& r) {
  if (container.empty() || container >= "26.06") return;
  if (container < "26.02") {
    if (gpu == "GB200" && container < "25.11") {
      r.graphs = Graphs::kNone;
      r.recompute = token_drop ? std::vector<std::string_view>{"mla_up_proj"}
                               : std::vector<std::string_view>{"mla_up_proj", "mlp"};
    } else if (gpu == "GB200" && r.precision == Precision::kBf16) {
      r.graphs = Graphs::kTeRouterPreprocess;
    }
    return;
  }
  if (gpu != "GB200" || r.precision != Precision::kMxfp8 || r.graphs != Graphs::kFullIteration) {
    return;
  }
  r.graphs = Graphs::kTeAttnRouterPreprocess;
  r.ep_overlap = false;
  r.fp8_attention = false;
  r.fp8_output_proj = false;
  r.recompute = {container < "26.04" ? "mla_up_proj" : "mlp"};
}

// A Qwen3 MoE row from an older container than the table's recipe of its layout
// (scripts/performance/configs/qwen/ per release): before the 26.06 container the GB300 / B300
// MXFP8 recipes of Qwen3-30B-A3B (MBS 8) and the GB300 one of Qwen3-235B-A22B (VP 12) ran
// HybridEP with TE-scoped graphs (moe_router + moe_preprocess; attn + moe_router +
// moe_preprocess for 235B), no EP overlap, no FP8 attention and no op fuser, not the
// full-iteration helper; Qwen3-30B-A3B on B200 (MBS 4) had no EP overlap before 26.06.01 and the
// full-iteration helper in 26.06.01; Qwen3-235B-A22B on B300 at VP 1 ran alltoall in 26.04
// (HybridEP from 26.04.01, 6a5c997e7) and on B200 at VP 2 had no EP overlap in 25.09.
void ApplyOlderQwenRecipe(std::string_view gpu, std::string_view container, Recipe& r) {
  if (container.empty()) return;
  const bool qwen30b = r.preset == "Qwen3-30B-A3B";
  if (r.precision == Precision::kMxfp8 && container < "26.06") {
    // The recipe before the full-iteration helper: HybridEP and TE-scoped graphs only.
    const auto te_scoped = [&r](Graphs graphs) {
      r.dispatch = Dispatch::kHybridEp;
      r.graphs = graphs;
      r.ep_overlap = false;
      r.fp8_attention = false;
      r.fp8_output_proj = false;
    };
    if (qwen30b && (gpu == "GB300" || gpu == "B300") && r.mbs == 8) {
      te_scoped(Graphs::kTeRouterPreprocess);
      return;
    }
    if (!qwen30b && gpu == "GB300" && r.vp == 12) {
      te_scoped(Graphs::kTeAttnRouterPreprocess);
      return;
    }
  }
  if (qwen30b && gpu == "B200" && r.precision == Precision::kMxfp8 && r.mbs == 4) {
    if (container < "26.06.01") {
      r.graphs = Graphs::kTeAttnRouterPreprocess;
      r.ep_overlap = false;
    } else if (container == "26.06.01") {
      r.graphs = Graphs::kFullIteration;
      r.ep_overlap = true;
      r.fp8_attention = true;
    }
    return;
  }
  if (!qwen30b && gpu == "B300" && r.vp == 1 && container == "26.04") {
    r.dispatch = Dispatch::kAllToAll;
  }
  if (!qwen30b && gpu == "B200" && r.vp == 2 && container < "25.11") r.ep_overlap = false;
}

// The dispatcher, flex backend and flex SM count of `dispatch`; `num_sms` 0 = by dispatcher: 32
// for HybridEP (perf_recipes/_common.py _benchmark_common; scripts/performance
// utils/overrides.py before), DeepEP's own default otherwise.
void SetDispatch(Dispatch dispatch, int64_t num_sms, config::MoeRunConfig& moe) {
  moe.dispatcher = dispatch == Dispatch::kAllToAll ? config::TokenDispatcher::kAllToAll
                                                   : config::TokenDispatcher::kFlex;
  moe.enable_deepep = dispatch == Dispatch::kDeepEp;
  moe.flex_backend = dispatch == Dispatch::kHybridEp ? config::FlexBackend::kHybridEp
                                                     : config::FlexBackend::kDeepEp;
  moe.flex_num_sms.reset();
  if (num_sms > 0) {
    moe.flex_num_sms = num_sms;
  } else if (dispatch == Dispatch::kHybridEp) {
    moe.flex_num_sms = 32;
  }
}

// DeepSeek-V3's H100 runs reduce gradients after the backward, not overlapped with it
// (comm_overlap.overlap_grad_reduce = False and, from v0.5.0, ddp.overlap_grad_reduce = False:
// run_script.py at 2ce95f8, deepseek_llm_pretrain.py deepseek_v3_pretrain_config_h100 at
// aea4832 and v0.3.0 to v0.5.0, perf_recipes/deepseek/h100/deepseek_v3.py at 067f987), so the
// parameter all-gather cannot overlap either (Megatron-LM arguments.py: --overlap-param-gather
// requires --overlap-grad-reduce).
void SetDeepSeekH100GradReduce(std::string_view preset, std::string_view gpu,
                               config::TrainingConfig& training) {
  if (preset != "DeepSeek-V3" || gpu != "H100") return;
  training.data_parallel.overlap_grad_reduce = false;
  training.data_parallel.overlap_param_gather = false;
}

// The assumption line's note when the recipe turned the gradient-reduce overlap off.
std::string_view GradReduceNote(const config::TrainingConfig& training) {
  return training.data_parallel.overlap_grad_reduce ? "" : ", gradients reduced after the backward";
}

std::string_view DispatchName(Dispatch dispatch) {
  switch (dispatch) {
    case Dispatch::kAllToAll:
      return "alltoall";
    case Dispatch::kHybridEp:
      return "flex/hybridep";
    case Dispatch::kDeepEp:
      return "flex/deepep";
  }
  return "";
}

std::string_view GraphsName(Graphs graphs) {
  switch (graphs) {
    case Graphs::kNone:
      return "none";
    case Graphs::kTeAttnRouterPreprocess:
      return "transformer_engine attn+moe_router+moe_preprocess";
    case Graphs::kTeRouterPreprocess:
      return "transformer_engine moe_router+moe_preprocess";
    case Graphs::kFullIteration:
      return "full_iteration";
    case Graphs::kLocalLayers:
      return "local, whole layers";
  }
  return "";
}

}  // namespace

std::optional<std::string> BridgeMlaPipelineLayout(const config::ModelConfig& model,
                                                   int64_t stages) {
  if (model.NumLayers() != 61) return std::nullopt;
  const std::string last =
      model.num_mtp_layers > 0 ? fmt::format("m*{}L", model.num_mtp_layers) : std::string("L");
  switch (stages) {
    case 4:
      return fmt::format("Et*16|t*16|t*16|t*13{}", last);
    case 8:
      return fmt::format("Et*8|(t*8|)*6t*5{}", last);
    case 16:
      return fmt::format("Et*4|(t*4|)*14t{}", last);
    case 32:
      return fmt::format("Et|(tt|)*30{}", last);
    default:
      return std::nullopt;
  }
}

std::string ContainerOf(const io::CalibrationRow& row) {
  for (const std::string* text : {&row.notes, &row.source}) {
    for (const std::string_view marker : {"container ", "("}) {
      size_t at = text->find(marker);
      while (at != std::string::npos) {
        const size_t start = at + marker.size();
        const std::string candidate = text->substr(start, 5);
        if (candidate.size() == 5 && std::isdigit(static_cast<unsigned char>(candidate[0])) &&
            std::isdigit(static_cast<unsigned char>(candidate[1])) && candidate[2] == '.' &&
            std::isdigit(static_cast<unsigned char>(candidate[3])) &&
            std::isdigit(static_cast<unsigned char>(candidate[4]))) {
          // A patch release: "26.04.01".
          const std::string patch = text->substr(start + 5, 3);
          if (patch.size() == 3 && patch[0] == '.' &&
              std::isdigit(static_cast<unsigned char>(patch[1])) &&
              std::isdigit(static_cast<unsigned char>(patch[2]))) {
            return candidate + patch;
          }
          return candidate;
        }
        at = text->find(marker, start);
      }
    }
  }
  return "";
}

namespace {

// A layout one release's table printed and the layout its scripts ran (run_* 0: the printed
// column stands). A printed VP of 1 and none are the same.
struct PrintedLayoutFix {
  std::string_view preset;
  std::string_view container;
  std::string_view gpu;
  std::string_view precision;   // the row's precision column, lower case
  int64_t tp, pp, vp, ep, mbs;  // as printed
  int64_t run_pp, run_vp, run_mbs, run_ep;
  std::string_view why;
};

// Every entry has two witnesses, the release's recipe file and either the printed columns' own
// arithmetic or the measured throughput of the recipe's layout in neighbouring tables
// (docs/performance-summary-archive.md; containers map to releases as in ApplyOlder*).
constexpr std::array<PrintedLayoutFix, 5> kPrintedLayoutFixes = {{
    // 25.11 = v0.2.0, scripts/performance/configs/gpt_oss/workload_base_configs.py: every layout
    // starts from EP 8, GBS 512, MBS 1. H100: PP 4 leaves DP 16, so the printed MBS 4 at GBS 512
    // needs GA 8, not the printed 2; GPT_OSS_120B_H100_BF16_BASE_CONFIG keeps MBS 1.
    {"GPT-OSS-120B", "25.11", "H100", "bf16", 1, 4, 1, 8, 4, 0, 0, 1, 0,
     "MBS 1 (the table's PP 4, MBS 4, GA 2 contradict each other; v0.2.0 "
     "GPT_OSS_120B_H100_BF16_BASE_CONFIG)"},
    // B200: GPT_OSS_120B_B200_BF16_BASE_CONFIG sets EP 64; the row's 8,213 tokens/s/GPU is what
    // the 26.02 table measured for that recipe at EP 64 (8,047), not what EP 8 reached from the
    // 26.04 tables on (13,045 to 13,722).
    {"GPT-OSS-120B", "25.11", "B200", "bf16", 1, 1, 1, 8, 4, 0, 0, 0, 64,
     "EP 64 (the table prints EP 8; v0.2.0 GPT_OSS_120B_B200_BF16_BASE_CONFIG)"},
    // 26.02.01 = v0.3.1, scripts/performance/configs/llama/llama3_workload_base_configs.py:
    // LLAMA3_70B_PRETRAIN_CONFIG_GB300_FP8_MX_V2 and _NVFP4_V2 are PP 4, VP 5 with the base's
    // MBS 1, as in 26.02 and 26.04. MXFP8: the printed PP 4 without interleaving at MBS 2 runs
    // 8 micro-batches, a 3/11 pipeline bubble, yet the row's 4,798 tokens/s/GPU lies among the
    // VP 5, MBS 1 rows of 26.02, 26.04 and 26.04.01 (4,596, 4,742, 4,864).
    {"Llama-3-70B", "26.02.01", "GB300", "mxfp8", 1, 4, 1, 1, 2, 4, 5, 1, 0,
     "PP 4, VP 5, MBS 1 (the table prints no VP and MBS 2; v0.3.1 "
     "LLAMA3_70B_PRETRAIN_CONFIG_GB300_FP8_MX_V2)"},
    // NVFP4: the printed TP 1, PP 1 without FSDP holds all 70.6 B parameters on every GPU, bf16
    // weights (141 GB) and fp32 main gradients (282 GB) alone over the 288 GB; the row's 7,002
    // lies among the VP 5 rows of 26.02, 26.04 and 26.04.01 (6,798, 7,397, 7,296).
    {"Llama-3-70B", "26.02.01", "GB300", "nvfp4", 1, 1, 1, 1, 2, 4, 5, 1, 0,
     "PP 4, VP 5, MBS 1 (the table prints PP 1 without FSDP and MBS 2, which does not fit; "
     "v0.3.1 LLAMA3_70B_PRETRAIN_CONFIG_GB300_NVFP4_V2)"},
    // 25.09 = v0.1.0rc3 / rc4, scripts/performance/configs/llama3/llama3_70b_llm_pretrain.yaml,
    // gb200 fp8_mx: TP 2, PP 4, VP 5, MBS 1. The row prints MBS 2 beside GA 16, but GBS 128 over
    // DP 8 is 16 sequences per rank: GA 16 is MBS 1.
    {"Llama-3-70B", "25.09", "GB200",
     "fp8-blockwise/mx (parenthesized variant: 32x32 mx on gb200/b200, 128x128/1x128 blockwise on "
     "h100)",
     2, 4, 5, 1, 2, 0, 0, 1, 0,
     "MBS 1 (the table prints MBS 2 beside GA 16, which at GBS 128 and DP 8 is MBS 1; "
     "v0.1.0rc4 llama3_70b_llm_pretrain.yaml gb200 fp8_mx)"},
}};

}  // namespace

std::optional<std::string> CorrectPublishedLayout(const std::string& preset, const std::string& gpu,
                                                  io::CalibrationRow& row) {
  const std::string container = ContainerOf(row);
  const std::string precision = Lower(row.precision);
  for (const PrintedLayoutFix& fix : kPrintedLayoutFixes) {
    if (fix.preset != preset || fix.container != container || fix.gpu != gpu ||
        fix.precision != precision || row.tp.value_or(1) != fix.tp ||
        row.pp.value_or(1) != fix.pp || row.vp.value_or(1) != fix.vp ||
        row.ep.value_or(1) != fix.ep || row.mbs.value_or(1) != fix.mbs) {
      continue;
    }
    if (fix.run_pp > 0) row.pp = fix.run_pp;
    if (fix.run_vp > 0) row.vp = fix.run_vp;
    if (fix.run_mbs > 0) row.mbs = fix.run_mbs;
    if (fix.run_ep > 0) row.ep = fix.run_ep;
    return fmt::format("layout from the {} recipe: {}", container, fix.why);
  }
  return std::nullopt;
}

std::optional<std::string> ApplyBridgeActivationOffload(const std::string& preset,
                                                        const std::string& gpu,
                                                        const std::string& precision_lower,
                                                        config::TrainingConfig& training,
                                                        const std::string& container) {
  struct Offload {
    std::string_view preset;
    std::string_view gpu;
    bool bf16;  // else the FP8 current-scaling recipe (the plain "FP8" of the tables)
    int64_t tp, mbs, layers;
    std::string_view before;  // applies to containers before this one ("" = every container)
  };
  // clang-format off
  static constexpr Offload kOffloads[] = {
      {"Llama-3-70B", "GB300", true, 1, 2, 30, ""}, {"Llama-3-70B", "GB300", false, 1, 2, 20, ""},
      {"Llama-3-70B", "GB200", true, 1, 1, 20, ""}, {"Llama-3-70B", "GB200", false, 1, 2, 40, ""},
      {"Llama-3-70B", "B200", false, 1, 1, 5, ""},
      {"Llama-3.1-405B", "GB300", true, 2, 1, 40, ""}, {"Llama-3.1-405B", "GB300", false, 2, 1, 10, ""},
      // llama31_405b_llm_pretrain.yaml (25.09): 95; workload_base_configs.py from 25.11: 92.
      {"Llama-3.1-405B", "GB200", false, 2, 1, 95, "25.11"},
      {"Llama-3.1-405B", "GB200", false, 2, 1, 92, ""},
  };
  // clang-format on
  const config::ParallelSizes& p = training.parallel;
  if (!training.data_parallel.megatron_fsdp || p.pipeline != 1 ||
      PrecisionOf(precision_lower) == Precision::kMxfp8 ||
      precision_lower.find("fp4") != std::string::npos) {
    return std::nullopt;
  }
  const bool bf16 = PrecisionOf(precision_lower) == Precision::kBf16;
  for (const Offload& offload : kOffloads) {
    if (offload.preset != preset || offload.gpu != gpu || offload.bf16 != bf16 ||
        offload.tp != p.tensor || offload.mbs != training.batch.micro_batch_size ||
        (!offload.before.empty() && (container.empty() || container >= offload.before))) {
      continue;
    }
    training.cpu_offloading = true;
    training.cpu_offloading_num_layers = offload.layers;
    return fmt::format("Megatron-Bridge recipe: activations of {} layers offloaded to the host",
                       offload.layers);
  }
  return std::nullopt;
}

std::vector<std::string> ApplyBridgeRecipe(const std::string& preset, const std::string& gpu,
                                           const std::string& precision_lower,
                                           config::TrainingConfig& training,
                                           const std::string& container) {
  const Precision precision = PrecisionOf(precision_lower);
  // Every release's H100 script says so, whichever layout the row ran.
  SetDeepSeekH100GradReduce(preset, gpu, training);
  const config::ParallelSizes& p = training.parallel;
  for (Recipe recipe : Recipes()) {
    if (recipe.preset != preset || recipe.gpu != gpu || recipe.precision != precision ||
        recipe.tp != p.tensor || recipe.pp != p.pipeline || recipe.vp != p.virtual_stages ||
        recipe.ep != p.expert || recipe.mbs != training.batch.micro_batch_size) {
      continue;
    }
    bool older_dispatch = false;
    if (preset == "DeepSeek-V3") {
      if (const std::optional<OlderDispatch> older = OlderDeepSeekDispatch(gpu, container)) {
        recipe.dispatch = older->dispatch;
        recipe.ep_overlap = older->ep_overlap;
        older_dispatch = true;
      }
      ApplyOlderDeepSeekRecipe(gpu, container, training.moe.capacity_factor.has_value(), recipe);
    }
    if (preset == "GPT-OSS-120B") {
      if (const std::optional<OlderDispatch> older =
              OlderGptOssDispatch(gpu, precision, container)) {
        recipe.dispatch = older->dispatch;
        recipe.ep_overlap = older->ep_overlap;
      }
    }
    if (preset.rfind("Qwen3-", 0) == 0) ApplyOlderQwenRecipe(gpu, container, recipe);
    SetDispatch(recipe.dispatch, recipe.flex_num_sms, training.moe);
    training.moe.overlap_expert_parallel_comm = recipe.ep_overlap;
    // Every recipe here that overlaps the EP exchanges also delays the weight gradients
    // (comm_overlap.delay_wgrad_compute = True: deepseek/common.py, deepseek/b200,
    // gpt_oss/common.py, gpt_oss/gb200, qwen/common.py), and so did the older scripts whose
    // DeepSeek-V3 H100 runs overlapped (OlderDeepSeekDispatch).
    training.moe.delay_wgrad_compute = recipe.ep_overlap;
    training.precision.fp8_dot_product_attention = recipe.fp8_attention;
    // fp8_output_proj arrived with Megatron-LM's May 2026 TransformerConfig; an older container's
    // run kept the BF16 output layer.
    training.precision.fp8_output_proj = recipe.fp8_output_proj && !older_dispatch;
    // Every full-iteration helper sets model.use_transformer_engine_op_fuser = True
    // (deepseek/common.py, gpt_oss/common.py, qwen/common.py).
    training.moe.te_op_fuser = recipe.graphs == Graphs::kFullIteration && !older_dispatch;
    // They also give HybridEP a rank budget and page the expert inputs
    // (moe_expert_rank_capacity_factor 1.5, moe_paged_stash,
    // moe_paged_stash_buffer_size_factor_cuda 1.2: the same helpers at v0.6.0,
    // scripts/performance/configs/{deepseek,gpt_oss,qwen} at v0.5.0 and v0.5.1).
    if (training.moe.te_op_fuser && training.moe.HybridEpRuns()) {
      training.moe.rank_capacity_factor = 1.5;
      training.moe.paged_stash = true;
      training.moe.paged_stash_buffer_factor = 1.2;
    }
    training.cuda_graph = {};
    switch (recipe.graphs) {
      case Graphs::kNone:
        break;
      case Graphs::kTeAttnRouterPreprocess:
        training.cuda_graph.impl = config::CudaGraphImpl::kTransformerEngine;
        training.cuda_graph.modules = {"attn", "moe_router", "moe_preprocess"};
        break;
      case Graphs::kTeRouterPreprocess:
        training.cuda_graph.impl = config::CudaGraphImpl::kTransformerEngine;
        training.cuda_graph.modules = {"moe_router", "moe_preprocess"};
        break;
      case Graphs::kFullIteration:
        training.cuda_graph.impl = config::CudaGraphImpl::kFullIteration;
        break;
      case Graphs::kLocalLayers:
        training.cuda_graph.impl = config::CudaGraphImpl::kLocal;
        break;
    }
    training.recompute = {};
    if (!recipe.recompute.empty()) {
      training.recompute.granularity = config::RecomputeGranularity::kSelective;
      training.recompute.modules.assign(recipe.recompute.begin(), recipe.recompute.end());
    }
    std::string modules;
    for (const std::string_view module : recipe.recompute) {
      if (!modules.empty()) modules.push_back('+');
      modules.append(module);
    }
    return {
        fmt::format("Megatron-Bridge recipe: dispatcher {}, CUDA graphs {}, EP overlap {}, "
                    "recompute {}{}{}",
                    DispatchName(recipe.dispatch), GraphsName(recipe.graphs),
                    recipe.ep_overlap ? "on" : "off", modules.empty() ? "none" : modules,
                    training.precision.fp8_output_proj ? ", MXFP8 output layer" : "",
                    GradReduceNote(training))};
  }
  // No recipe of the row's layout: an older container's scripts still set the dispatcher of
  // every DeepSeek-V3 run of their tables, whatever the layout.
  if (preset == "DeepSeek-V3") {
    if (const std::optional<OlderDispatch> older = OlderDeepSeekDispatch(gpu, container)) {
      SetDispatch(older->dispatch, 0, training.moe);
      training.moe.overlap_expert_parallel_comm = older->ep_overlap;
      training.moe.delay_wgrad_compute = older->ep_overlap;
      return {fmt::format("Megatron-Bridge {} performance scripts: dispatcher {}, EP overlap {}{}",
                          container, DispatchName(older->dispatch),
                          older->ep_overlap ? "on" : "off", GradReduceNote(training))};
    }
  }
  return {};
}

}  // namespace trainscope::bench
