#include "trainscope/io/megatron_args.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>

#include "trainscope/error.h"
#include "trainscope/io/input_ranges.h"
#include "trainscope/io/megatron_flags.h"
#include "trainscope/io/suggest.h"

namespace trainscope::io {
namespace {

using internal::AllFlags;
using internal::Arity;
using internal::FlagSpec;
using internal::FlagUse;
using internal::IsArchitectureFlag;
using internal::IsIgnoredFlag;
using internal::IsModelFeatureSwitch;
using internal::IsModelFeatureValue;
using internal::ParseInteger;

const FlagSpec* FindSpec(const std::vector<FlagSpec>& specs, std::string_view name) {
  for (const FlagSpec& spec : specs) {
    if (std::find(spec.names.begin(), spec.names.end(), name) != spec.names.end()) return &spec;
  }
  return nullptr;
}

bool IsFlagToken(const std::string& token) {
  return token.size() > 1 && token[0] == '-' && !(token[1] >= '0' && token[1] <= '9');
}

// Reads the values that follow a flag: "--x=v", or the next token(s) that are not flags.
FlagUse ReadFlag(std::span<const std::string> args, size_t& i, Arity arity) {
  FlagUse use;
  const std::string& token = args[i];
  const size_t equals = token.find('=');
  use.name = token.substr(0, equals);
  if (equals != std::string::npos) {
    if (arity == Arity::kNone) {
      throw UsageError(fmt::format("{}: takes no value (got \"{}\")", Abbreviated(use.name),
                                   Abbreviated(token)));
    }
    use.values.push_back(token.substr(equals + 1));
    return use;
  }
  if (arity == Arity::kNone) return use;
  while (i + 1 < args.size() && !IsFlagToken(args[i + 1])) {
    use.values.push_back(args[++i]);
    if (arity == Arity::kOne) break;
  }
  if (use.values.empty()) throw UsageError(fmt::format("{}: missing value", use.name));
  return use;
}

// The product of `factors`, or throws UsageError naming `flags` when it exceeds kMaxWorldSize
// (checked multiplication: each factor is at most kMaxWorldSize, the product may not be).
int64_t GridProduct(std::initializer_list<int64_t> factors, std::string_view flags) {
  int64_t product = 1;
  for (const int64_t factor : factors) {
    if (__builtin_mul_overflow(product, factor, &product) || product > kMaxWorldSize) {
      throw UsageError(
          fmt::format("{}: the product exceeds the largest world size (expected at "
                      "most {} GPUs)",
                      flags, kMaxWorldSize));
    }
  }
  return product;
}

// Every process grid must fit in a world of at most kMaxWorldSize GPUs; checking the products
// here keeps all later size arithmetic far inside 64 bits. With no --num-gpus, the world size
// defaults to lcm(t·c·p·d, u·e·p).
void CheckGridAndDefaultWorldSize(CliRequest& request) {
  config::ParallelSizes& p = request.training.parallel;
  const int64_t dense = GridProduct({p.tensor, p.context, p.pipeline, p.data.value_or(1)},
                                    "--tp x --cp x --pp x --dp");
  const int64_t expert =
      GridProduct({p.ExpertTensor(), p.expert, p.pipeline}, "--etp x --ep x --pp");
  if (request.world_size_given) return;
  const int64_t lcm = dense / std::gcd(dense, expert) * expert;  // <= 1e14: no overflow
  if (lcm > kMaxWorldSize) {
    throw UsageError(
        fmt::format("--num-gpus: the default world size lcm(t·c·p·d = {}, u·e·p = {}) "
                    "= {} exceeds {} (pass sizes whose grids fit)",
                    dense, expert, lcm, kMaxWorldSize));
  }
  p.world_size = lcm;
}

// Spellings from other launchers (vLLM, SGLang, Hugging Face / DeepSpeed configs) that edit
// distance alone would not map to the Megatron flag users meant.
constexpr std::pair<std::string_view, std::string_view> kForeignSpellings[] = {
    {"--tensor-parallel-size", "--tensor-model-parallel-size"},
    {"--pipeline-parallel-size", "--pipeline-model-parallel-size"},
    {"--expert-parallel-size", "--expert-model-parallel-size"},
    {"--tp-size", "--tensor-model-parallel-size"},
    {"--pp-size", "--pipeline-model-parallel-size"},
    {"--ep-size", "--expert-model-parallel-size"},
    {"--dp-size", "--data-parallel-size"},
    {"--cp-size", "--context-parallel-size"},
    {"--max-seq-len", "--seq-length"},
    {"--max-model-len", "--seq-length"},
    {"--seq-len", "--seq-length"},
    {"--world-size-gpus", "--num-gpus"},
    {"--nproc-per-node", "--gpus-per-node"},
    {"--model-name", "--model"},
    {"--config", "--model-config"},
};

std::string FlagSuggestion(const std::string& name) {
  std::string dashed = name;
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  for (const auto& [foreign, megatron] : kForeignSpellings) {
    if (dashed == foreign) return fmt::format(" (did you mean {}?)", megatron);
  }
  return DidYouMean(name, internal::KnownFlagNames());
}

void RejectOutOfScope(const CliRequest& request, const std::string& name,
                      std::span<const FlagGroup> accepted, FlagGroup group) {
  if (std::find(accepted.begin(), accepted.end(), group) != accepted.end()) return;
  throw UsageError(
      fmt::format("{}: not used by `{}` ({})", name, request.command, FlagGroupTitle(group)));
}

bool Accepts(std::span<const FlagGroup> accepted, FlagGroup group) {
  return std::find(accepted.begin(), accepted.end(), group) != accepted.end();
}

}  // namespace

std::string_view FlagGroupTitle(FlagGroup group) {
  switch (group) {
    case FlagGroup::kModel:
      return "model";
    case FlagGroup::kOutput:
      return "output";
    case FlagGroup::kRank:
      return "rank";
    case FlagGroup::kTraining:
      return "Megatron-LM parallel, batch and training";
    case FlagGroup::kWorkload:
      return "workload format";
    case FlagGroup::kGpu:
      return "GPU";
    case FlagGroup::kCluster:
      return "cluster";
    case FlagGroup::kMemory:
      return "memory model";
    case FlagGroup::kCostModel:
      return "cost model";
    case FlagGroup::kSimulate:
      return "simulation outputs";
    case FlagGroup::kPlan:
      return "planner";
    case FlagGroup::kWeightSync:
      return "weight sync";
    case FlagGroup::kRl:
      return "RL step";
  }
  return "";
}

namespace {

// Parses `args` (flags only) onto `request`; see ParseCommandLine.
void ParseFlags(std::span<const std::string> args, std::span<const FlagGroup> accepted,
                const std::vector<FlagSpec>& specs, CliRequest& request) {
  const bool training = Accepts(accepted, FlagGroup::kTraining);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& token = args[i];
    if (!IsFlagToken(token)) {
      throw UsageError(
          fmt::format("unexpected argument \"{}\" (flags start with --)", Abbreviated(token)));
    }
    const std::string name = token.substr(0, token.find('='));
    if (name == "--help" || name == "-h") {
      request.help = true;
    } else if (const FlagSpec* spec = FindSpec(specs, name)) {
      RejectOutOfScope(request, name, accepted, spec->group);
      const FlagUse use = ReadFlag(args, i, spec->arity);
      spec->apply(request, use);
      request.parallel_flags_given |= spec->parallel;
      if (spec->group == FlagGroup::kTraining) request.given_flags.emplace_back(spec->names[0]);
    } else if (IsArchitectureFlag(name)) {
      RejectOutOfScope(request, name, accepted, FlagGroup::kTraining);
      const FlagUse use = ReadFlag(args, i, Arity::kOne);
      request.architecture_flags.push_back({use.name, ParseInteger(use, use.values.front(), 1)});
    } else if (IsModelFeatureSwitch(name) || IsModelFeatureValue(name)) {
      RejectOutOfScope(request, name, accepted, FlagGroup::kTraining);
      const FlagUse use =
          ReadFlag(args, i, IsModelFeatureSwitch(name) ? Arity::kNone : Arity::kOne);
      request.feature_flags.push_back(
          {use.name, use.values.empty() ? std::string() : use.values.front()});
    } else if (IsIgnoredFlag(name) && training) {
      // Skip the value(s), written as "--x=v" or as the following non-flag tokens.
      if (token.find('=') == std::string::npos) {
        while (i + 1 < args.size() && !IsFlagToken(args[i + 1])) ++i;
      }
      request.ignored_flags.push_back(name);
    } else if (IsIgnoredFlag(name)) {
      RejectOutOfScope(request, name, accepted, FlagGroup::kTraining);
    } else {
      throw UsageError(fmt::format("unknown flag {}{}", Abbreviated(name), FlagSuggestion(name)));
    }
  }
}

// --fix FLAG=VALUE (or FLAG for a switch): the Megatron training flag FLAG, with or without
// its leading dashes, applied as if given directly.
void ApplyFixes(const std::vector<FlagSpec>& specs, CliRequest& request) {
  constexpr FlagGroup kTrainingOnly[] = {FlagGroup::kTraining};
  for (const std::string& fix : request.plan.fixes) {
    std::string token = fix.rfind("--", 0) == 0 ? fix : "--" + fix;
    const std::string name = token.substr(0, token.find('='));
    const FlagSpec* spec = FindSpec(specs, name);
    if (spec == nullptr || spec->group != FlagGroup::kTraining) {
      throw UsageError(fmt::format("--fix: \"{}\" is not a Megatron training flag{}", fix,
                                   FlagSuggestion(name)));
    }
    if (spec->arity == Arity::kNone && (token == name + "=true" || token == name + "=1")) {
      token = name;
    }
    const std::string args[] = {token};
    ParseFlags(args, kTrainingOnly, specs, request);
  }
}

// The most samples one step may pack: dynamic batching holds every sample's length.
constexpr int64_t kMaxDynamicBatchSamples = 10'000'000;

// Lists `flag` as ignored once, however often the flags are applied.
void NoteIgnored(CliRequest& request, std::string_view flag) {
  std::vector<std::string>& ignored = request.ignored_flags;
  if (std::find(ignored.begin(), ignored.end(), flag) == ignored.end()) ignored.emplace_back(flag);
}

// Applies slime's dynamic-batching flags to the training batch; see ParseCommandLine.
void ApplyDynamicBatching(CliRequest& request) {
  const DynamicBatchFlags& flags = request.dynamic_batch;
  config::BatchConfig& batch = request.training.batch;
  if (!flags.enabled) {
    if (flags.max_tokens_per_gpu) NoteIgnored(request, "--max-tokens-per-gpu");
    if (flags.data_pad_size_multiplier) NoteIgnored(request, "--data-pad-size-multiplier");
    return;
  }
  if (!flags.max_tokens_per_gpu) {
    throw InputError("--use-dynamic-batch-size: needs --max-tokens-per-gpu N (slime asserts it)");
  }
  if (request.training.framework.framework != config::Framework::kSlime) {
    throw InputError(fmt::format(
        "--use-dynamic-batch-size: slime's dynamic batching needs --framework slime (got {})",
        config::ToString(request.training.framework.framework)));
  }
  if (request.training.sequence_layout == config::SequenceLayout::kBshd) {
    throw InputError(
        "--sequence-layout bshd: slime packs each dynamic micro-batch into one THD sequence "
        "(drop it or use thd)");
  }
  if (batch.vision_tokens_per_sample > 0) {
    throw InputError(
        "--vision-tokens-per-sample: not modelled with --use-dynamic-batch-size (a micro-batch "
        "holds a varying number of samples)");
  }
  if (batch.global_batch_size.value_or(0) > kMaxDynamicBatchSamples) {
    throw InputError(fmt::format(
        "--global-batch-size: dynamic batching packs every sample of the step, at most {} (got {})",
        kMaxDynamicBatchSamples, *batch.global_batch_size));
  }
  const auto& given = request.given_flags;
  if (std::find(given.begin(), given.end(), "--micro-batch-size") != given.end()) {
    NoteIgnored(request, "--micro-batch-size");
  }
  batch.micro_batch_size = 1;
  batch.max_tokens_per_gpu = flags.max_tokens_per_gpu;
  batch.data_pad_size_multiplier =
      flags.data_pad_size_multiplier.value_or(config::BatchConfig{}.data_pad_size_multiplier);
}

// --pipeline-model-parallel-layout sets v = stages / p when v was not given
// (arguments.py "Uneven virtual pipeline parallelism"); a given v that differs, or a stage count
// p does not divide, is left for Validate() to report as C50.
void ApplyPipelineLayout(CliRequest& request) {
  config::TrainingConfig& t = request.training;
  const auto stages = static_cast<int64_t>(t.split.layout.size());
  if (stages == 0 || t.parallel.virtual_stages != 1 || stages % t.parallel.pipeline != 0) return;
  t.parallel.virtual_stages = stages / t.parallel.pipeline;
}

}  // namespace

