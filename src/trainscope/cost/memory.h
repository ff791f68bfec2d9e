// Per-rank memory estimate of one Megatron-Core training step: weights (with FP8 copies), main
// gradients, optimizer states (with distributed-optimizer and Megatron-FSDP sharding, Megatron's
// bucket padding and the precision-aware optimizer), activations per layer kind times the
// micro-batches in flight, the optimizer step's transient, and fixed buffers (CUDA context, NCCL
// communicators, allocator reserve). Pure functions returning plain values; every term, formula
// and omission is listed in docs/memory.md.
#ifndef TRAINSCOPE_COST_MEMORY_H_
#define TRAINSCOPE_COST_MEMORY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"
#include "trainscope/units.h"

namespace trainscope::cost {

// Fixed per-GPU overheads outside the model's tensors, and the MoE routing load; the CLI may
// override each default.
struct MemoryOverheads {
  // CUDA context, cuBLAS/cuBLASLt and Transformer Engine workspaces and loaded kernel modules:
  // about 0.5 GiB for the context with lazy module loading (CUDA >= 11.7) on Hopper plus a few
  // hundred MiB of library workspaces and modules (docs/memory.md, "Buffers").
  int64_t cuda_context_bytes = 768 * kBytesPerMiB;
  // NCCL buffers of one communicator: with the default NCCL_BUFFSIZE of 4 MiB (Simple) plus
  // the LL128/LL buffers, about 8-9 MiB per channel and connected peer; 16 ring channels give
  // about 128 MiB. Communicators are created lazily, so only groups this rank uses count.
  int64_t nccl_bytes_per_communicator = 128 * kBytesPerMiB;
  // PyTorch caching-allocator reserve (reserved − allocated) as a fraction of the allocated
  // bytes; the measured ratio in the calibration runs ranges from 3% to 21%.
  double fragmentation_fraction = 0.10;
  // Tokens routed to the busiest expert-parallel rank over the mean (>= 1; 1 = balanced routing,
  // e.g. cost::BusiestRankLoadFactor). Scales the routed-expert activations and the dispatcher's
  // expert-output buffer of every MoE layer.
  double moe_load_factor = 1.0;
  friend bool operator==(const MemoryOverheads&, const MemoryOverheads&) = default;
};

// Saved activations of one kind of block for one micro-batch (one model chunk pass).
struct ActivationBreakdown {
  std::string kind;  // "attention/dense_mlp", "embedding", "lm_head_loss", "mtp", ...
  int64_t bytes_per_micro_batch = 0;  // per block of this kind
  int64_t num_layers = 0;             // blocks of this kind on the stage, over all chunks
  friend bool operator==(const ActivationBreakdown&, const ActivationBreakdown&) = default;
};

// The memory of every rank of one pipeline stage (all ranks of a stage are identical).
struct RankMemory {
  int64_t pipeline_rank = 0;
  int64_t num_ranks = 0;  // ranks in this stage: W/p
  int64_t weights_bytes = 0;
  int64_t grads_bytes = 0;
  int64_t optimizer_bytes = 0;
  int64_t activations_bytes = 0;  // in-flight saved activations + the working set
  // Everything else at the peak: context + NCCL + fragmentation reserve + the larger of the FSDP
  // unit buffers and (optimizer step minus activations).
  int64_t buffers_bytes = 0;
  int64_t peak_bytes = 0;  // sum of the five categories above: device memory (nvidia-smi)
  // What PyTorch's allocator sees: max over the forward/backward phase (weights + grads +
  // optimizer + activations + FSDP unit buffers) and the optimizer step (weights + grads +
  // optimizer + optimizer_step_bytes), i.e. torch.cuda.max_memory_allocated.
  int64_t allocated_bytes = 0;
  // allocated_bytes plus the caching allocator's reserve (torch.cuda.max_memory_reserved);
  // peak_bytes adds the CUDA context and NCCL buffers, which live outside the allocator.
  int64_t reserved_bytes = 0;
  // Transient of the optimizer step: the fp32 copy of 16-bit main grads for the local shard.
  int64_t optimizer_step_bytes = 0;
  // Passes whose activations are held at the peak: micro-batches for 1F1B, (micro-batch,
  // chunk) forward passes for the interleaved schedule.
  int64_t in_flight_micro_batches = 0;
  int64_t activation_working_set_bytes = 0;  // part of activations_bytes held once, not per pass
  int64_t num_communicators = 0;             // NCCL communicators counted in buffers_bytes
  // Pinned host memory of one rank's CPU-offloaded optimizer (--optimizer-cpu-offload): fp32
  // master, moments and grad buffer of the offloaded share; not part of peak_bytes.
  int64_t host_optimizer_bytes = 0;
  std::vector<ActivationBreakdown> activations;  // per layer kind, embedding, LM head/loss, MTP
  friend bool operator==(const RankMemory&, const RankMemory&) = default;
};

struct MemoryEstimate {
  std::vector<RankMemory> stages;  // one per pipeline rank, in order
  int64_t max_peak_bytes = 0;
  int64_t max_peak_pipeline_rank = 0;  // the first stage with the highest peak
  // Pinned host bytes of the offloaded optimizer on the fullest node: gpus_per_node ranks of the
  // stage with the most host bytes (0 without --optimizer-cpu-offload).
  int64_t max_host_bytes_per_node = 0;
  friend bool operator==(const MemoryEstimate&, const MemoryEstimate&) = default;
};

// Estimates each pipeline stage's peak memory per rank. Precondition: Validate() accepted the
// configuration. Throws InputError when a byte count overflows 64 bits.
[[nodiscard]] MemoryEstimate EstimateMemory(const config::ModelConfig& model,
                                            const config::TrainingConfig& training,
                                            const MemoryOverheads& overheads = {});

}  // namespace trainscope::cost

#endif  // TRAINSCOPE_COST_MEMORY_H_
