#include "trainscope/io/atomic_write.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

TEST(AtomicWriteTest, WritesThroughASymlinkAndKeepsTheLink) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "trainscope_atomic_write_symlink_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "real");
  const std::filesystem::path target = dir / "real" / "out.txt";
  const std::filesystem::path link = dir / "link.txt";
  std::ofstream(target) << "old";
  std::filesystem::create_symlink(target, link);
  WriteFileAtomically(link.string(), "new");
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(ReadAll(target), "new");
  for (const auto& entry : std::filesystem::directory_iterator(dir / "real")) {
    EXPECT_EQ(entry.path().filename(), "out.txt");  // no temporary left behind
  }
  std::filesystem::remove_all(dir);
}

TEST(AtomicWriteTest, CreatesTheTargetOfADanglingSymlink) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "trainscope_atomic_write_dangling_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::create_symlink(dir / "target.txt", dir / "link.txt");
  WriteFileAtomically((dir / "link.txt").string(), "x");
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "link.txt"));
  EXPECT_EQ(ReadAll(dir / "target.txt"), "x");
  std::filesystem::remove_all(dir);
}

TEST(AtomicWriteTest, WritesIntoACharacterDeviceWithoutReplacingIt) {
  WriteFileAtomically("/dev/null", "discarded");
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
}

TEST(AtomicWriteTest, RefusesADirectory) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "trainscope_atomic_write_dir_test";
  std::filesystem::create_directories(dir);
  EXPECT_THAT([&] { WriteFileAtomically(dir.string(), "x"); },
              ::testing::ThrowsMessage<IoError>(::testing::HasSubstr("is a directory")));
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  std::filesystem::remove_all(dir);
}

TEST(AtomicWriteTest, LeavesNoTemporaryWhenALaterDestinationIsADirectory) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "trainscope_atomic_write_mixed_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "sub");
  EXPECT_THROW(
      WriteFilesAtomically({{(dir / "a.txt").string(), "a"}, {(dir / "sub").string(), "b"}}),
      IoError);
  EXPECT_FALSE(std::filesystem::exists(dir / "a.txt"));
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 1u);  // only "sub"
  std::filesystem::remove_all(dir);
}

// Rendered files are produced one at a time, in order, when written; a renderer that throws
// leaves no destination and no temporary behind.
TEST(AtomicWriteTest, RendersFilesInOrderAndLeavesNothingWhenARendererThrows) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "trainscope_atomic_write_render_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::vector<int> order;
  WriteFilesAtomically({{.path = (dir / "a").string(),
                         .render =
                             [&](const ByteSink& sink) {
                               order.push_back(1);
                               sink("al");
                               sink("pha");
                             }},
                        {.path = (dir / "b").string(), .content = "beta"},
                        {.path = (dir / "c").string(), .render = [&](const ByteSink& sink) {
                           order.push_back(3);
                           sink("gamma");
                         }}});
  EXPECT_EQ(order, (std::vector<int>{1, 3}));
  EXPECT_EQ(ReadAll(dir / "a"), "alpha");
  EXPECT_EQ(ReadAll(dir / "b"), "beta");
  EXPECT_EQ(ReadAll(dir / "c"), "gamma");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  EXPECT_THROW(WriteFilesAtomically({{.path = (dir / "a").string(), .content = "alpha"},
                                     {.path = (dir / "b").string(),
                                      .render =
                                          [](const ByteSink& sink) {
                                            sink("partial");
                                            throw InputError("cannot render b");
                                          }}}),
               InputError);
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trainscope::io
