// Framework profiles: the training framework that drives Megatron-Core (plain Megatron-Core,
// Megatron-Bridge, AReaL, slime, verl) and, where its rules changed between releases, the
// Megatron-Bridge version; and torchtitan, PyTorch's native trainer, as a peer to compare with
// (its kernels, not Megatron's: graph/torch_native_ops.cc). A profile contributes validation rules
// (config/validate_framework.cc), defaults (WithFrameworkDefaults) and implementation choices that
// change cost (slime's duplicated Gated DeltaNet, graph/gdn_ops.cc). docs/frameworks.md cites
// every source.
#ifndef TRAINSCOPE_CONFIG_FRAMEWORK_H_
#define TRAINSCOPE_CONFIG_FRAMEWORK_H_

#include <string>

namespace trainscope::config {

// --framework.
enum class Framework { kMegatronCore, kMegatronBridge, kAreal, kSlime, kVerl, kTorchtitan };

// --megatron-bridge: the Megatron-Bridge release whose Qwen3.5 provider and export apply.
enum class BridgeVersion { kV0_4, kV0_5, kV0_6 };

struct FrameworkProfile {
  Framework framework = Framework::kMegatronCore;
  // Default 0.4: the first release with the Qwen3.5 providers (#2530), the one AReaL's Qwen3.5
  // support patches (megatron_bridge_patches.py: "Affected versions: megatron-bridge 0.4.0 and
  // 0.4.1").
  BridgeVersion bridge_version = BridgeVersion::kV0_4;
  // --training.compile (torchtitan's TOML key [training] compile, as its command line spells
  // it): each TransformerBlock compiled with torch.compile, so Inductor fuses the element-wise
  // chains that eager PyTorch runs kernel by kernel. torchtitan only (rule TT1).
  bool torch_compile = false;

  // True when the model is built by Megatron-Bridge's providers: --framework megatron-bridge,
  // and AReaL, which builds Qwen3.5 through the bridge (AReaL PR #1384).
  [[nodiscard]] bool UsesBridge() const {
    return framework == Framework::kMegatronBridge || framework == Framework::kAreal;
  }
  // True when Gated DeltaNet runs as slime's HuggingfaceAttention wrapper: the sequence gathered
  // over TP and CP and the whole GDN computed unsplit on every TP·CP rank
  // (slime_plugins/models/hf_attention.py, HuggingfaceAttention.forward).
  [[nodiscard]] bool DuplicatesGdn() const { return framework == Framework::kSlime; }
  // True when the layers are torchtitan's PyTorch modules (F.scaled_dot_product_attention,
  // nn.Linear, torch element-wise ops), not Transformer Engine's.
  [[nodiscard]] bool TorchNative() const { return framework == Framework::kTorchtitan; }
  friend bool operator==(const FrameworkProfile&, const FrameworkProfile&) = default;
};

[[nodiscard]] std::string ToString(Framework framework);
[[nodiscard]] std::string ToString(BridgeVersion version);

}  // namespace trainscope::config

#endif  // TRAINSCOPE_CONFIG_FRAMEWORK_H_
