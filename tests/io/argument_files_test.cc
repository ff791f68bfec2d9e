// @FILE argument files: splitting, comments, continuations, quotes, and errors naming the file.
#include "trainscope/io/argument_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "trainscope/error.h"

namespace trainscope::io {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(ArgumentFilesTest, SplitsALaunchScriptBlock) {
  const std::string text =
      "# GPT args\n"
      "--tensor-model-parallel-size 2 \\\n"
      "    --seq-length=4096   # trailing comment\n"
      "--recompute-modules core_attn moe_act\n"
      "--save '/ckpt dir'\n";
  EXPECT_THAT(SplitArgumentText(text, "args"),
              ElementsAre("--tensor-model-parallel-size", "2", "--seq-length=4096",
                          "--recompute-modules", "core_attn", "moe_act", "--save", "/ckpt dir"));
}

TEST(ArgumentFilesTest, RejectsAnUnterminatedQuoteNamingTheFile) {
  EXPECT_THAT([] { (void)SplitArgumentText("--save \"/x", "launch.args"); },
              ThrowsMessage<InputError>(HasSubstr("launch.args: unterminated")));
}

TEST(ArgumentFilesTest, ExpandsFilesInPlace) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "trainscope_argument_files_test.args";
  std::ofstream(path) << "--tp 2\n--pp 4\n";
  const std::vector<std::string> args = {"params", std::string("@").append(path.string()),
                                         "--json"};
  EXPECT_THAT(ExpandArgumentFiles(args), ElementsAre("params", "--tp", "2", "--pp", "4", "--json"));
  std::filesystem::remove(path);
  EXPECT_THAT([&] { (void)ExpandArgumentFiles(args); },
              ThrowsMessage<InputError>(HasSubstr(path.string())));
}

}  // namespace
}  // namespace trainscope::io
