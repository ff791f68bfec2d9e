// End-to-end tests of the trainscope binary: exit codes, outputs and the no-partial-file rule.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.h"

namespace trainscope {
namespace {

using ::testing::HasSubstr;

TEST(CliTest, ParamsJsonHasTheContractKeys) {
  const Outcome outcome = RunCli("params --model Qwen3-30B-A3B --json");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  const nlohmann::json json = nlohmann::json::parse(outcome.out);
  // Published count (KerasHub qwen3_moe_presets.py `params`).
  EXPECT_EQ(json["total"].get<int64_t>(), 30'532'122'624);
  EXPECT_EQ(json["active"].get<int64_t>(), 3'353'032'704);
  for (const char* key : {"text_total", "non_embedding", "embedding", "lm_head", "mtp", "vision"}) {
    EXPECT_TRUE(json[key].is_number_integer()) << key;
  }
  EXPECT_FALSE(json.contains("per_rank"));
}

TEST(CliTest, ParamsWithParallelFlagsListsPerRankEntries) {
  const Outcome outcome = RunCli(
      "params --model Qwen3.5-35B-A3B --num-gpus 16 --pp 2 --ep 8 "
      "--decoder-first-pipeline-num-layers 16 --decoder-last-pipeline-num-layers 24 --json");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  const nlohmann::json json = nlohmann::json::parse(outcome.out);
  ASSERT_EQ(json["per_rank"].size(), 2u);
  EXPECT_EQ(json["per_rank"][0]["decoder_layers"].get<int64_t>(), 16);
  EXPECT_EQ(json["per_rank"][1]["decoder_layers"].get<int64_t>(), 24);
  EXPECT_EQ(json["per_rank"][0]["num_ranks"].get<int64_t>(), 8);
}

TEST(CliTest, ValidateAcceptsTheQwen3MoeExample) {
  const Outcome outcome = RunCli("validate --model Qwen3-30B-A3B --num-gpus 16 --ep 16");
  EXPECT_EQ(outcome.exit_code, 0) << outcome.out << outcome.err;
}

TEST(CliTest, ValidateRejectsAnImpossibleLayoutWithExitTwo) {
  const Outcome outcome = RunCli("validate --model Qwen3-8B --tp 3 --num-gpus 3");
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_THAT(outcome.out, HasSubstr("--tensor-model-parallel-size"));
}

TEST(CliTest, OtherCommandsValidateFirst) {
  const Outcome outcome = RunCli("params --model Qwen3-8B --tp 3 --num-gpus 3");
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_THAT(outcome.err, HasSubstr("--tensor-model-parallel-size"));
}

TEST(CliTest, UnknownModelFlagAndBadJsonExitTwoWithOneMessage) {
  const Outcome model = RunCli("params --model Qwen9-1B");
  EXPECT_EQ(model.exit_code, 2);
  EXPECT_THAT(model.err, HasSubstr("unknown model \"Qwen9-1B\""));
  const Outcome flag = RunCli("params --model Qwen3-8B --tensor-parallel-size 2");
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_THAT(flag.err, HasSubstr("unknown flag --tensor-parallel-size"));
  const Outcome json =
      RunCli(std::string("params --model-config ") + TRAINSCOPE_TEST_DATA_DIR + "/truncated.json");
  EXPECT_EQ(json.exit_code, 2);
  EXPECT_THAT(json.err, HasSubstr("malformed JSON"));
}

TEST(CliTest, WritesOutputAtomicallyAndNothingOnError) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "trainscope_cli_test_out";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::filesystem::path out = dir / "params.json";
  const Outcome failed = RunCli("params --model Nope -o " + out.string());
  EXPECT_EQ(failed.exit_code, 2);
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  const Outcome ok = RunCli("params --model Qwen3-0.6B --json -o " + out.string());
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_TRUE(ok.out.empty());
  std::ifstream in(out);
  EXPECT_EQ(nlohmann::json::parse(in)["total"].get<int64_t>(), 596'049'920);
  std::filesystem::remove_all(dir);
}

TEST(CliTest, GroupsJsonListsEveryGroupKind) {
  const Outcome outcome =
      RunCli("groups --model Qwen3-30B-A3B --num-gpus 16 --tp 2 --ep 4 --sequence-parallel --json");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  const nlohmann::json json = nlohmann::json::parse(outcome.out);
  for (const char* kind : {"tp", "cp", "dp", "dp_cp", "pp", "ep", "etp", "edp", "embedding"}) {
    EXPECT_TRUE(json["groups"].contains(kind)) << kind;
  }
  // TP fastest: ranks 0 and 1 form the first TP group.
  EXPECT_EQ(json["groups"]["tp"][0], nlohmann::json::parse("[0, 1]"));
}

// `groups` streams its listing; stdout and -o get the same bytes, and -o leaves no temporary.
// W = 4096, t = 8: 2 header lines, 13 kind headings, W/8 groups for tp, tp_cp, etp, tp_ep and mp,
// W for cp, pp, ep and embedding, 8 for dp, dp_cp and edp, 1 for tp_dp_cp.
TEST(CliTest, GroupsStreamsTheSameBytesToStdoutAndToAnOutputFile) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "trainscope_cli_test_groups_stream";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const std::string format : {"", " --json"}) {
    const std::string command = "groups --model Qwen3-8B --num-gpus 4096 --tp 8" + format;
    const Outcome printed = RunCli(command);
    ASSERT_EQ(printed.exit_code, 0) << printed.err;
    const std::filesystem::path out = dir / "groups.out";
    const Outcome written = RunCli(command + " -o " + out.string());
    ASSERT_EQ(written.exit_code, 0) << written.err;
    EXPECT_TRUE(written.out.empty());
    std::ifstream in(out, std::ios::binary);
    const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(file, printed.out) << format;
    std::size_t entries = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++entries;
    EXPECT_EQ(entries, 1u);  // no temporary left
  }
  const Outcome text = RunCli("groups --model Qwen3-8B --num-gpus 4096 --tp 8");
  EXPECT_EQ(std::count(text.out.begin(), text.out.end(), '\n'),
            2 + 13 + 5 * 512 + 4 * 4096 + 3 * 8 + 1);
  std::filesystem::remove_all(dir);
}

// A device that refuses the bytes while they stream: exit 1 naming the path.
TEST(CliTest, GroupsToAFullDeviceFailsNamingThePath) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  const Outcome outcome = RunCli("groups --model Qwen3-8B --num-gpus 4096 --tp 8 -o /dev/full");
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_THAT(outcome.err, HasSubstr("/dev/full: cannot write output"));
}

