// `workload --format chakra -o DIR`: every rank's ET file and ASTRA-sim's other inputs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_runner.h"

namespace trainscope {
namespace {

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ChakraCliTest, WritesEveryRanksEtFileAndTheAstraSimInputs) {
  std::string dir_template =
      (std::filesystem::temp_directory_path() / "trainscope_chakra_XXXXXX").string();
  const std::filesystem::path dir = mkdtemp(dir_template.data());
  const Outcome outcome = RunCli(
      "workload --model Qwen3-0.6B --num-gpus 16 --tp 2 --pp 2 --sequence-parallel --gbs 16 "
      "--gpu H100 --format chakra -o " +
      dir.string());
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_THAT(outcome.out, ::testing::HasSubstr("wrote 20 files"));
  for (int rank = 0; rank < 16; ++rank) {
    const std::string et = ReadFile(dir / ("et." + std::to_string(rank) + ".et"));
    // GlobalMetadata {version "0.0.4"} first (reference/workload-formats.md §3.2).
    EXPECT_EQ(et.substr(0, 8), std::string("\x07\x0a\x05"
                                           "0.0.4",
                                           8))
        << rank;
  }
  const nlohmann::json groups = nlohmann::json::parse(ReadFile(dir / "comm_groups.json"));
  EXPECT_EQ(groups.at("1"), nlohmann::json::array({0, 1}));  // the first TP group
  const nlohmann::json system = nlohmann::json::parse(ReadFile(dir / "system.json"));
  EXPECT_EQ(system.at("roofline-enabled"), 1);
  EXPECT_GT(system.at("peak-perf").get<double>(), 900);  // H100 BF16 dense TFLOPS
  EXPECT_THAT(ReadFile(dir / "network.yml"), ::testing::HasSubstr("npus_count: [ 8, 2 ]"));
  EXPECT_TRUE(std::filesystem::exists(dir / "remote_memory.json"));
  std::filesystem::remove_all(dir);
}

TEST(ChakraCliTest, NeedsAnOutputDirectory) {
  const Outcome outcome = RunCli("workload --model Qwen3-0.6B --num-gpus 2 --tp 2 --format chakra");
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_THAT(outcome.err, ::testing::HasSubstr("needs -o DIR"));
}

}  // namespace
}  // namespace trainscope
