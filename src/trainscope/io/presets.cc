#include "trainscope/io/presets.h"

#include <algorithm>
#include <cctype>

namespace trainscope::io {
namespace {

std::string Lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Drops one known organisation prefix ("qwen/", "meta-llama/", "mistralai/", "openai/",
// "deepseek-ai/", "moonshotai/") if
// present.
std::string_view StripOrganisation(std::string_view lowered) {
  for (std::string_view prefix :
       {"qwen/", "meta-llama/", "mistralai/", "openai/", "deepseek-ai/", "moonshotai/"}) {
    if (lowered.substr(0, prefix.size()) == prefix) return lowered.substr(prefix.size());
  }
  return lowered;
}

}  // namespace

std::vector<std::string> PresetNames() {
  std::vector<std::string> names;
  for (const PresetText& preset : BuiltInPresetTexts()) names.emplace_back(preset.name);
  return names;
}

std::optional<PresetText> FindPreset(std::string_view name) {
  const std::string lowered = Lower(name);
  const std::string_view wanted = StripOrganisation(lowered);
  for (const PresetText& preset : BuiltInPresetTexts()) {
    if (Lower(preset.name) == wanted) return preset;
  }
  return std::nullopt;
}

}  // namespace trainscope::io
