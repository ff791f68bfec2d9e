// End-to-end tests of the command table: help, per-command flag scope, did-you-mean, argument
// files, error length and the inputs each command honours.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.h"

namespace trainscope {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

int64_t Lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

std::filesystem::path TempFile(const std::string& name, const std::string& content) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << content;
  return path;
}

TEST(HelpCliTest, GeneralHelpListsEveryCommand) {
  const Outcome outcome = RunCli("help");
  ASSERT_EQ(outcome.exit_code, 0);
  for (const char* command :
       {"params", "validate", "groups", "workload", "memory", "simulate", "presets"}) {
    EXPECT_THAT(outcome.out, HasSubstr(std::string("  ") + command)) << command;
  }
}

TEST(HelpCliTest, CommandHelpShowsOnlyThatCommandsFlags) {
  const Outcome help = RunCli("help simulate");
  const Outcome flag = RunCli("simulate --help");
  ASSERT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out, flag.out);
  EXPECT_THAT(help.out, HasSubstr("--trace PATH"));
  EXPECT_THAT(help.out, HasSubstr("--calibration FILE"));
  EXPECT_THAT(help.out, HasSubstr("(default 0.1)"));
  EXPECT_THAT(help.out, Not(HasSubstr("--format")));  // a workload flag
  EXPECT_THAT(help.out, HasSubstr("GB300"));          // every GPU preset is listed
  const Outcome params = RunCli("help params");
  EXPECT_THAT(params.out, HasSubstr("--tensor-model-parallel-size"));
  EXPECT_THAT(params.out, Not(HasSubstr("--gpu")));
}

TEST(HelpCliTest, RejectsFlagsTheCommandDoesNotUse) {
  const Outcome trace = RunCli("params --model Qwen3-8B --trace x.json");
  EXPECT_EQ(trace.exit_code, 2);
  EXPECT_THAT(trace.err, HasSubstr("--trace: not used by `params`"));
  EXPECT_THAT(trace.err, HasSubstr("see: trainscope help params"));
  EXPECT_FALSE(std::filesystem::exists("x.json"));
  const Outcome gpu = RunCli("groups --model Qwen3-8B --gpu H100");
  EXPECT_EQ(gpu.exit_code, 2);
  EXPECT_THAT(gpu.err, HasSubstr("--gpu: not used by `groups`"));
}

TEST(HelpCliTest, SuggestsWhatTheUserMeant) {
  const struct {
    const char* args;
    const char* suggestion;
  } cases[] = {
      {"simulat --model Qwen3-8B", "did you mean simulate?"},
      {"params --model Qwen3.5-35B", "did you mean Qwen3.5-35B-A3B?"},
      {"params --model Qwen3-8B --tensor-parallel-size 2",
       "did you mean --tensor-model-parallel-size?"},
      {"params --model Qwen3-8B --tensor_model_parallel_size 2",
       "did you mean --tensor-model-parallel-size?"},
      {"memory --model Qwen3-8B --gpu H1OO", "did you mean H100?"},
      {"help simulat", "did you mean simulate?"},
  };
  for (const auto& c : cases) {
    const Outcome outcome = RunCli(c.args);
    EXPECT_EQ(outcome.exit_code, 2) << c.args;
    EXPECT_THAT(outcome.err, HasSubstr(c.suggestion)) << c.args;
  }
}

TEST(HelpCliTest, EveryErrorIsAtMostThreeLines) {
  for (const char* args : {"simulat", "params --model Nope", "params --model Qwen3-8B --tp 3",
                           "params --model Qwen3-8B --tp 3 --pp 7 --num-gpus 5",
                           "simulate --model Qwen3-8B --gpu FOO", "params --model Qwen3-8B --tp"}) {
    const Outcome outcome = RunCli(args);
    EXPECT_EQ(outcome.exit_code, 2) << args;
    EXPECT_LE(Lines(outcome.err), 3) << args << "\n" << outcome.err;
    EXPECT_THAT(outcome.err, HasSubstr("error: ")) << args;
  }
}

TEST(HelpCliTest, NotesADefaultedWorldSize) {
  const Outcome outcome = RunCli("groups --model Qwen3-8B --tp 2 --pp 2");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_THAT(outcome.err, HasSubstr("--num-gpus not given; using 4"));
}

TEST(HelpCliTest, ReadsArgumentFilesWithCommentsAndContinuations) {
  const std::filesystem::path args = TempFile("trainscope_help_cli.args",
                                              "# a Megatron launch block\n"
                                              "--model Qwen3-8B \\\n"
                                              "  --tensor-model-parallel-size 2 \\\n"
                                              "  --num-gpus 8   # eight GPUs\n"
                                              "--json\n");
  const Outcome outcome = RunCli("params @" + args.string());
  std::filesystem::remove(args);
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  const nlohmann::json json = nlohmann::json::parse(outcome.out);
  EXPECT_EQ(json["parallel"]["tp"].get<int64_t>(), 2);
  EXPECT_EQ(json["parallel"]["world_size"].get<int64_t>(), 8);
}

TEST(HelpCliTest, MemoryUsesTheClusterFile) {
  // A cluster file naming an A100-40GB-like GPU by overriding the H100 preset's capacity.
  const std::filesystem::path cluster =
      TempFile("trainscope_help_cli_cluster.yaml", "gpu: A100\nmemory_gib: 40\n");
  const Outcome outcome =
      RunCli("memory --model Qwen3-8B --num-gpus 8 --tp 8 --json --cluster " + cluster.string());
  std::filesystem::remove(cluster);
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  const nlohmann::json json = nlohmann::json::parse(outcome.out);
  EXPECT_EQ(json["gpu"], "A100");
  EXPECT_LT(json["gpu_memory_bytes"].get<int64_t>(), int64_t{41} * 1024 * 1024 * 1024);
}

TEST(HelpCliTest, WorkloadRejectsUnknownGpuAndMissingCluster) {
  const std::string flags = "workload --model Qwen3-0.6B --num-gpus 8 --tp 2 --format simai ";
  const Outcome gpu = RunCli(flags + "--gpu FOO");
  EXPECT_EQ(gpu.exit_code, 2);
  EXPECT_THAT(gpu.err, HasSubstr("--gpu: unknown GPU \"FOO\""));
  const Outcome cluster = RunCli(flags + "--cluster /nonexistent/cluster.yaml");
  EXPECT_EQ(cluster.exit_code, 2);
  EXPECT_THAT(cluster.err, HasSubstr("/nonexistent/cluster.yaml"));
}

TEST(HelpCliTest, WorkloadRejectsJsonWithATextFormat) {
  const Outcome outcome =
      RunCli("workload --model Qwen3-0.6B --num-gpus 8 --tp 2 --format simai --json");
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_THAT(outcome.err, HasSubstr("--json: not used with --format simai"));
  EXPECT_TRUE(outcome.out.empty());
}

TEST(HelpCliTest, WorkloadBoundsTheMicroBatchCountItLists) {
  // 10^7 sequences on one GPU are 10^7 micro-batches: every op of each would be listed.
  const Outcome outcome = RunCli("workload --model Qwen3-0.6B --gbs 10000000 --summary");
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_THAT(outcome.err, HasSubstr("--global-batch-size: 10000000 micro-batches per rank"));
}

TEST(HelpCliTest, SameFileForOutputAndTraceIsRejected) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "trainscope_same.json";
  std::filesystem::remove(path);
  const Outcome outcome = RunCli("simulate --model Qwen3-0.6B --num-gpus 8 --gbs 8 -o " +
                                 path.string() + " --trace " + path.string());
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_THAT(outcome.err, HasSubstr("same file"));
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace trainscope
