// Reading input files and parsing JSON: non-regular files, numbers a double cannot hold, deep
// nesting, and short quoting of offending values in messages.
#include "trainscope/io/input_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "trainscope/error.h"

namespace trainscope::io {
namespace {

using testing::AllOf;
using testing::HasSubstr;
using testing::ThrowsMessage;

TEST(InputTextTest, RejectsANumberThatOverflowsADouble) {
  EXPECT_THAT([] { (void)ParseJsonObject(R"({"hidden_size": 1e400})", "config.json"); },
              ThrowsMessage<InputError>(
                  AllOf(HasSubstr("config.json: number out of range"), HasSubstr("1e400"))));
}

TEST(InputTextTest, RejectsNestingDeeperThanTheLimitWithoutRecursing) {
  const std::string text = "{\"a\": " + std::string(100'000, '[') + std::string(100'000, ']') + "}";
  EXPECT_THAT([&] { (void)ParseJsonObject(text, "deep.json"); },
              ThrowsMessage<InputError>(HasSubstr("deep.json: nested deeper than 64 levels")));
}

TEST(InputTextTest, IgnoresBracketsInsideStringsWhenCheckingNesting) {
  const std::string text = "{\"a\": \"" + std::string(1000, '[') + "\"}";
  EXPECT_EQ(ParseJsonObject(text, "s.json")["a"].get<std::string>().size(), 1000u);
}

TEST(InputTextTest, AcceptsNestingUpToTheLimit) {
  const std::string text = "{\"a\": " + std::string(63, '[') + std::string(63, ']') + "}";
  EXPECT_TRUE(ParseJsonObject(text, "ok.json").contains("a"));
}

TEST(InputTextTest, QuotesLongValuesBriefly) {
  nlohmann::json value = nlohmann::json::array();
  for (int i = 0; i < 100'000; ++i) value.push_back(i);
  const std::string quoted = QuoteJson(value);
  EXPECT_LE(quoted.size(), 60u);
  EXPECT_THAT(quoted, HasSubstr("[0,1,2,"));
  EXPECT_EQ(QuoteJson(nlohmann::json("short")), "\"short\"");
}

TEST(InputTextTest, RejectsADirectoryNamingIt) {
  const std::string dir = testing::TempDir();
  EXPECT_THAT([&] { (void)ReadInputFile(dir, "--model-config file"); },
              ThrowsMessage<InputError>(HasSubstr("--model-config file is a directory")));
}

TEST(InputTextTest, RejectsAFifoWithoutBlocking) {
  const std::filesystem::path fifo =
      std::filesystem::path(testing::TempDir()) / "trainscope_input_text_fifo";
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THAT([&] { (void)ReadInputFile(fifo.string(), "--cluster file"); },
              ThrowsMessage<InputError>(HasSubstr("--cluster file is not a regular file")));
  std::filesystem::remove(fifo);
}

TEST(InputTextTest, NamesAMissingFile) {
  EXPECT_THAT([] { (void)ReadInputFile("/nonexistent/x.json", "calibration file"); },
              ThrowsMessage<InputError>(HasSubstr("/nonexistent/x.json: cannot open")));
}

}  // namespace
}  // namespace trainscope::io