CliRequest ParseCommandLine(std::span<const std::string> args,
                            std::span<const FlagGroup> accepted) {
  CliRequest request;
  if (args.empty()) throw UsageError("missing command");
  request.command = args.front();
  const std::vector<FlagSpec> specs = AllFlags();
  ParseFlags(args.subspan(1), accepted, specs, request);
  ApplyFixes(specs, request);
  request.training = config::WithFrameworkDefaults(std::move(request.training));
  ApplyDynamicBatching(request);
  ApplyPipelineLayout(request);
  CheckGridAndDefaultWorldSize(request);
  return request;
}

void ApplyTrainingFlags(std::span<const std::string> tokens, CliRequest& request) {
  constexpr FlagGroup kTrainingOnly[] = {FlagGroup::kTraining};
  ParseFlags(tokens, kTrainingOnly, AllFlags(), request);
  request.training = config::WithFrameworkDefaults(std::move(request.training));
  ApplyDynamicBatching(request);
  ApplyPipelineLayout(request);
}

std::string FlagHelp(FlagGroup group) {
  std::string out;
  for (const FlagSpec& spec : AllFlags()) {
    if (spec.group != group) continue;
    std::string names;
    for (const std::string_view name : spec.names) {
      if (!names.empty()) names.append(", ");
      names.append(name);
    }
    if (!spec.value.empty()) names.append(" ").append(spec.value);
    out += names.size() < 34 ? fmt::format("  {:<34}{}\n", names, spec.help)
                             : fmt::format("  {}\n  {:<34}{}\n", names, "", spec.help);
  }
  return out;
}

