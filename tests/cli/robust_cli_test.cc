// End-to-end regression tests for inputs that used to crash the binary or give wrong answers
// (issue 11): invalid UTF-8 paths in JSON output, non-regular input files, output onto devices
// and symlinks, overflowing sizes, and the validate exit contract.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

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

std::filesystem::path FreshDir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

int LineCount(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

TEST(RobustCliTest, NonUtf8ModelConfigPathIsWrittenAsValidJson) {
  const std::filesystem::path dir = FreshDir("trainscope_robust_utf8");
  const std::string path = dir.string() + "/model\xff\xfe.json";
  std::filesystem::copy_file(std::string(TRAINSCOPE_TEST_DATA_DIR) + "/qwen3_tiny.json", path);
  const Outcome outcome = RunCli("params --model-config '" + path + "' --json");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  const nlohmann::json json = nlohmann::json::parse(outcome.out);
  EXPECT_THAT(json["model"].get<std::string>(), HasSubstr("model"));
  std::filesystem::remove_all(dir);
}

TEST(RobustCliTest, DirectoryAsInputSaysItIsADirectory) {
  const Outcome outcome = RunCli("params --model-config " + testing::TempDir());
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_THAT(outcome.err, HasSubstr("is a directory"));
  EXPECT_THAT(outcome.err, Not(HasSubstr("malformed JSON")));
}

TEST(RobustCliTest, FifoAsInputIsRejectedWithoutBlocking) {
  const std::filesystem::path dir = FreshDir("trainscope_robust_fifo");
  const std::filesystem::path fifo = dir / "cluster.yaml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const Outcome outcome =
      RunCli("memory --model Qwen3-8B --cluster " + fifo.string() + " --num-gpus 8");
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_THAT(outcome.err, HasSubstr("is not a regular file"));
  std::filesystem::remove_all(dir);
}

TEST(RobustCliTest, OutputToDevNullKeepsTheDevice) {
  const Outcome outcome = RunCli("params --model Qwen3-8B -o /dev/null");
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
}

TEST(RobustCliTest, OutputThroughASymlinkKeepsTheLink) {
  const std::filesystem::path dir = FreshDir("trainscope_robust_symlink");
  std::ofstream(dir / "target.txt") << "old";
  std::filesystem::create_symlink(dir / "target.txt", dir / "link.txt");
  const Outcome outcome = RunCli("params --model Qwen3-8B -o " + (dir / "link.txt").string());
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "link.txt"));
  EXPECT_GT(std::filesystem::file_size(dir / "target.txt"), 3u);
  std::filesystem::remove_all(dir);
}

TEST(RobustCliTest, OutputOntoADirectoryFailsWithExitOne) {
  const std::filesystem::path dir = FreshDir("trainscope_robust_outdir");
  const Outcome outcome = RunCli("params --model Qwen3-8B -o " + dir.string());
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_THAT(outcome.err, HasSubstr("is a directory"));
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  std::filesystem::remove_all(dir);
}

TEST(RobustCliTest, OverflowingParallelSizesAreRejectedNamingTheFlag) {
  const Outcome outcome = RunCli("params --model Qwen3-8B --tp 2147483648 --pp 2147483648");
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_THAT(outcome.err, HasSubstr("--tp: absurd value"));
  EXPECT_THAT(outcome.err, Not(HasSubstr("--num-gpus 0")));
  EXPECT_LE(LineCount(outcome.err), 3);
}

TEST(RobustCliTest, ScaleOutLatencyZeroIsAccepted) {
  const Outcome outcome =
      RunCli("simulate --model Qwen3-0.6B --num-gpus 16 --scale-out-latency-us 0");
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
}

TEST(RobustCliTest, ValidateOfAnInvalidLayoutExitsTwoAndWritesNoOutput) {
  const std::filesystem::path dir = FreshDir("trainscope_robust_validate");
  const std::filesystem::path out = dir / "report.json";
  const Outcome outcome =
      RunCli("validate --model Qwen3-8B --tp 3 --num-gpus 3 -o " + out.string());
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_THAT(outcome.out, HasSubstr("--tensor-model-parallel-size"));
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
}

TEST(RobustCliTest, HugeNumberInAConfigIsAnInputError) {
  const std::filesystem::path dir = FreshDir("trainscope_robust_huge");
  std::ofstream(dir / "config.json") << R"({"model_type": "qwen3", "hidden_size": 1e400})";
  const Outcome outcome = RunCli("params --model-config " + (dir / "config.json").string());
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_THAT(outcome.err, HasSubstr("config.json: number out of range"));
  EXPECT_LE(LineCount(outcome.err), 3);
  std::filesystem::remove_all(dir);
}

TEST(RobustCliTest, UnusableClusterValuesAreRejectedAtLoadTime) {
  const std::filesystem::path dir = FreshDir("trainscope_robust_cluster");
  std::ofstream(dir / "c.yaml") << "hbm_tbps: 1e-320\n";
  const Outcome outcome =
      RunCli("simulate --model Qwen3-0.6B --num-gpus 8 --cluster " + (dir / "c.yaml").string());
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_THAT(outcome.err, HasSubstr("hbm_tbps: expected a number in"));
  EXPECT_THAT(outcome.err, Not(HasSubstr("internal check")));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trainscope