TEST(CliTest, IgnoredMegatronFlagsAreReported) {
  const Outcome outcome = RunCli("params --model Qwen3-0.6B --lr 1e-4 --train-iters 100");
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_THAT(outcome.err, HasSubstr("ignored"));
  EXPECT_THAT(outcome.err, HasSubstr("--lr --train-iters"));
}

TEST(CliTest, OutputIsDeterministic) {
  const std::string args =
      "params --model Qwen3.5-397B-A17B --tp 2 --pp 4 --ep 8 --num-gpus 64 --sequence-parallel "
      "--json";
  EXPECT_EQ(RunCli(args).out, RunCli(args).out);
}

TEST(CliTest, WorkloadSummaryJsonHasContractKeys) {
  const Outcome outcome = RunCli(
      "workload --model Qwen3-30B-A3B --num-gpus 16 --tp 2 --ep 8 --etp 1 --sequence-parallel "
      "--moe-token-dispatcher-type alltoall --rank 5 --summary --json");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  const nlohmann::json json = nlohmann::json::parse(outcome.out);
  ASSERT_FALSE(json["collectives"].empty());
  for (const char* key : {"phase", "collective", "group", "message_bytes", "count"}) {
    EXPECT_TRUE(json["collectives"][0].contains(key)) << key;
  }
  EXPECT_GT(json["totals"]["megatron_model_flops_per_step"].get<int64_t>(), 0);
  EXPECT_EQ(json["rank"].get<int64_t>(), 5);
}

TEST(CliTest, WorkloadWritesSimAiAndAicbFilesAtomically) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "trainscope_cli_workload";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string flags = "workload --model Qwen3-0.6B --num-gpus 8 --tp 2 --sequence-parallel ";
  const Outcome simai = RunCli(flags + "--format simai -o " + (dir / "w.txt").string());
  ASSERT_EQ(simai.exit_code, 0) << simai.err;
  std::ifstream in(dir / "w.txt");
  std::string header;
  std::getline(in, header);
  EXPECT_THAT(header, HasSubstr("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2"));
  const Outcome aicb = RunCli(flags + "--format aicb -o " + (dir / "w.csv").string());
  ASSERT_EQ(aicb.exit_code, 0) << aicb.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "w.csv"));
  const Outcome bad = RunCli(flags + "--format astra -o " + (dir / "x.txt").string());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_FALSE(std::filesystem::exists(dir / "x.txt"));
  std::filesystem::remove_all(dir);
}

// The TAB-separated rows of a SimAI file (after the header and the row count).
std::vector<std::vector<std::string>> SimAiRows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(text);
  std::string line;
  for (int index = 0; std::getline(lines, line); ++index) {
    if (index < 2) continue;
    std::vector<std::string> fields;
    std::stringstream stream(line);
    std::string field;
    while (std::getline(stream, field, '\t')) fields.push_back(field);
    rows.push_back(fields);
  }
  return rows;
}

