// Built-in model presets: the Hugging Face config.json files under data/models, embedded into
// the binary at build time (cmake/embed_presets.cmake). Lookup ignores case and an optional
// organisation prefix ("Qwen/", "meta-llama/", "mistralai/").
#ifndef TRAINSCOPE_IO_PRESETS_H_
#define TRAINSCOPE_IO_PRESETS_H_

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace trainscope::io {

struct PresetText {
  std::string_view name;  // e.g. "Qwen3.5-35B-A3B"
  std::string_view json;  // the config.json text
};

// Every built-in preset, in a fixed order. Defined in the generated presets_data.cc.
[[nodiscard]] std::span<const PresetText> BuiltInPresetTexts();

// Preset names in their canonical spelling.
[[nodiscard]] std::vector<std::string> PresetNames();

// The preset called `name` (case-insensitive, organisation prefix optional), or nothing.
[[nodiscard]] std::optional<PresetText> FindPreset(std::string_view name);

}  // namespace trainscope::io

#endif  // TRAINSCOPE_IO_PRESETS_H_
