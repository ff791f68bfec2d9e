// Per-rank memory estimate of one Megatron-Core training step: weights (with FP8 copies), main
// gradients, optimizer states (with distributed-optimizer and Megatron-FSDP sharding, Megatron's
// bucket padding and the precision-aware optimizer), activations per layer kind times the
// micro-batches in flight, the optimizer step's transient, and the buffers (CUDA-graph static
// inputs, cuBLAS workspaces, allocator reserve, CUDA context, NCCL communicators), reported as
// the allocated, reserved and nvidia-smi figures with named terms. Pure functions returning
// plain values; every term, formula and omission is listed in docs/memory.md.
#ifndef TRAINSCOPE_COST_MEMORY_H_
#define TRAINSCOPE_COST_MEMORY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"
#include "trainscope/units.h"

namespace trainscope::cost {

// NCCL's per-connection buffers with the default sizes (NVIDIA/nccl src/init.cc
// DEFAULT_BUFFSIZE, DEFAULT_LL_BUFFSIZE, DEFAULT_LL128_BUFFSIZE; constants in
// src/include/device.h): Simple 4 MiB (NCCL_BUFFSIZE), LL 8 lines x 512 threads x 8 steps x
// 16 bytes, LL128 120 elements x 640 threads x 8 steps x 8 bytes.
inline constexpr int64_t kNcclSimpleBufferBytes = 4 * kBytesPerMiB;
inline constexpr int64_t kNcclLlBufferBytes = 8 * 512 * 8 * 16;
inline constexpr int64_t kNcclLl128BufferBytes = 120 * 640 * 8 * 8;
inline constexpr int64_t kNcclBytesPerConnection =
    kNcclSimpleBufferBytes + kNcclLlBufferBytes + kNcclLl128BufferBytes;
// Channels assumed per communicator: one ring receive connection per channel, 16 channels
// (docs/memory.md, "Device memory outside the allocator").
inline constexpr int64_t kNcclChannelsPerCommunicator = 16;

// CUDA context (driver state, lazily loaded kernel modules) of one process on a GPU of compute
// capability `major`: an assumption, not a published figure (docs/memory.md). Pre-Hopper
// 448 MiB, Hopper 512 MiB, Blackwell and later 576 MiB.
[[nodiscard]] int64_t DefaultCudaContextBytes(int compute_capability_major);
// Transformer Engine's cuBLAS workspace (transformer_engine/pytorch/cpp_extensions/gemm.py,
// get_cublas_workspace_size_bytes): 32 MiB + 1 KiB from compute capability 9, else 4 MiB.
[[nodiscard]] int64_t TeCublasWorkspaceBytes(int compute_capability_major);

// Fixed per-GPU overheads outside the model's tensors, and the MoE routing load; the CLI may
// override each default.
struct MemoryOverheads {
  // Compute capability major of the GPU; selects the defaults of the CUDA context and TE's
  // cuBLAS workspace.
  int gpu_compute_capability_major = 9;
  // CUDA context outside PyTorch's allocator; unset = DefaultCudaContextBytes(major).
  std::optional<int64_t> cuda_context_bytes;
  // NCCL buffers of one communicator, allocated by NCCL outside PyTorch's allocator at the
  // communicator's first collective: channels x (Simple + LL + LL128) buffers of one
  // connection. Communicators are created lazily, so only groups this rank uses count.
  int64_t nccl_bytes_per_communicator = kNcclChannelsPerCommunicator * kNcclBytesPerConnection;
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
  // Sum of the five categories above: device memory as nvidia-smi shows it, reserved_bytes plus
  // the CUDA context and NCCL buffers.
  int64_t peak_bytes = 0;
  // What PyTorch's allocator sees (torch.cuda.max_memory_allocated): the persistent weights,
  // grads, optimizer, CUDA-graph static buffers and cuBLAS workspaces, plus the larger of the
  // forward/backward phase (activations + FSDP unit buffers) and the optimizer step
  // (optimizer_step_bytes).
  int64_t allocated_bytes = 0;
  // allocated_bytes plus the caching allocator's reserve, rounded up to its 2 MiB segments
  // (torch.cuda.max_memory_reserved); peak_bytes adds the CUDA context and NCCL buffers, which
  // live outside the allocator.
  int64_t reserved_bytes = 0;
  // Transient of the optimizer step: the fp32 copy of 16-bit main grads for the local shard.
  int64_t optimizer_step_bytes = 0;
  // Passes whose activations are held at the peak: micro-batches for 1F1B, (micro-batch,
  // chunk) forward passes for the interleaved schedule.
  int64_t in_flight_micro_batches = 0;
  int64_t activation_working_set_bytes = 0;  // part of activations_bytes held once, not per pass
  int64_t num_communicators = 0;             // NCCL communicators counted in buffers_bytes
  // Named terms (docs/memory.md, "Named terms"). Parts of activations_bytes:
  //  - the vocab-parallel cross-entropy's fp32 logits/softmax held at the peak plus the bf16
  //    logits when the LM head sets the working set;
  //  - the MoE dispatchers' permutation maps saved for backward.
  int64_t logits_bytes = 0;
  int64_t moe_permute_bytes = 0;
  // Parts of buffers_bytes inside PyTorch's allocator (so in allocated_bytes): CUDA-graph static
  // input and gradient buffers, and Transformer Engine's cuBLAS workspaces.
  int64_t cuda_graph_bytes = 0;
  int64_t cublas_workspace_bytes = 0;
  // Parts of buffers_bytes above allocated_bytes: the caching allocator's reserve
  // (reserved_bytes − allocated_bytes), then, outside the allocator, the CUDA context and the
  // NCCL buffers (peak_bytes − reserved_bytes).
  int64_t fragmentation_bytes = 0;
  int64_t cuda_context_bytes = 0;
  int64_t nccl_bytes = 0;
  // Pinned host memory of one rank's CPU-offloaded optimizer (--optimizer-cpu-offload): fp32
  // master, moments and grad buffer of the offloaded share; not part of peak_bytes.
  int64_t host_optimizer_bytes = 0;
  // Pinned host memory of the activations offloaded by --cpu-offloading-num-layers, over the
  // passes in flight at the peak; not part of peak_bytes.
  int64_t host_activation_bytes = 0;
  std::vector<ActivationBreakdown> activations;  // per layer kind, embedding, LM head/loss, MTP
  friend bool operator==(const RankMemory&, const RankMemory&) = default;
};

struct MemoryEstimate {
  std::vector<RankMemory> stages;  // one per pipeline rank, in order
  int64_t max_peak_bytes = 0;
  int64_t max_peak_pipeline_rank = 0;  // the first stage with the highest peak
  // Pinned host bytes of the offloaded optimizer and activations on the fullest node:
  // gpus_per_node ranks of the stage with the most host bytes (0 without --optimizer-cpu-offload
  // and --cpu-offloading).
  int64_t max_host_bytes_per_node = 0;
  friend bool operator==(const MemoryEstimate&, const MemoryEstimate&) = default;
};

// Bytes of decoder layer `layer`'s saved activations for one micro-batch that
// --cpu-offloading-num-layers copies to the host after its forward and back before its backward
// (the layer's activations as EstimateMemory counts them, at `moe_load_factor`). Precondition:
// Validate() accepted the configuration and 0 <= layer < model.NumLayers().
[[nodiscard]] int64_t OffloadedLayerBytes(const config::ModelConfig& model,
                                          const config::TrainingConfig& training, int64_t layer,
                                          double moe_load_factor = 1.0);

// Estimates each pipeline stage's peak memory per rank. Precondition: Validate() accepted the
// configuration. Throws InputError when a byte count overflows 64 bits.
[[nodiscard]] MemoryEstimate EstimateMemory(const config::ModelConfig& model,
                                            const config::TrainingConfig& training,
                                            const MemoryOverheads& overheads = {});

}  // namespace trainscope::cost

#endif  // TRAINSCOPE_COST_MEMORY_H_
