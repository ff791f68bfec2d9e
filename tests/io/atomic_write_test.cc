#include "trainscope/io/atomic_write.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "trainscope/error.h"

namespace trainscope::io {
namespace {

std::string ReadAll(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(AtomicWriteTest, ReplacesTheFileAndLeavesNoTemporary) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "trainscope_atomic_write_test";
  std::filesystem::create_directories(dir);
  const std::filesystem::path path = dir / "out.json";
  WriteFileAtomically(path.string(), "first");
  WriteFileAtomically(path.string(), "second");
  EXPECT_EQ(ReadAll(path), "second");
  EXPECT_FALSE(std::filesystem::exists(dir / "out.json.tmp"));
  std::filesystem::remove_all(dir);
}

TEST(AtomicWriteTest, FailsWithoutTouchingAnythingWhenTheDirectoryIsMissing) {
  EXPECT_THAT([] { WriteFileAtomically("/nonexistent-dir/out.json", "x"); },
              ::testing::ThrowsMessage<IoError>(::testing::HasSubstr("/nonexistent-dir/out.json")));
}

}  // namespace
}  // namespace trainscope::io
