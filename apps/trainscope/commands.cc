#include "commands.h"

#include <fmt/format.h>

#include "runners.h"
#include "trainscope/config/hardware.h"

namespace trainscope::app {
namespace {

using io::FlagGroup;

constexpr FlagGroup kParamsGroups[] = {FlagGroup::kModel, FlagGroup::kTraining, FlagGroup::kOutput};
constexpr FlagGroup kValidateGroups[] = {FlagGroup::kModel,  FlagGroup::kTraining,
                                         FlagGroup::kGpu,    FlagGroup::kCluster,
                                         FlagGroup::kMemory, FlagGroup::kOutput};
constexpr FlagGroup kGroupsGroups[] = {FlagGroup::kModel, FlagGroup::kTraining, FlagGroup::kRank,
                                       FlagGroup::kOutput};
constexpr FlagGroup kWorkloadGroups[] = {
    FlagGroup::kModel, FlagGroup::kTraining, FlagGroup::kRank,      FlagGroup::kWorkload,
    FlagGroup::kGpu,   FlagGroup::kCluster,  FlagGroup::kCostModel, FlagGroup::kOutput};
constexpr FlagGroup kMemoryGroups[] = {FlagGroup::kModel,  FlagGroup::kTraining,
                                       FlagGroup::kGpu,    FlagGroup::kCluster,
                                       FlagGroup::kMemory, FlagGroup::kOutput};
constexpr FlagGroup kSimulateGroups[] = {
    FlagGroup::kModel,     FlagGroup::kTraining, FlagGroup::kGpu,      FlagGroup::kCluster,
    FlagGroup::kCostModel, FlagGroup::kMemory,   FlagGroup::kSimulate, FlagGroup::kOutput};
constexpr FlagGroup kPlanGroups[] = {FlagGroup::kModel,   FlagGroup::kTraining,  FlagGroup::kGpu,
                                     FlagGroup::kCluster, FlagGroup::kCostModel, FlagGroup::kMemory,
                                     FlagGroup::kPlan,    FlagGroup::kOutput};
constexpr FlagGroup kPresetsGroups[] = {FlagGroup::kOutput};
constexpr FlagGroup kWeightSyncGroups[] = {FlagGroup::kModel,      FlagGroup::kTraining,
                                           FlagGroup::kGpu,        FlagGroup::kCluster,
                                           FlagGroup::kWeightSync, FlagGroup::kOutput};
constexpr FlagGroup kRlGroups[] = {FlagGroup::kModel,    FlagGroup::kTraining,   FlagGroup::kGpu,
                                   FlagGroup::kCluster,  FlagGroup::kCostModel,  FlagGroup::kMemory,
                                   FlagGroup::kSimulate, FlagGroup::kWeightSync, FlagGroup::kRl,
                                   FlagGroup::kOutput};

constexpr Command kCommands[] = {
    {"params", "exact parameter counts; per-rank counts when parallel flags are given",
     kParamsGroups, RunParams},
    {"validate", "check a Megatron-Core configuration: the layout, or every violated rule",
     kValidateGroups, RunValidate},
    {"groups", "ranks of every TP, CP, DP, PP, EP, ETP, expert-DP and embedding group",
     kGroupsGroups, RunGroups},
    {"workload", "every compute and communication op of one rank's step (JSON, AICB, SimAI)",
     kWorkloadGroups, RunWorkload},
    {"memory", "per-rank peak memory and whether it fits the GPU", kMemoryGroups, RunMemory},
    {"simulate", "step time, tokens/s/GPU, MFU and where the time goes, simulated on a cluster",
     kSimulateGroups, RunSimulate},
    {"plan", "search every legal layout, rank by simulated throughput under memory, explain",
     kPlanGroups, RunPlan},
    {"report", "a self-contained HTML report of the simulated step (-o report.html)",
     kSimulateGroups, RunReport},
    {"weight-sync", "bytes, gathers, buckets and time of one trainer-to-rollout weight sync",
     kWeightSyncGroups, RunWeightSync},
    {"rl", "one RL step: rollout, log-prob passes, actor train, weight sync, offload; per phase",
     kRlGroups, RunRl},
    {"presets", "list the built-in models", kPresetsGroups, RunPresets},
};

}  // namespace

std::span<const Command> CommandTable() { return kCommands; }

const Command* FindCommand(std::string_view name) {
  for (const Command& command : kCommands) {
    if (command.name == name) return &command;
  }
  return nullptr;
}

std::vector<std::string> CommandNames() {
  std::vector<std::string> names;
  for (const Command& command : kCommands) names.emplace_back(command.name);
  names.emplace_back("help");
  return names;
}

std::string GeneralHelp() {
  std::string out =
      "usage: trainscope <command> (--model NAME | --model-config PATH) [flags] [@ARGFILE]\n\n"
      "commands:\n";
  for (const Command& command : kCommands) {
    out += fmt::format("  {:<10} {}\n", command.name, command.summary);
  }
  out += fmt::format("  {:<10} {}\n", "help",
                     "this text; `trainscope help CMD` for a command's flags");
  out +=
      "\nMegatron-LM launch flags are accepted verbatim (with short aliases --tp --pp --vpp --cp "
      "--ep\n--etp --dp --mbs --gbs --seq); @FILE reads arguments from a file (# comments, \\ "
      "continuations).\nSee docs/cli.md for every flag, JSON key and exit code.\n";
  return out;
}

std::string CommandHelp(const Command& command) {
  std::string out =
      fmt::format("usage: trainscope {} [flags]\n\n{}\n", command.name, command.summary);
  for (const io::FlagGroup group : command.groups) {
    out += fmt::format("\n{} flags:\n", io::FlagGroupTitle(group));
    out += io::FlagHelp(group);
    if (group == FlagGroup::kGpu) {
      std::string names;
      for (const std::string& name : config::GpuNames()) {
        if (!names.empty()) names.append(", ");
        names.append(name);
      }
      out += fmt::format("  {:<34}presets: {}\n", "", names);
    }
    if (group == FlagGroup::kTraining) {
      out +=
          "  (Megatron-LM flags trainscope does not model, such as --lr or --save, are accepted "
          "and\n   listed as ignored; architecture flags such as --num-layers must match the "
          "model)\n";
    }
  }
  return out;
}

}  // namespace trainscope::app
