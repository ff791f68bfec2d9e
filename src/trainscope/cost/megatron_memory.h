// Megatron-LM's own theoretical memory estimate (megatron/training/theoretical_memory_usage.py,
// report_theoretical_memory, NVIDIA/Megatron-LM d98e8a64), reproduced with its quirks so
// trainscope can report it next to its own estimate (cost/memory.h). Pure function of the
// configuration; returns a value.
#ifndef TRAINSCOPE_COST_MEGATRON_MEMORY_H_
#define TRAINSCOPE_COST_MEGATRON_MEMORY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"

namespace trainscope::cost {

// What report_theoretical_memory prints, in bytes (Megatron prints the same figures / 2^20 as
// "MB"), for the most-loaded rank: pipeline stage 0 with the embedding and the MTP block.
struct MegatronMemoryEstimate {
  int64_t weights_and_optimizer_bytes = 0;  // compute_weight_and_optimizer_memory
  int64_t activations_bytes = 0;            // compute_activation_memory or ..._without_sp
  int64_t total_bytes = 0;                  // the sum of the two
  // What the formula leaves out or gets wrong for this configuration, one sentence each
  // (full recompute, MoE activations, GQA, GDN state, CP, MTP, ...), in a fixed order.
  std::vector<std::string> notes;
};

// Evaluates Megatron's formula for `model` under `training`:
//  - weights and optimizer: bf16 params, fp32 grads, fp32 master params and Adam, i.e. 18 bytes
//    per parameter, or 6 + 12/d with the distributed optimizer, where d = W/(t·p·c) excludes CP
//    (and d_e = W/(u·e·p) for routed experts);
//  - activations: Korthikanti's SP + selective-recompute formula when SP (t > 1) and selective
//    recompute are both on, else the without-SP formula with its 1.05 factor; full sequence
//    length (not divided by CP); the pipeline factor φ; the output-layer term when p = 1.
// The formula is GPT-only: every decoder layer is costed as standard attention, whatever its
// mixer (Gated DeltaNet, gated attention) and whether or not it has qk-norm. Values are rounded
// to whole bytes. Preconditions: Validate() accepted `training` for `model`.
[[nodiscard]] MegatronMemoryEstimate MegatronTheoreticalMemory(
    const config::ModelConfig& model, const config::TrainingConfig& training);

}  // namespace trainscope::cost

#endif  // TRAINSCOPE_COST_MEGATRON_MEMORY_H_
