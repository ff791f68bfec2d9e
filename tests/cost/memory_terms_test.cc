// The named terms of the memory estimate (docs/memory.md, "Named terms") and the allocated /
// reserved / nvidia-smi figures, against hand-derived values. Sources of each expectation are
// in the comments: NVIDIA/Megatron-LM d98e8a64, TransformerEngine d0067d0d, NVIDIA/nccl
// src/init.cc and src/include/device.h, PyTorch c10/cuda/CUDACachingAllocator.cpp.
#include <gtest/gtest.h>

#include <cstdint>

#include "cost/memory_test_support.h"
#include "trainscope/config/validate.h"
#include "trainscope/cost/memory.h"
#include "trainscope/io/hf_config_loader.h"
#include "trainscope/units.h"

namespace trainscope::cost {
namespace {

using testing_support::ExpectValid;
using testing_support::Training;

// Qwen3-8B: h = 4096, L = 36, V0 = 151936 padded to 152064 at t = 2.
constexpr int64_t kH = 4096;

TEST(MemoryTermsTest, NcclBuffersAreChannelsTimesTheThreeProtocolBuffers) {
  // NCCL init.cc: DEFAULT_BUFFSIZE 1 << 22; DEFAULT_LL_BUFFSIZE = NCCL_LL_LINES_PER_THREAD (8) ·
  // NCCL_LL_MAX_NTHREADS (512) · NCCL_STEPS (8) · sizeof(ncclLLFifoLine) (16) = 524,288;
  // DEFAULT_LL128_BUFFSIZE = NCCL_LL128_ELEMS_PER_THREAD (120) · NCCL_LL128_MAX_NTHREADS (640) ·
  // NCCL_STEPS (8) · 8 = 4,915,200. 16 ring channels, one receive connection each.
  EXPECT_EQ(kNcclBytesPerConnection, 4194304 + 524288 + 4915200);
  EXPECT_EQ(MemoryOverheads{}.nccl_bytes_per_communicator, 16 * 9633792);
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  const config::TrainingConfig training = Training(/*tp=*/2, /*pp=*/2, /*dp=*/2);
  ExpectValid(model, training);
  for (const RankMemory& rank : EstimateMemory(model, training).stages) {
    EXPECT_EQ(rank.nccl_bytes, rank.num_communicators * 154140672);
  }
}

TEST(MemoryTermsTest, CudaContextDefaultsFollowTheComputeCapability) {
  EXPECT_EQ(DefaultCudaContextBytes(8), 448 * kBytesPerMiB);
  EXPECT_EQ(DefaultCudaContextBytes(9), 512 * kBytesPerMiB);
  EXPECT_EQ(DefaultCudaContextBytes(10), 576 * kBytesPerMiB);
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  const config::TrainingConfig training = Training(/*tp=*/2, /*pp=*/1, /*dp=*/1);
  MemoryOverheads blackwell{.gpu_compute_capability_major = 10};
  EXPECT_EQ(EstimateMemory(model, training, blackwell).stages[0].cuda_context_bytes,
            576 * kBytesPerMiB);
  blackwell.cuda_context_bytes = kBytesPerGiB;  // --memory-cuda-context-gib 1
  EXPECT_EQ(EstimateMemory(model, training, blackwell).stages[0].cuda_context_bytes, kBytesPerGiB);
}

TEST(MemoryTermsTest, CublasWorkspacesFollowTransformerEngine) {
  // gemm.py get_cublas_workspace_size_bytes: 32 MiB + 1024 B from compute capability 9, else
  // 4 MiB (4,194,304).
  EXPECT_EQ(TeCublasWorkspaceBytes(9), 33555456);
  EXPECT_EQ(TeCublasWorkspaceBytes(8), 4194304);
  const config::ModelConfig dense = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training = Training(/*tp=*/2, /*pp=*/1, /*dp=*/1);
  EXPECT_EQ(EstimateMemory(dense, training).stages[0].cublas_workspace_bytes, 33555456);
  EXPECT_EQ(EstimateMemory(dense, training, MemoryOverheads{.gpu_compute_capability_major = 8})
                .stages[0]
                .cublas_workspace_bytes,
            4194304);
  // --tp-comm-overlap adds _NUM_MAX_UB_STREAMS (3) workspaces for the userbuffers GEMMs.
  training.overlap.tp_comm_overlap = true;
  EXPECT_EQ(EstimateMemory(dense, training).stages[0].cublas_workspace_bytes, 4 * 33555456);
  // Grouped GEMM adds one per compute stream (multi_stream.cpp: 4).
  const config::ModelConfig moe = io::LoadPreset("Qwen3-30B-A3B");
  config::TrainingConfig moe_training = Training(/*tp=*/1, /*pp=*/1, /*dp=*/8);
  moe_training.parallel.expert = 8;
  moe_training.moe.dispatcher = config::TokenDispatcher::kAllToAll;
  moe_training.moe.grouped_gemm = true;
  ExpectValid(moe, moe_training);
  EXPECT_EQ(EstimateMemory(moe, moe_training).stages[0].cublas_workspace_bytes, 5 * 33555456);
}

TEST(MemoryTermsTest, ReservedRoundsTheFragmentationReserveUpToTwoMebibyteSegments) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  const config::TrainingConfig training = Training(/*tp=*/2, /*pp=*/2, /*dp=*/2);
  for (const RankMemory& rank : EstimateMemory(model, training).stages) {
    // Default fragmentation 0.10; segments of 2 MiB (kRoundLarge, kSmallBuffer).
    const int64_t reserve = (rank.allocated_bytes + 5) / 10;  // llround(allocated · 0.1)
    EXPECT_EQ(rank.reserved_bytes, RoundUp(rank.allocated_bytes + reserve, 2 * kBytesPerMiB));
    EXPECT_EQ(rank.reserved_bytes % (2 * kBytesPerMiB), 0);
    EXPECT_EQ(rank.fragmentation_bytes, rank.reserved_bytes - rank.allocated_bytes);
    // nvidia-smi = reserved + CUDA context + NCCL buffers.
    EXPECT_EQ(rank.peak_bytes, rank.reserved_bytes + rank.cuda_context_bytes + rank.nccl_bytes);
  }
}

TEST(MemoryTermsTest, LogitsAreTheFp32SoftmaxPlusTheBf16LogitsOnTheLastStage) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  const config::TrainingConfig training = Training(/*tp=*/2, /*pp=*/2, /*dp=*/2);
  ExpectValid(model, training);
  const MemoryEstimate estimate = EstimateMemory(model, training);
  // S = 4096 rows, V/t = 152064/2 = 76032. cross_entropy.py calculate_logits_max: the fp32 copy
  // 4·S·V/t = 1,245,708,288, kept as the softmax for backward (one micro-batch in flight on
  // the last 1F1B stage); the bf16 output-layer logits 2·S·V/t = 622,854,144, alive next to it,
  // are the stage's largest transient (the dense MLP's fc1 gradient is 2·S·2F/t = 100,663,296).
  EXPECT_EQ(estimate.stages[1].logits_bytes, 1245708288 + 622854144);
  EXPECT_EQ(estimate.stages[0].logits_bytes, 0);
  EXPECT_LE(estimate.stages[1].logits_bytes, estimate.stages[1].activations_bytes);
}