// `workload --format simai` takes its compute columns from the simulator's cost model for --gpu:
// the default (H100) reproduces the golden file, B200 (2250 TFLOP/s, 8 TB/s) is faster than
// A100 (312 TFLOP/s, 2.039 TB/s) in every compute cell, and the collectives do not change.
TEST(CliTest, WorkloadSimAiComputeColumnsFollowTheGpu) {
  const std::string flags =
      "workload --model Qwen3-0.6B --num-gpus 8 --tp 2 --sequence-parallel --seq-length 4096 "
      "--global-batch-size 8 --use-distributed-optimizer --format simai";
  const Outcome h100 = RunCli(flags);
  ASSERT_EQ(h100.exit_code, 0) << h100.err;
  std::ifstream golden(std::string(TRAINSCOPE_GOLDEN_DIR) + "/simai_qwen3_0.6b_tp2_sp_dp4_ga2.txt");
  std::stringstream expected;
  expected << golden.rdbuf();
  EXPECT_TRUE(h100.out == expected.str());
  // Qwen3-0.6B's short kernels are launch-bound on an eager host; captured in one CUDA graph
  // every forward and backward op runs at its device time, which follows the GPU.
  const Outcome a100 = RunCli(flags + " --gpu A100 --cuda-graph-impl full_iteration");
  const Outcome b200 = RunCli(flags + " --gpu B200 --cuda-graph-impl full_iteration");
  ASSERT_EQ(a100.exit_code, 0) << a100.err;
  ASSERT_EQ(b200.exit_code, 0) << b200.err;
  const std::vector<std::vector<std::string>> slow = SimAiRows(a100.out);
  const std::vector<std::vector<std::string>> fast = SimAiRows(b200.out);
  ASSERT_EQ(slow.size(), fast.size());
  ASSERT_FALSE(slow.empty());
  int64_t compute_cells = 0;
  for (size_t i = 0; i < slow.size(); ++i) {
    ASSERT_EQ(slow[i].size(), 12u);
    ASSERT_EQ(fast[i].size(), 12u);
    for (size_t field = 0; field < 12; ++field) {
      if (field != 2 && field != 5 && field != 8) {
        EXPECT_EQ(fast[i][field], slow[i][field]) << slow[i][0];
      } else if (std::stoll(slow[i][field]) > 0) {
        ++compute_cells;
        EXPECT_LT(std::stoll(fast[i][field]), std::stoll(slow[i][field])) << slow[i][0];
      }
    }
  }
  EXPECT_GT(compute_cells, 0);
}

TEST(CliTest, MemoryJsonHasContractKeysAndVerdict) {
  const Outcome outcome = RunCli(
      "memory --model Qwen3-8B --num-gpus 8 --tp 2 --pp 2 --sequence-parallel "
      "--use-distributed-optimizer --gpu h100 --json");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  const nlohmann::json json = nlohmann::json::parse(outcome.out);
  for (const char* key : {"max_peak_bytes", "gpu_memory_bytes", "fits", "per_rank"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  ASSERT_EQ(json["per_rank"].size(), 2u);
  for (const char* key : {"weights_bytes", "grads_bytes", "optimizer_bytes", "activations_bytes",
                          "buffers_bytes", "peak_bytes"}) {
    EXPECT_TRUE(json["per_rank"][0][key].is_number_integer()) << key;
  }
  // Peak is the sum of the five categories (docs/memory.md).
  const nlohmann::json& stage = json["per_rank"][0];
  EXPECT_EQ(stage["peak_bytes"].get<int64_t>(),
            stage["weights_bytes"].get<int64_t>() + stage["grads_bytes"].get<int64_t>() +
                stage["optimizer_bytes"].get<int64_t>() +
                stage["activations_bytes"].get<int64_t>() + stage["buffers_bytes"].get<int64_t>());
  // Weights: 2 bytes per parameter held by the rank (bf16).
  EXPECT_GT(stage["weights_bytes"].get<int64_t>(), 0);
  EXPECT_TRUE(json["megatron_estimate"].contains("total_bytes"));
  // The three figures: allocated <= reserved <= nvidia-smi, and the named terms.
  EXPECT_LE(json["max_allocated_bytes"].get<int64_t>(), json["max_reserved_bytes"].get<int64_t>());
  EXPECT_EQ(json["max_nvidia_smi_bytes"], json["max_peak_bytes"]);
  EXPECT_EQ(stage["nvidia_smi_bytes"], stage["peak_bytes"]);
  for (const char* term :
       {"logits_bytes", "moe_permute_bytes", "cuda_graph_bytes", "cublas_workspace_bytes",
        "fragmentation_bytes", "cuda_context_bytes", "nccl_bytes"}) {
    EXPECT_TRUE(stage["terms"][term]["bytes"].is_number_integer()) << term;
  }
  EXPECT_EQ(stage["reserved_bytes"].get<int64_t>() +
                stage["terms"]["cuda_context_bytes"]["bytes"].get<int64_t>() +
                stage["terms"]["nccl_bytes"]["bytes"].get<int64_t>(),
            stage["peak_bytes"].get<int64_t>());
}

TEST(CliTest, ValidateWarnsButPassesWhenTheModelDoesNotFit) {
  // Qwen3-32B on one H100: 32.8e9 parameters x 18 bytes (bf16 weights, fp32 grads, Adam) is
  // about 550 GiB, far above 79 GiB; validation still passes, with a warning.
  const Outcome outcome = RunCli("validate --model Qwen3-32B --gpu H100");
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_THAT(outcome.err, HasSubstr("warning: [memory]"));
}

TEST(CliTest, UnknownGpuIsAUsageError) {
  const Outcome outcome = RunCli("memory --model Qwen3-8B --gpu V100");
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_THAT(outcome.err, HasSubstr("--gpu: unknown GPU \"V100\""));
}

}  // namespace
}  // namespace trainscope
