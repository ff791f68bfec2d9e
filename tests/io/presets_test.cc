#include "trainscope/io/presets.h"

#include <gtest/gtest.h>

namespace trainscope::io {
namespace {

TEST(PresetsTest, FindsNamesCaseInsensitivelyWithOrWithoutOrganisation) {
  ASSERT_TRUE(FindPreset("Qwen3-0.6B").has_value());
  EXPECT_EQ(FindPreset("qwen/qwen3-30b-a3b")->name, "Qwen3-30B-A3B");
  EXPECT_EQ(FindPreset("QWEN3.5-397B-A17B")->name, "Qwen3.5-397B-A17B");
  EXPECT_EQ(FindPreset("meta-llama/Llama-3.1-405B")->name, "Llama-3.1-405B");
  EXPECT_FALSE(FindPreset("Qwen3-0.6").has_value());
  EXPECT_FALSE(FindPreset("other/Qwen3-0.6B").has_value());
}

TEST(PresetsTest, ShipsAllSeventeenQwenModels) {
  int qwen = 0;
  for (const std::string& name : PresetNames()) qwen += name.rfind("Qwen", 0) == 0 ? 1 : 0;
  EXPECT_EQ(qwen, 17);
}

}  // namespace
}  // namespace trainscope::io