// TE's cross-entropy before TransformerEngine#3193 wrote its gradient over the bf16 logits and
// saved that buffer: 2·S·V/t = 622,854,144 instead of the fp32 4·S·V/t; after it, an fp32
// gradient buffer of the fp32 size. The fused native path saves the fp32 softmax like the
// unfused one.
TEST(MemoryTermsTest, TeCrossEntropyBeforeItsFp32GradientSavesTheBf16Logits) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training = Training(/*tp=*/2, /*pp=*/2, /*dp=*/2);
  training.cross_entropy = {.loss_fusion = true,
                            .fusion_impl = config::CrossEntropyFusionImpl::kTe,
                            .te_fp32_gradient = false};
  EXPECT_EQ(EstimateMemory(model, training).stages[1].logits_bytes, 622854144 + 622854144);
  training.cross_entropy.te_fp32_gradient = true;
  EXPECT_EQ(EstimateMemory(model, training).stages[1].logits_bytes, 1245708288 + 622854144);
  training.cross_entropy = {.loss_fusion = true};
  EXPECT_EQ(EstimateMemory(model, training).stages[1].logits_bytes, 1245708288 + 622854144);
}

config::TrainingConfig MoeTraining(bool permute_fusion) {
  config::TrainingConfig training = Training(/*tp=*/1, /*pp=*/1, /*dp=*/16);
  training.parallel.expert = 16;
  training.moe.dispatcher = config::TokenDispatcher::kAllToAll;
  training.moe.permute_fusion = permute_fusion;
  return training;
}