namespace {

int64_t ModelValue(const config::ModelConfig& model, std::string_view flag) {
  if (flag == "--num-layers") return model.NumLayers();
  if (flag == "--hidden-size") return model.hidden_size;
  if (flag == "--ffn-hidden-size") return model.ffn_hidden_size;
  if (flag == "--num-attention-heads") return model.attention.num_heads;
  if (flag == "--num-query-groups") return model.attention.num_kv_heads;
  if (flag == "--kv-channels") return model.attention.head_dim;
  if (flag == "--num-experts") return model.moe.num_experts;
  if (flag == "--moe-router-topk") return model.moe.top_k;
  if (flag == "--moe-ffn-hidden-size") return model.moe.expert_ffn_hidden_size;
  if (flag == "--moe-shared-expert-intermediate-size") {
    return model.moe.shared_expert_ffn_hidden_size;
  }
  if (flag == "--mtp-num-layers") return model.num_mtp_layers;
  if (flag == "--linear-conv-kernel-dim") return model.gdn.conv_kernel;
  if (flag == "--linear-key-head-dim") return model.gdn.key_head_dim;
  if (flag == "--linear-value-head-dim") return model.gdn.value_head_dim;
  if (flag == "--linear-num-key-heads") return model.gdn.num_key_heads;
  if (flag == "--linear-num-value-heads") return model.gdn.num_value_heads;
  if (flag == "--q-lora-rank") return model.mla.q_lora_rank;
  if (flag == "--kv-lora-rank") return model.mla.kv_lora_rank;
  if (flag == "--qk-head-dim") return model.mla.qk_nope_head_dim;  // Megatron's name for nope
  if (flag == "--qk-pos-emb-head-dim") return model.mla.qk_rope_head_dim;
  if (flag == "--v-head-dim") return model.mla.v_head_dim;
  // One group is no grouping; the model records that as 0.
  if (flag == "--moe-router-num-groups") return std::max<int64_t>(1, model.moe.num_groups);
  if (flag == "--moe-router-group-topk") return std::max<int64_t>(1, model.moe.group_top_k);
  return model.max_position_embeddings;
}

// --linear-attention-freq N: every N-th layer (1-based) is softmax attention, the others Gated
// DeltaNet (Megatron-LM arguments.py, "(N-1):1 ratio"). Returns whether the model follows it.
bool FollowsLinearAttentionFreq(const config::ModelConfig& model, int64_t n) {
  for (int64_t i = 0; i < model.NumLayers(); ++i) {
    const bool softmax =
        model.layers[static_cast<size_t>(i)].mixer != config::MixerKind::kGatedDeltaNet;
    if (softmax != ((i + 1) % n == 0)) return false;
  }
  return true;
}

// Checks one model-feature flag; returns false when it describes nothing checkable (ignored).
bool CheckFeatureFlag(const config::ModelConfig& model, const ModelFeatureFlag& feature) {
  const auto contradiction = [&](std::string_view what) {
    return InputError(fmt::format("{}: contradicts model {} ({})", feature.flag, model.name, what));
  };
  if (feature.flag == "--multi-latent-attention") {
    if (!model.HasMla()) throw contradiction("it has no multi-latent attention");
  } else if (feature.flag == "--attention-output-gate") {
    if (!model.attention.output_gate) throw contradiction("its attention has no output gate");
  } else if (feature.flag == "--moe-shared-expert-gate") {
    if (!model.moe.shared_expert_gate) throw contradiction("it has no gated shared expert");
  } else if (feature.flag == "--experimental-attention-variant") {
    if (feature.value != "gated_delta_net") {
      throw InputError(fmt::format("{}: unknown value \"{}\" (expected gated_delta_net)",
                                   feature.flag, Abbreviated(feature.value)));
    }
    if (!model.HasGdn()) throw contradiction("it has no Gated DeltaNet layers");
  } else {  // --linear-attention-freq
    const bool integer =
        !feature.value.empty() && std::all_of(feature.value.begin(), feature.value.end(),
                                              [](char ch) { return ch >= '0' && ch <= '9'; });
    if (!integer || feature.value.size() > 6) return false;  // a Python list expression
    const int64_t n = std::stoll(feature.value);
    if (n < 1 || !FollowsLinearAttentionFreq(model, n)) {
      throw contradiction(
          fmt::format("its layers do not have softmax attention on every {}-th "
                      "layer and Gated DeltaNet elsewhere",
                      feature.value));
    }
  }
  return true;
}

}  // namespace

