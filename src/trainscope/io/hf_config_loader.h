// Loader from Hugging Face config.json (qwen3, qwen3_moe, qwen3_next, qwen3_5, qwen3_5_moe,
// llama, mixtral) to config::ModelConfig. All Hugging Face aliases and nesting (text_config,
// vision_config) are resolved here and nowhere else.
#ifndef TRAINSCOPE_IO_HF_CONFIG_LOADER_H_
#define TRAINSCOPE_IO_HF_CONFIG_LOADER_H_

#include <string>
#include <string_view>

#include "trainscope/config/model_config.h"

namespace trainscope::io {

// Parses a config.json text. `source` names it in error messages (a path or preset name).
// Throws InputError naming the field for malformed JSON, an unknown model_type, missing,
// mistyped, non-positive or contradictory fields.
[[nodiscard]] config::ModelConfig ParseHfConfig(std::string_view json_text,
                                                const std::string& source);

// Reads and parses a config.json file. Throws InputError if it cannot be read or parsed.
[[nodiscard]] config::ModelConfig LoadModelConfigFile(const std::string& path);

// Loads a built-in preset by name. Throws InputError listing the presets if unknown.
[[nodiscard]] config::ModelConfig LoadPreset(std::string_view name);

}  // namespace trainscope::io

#endif  // TRAINSCOPE_IO_HF_CONFIG_LOADER_H_
