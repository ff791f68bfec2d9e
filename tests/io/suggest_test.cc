// Did-you-mean: edit distance and the closest-name rules.
#include "trainscope/io/suggest.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace trainscope::io {
namespace {

TEST(SuggestTest, EditDistanceCountsSingleCharacterEdits) {
  // Textbook pairs: kitten -> sitting takes 3 edits (2 substitutions, 1 insertion).
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
  EXPECT_EQ(EditDistance("", "abc"), 3);
  EXPECT_EQ(EditDistance("flaw", "lawn"), 2);
  EXPECT_EQ(EditDistance("same", "same"), 0);
}

TEST(SuggestTest, PrefersAnExtensionOfWhatWasTyped) {
  const std::vector<std::string> models = {"Qwen3.5-2B", "Qwen3.5-27B", "Qwen3.5-35B-A3B"};
  EXPECT_EQ(ClosestName("Qwen3.5-35B", models), "Qwen3.5-35B-A3B");
  EXPECT_EQ(ClosestName("Qwen/Qwen3.5-35b", models), "Qwen3.5-35B-A3B");
}

TEST(SuggestTest, ReadsUnderscoresAsDashesAndIgnoresCase) {
  const std::vector<std::string> flags = {"--tensor-model-parallel-size", "--tp"};
  EXPECT_EQ(ClosestName("--TENSOR_MODEL_PARALLEL_SIZE", flags), "--tensor-model-parallel-size");
}

TEST(SuggestTest, SuggestsNothingWhenNothingIsClose) {
  const std::vector<std::string> gpus = {"H100", "A100", "B200"};
  EXPECT_FALSE(ClosestName("TPUv5", gpus));
  EXPECT_EQ(DidYouMean("TPUv5", gpus), "");
  EXPECT_EQ(DidYouMean("H10", gpus), " (did you mean H100?)");
}

}  // namespace
}  // namespace trainscope::io