// Qwen3-30B-A3B: 48 MoE layers, E = 128, k = 8; t = 1 so T = s·b = 4096 tokens per layer.
TEST(MemoryTermsTest, AlltoallPermutationMapDependsOnPermuteFusion) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  const config::TrainingConfig fused_training = MoeTraining(true);
  const config::TrainingConfig unfused_training = MoeTraining(false);
  ExpectValid(model, fused_training);
  const RankMemory fused = EstimateMemory(model, fused_training).stages[0];
  const RankMemory unfused = EstimateMemory(model, unfused_training).stages[0];
  // TE triton/permutation.py make_row_id_map: int32 [T, 2E + 1] = 4·4096·257 = 4,210,688.
  EXPECT_EQ(fused.moe_permute_bytes, 48 * 4210688);
  // moe_utils.py permute: argsort of the [E, T] map, int64 8·128·4096 = 4,194,304, kept by the
  // probs gather through flat_sorted; sorted_indices int64 8·T·k = 262,144.
  EXPECT_EQ(unfused.moe_permute_bytes, 48 * (4194304 + 262144));
  // One micro-batch in flight: the difference is all in the saved activations.
  EXPECT_EQ(unfused.activations_bytes - fused.activations_bytes,
            unfused.moe_permute_bytes - fused.moe_permute_bytes);
}

TEST(MemoryTermsTest, SelectiveMoeRecomputeDropsThePermutationMap) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  config::TrainingConfig training = MoeTraining(false);
  training.recompute.granularity = config::RecomputeGranularity::kSelective;
  training.recompute.modules = {"moe"};
  ExpectValid(model, training);
  EXPECT_EQ(EstimateMemory(model, training).stages[0].moe_permute_bytes, 0);
}

// Qwen3-8B at t = 2, p = 2, d = 2, GBS 8: m = 4 micro-batches, stage 0 holds min(p − r, m) = 2,
// stage 1 one; 18 layers per stage; each static input is [S_sp, b, h] bf16 = 2·2048·4096 =
// 16,777,216 bytes (cuda_graphs.py _get_sample_arguments), plus the reused grad-output and the
// previous grad-input buffers (graph.py, _reuse_graph_input_output_buffers).
TEST(MemoryTermsTest, CudaGraphStaticInputsPerGraphedRegionAndPassInFlight) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training = Training(/*tp=*/2, /*pp=*/2, /*dp=*/2);
  training.batch.global_batch_size = 8;
  const RankMemory eager = EstimateMemory(model, training).stages[0];
  EXPECT_EQ(eager.cuda_graph_bytes, 0);

  training.cuda_graph.impl = config::CudaGraphImpl::kTransformerEngine;
  ExpectValid(model, training);
  const MemoryEstimate whole_layer = EstimateMemory(model, training);
  constexpr int64_t kRegion = 2 * 2048 * kH;
  EXPECT_EQ(whole_layer.stages[0].cuda_graph_bytes, (2 * 18 + 2) * kRegion);
  EXPECT_EQ(whole_layer.stages[1].cuda_graph_bytes, (18 + 2) * kRegion);
  // The static buffers are allocated from the caching allocator's graph pool.
  EXPECT_EQ(whole_layer.stages[0].allocated_bytes - eager.allocated_bytes,
            whole_layer.stages[0].cuda_graph_bytes);

  // attn and mlp graphs: two regions per layer.
  training.cuda_graph.modules = {"attn", "mlp"};
  ExpectValid(model, training);
  EXPECT_EQ(EstimateMemory(model, training).stages[0].cuda_graph_bytes, (2 * 36 + 2) * kRegion);

  // full_iteration: one graph of the whole step, no per-layer static buffers.
  training.cuda_graph.modules.clear();
  training.cuda_graph.impl = config::CudaGraphImpl::kFullIteration;
  EXPECT_EQ(EstimateMemory(model, training).stages[0].cuda_graph_bytes, 0);
}

TEST(MemoryTermsTest, NamedBufferTermsSumToTheBuffersCategory) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training = Training(/*tp=*/2, /*pp=*/2, /*dp=*/2);
  training.cuda_graph.impl = config::CudaGraphImpl::kLocal;
  for (const RankMemory& rank : EstimateMemory(model, training).stages) {
    // DDP, no optimizer-step copy (fp32 grads): buffers are exactly the named terms.
    EXPECT_EQ(rank.buffers_bytes, rank.cuda_graph_bytes + rank.cublas_workspace_bytes +
                                      rank.fragmentation_bytes + rank.cuda_context_bytes +
                                      rank.nccl_bytes);
  }
}

}  // namespace
}  // namespace trainscope::cost
