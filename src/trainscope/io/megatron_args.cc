#include "trainscope/io/megatron_args.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <functional>
#include <limits>
#include <numeric>
#include <string_view>

#include "trainscope/error.h"
#include "trainscope/io/megatron_flags.h"

namespace trainscope::io {
namespace {

using internal::AllFlags;
using internal::Arity;
using internal::FlagSpec;
using internal::FlagUse;
using internal::IsArchitectureFlag;
using internal::IsIgnoredFlag;
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
      throw UsageError(fmt::format("{}: takes no value (got \"{}\")", use.name, token));
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

int64_t Lcm(int64_t a, int64_t b) { return a / std::gcd(a, b) * b; }

void DefaultWorldSize(CliRequest& request) {
  if (request.world_size_given) return;
  config::ParallelSizes& p = request.training.parallel;
  const int64_t dense = p.tensor * p.context * p.pipeline * p.data.value_or(1);
  p.world_size = Lcm(dense, p.ExpertTensor() * p.expert * p.pipeline);
}

}  // namespace

CliRequest ParseCommandLine(std::span<const std::string> args) {
  CliRequest request;
  if (args.empty()) throw UsageError("missing command");
  request.command = args.front();
  if (request.command == "--help" || request.command == "-h") request.command = "help";
  const std::vector<FlagSpec> specs = AllFlags();
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& token = args[i];
    if (!IsFlagToken(token)) {
      throw UsageError(fmt::format("unexpected argument \"{}\" (flags start with --)", token));
    }
    const std::string name = token.substr(0, token.find('='));
    if (const FlagSpec* spec = FindSpec(specs, name)) {
      const FlagUse use = ReadFlag(args, i, spec->arity);
      spec->apply(request, use);
      request.parallel_flags_given |= spec->parallel;
    } else if (IsArchitectureFlag(name)) {
      const FlagUse use = ReadFlag(args, i, Arity::kOne);
      request.architecture_flags.push_back({use.name, ParseInteger(use, use.values.front(), 1)});
    } else if (IsIgnoredFlag(name)) {
      // Skip the value(s), written as "--x=v" or as the following non-flag tokens.
      if (token.find('=') == std::string::npos) {
        while (i + 1 < args.size() && !IsFlagToken(args[i + 1])) ++i;
      }
      request.ignored_flags.push_back(name);
    } else if (name == "--help" || name == "-h") {
      request.command = "help";
    } else {
      throw UsageError(fmt::format("unknown flag {}", name));
    }
  }
  DefaultWorldSize(request);
  return request;
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
  return model.max_position_embeddings;
}

}  // namespace

void ApplyModelDependentFlags(const config::ModelConfig& model, CliRequest& request) {
  for (const ArchitectureFlag& flag : request.architecture_flags) {
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

std::string UsageText() {
  return R"(usage: trainscope <command> (--model NAME | --model-config PATH) [flags]

commands:
  params     exact parameter counts; per-rank counts when parallel flags are given
  validate   check a Megatron-Core configuration; summary of the layout or every violated rule
  groups     ranks of every TP, CP, DP, DP-CP, PP, EP, ETP, expert-DP, embedding group
  memory     per-rank peak memory (weights, grads, optimizer, activations, buffers) and
             whether it fits the GPU (--gpu H100|H200|H800|H20|A100|A800|L20|B200|GB200)
  workload   every compute and communication op of one rank's training step
             (--rank R, --format json|aicb|simai, or --summary [--json])
  simulate   step time, tokens/s/GPU, model TFLOP/s/GPU, MFU and where the time goes, from a
             discrete-event simulation of every pipeline stage on a cluster (--gpu, --cluster
             FILE, --gpus-per-node, --nvlink-domain, --scale-out-gbps, --scale-out-latency-us,
             --calibration FILE, --qwen-gdn-backend fla|flashqla, --moe-routing-skew S|FILE,
             --seq-length-distribution FILE, --comm-memory-guard all|selected|off,
             --comm-memory-guard-us US, --overlap-interference F, --trace PATH)
  presets    list the built-in models
  help       this text

common flags:
  --model NAME          built-in preset (Hugging Face name, e.g. Qwen/Qwen3.5-35B-A3B)
  --model-config PATH   any Hugging Face config.json of a supported family
  --json                machine-readable output
  --rank R              (groups) only the groups containing rank R; (workload) the rank
  -o, --output PATH     write the output to PATH (atomically) instead of stdout

parallel and training flags: Megatron-LM names verbatim (--tensor-model-parallel-size,
--pipeline-model-parallel-size, --num-virtual-stages-per-pipeline-rank, --context-parallel-size,
--expert-model-parallel-size, --expert-tensor-parallel-size, --sequence-parallel,
--use-distributed-optimizer, --micro-batch-size, --global-batch-size, --seq-length, ...),
short aliases --tp --pp --vpp --cp --ep --etp --dp --mbs --gbs --seq, the world size
--num-gpus, and --megatron-core 0.16|0.17|0.18, --sequence-layout auto|thd|bshd.
See docs/cli.md for the full list.
)";
}

}  // namespace trainscope::io