void ApplyModelDependentFlags(const config::ModelConfig& model, CliRequest& request) {
  for (const ModelFeatureFlag& feature : request.feature_flags) {
    if (!CheckFeatureFlag(model, feature)) request.ignored_flags.push_back(feature.flag);
  }
  for (const ArchitectureFlag& flag : request.architecture_flags) {
    // slime and Megatron-Bridge scripts pass --ffn-hidden-size on models without a dense layer.
    if (flag.flag == "--ffn-hidden-size" && model.ffn_hidden_size == 0) {
      request.ignored_flags.push_back(flag.flag);
      continue;
    }
    // Megatron's MLA reads neither (multi_latent_attention.py sizes heads from qk_head_dim,
    // qk_pos_emb_head_dim and v_head_dim); DeepSeek-V3 launch scripts still pass them.
    if ((flag.flag == "--kv-channels" || flag.flag == "--num-query-groups") && model.HasMla()) {
      request.ignored_flags.push_back(flag.flag);
      continue;
    }
    const int64_t expected = ModelValue(model, flag.flag);
    if (flag.value != expected) {
      throw InputError(fmt::format("{}: contradicts model {} (got {}, the model has {})", flag.flag,
                                   model.name, flag.value, expected));
    }
  }
  if (!request.layers_per_virtual_stage) return;
  // C16: v = (L + a_e + a_l) / (p · n_v) (arguments.py:953-975).
  config::TrainingConfig& training = request.training;
  const int64_t slots = model.NumLayers() + (training.split.account_for_embedding ? 1 : 0) +
                        (training.split.account_for_loss ? 1 : 0);
  const int64_t per_stage = *request.layers_per_virtual_stage * training.parallel.pipeline;
  if (slots % per_stage != 0) {
    throw InputError(
        fmt::format("--num-layers-per-virtual-pipeline-stage: {} layer slots are not divisible by "
                    "{} layers per virtual stage x {} pipeline stages",
                    slots, *request.layers_per_virtual_stage, training.parallel.pipeline));
  }
  training.parallel.virtual_stages = slots / per_stage;
}

}  // namespace trainscope::io
