// Memory estimate against hand-derived values. Parameter counts come from the per-layer formulas
// of docs/params.md (Gated DeltaNet as Megatron-LM's ssm/gated_delta_net builds it) written out
// here, the padding of param_layout.py (64-element params, lcm(dp·cp, 128) buckets), the
// sharding of distrib_optimizer.py, the in-flight counts of schedules.py, and the activation
// formula from docs/memory.md ("Dense layer formula"), not from the code under test.
#include "trainscope/cost/memory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "cost/memory_test_support.h"
#include "trainscope/config/validate.h"
#include "trainscope/cost/activation_memory.h"
#include "trainscope/graph/layer_ops.h"
#include "trainscope/io/hf_config_loader.h"
#include "trainscope/units.h"

namespace trainscope::cost {
namespace {

using testing_support::ExpectValid;
using testing_support::Training;

const ActivationBreakdown* FindPart(const RankMemory& rank, const std::string& kind) {
  const auto it = std::find_if(rank.activations.begin(), rank.activations.end(),
                               [&](const ActivationBreakdown& part) { return part.kind == kind; });
  return it == rank.activations.end() ? nullptr : &*it;
}

// Qwen3-8B: h = 4096, L = 36, n = 32, g = 8, d_h = 128, F = 12288, V0 = 151936, untied, qk-norm.
constexpr int64_t kH = 4096, kQ = 32 * 128, kKv = 8 * 128, kF = 12288;

TEST(MemoryTest, DenseModelStatesMatchHandCountWithAndWithoutDistributedOptimizer) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training = Training(/*tp=*/2, /*pp=*/2, /*dp=*/2);
  ExpectValid(model, training);
  // Per layer and TP rank: norms h + h + 2·d_h replicated; qkv (q+2kv)h, proj qh, fc1 2Fh,
  // fc2 Fh split by t = 2.
  const int64_t layer = 2 * kH + 2 * 128 + ((kQ + 2 * kKv) * kH + kQ * kH + 3 * kF * kH) / 2;
  const int64_t vocab_shard = 152064 / 2 * kH;  // ceil(151936/256)·256 = 152064 rows, /t
  const int64_t first = 18 * layer + vocab_shard;
  const int64_t last = 18 * layer + kH + vocab_shard;  // final norm + output layer

  MemoryEstimate estimate = EstimateMemory(model, training);
  ASSERT_EQ(estimate.stages.size(), 2u);
  EXPECT_EQ(estimate.stages[0].weights_bytes, 2 * first);
  EXPECT_EQ(estimate.stages[0].grads_bytes, 4 * first);
  EXPECT_EQ(estimate.stages[0].optimizer_bytes, 12 * first);
  EXPECT_EQ(estimate.stages[1].weights_bytes, 2 * last);
  EXPECT_EQ(estimate.stages[1].optimizer_bytes, 12 * last);

  // Every tensor is a multiple of 64 and each stage total a multiple of lcm(2, 128): no padding;
  // the optimizer state is split over d·c = 2.
  training.data_parallel.distributed_optimizer = true;
  estimate = EstimateMemory(model, training);
  EXPECT_EQ(estimate.stages[0].weights_bytes, 2 * first);
  EXPECT_EQ(estimate.stages[0].grads_bytes, 4 * first);
  EXPECT_EQ(estimate.stages[0].optimizer_bytes, 12 * first / 2);
  EXPECT_EQ(estimate.stages[1].optimizer_bytes, 12 * last / 2);

  EXPECT_EQ(estimate.stages[0].optimizer_step_bytes, 0);  // fp32 grads are read in place

  // --grad-reduce-in-bf16: 2-byte main grads; the optimizer step casts its grad shard to fp32
  // (4 B per shard element), alive only during the step.
  training.precision.grad_reduce_in_fp32 = false;
  estimate = EstimateMemory(model, training);
  EXPECT_EQ(estimate.stages[0].grads_bytes, 2 * first);
  EXPECT_EQ(estimate.stages[0].optimizer_bytes, 12 * first / 2);
  EXPECT_EQ(estimate.stages[0].optimizer_step_bytes, 4 * first / 2);
}

// SGD keeps the fp32 master (4 B) and one fp32 momentum buffer (4 B) per parameter, only the
// master at momentum 0; Adam 12 B. Same Qwen3-8B stage-0 count as above.
TEST(MemoryTest, SgdKeepsOneMomentumBufferOrNone) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training = Training(/*tp=*/2, /*pp=*/2, /*dp=*/2);
  const int64_t layer = 2 * kH + 2 * 128 + ((kQ + 2 * kKv) * kH + kQ * kH + 3 * kF * kH) / 2;
  const int64_t first = 18 * layer + 152064 / 2 * kH;
  training.optimizer.kind = config::OptimizerKind::kSgd;
  EXPECT_EQ(EstimateMemory(model, training).stages[0].optimizer_bytes, 8 * first);
  training.optimizer.sgd_momentum = 0;
  EXPECT_EQ(EstimateMemory(model, training).stages[0].optimizer_bytes, 4 * first);
}

// HybridDeviceOptimizer: the offloaded share's fp32 master + exp_avg + exp_avg_sq leave the GPU
// (12 B/param) and live on the host with a pinned fp32 grad buffer (16 B/param); with fraction
// 0.5 half of the parameters (rounded) move.
TEST(MemoryTest, CpuOffloadMovesMastersAndMomentsToTheHost) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training = Training(/*tp=*/2, /*pp=*/2, /*dp=*/2);
  const int64_t layer = 2 * kH + 2 * 128 + ((kQ + 2 * kKv) * kH + kQ * kH + 3 * kF * kH) / 2;
  const int64_t first = 18 * layer + 152064 / 2 * kH;
  training.optimizer.cpu_offload = true;
  const RankMemory all = EstimateMemory(model, training).stages[0];
  EXPECT_EQ(all.optimizer_bytes, 0);
  EXPECT_EQ(all.host_optimizer_bytes, 16 * first);
  EXPECT_EQ(all.weights_bytes, 2 * first);
  EXPECT_EQ(all.grads_bytes, 4 * first);
  training.optimizer.offload_fraction = 0.5;
  const RankMemory half = EstimateMemory(model, training).stages[0];
  const int64_t host = (first + 1) / 2;  // llround(first / 2)
  EXPECT_EQ(half.host_optimizer_bytes, 16 * host);
  EXPECT_EQ(half.optimizer_bytes, 12 * (first - host));
}

// Eval mode (forward-only): the weights stay, no grads, no optimizer state, and nothing is saved
// for backward: the working set plus the largest block of one micro-batch.
TEST(MemoryTest, ForwardOnlyKeepsWeightsAndOneBlockOfActivations) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training = Training(/*tp=*/2, /*pp=*/2, /*dp=*/2);
  training.batch.global_batch_size = 16;
  const RankMemory train = EstimateMemory(model, training).stages[0];
  training.forward_only = true;
  const RankMemory eval = EstimateMemory(model, training).stages[0];
  EXPECT_EQ(eval.weights_bytes, train.weights_bytes);
  EXPECT_EQ(eval.grads_bytes, 0);
  EXPECT_EQ(eval.optimizer_bytes, 0);
  EXPECT_EQ(eval.in_flight_micro_batches, 0);
  int64_t largest = 0;
  for (const ActivationBreakdown& part : eval.activations) {
    largest = std::max(largest, part.bytes_per_micro_batch);
  }
  EXPECT_EQ(eval.activations_bytes, eval.activation_working_set_bytes + largest);
  EXPECT_LT(eval.activations_bytes, train.activations_bytes);
}

// slime's and AReaL's log-prob passes run inside the training engine, whose gradient buffers
// stay allocated (slime actor.py compute_log_prob on the DDP-wrapped actor): the same grads as
// training, but no optimizer-step transient and one block of activations.
TEST(MemoryTest, SlimeForwardOnlyKeepsTheGradientBuffers) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training = Training(/*tp=*/2, /*pp=*/2, /*dp=*/2);
  training.batch.global_batch_size = 16;
  training.framework.framework = config::Framework::kSlime;
  const RankMemory train = EstimateMemory(model, training).stages[0];
  training.forward_only = true;
  const RankMemory eval = EstimateMemory(model, training).stages[0];
  EXPECT_GT(eval.grads_bytes, 0);
  EXPECT_EQ(eval.grads_bytes, train.grads_bytes);
  EXPECT_EQ(eval.optimizer_bytes, train.optimizer_bytes);
  EXPECT_EQ(eval.optimizer_step_bytes, 0);
  EXPECT_EQ(eval.in_flight_micro_batches, 0);
  training.framework.framework = config::Framework::kVerl;  // verl loads params without grads
  EXPECT_EQ(EstimateMemory(model, training).stages[0].grads_bytes, 0);
}

// slime's duplicated GDN (slime_plugins/models/hf_attention.py) on Qwen3.5-35B-A3B layer 0 at
// t 2, c 4, SP, s 4096, b 1: the rank keeps the input norm of its 512 tokens (input and rstd),
// the gathered 4096-token input that in_proj saves and the whole GDN's tensors over 4096 tokens;
// Megatron-Core's sharded GDN keeps its 1024 CP tokens with the heads split by t = 2 (in_proj
// 12352, conv 8192, 16 key / 32 value heads of 128, chunk 64; formulas of GdnBytes). The MoE
// block is the same in both, so it cancels.
TEST(MemoryTest, SlimeGdnSavesTheWholeSequencesTensors) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  config::TrainingConfig core;
  core.parallel = {.world_size = 8, .tensor = 2, .context = 4, .expert = 8, .expert_tensor = 1};
  core.sequence_parallel = true;
  config::TrainingConfig slime = core;
  slime.framework.framework = config::Framework::kSlime;
  const auto mixer = [](int64_t s, int64_t t) {
    return s * 12352 / t * 2 + s * 8192 / t * 2 + s * (2 * 16 / t) * 4 + s * (32 / t) * 6 +
           s * (32 / t) * 64 * 2 + s * (4096 / t) * 2 + s * (4096 / t) * 2 + s * (32 / t) * 4;
  };
  const int64_t norm = 512 * 2048 * 2 + 512 * 4;
  const int64_t slime_gdn = norm + 4096 * 2048 * 2 + mixer(4096, 1);
  const int64_t core_gdn = norm + 512 * 2048 * 2 + mixer(1024, 2);
  const config::LayerSpec layer = model.layers[0];
  ASSERT_EQ(layer.mixer, config::MixerKind::kGatedDeltaNet);
  EXPECT_EQ(internal::LayerActivationBytesNoRecompute(graph::MakeLayerOpContext(model, slime),
                                                      layer, 1.0) -
                internal::LayerActivationBytesNoRecompute(graph::MakeLayerOpContext(model, core),
                                                          layer, 1.0),
            slime_gdn - core_gdn);
}

// --deterministic-mode saves what autograd keeps of Megatron-Core's torch-native chunked delta
// rule (gdn.py:422-527) and F.conv1d path. Qwen3.5-35B-A3B layer 0 (GDN: H_v 32, H_k 16,
// d_k = d_v = 128, conv 4, C = 64) at t 2, b 4, s 4096, derived by hand:
//   fp32 floats per (sequence, value head, chunk) = C·(7·d_k + 3·d_v + 6C + 4)
//     + Σ_{i=1}^{C−1}(i + i²) + d_k·d_v = 64·1668 + 2016 + 85,344 + 16,384 = 210,496;
//   × 4 bytes × (4 sequences · 16 heads) × 64 chunks = 3,448,766,464 bytes;
//   + the conv input copy 4·4096·(8192/2)·2 = 134,217,728 and SiLU's input, the conv output of
//     4096 + 3 positions, 4·4099·4096·2 = 134,316,032;
//   − FLA's WY matrix 16,384·16·64·2 = 33,554,432 and the bf16 v 16,384·2048·2 = 67,108,864:
//   3,616,636,928 bytes (3.37 GiB) more per GDN layer and micro-batch.
TEST(MemoryTest, DeterministicGdnKeepsTheTorchChunkLoopsFp32Tensors) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  config::TrainingConfig fla;
  fla.parallel = {.world_size = 8, .tensor = 2, .expert = 8, .expert_tensor = 1};
  fla.sequence_parallel = true;
  fla.batch.micro_batch_size = 4;
  fla.batch.seq_length = 4096;
  config::TrainingConfig deterministic = fla;
  deterministic.deterministic = true;
  const config::LayerSpec gdn = model.layers[0];
  ASSERT_EQ(gdn.mixer, config::MixerKind::kGatedDeltaNet);
  const auto bytes = [&](const config::TrainingConfig& training, const config::LayerSpec& layer) {
    return internal::LayerActivationBytesNoRecompute(graph::MakeLayerOpContext(model, training),
                                                     layer, 1.0);
  };
  EXPECT_EQ(bytes(deterministic, gdn) - bytes(fla, gdn), int64_t{3'616'636'928});
  // Attention layers do not change.
  const config::LayerSpec attention = model.layers[3];
  ASSERT_EQ(attention.mixer, config::MixerKind::kGatedAttention);
  EXPECT_EQ(bytes(deterministic, attention), bytes(fla, attention));
}

TEST(MemoryTest, MegatronFsdpShardsWeightsGradsAndOptimizer) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training = Training(/*tp=*/2, /*pp=*/1, /*dp=*/2);
  training.data_parallel.megatron_fsdp = true;
  training.data_parallel.distributed_optimizer = true;
  ExpectValid(model, training);
  const int64_t layer = 2 * kH + 2 * 128 + ((kQ + 2 * kKv) * kH + kQ * kH + 3 * kF * kH) / 2;
  const int64_t vocab_shard = 152064 / 2 * kH;
  const int64_t total = 36 * layer + 2 * vocab_shard + kH;  // an even number: shard = total/2
  const MemoryOverheads no_overheads{
      .cuda_context_bytes = 0, .nccl_bytes_per_communicator = 0, .fragmentation_fraction = 0.0};
  const RankMemory rank = EstimateMemory(model, training, no_overheads).stages[0];
  // megatron_fsdp.py optim_grads_params: bf16 params and (auto = bf16) main grads sharded over
  // dp·cp = 2, 12 B of fp32 state; the optimizer step's fp32 copy of the bf16 grad shard is
  // transient.
  EXPECT_EQ(rank.weights_bytes, 2 * total / 2);
  EXPECT_EQ(rank.grads_bytes, 2 * total / 2);
  EXPECT_EQ(rank.optimizer_bytes, 12 * total / 2);
  EXPECT_EQ(rank.optimizer_step_bytes, 4 * total / 2);
  // Buffers: the root unit (embedding, final norm, output layer) stays gathered, plus one
  // decoder layer's gathered params and full bf16 grad.
  // Also in buffers: TE's cuBLAS workspace (32 MiB + 1 KiB on Hopper, gemm.py) and the
  // allocator's rounding of the reserve to 2 MiB segments.
  EXPECT_EQ(rank.buffers_bytes, 2 * (2 * vocab_shard + kH) + 2 * layer + 2 * layer +
                                    rank.cublas_workspace_bytes + rank.fragmentation_bytes);
  EXPECT_EQ(rank.cublas_workspace_bytes, 32 * kBytesPerMiB + 1024);
}

// Qwen3-30B-A3B: h = 2048, L = 48, n = 32, g = 4, d_h = 128, E = 128, k = 8, F_e = 768.
TEST(MemoryTest, MoeModelShardsExpertOptimizerStateOverExpertDataParallel) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  config::TrainingConfig training = Training(/*tp=*/1, /*pp=*/1, /*dp=*/16);
  training.parallel.expert = 8;  // d_e = W/(u·e·p) = 16/8 = 2
  training.moe.dispatcher = config::TokenDispatcher::kAllToAll;
  ExpectValid(model, training);
  const int64_t h = 2048;
  const int64_t dense_layer = 2 * h + 2 * 128 + (4096 + 2 * 512) * h + 4096 * h + 128 * h;
  const int64_t dense = 48 * dense_layer + 2 * 151936 * h + h;  // V = 151936 is 128-aligned
  const int64_t expert = 48 * (128 / 8) * (3 * 768 * h);        // E/e experts of 3·F_e·h

  MemoryEstimate estimate = EstimateMemory(model, training);
  ASSERT_EQ(estimate.stages.size(), 1u);
  EXPECT_EQ(estimate.stages[0].weights_bytes, 2 * (dense + expert));
  EXPECT_EQ(estimate.stages[0].grads_bytes, 4 * (dense + expert));
  EXPECT_EQ(estimate.stages[0].optimizer_bytes, 12 * (dense + expert));

  // Both buffers are 128-aligned already; dense state over dp·cp = 16, expert state over d_e = 2.
  training.data_parallel.distributed_optimizer = true;
  estimate = EstimateMemory(model, training);
  EXPECT_EQ(estimate.stages[0].weights_bytes, 2 * (dense + expert));
  EXPECT_EQ(estimate.stages[0].optimizer_bytes, 12 * (dense / 16 + expert / 2));
}

// Qwen3.5-9B text model: h = 4096, 24 GDN + 8 gated-attention layers (n = 16, g = 4, d_h = 256),
// GDN H_k = 16, d_k = 128, H_v = 32, d_v = 128, K = 4; F = 12288; V0 = 248320; untied; 1 MTP
// layer (gated attention + dense MLP).
TEST(MemoryTest, GdnModelStatesIncludeParamPaddingOfTheDistributedOptimizer) {
  config::ModelConfig model = io::LoadPreset("Qwen3.5-9B");
  model.vision = {};  // text-only training
  config::TrainingConfig training = Training(/*tp=*/1, /*pp=*/1, /*dp=*/4);
  ExpectValid(model, training);
  const int64_t h = 4096, qk = 16 * 128, vd = 32 * 128;
  const int64_t mlp = h + 3 * kF * h;
  const int64_t attention = h + (4096 + 4096 + 2 * 1024) * h + 2 * 256 + 4096 * h;
  const int64_t gdn =
      h + (2 * qk + 2 * vd + 2 * 32) * h + 4 * (2 * qk + vd) + 2 * 32 + 128 + vd * h;
  const int64_t mtp = 3 * h + 2 * h * h + attention + mlp;
  const int64_t total = 24 * (gdn + mlp) + 8 * (attention + mlp) + 2 * 248320 * h + h + mtp;

  MemoryEstimate estimate = EstimateMemory(model, training);
  EXPECT_EQ(estimate.stages[0].weights_bytes, 2 * total);
  EXPECT_EQ(estimate.stages[0].optimizer_bytes, 12 * total);

  // A_log and dt_bias (32 elements each) start the next parameter at a multiple of 64: 64
  // elements of padding per GDN layer; the bucket ends at a multiple of lcm(4, 128) = 128.
  training.data_parallel.distributed_optimizer = true;
  estimate = EstimateMemory(model, training);
  const int64_t padded = RoundUp(total + 24 * 64, 128);
  EXPECT_EQ(estimate.stages[0].weights_bytes, 2 * padded);
  EXPECT_EQ(estimate.stages[0].grads_bytes, 4 * padded);
  EXPECT_EQ(estimate.stages[0].optimizer_bytes, 12 * padded / 4);
}

// Dense layer formula (docs/memory.md), SP on, g >= t, selective core_attn, bytes per micro-batch:
//   (s·b/t)·[8h + 6q + 6kv + 6F + 4(n + g) + 8]
// 8h: input and output of both fused norms; 6q + 6kv: qk-norm inputs 2(q + kv), flash-attention
// q, k, v 2(q + 2kv), core output 2q; 6F: SwiGLU fc1 output 4F and its output 2F; 4(n + g) the
// fp32 qk-norm rstd; 8 the two fp32 norm rstd. Korthikanti's 34·sbh minus the dropout masks,
// with 2F-wide fc1 output, GQA and qk-norm.
TEST(MemoryTest, DenseLayerActivationsWithSequenceParallelAndCoreAttnRecomputeMatchFormula) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training = Training(/*tp=*/2, /*pp=*/1, /*dp=*/1);
  training.recompute.granularity = config::RecomputeGranularity::kSelective;
  training.recompute.modules = {"core_attn"};
  ExpectValid(model, training);
  const int64_t sb_over_t = 4096 / 2;
  const int64_t expected = sb_over_t * (8 * kH + 6 * kQ + 6 * kKv + 6 * kF + 4 * (32 + 8) + 8);
  const RankMemory rank = EstimateMemory(model, training).stages[0];
  const ActivationBreakdown* layer = FindPart(rank, "attention/dense_mlp");
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(layer->bytes_per_micro_batch, expected);  // 281,362,432 bytes
  EXPECT_EQ(layer->num_layers, 36);

  // Without core_attn recompute the fp32 softmax LSE (s·b·n/t·4 bytes) is kept as well.
  training.recompute.granularity = config::RecomputeGranularity::kNone;
  const RankMemory plain = EstimateMemory(model, training).stages[0];
  EXPECT_EQ(FindPart(plain, "attention/dense_mlp")->bytes_per_micro_batch,
            expected + 4096 * 32 / 2 * 4);
}

// --cpu-offloading-num-layers N: the first N layers' saved activations (the per-layer formula
// above plus the fp32 LSE, no recompute) move to the host; the kept layers stay. When only one
// layer is kept, the reload of layer N−1 beside layer N's backward holds one layer more.
TEST(MemoryTest, CpuOffloadingMovesTheFirstLayersActivationsToTheHost) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training = Training(/*tp=*/2, /*pp=*/1, /*dp=*/1);
  ExpectValid(model, training);
  const int64_t layer =
      4096 / 2 * (8 * kH + 6 * kQ + 6 * kKv + 6 * kF + 4 * (32 + 8) + 8) + 4096 * 32 / 2 * 4;
  EXPECT_EQ(OffloadedLayerBytes(model, training, 0), layer);
  const RankMemory plain = EstimateMemory(model, training).stages[0];

  training.cpu_offloading = true;
  training.cpu_offloading_num_layers = 30;
  ExpectValid(model, training);
  const RankMemory thirty = EstimateMemory(model, training).stages[0];
  EXPECT_EQ(thirty.host_activation_bytes, 30 * layer);
  EXPECT_EQ(FindPart(thirty, "attention/dense_mlp")->num_layers, 6);
  EXPECT_EQ(thirty.activations_bytes, plain.activations_bytes - 30 * layer);

  training.cpu_offloading_num_layers = 35;
  const RankMemory one_kept = EstimateMemory(model, training).stages[0];
  EXPECT_EQ(one_kept.host_activation_bytes, 35 * layer);
  EXPECT_EQ(one_kept.activations_bytes, plain.activations_bytes - 35 * layer + layer);
  EXPECT_EQ(one_kept.peak_bytes - one_kept.activations_bytes - one_kept.buffers_bytes,
            plain.peak_bytes - plain.activations_bytes - plain.buffers_bytes);
}

TEST(MemoryTest, FirstStageHoldsTheMostIn1F1B) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training = Training(/*tp=*/2, /*pp=*/4, /*dp=*/1);
  training.batch.global_batch_size = 8;  // m = 8
  ExpectValid(model, training);
  const MemoryEstimate estimate = EstimateMemory(model, training);
  ASSERT_EQ(estimate.stages.size(), 4u);
  for (int64_t r = 0; r < 4; ++r) {
    EXPECT_EQ(estimate.stages[r].in_flight_micro_batches, 4 - r);  // min(p − r, m)
  }
  for (int64_t r = 1; r < 4; ++r) {
    EXPECT_GT(estimate.stages[0].activations_bytes, estimate.stages[r].activations_bytes);
  }
  EXPECT_EQ(estimate.max_peak_pipeline_rank, 0);
  EXPECT_EQ(estimate.max_peak_bytes, estimate.stages[0].peak_bytes);
}

TEST(MemoryTest, InterleavedScheduleHoldsWarmUpPlusOnePasses) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training = Training(/*tp=*/2, /*pp=*/2, /*dp=*/1);
  training.parallel.virtual_stages = 2;
  training.batch.global_batch_size = 4;  // m = 4
  ExpectValid(model, training);
  const MemoryEstimate estimate = EstimateMemory(model, training);
  // w_r = min(2(p−r−1) + (v−1)·p, m·v): rank 0 4, rank 1 2; one more forward before the first
  // backward.
  EXPECT_EQ(estimate.stages[0].in_flight_micro_batches, 5);
  EXPECT_EQ(estimate.stages[1].in_flight_micro_batches, 3);
}

TEST(MemoryTest, FullRecomputeKeepsOnlyLayerInputs) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training = Training(/*tp=*/2, /*pp=*/1, /*dp=*/1);
  ExpectValid(model, training);
  const RankMemory plain = EstimateMemory(model, training).stages[0];
  training.recompute.granularity = config::RecomputeGranularity::kFull;
  training.recompute.method = config::RecomputeMethod::kUniform;
  training.recompute.num_layers = 1;
  ExpectValid(model, training);
  const RankMemory full = EstimateMemory(model, training).stages[0];
  EXPECT_LT(full.activations_bytes, plain.activations_bytes);
  const ActivationBreakdown* inputs = FindPart(full, "layer_inputs (full recompute)");
  ASSERT_NE(inputs, nullptr);
  EXPECT_EQ(inputs->bytes_per_micro_batch, 4096 / 2 * kH * 2);  // s·b·h·2/t under SP
  EXPECT_EQ(inputs->num_layers, 36);
  EXPECT_EQ(FindPart(full, "attention/dense_mlp"), nullptr);
}

TEST(MemoryTest, MoeLayerHoldsMoreThanDenseLayerOfSameActiveWidth) {
  const config::ModelConfig moe_model = io::LoadPreset("Qwen3-30B-A3B");
  config::ModelConfig dense_model = moe_model;
  dense_model.ffn_hidden_size = 8 * 768;  // k·F_e
  for (config::LayerSpec& layer : dense_model.layers) layer.ffn = config::FfnKind::kDense;
  config::TrainingConfig training = Training(/*tp=*/2, /*pp=*/1, /*dp=*/4);
  training.parallel.expert = 8;
  training.parallel.expert_tensor = 1;
  training.moe.dispatcher = config::TokenDispatcher::kAllToAll;
  ExpectValid(moe_model, training);
  const RankMemory moe_rank = EstimateMemory(moe_model, training).stages[0];
  const ActivationBreakdown* moe = FindPart(moe_rank, "attention/moe");
  const RankMemory dense_rank = EstimateMemory(dense_model, training).stages[0];
  const ActivationBreakdown* dense = FindPart(dense_rank, "attention/dense_mlp");
  ASSERT_NE(moe, nullptr);
  ASSERT_NE(dense, nullptr);
  // The experts' input alone is k rows of h per token instead of one.
  EXPECT_GT(moe->bytes_per_micro_batch, dense->bytes_per_micro_batch);
}

TEST(MemoryTest, PeakIsTheSumOfCategories) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  const config::TrainingConfig training = Training(/*tp=*/2, /*pp=*/2, /*dp=*/2);
  const MemoryOverheads overheads{.cuda_context_bytes = kBytesPerGiB,
                                  .nccl_bytes_per_communicator = 0,
                                  .fragmentation_fraction = 0.0};
  for (const RankMemory& rank : EstimateMemory(model, training, overheads).stages) {
    EXPECT_EQ(rank.buffers_bytes,
              kBytesPerGiB + rank.cublas_workspace_bytes + rank.fragmentation_bytes);
    EXPECT_EQ(rank.peak_bytes, rank.weights_bytes + rank.grads_bytes + rank.optimizer_bytes +
                                   rank.activations_bytes + rank.buffers_bytes);
  }
}

// Precision-aware optimizer (TE FusedAdam, optimizer/__init__.py:564-588): moments in their
// dtypes, fp32 masters of bf16 params stored as 16-bit remainders, 16-bit grads read in place.
TEST(MemoryTest, PrecisionAwareOptimizerStoresMomentsAndMastersInTheirDtypes) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training = Training(/*tp=*/2, /*pp=*/2, /*dp=*/2);
  training.data_parallel.distributed_optimizer = true;
  training.precision.precision_aware_optimizer = true;
  training.precision.exp_avg = config::OptimizerDtype::kBf16;
  training.precision.exp_avg_sq = config::OptimizerDtype::kBf16;
  training.precision.main_grads = config::OptimizerDtype::kBf16;
  training.precision.grad_reduce_in_fp32 = false;
  ExpectValid(model, training);
  const int64_t layer = 2 * kH + 2 * 128 + ((kQ + 2 * kKv) * kH + kQ * kH + 3 * kF * kH) / 2;
  const int64_t first = 18 * layer + 152064 / 2 * kH;  // as in the dense test above
  MemoryEstimate estimate = EstimateMemory(model, training);
  // Per shard element: exp_avg 2 + exp_avg_sq 2 + master remainder 2 = 6 B, over d·c = 2.
  EXPECT_EQ(estimate.stages[0].optimizer_bytes, 6 * first / 2);
  EXPECT_EQ(estimate.stages[0].grads_bytes, 2 * first);
  EXPECT_EQ(estimate.stages[0].optimizer_step_bytes, 0);  // decoupled_grad, no fp32 copy

  // fp8 moments and fp16 master params: 1 + 1 + 2 = 4 B.
  training.precision.exp_avg = config::OptimizerDtype::kFp8;
  training.precision.exp_avg_sq = config::OptimizerDtype::kFp8;
  training.precision.main_params = config::OptimizerDtype::kFp16;
  estimate = EstimateMemory(model, training);
  EXPECT_EQ(estimate.stages[0].optimizer_bytes, 4 * first / 2);

  // A tensorwise FP8 recipe with fp32 main params: Megatron keeps the fp32 masters (4 B) and the
  // fp32 grad copy (optimizer_config.py:407-414); the moments stay fp8: 4 + 1 + 1 = 6 B.
  training.precision.main_params = config::OptimizerDtype::kFp32;
  training.precision.fp8 = config::Fp8Format::kHybrid;
  training.precision.fp8_recipe = config::Fp8Recipe::kTensorwise;
  training.precision.fp8_param_gather = true;
  estimate = EstimateMemory(model, training);
  EXPECT_EQ(estimate.stages[0].optimizer_bytes, 6 * first / 2);
  EXPECT_EQ(estimate.stages[0].optimizer_step_bytes, 4 * first / 2);
}

TEST(MemoryTest, PrecisionAwareOptimizerShardsMoeAndGdnStates) {
  // Qwen3-30B-A3B as in MoeModelShardsExpertOptimizerStateOverExpertDataParallel: bf16 moments
  // and remainders, 2 + 2 + 2 = 6 B over dp·cp = 16 (dense) and d_e = 2 (experts).
  const config::ModelConfig moe_model = io::LoadPreset("Qwen3-30B-A3B");
  config::TrainingConfig training = Training(/*tp=*/1, /*pp=*/1, /*dp=*/16);
  training.parallel.expert = 8;
  training.moe.dispatcher = config::TokenDispatcher::kAllToAll;
  training.data_parallel.distributed_optimizer = true;
  training.precision.precision_aware_optimizer = true;
  training.precision.exp_avg = config::OptimizerDtype::kBf16;
  training.precision.exp_avg_sq = config::OptimizerDtype::kBf16;
  ExpectValid(moe_model, training);
  const int64_t h = 2048;
  const int64_t dense_layer = 2 * h + 2 * 128 + (4096 + 2 * 512) * h + 4096 * h + 128 * h;
  const int64_t dense = 48 * dense_layer + 2 * 151936 * h + h;
  const int64_t expert = 48 * (128 / 8) * (3 * 768 * h);
  EXPECT_EQ(EstimateMemory(moe_model, training).stages[0].optimizer_bytes,
            6 * (dense / 16 + expert / 2));

  // Qwen3.5-9B as in GdnModelStatesIncludeParamPaddingOfTheDistributedOptimizer, fp32 moments:
  // 4 + 4 + 2 (remainder) = 10 B per padded element over d = 4.
  config::ModelConfig gdn_model = io::LoadPreset("Qwen3.5-9B");
  gdn_model.vision = {};
  training = Training(/*tp=*/1, /*pp=*/1, /*dp=*/4);
  training.data_parallel.distributed_optimizer = true;
  training.precision.precision_aware_optimizer = true;
  ExpectValid(gdn_model, training);
  const int64_t qk = 16 * 128, vd = 32 * 128, gh = 4096;
  const int64_t mlp = gh + 3 * kF * gh;
  const int64_t attention = gh + (4096 + 4096 + 2 * 1024) * gh + 2 * 256 + 4096 * gh;
  const int64_t gdn =
      gh + (2 * qk + 2 * vd + 2 * 32) * gh + 4 * (2 * qk + vd) + 2 * 32 + 128 + vd * gh;
  const int64_t mtp = 3 * gh + 2 * gh * gh + attention + mlp;
  const int64_t total = 24 * (gdn + mlp) + 8 * (attention + mlp) + 2 * 248320 * gh + gh + mtp;
  const int64_t padded = RoundUp(total + 24 * 64, 128);
  EXPECT_EQ(EstimateMemory(gdn_model, training).stages[0].optimizer_bytes, 10 * padded / 4);
}

// FP8 weights (TE linear.py quantize_weight): without --fp8-param-gather TE caches a rowwise and
// a columnwise FP8 copy of every TE linear weight (+2 B each); with it the weight is FP8 (1 B)
// plus its transpose (1 B), the same 2 B as bf16; MXFP8 adds an E8M0 scale per 32 elements to
// each of the two copies.
TEST(MemoryTest, Fp8AddsWeightCopiesOfTeLinears) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training = Training(/*tp=*/2, /*pp=*/2, /*dp=*/2);
  ExpectValid(model, training);
  const int64_t layer = 2 * kH + 2 * 128 + ((kQ + 2 * kKv) * kH + kQ * kH + 3 * kF * kH) / 2;
  const int64_t first = 18 * layer + 152064 / 2 * kH;
  // TE linears per layer and TP rank: qkv, proj, fc1, fc2 (not the norms or the embedding).
  const int64_t linear = 18 * (((kQ + 2 * kKv) * kH + kQ * kH + 3 * kF * kH) / 2);
  training.precision.fp8 = config::Fp8Format::kHybrid;
  training.precision.fp8_recipe = config::Fp8Recipe::kDelayed;
  EXPECT_EQ(EstimateMemory(model, training).stages[0].weights_bytes, 2 * first + 2 * linear);

  training.precision.fp8_param_gather = true;
  EXPECT_EQ(EstimateMemory(model, training).stages[0].weights_bytes, 2 * first);

  training.precision.fp8_recipe = config::Fp8Recipe::kMxfp8;
  EXPECT_EQ(EstimateMemory(model, training).stages[0].weights_bytes,
            2 * first + 2 * CeilDiv(linear, 32));
}

// NVFP4 weights: two cached copies of half a byte per element plus one E4M3 scale per 16x16
// block; with --fp4-param-gather they replace the bf16 weight.
TEST(MemoryTest, Fp4CachesHalfByteWeightCopies) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training = Training(/*tp=*/2, /*pp=*/2, /*dp=*/2);
  const int64_t layer = 2 * kH + 2 * 128 + ((kQ + 2 * kKv) * kH + kQ * kH + 3 * kF * kH) / 2;
  const int64_t first = 18 * layer + 152064 / 2 * kH;
  const int64_t linear = 18 * (((kQ + 2 * kKv) * kH + kQ * kH + 3 * kF * kH) / 2);
  training.precision.fp4 = config::Fp4Format::kE2m1;
  ExpectValid(model, training);
  const int64_t copies = 2 * (linear / 2 + CeilDiv(linear, 256));
  EXPECT_EQ(EstimateMemory(model, training).stages[0].weights_bytes, 2 * first + copies);
  training.precision.fp4_param_gather = true;
  EXPECT_EQ(EstimateMemory(model, training).stages[0].weights_bytes,
            2 * first - 2 * linear + copies);
}

// Dense layer formula with FP8 (tensorwise), SP, selective core_attn: the GEMM inputs TE saves
// are FP8 (1 B): both norm outputs h, linear_proj's own copy of O (q; flash attention keeps its
// bf16 O) and the SwiGLU output F:
//   (s·b/t)·[6h + 7q + 6kv + 5F + 4(n + g) + 8]
// 6h: both norms' bf16 inputs 2h each and FP8 outputs h each; 7q: qk-norm input 2q, FA q 2q,
// O 2q, FP8 O q; 6kv as in bf16; 5F: fc1 output 4F and FP8 SwiGLU output F.
TEST(MemoryTest, Fp8SavesQuantizedGemmInputs) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training = Training(/*tp=*/2, /*pp=*/1, /*dp=*/1);
  training.recompute.granularity = config::RecomputeGranularity::kSelective;
  training.recompute.modules = {"core_attn"};
  training.precision.fp8 = config::Fp8Format::kHybrid;
  training.precision.fp8_recipe = config::Fp8Recipe::kTensorwise;
  ExpectValid(model, training);
  const int64_t sb_over_t = 4096 / 2;
  const int64_t expected = sb_over_t * (6 * kH + 7 * kQ + 6 * kKv + 5 * kF + 4 * (32 + 8) + 8);
  EXPECT_EQ(FindPart(EstimateMemory(model, training).stages[0], "attention/dense_mlp")
                ->bytes_per_micro_batch,
            expected);

  // MXFP8: each FP8 input also carries one scale byte per 32 elements: (s·b/t)(2h + q + F)/32.
  training.precision.fp8_recipe = config::Fp8Recipe::kMxfp8;
  EXPECT_EQ(FindPart(EstimateMemory(model, training).stages[0], "attention/dense_mlp")
                ->bytes_per_micro_batch,
            expected + sb_over_t * (2 * kH + kQ + kF) / 32);

  // NVFP4: each of those inputs is 1/2 + 1/16 = 9/16 byte per element instead of 1.
  training.precision.fp8 = config::Fp8Format::kNone;
  training.precision.fp4 = config::Fp4Format::kE2m1;
  EXPECT_EQ(FindPart(EstimateMemory(model, training).stages[0], "attention/dense_mlp")
                ->bytes_per_micro_batch,
            expected - sb_over_t * (2 * kH + kQ + kF) * 7 / 16);
}

// Routing skew λ = 1.5 on Qwen3-30B-A3B (h = 2048, k = 8, F_e = 768), t = 1, EP 8, alltoall:
// the busiest rank's expert rows grow from T·k = 4096·8 = 32768 to 49152. Each row saves the
// permuted prob 2 + fc1 input 2h = 4096 + fc1 output 2·2F_e = 3072 + activation 2F_e = 1536 =
// 8706 bytes, so each MoE layer saves 16384·8706 more bytes; the dispatcher's expert output in
// the working set grows by 16384·h·2.
TEST(MemoryTest, MoeLoadFactorScalesTheBusiestRanksExpertRows) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  config::TrainingConfig training = Training(/*tp=*/1, /*pp=*/1, /*dp=*/8);
  training.parallel.expert = 8;
  training.moe.dispatcher = config::TokenDispatcher::kAllToAll;
  ExpectValid(model, training);
  const RankMemory balanced = EstimateMemory(model, training).stages[0];
  const RankMemory skewed =
      EstimateMemory(model, training, MemoryOverheads{.moe_load_factor = 1.5}).stages[0];
  EXPECT_EQ(FindPart(skewed, "attention/moe")->bytes_per_micro_batch -
                FindPart(balanced, "attention/moe")->bytes_per_micro_batch,
            16384 * 8706);
  // The LM head's logits dominate this model's working set, so check the MoE layer's transient.
  const graph::LayerOpContext context = graph::MakeLayerOpContext(model, training);
  const config::LayerSpec moe_layer = model.layers.front();
  EXPECT_EQ(internal::LayerTransientBytes(context, moe_layer, 1.5) -
                internal::LayerTransientBytes(context, moe_layer, 1.0),
            16384 * 2048 * 2);
}

// HybridEP's rank budget (token_dispatcher.py setup_metadata): Qwen3-30B-A3B at t = 1, EP 8, flex,
// 4096 tokens: every routed-expert buffer has ceil(4096·8·1.5) = 49152 rows instead of 32768,
// 16384 more rows of 8706 saved bytes each (prob 2, fc1 input 4096, fc1 output 3072, activation
// 1536; flex keeps no permutation map). The paged stash (paged_stash.py) then holds everything
// the fused expert MLP saves in ceil(32768·1.2) = 39322 rows: 49152 − 39322 = 9830 rows fewer,
// of 8706 bytes in BF16 and, under MXFP8, of prob 2 + fc1 input 2048 + 64 + fc1 output 3072 +
// fc2 input 768 + 24 = 5978 bytes.
TEST(MemoryTest, RankBudgetSizesTheExpertBuffersAndThePagedStashShrinksThem) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  config::TrainingConfig training = Training(/*tp=*/1, /*pp=*/1, /*dp=*/8);
  training.parallel.expert = 8;
  training.moe.dispatcher = config::TokenDispatcher::kFlex;
  training.moe.flex_backend = config::FlexBackend::kHybridEp;
  training.moe.te_op_fuser = true;
  ExpectValid(model, training);
  const config::LayerSpec moe_layer = model.layers.front();
  const auto layer_bytes = [&] {
    return internal::LayerActivationBytes(graph::MakeLayerOpContext(model, training), moe_layer,
                                          1.0);
  };
  const int64_t eager = layer_bytes();
  training.moe.rank_capacity_factor = 1.5;
  const int64_t budget = layer_bytes();
  EXPECT_EQ(budget - eager, 16384 * 8706);
  // A busiest rank over the budget overflows: the rerun's eager buffers hold its rows.
  EXPECT_EQ(
      internal::LayerActivationBytes(graph::MakeLayerOpContext(model, training), moe_layer, 2.0) -
          eager,
      32768 * 8706);
  training.moe.paged_stash = true;
  training.moe.paged_stash_buffer_factor = 1.2;
  EXPECT_EQ(budget - layer_bytes(), 9830 * 8706);
  training.moe.paged_stash = false;
  training.precision.fp8 = config::Fp8Format::kE4m3;
  training.precision.fp8_recipe = config::Fp8Recipe::kMxfp8;
  const int64_t mxfp8_budget = layer_bytes();
  training.moe.paged_stash = true;
  EXPECT_EQ(mxfp8_budget - layer_bytes(), 9830 * 5978);
}

// The allocator's peak is the larger of forward/backward (states + activations) and the
// optimizer step (states + the fp32 copy of 16-bit grads); reserved adds the fragmentation
// share, the device peak the CUDA context and NCCL buffers.
TEST(MemoryTest, OptimizerStepPhaseCanSetThePeak) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training = Training(/*tp=*/1, /*pp=*/1, /*dp=*/1);
  training.batch.seq_length = 128;  // tiny activations
  training.precision.grad_reduce_in_fp32 = false;
  ExpectValid(model, training);
  const MemoryOverheads overheads{.cuda_context_bytes = kBytesPerGiB,
                                  .nccl_bytes_per_communicator = 0,
                                  .fragmentation_fraction = 0.5};
  const RankMemory rank = EstimateMemory(model, training, overheads).stages[0];
  const int64_t states = rank.weights_bytes + rank.grads_bytes + rank.optimizer_bytes;
  ASSERT_GT(rank.optimizer_step_bytes, rank.activations_bytes);
  EXPECT_EQ(rank.allocated_bytes, states + rank.optimizer_step_bytes + rank.cublas_workspace_bytes);
  // Reserved: allocated · 1.5 rounded up to the caching allocator's 2 MiB segments.
  EXPECT_EQ(rank.reserved_bytes,
            RoundUp(rank.allocated_bytes + rank.allocated_bytes / 2, 2 * kBytesPerMiB));
  EXPECT_EQ(rank.peak_bytes, rank.reserved_bytes + kBytesPerGiB);
  EXPECT_EQ(rank.peak_bytes, states + rank.activations_bytes + rank.buffers_bytes);
}

// DeepSeek-V3 layer 0, t = 2 with SP, s = 4096, b = 1: 2048 sequence-shard tokens, 64 local
// heads. The selective mla_up_proj recompute frees, per latent, the fp32 rsigma and the norm
// output the up projection saves (q: 2048·4 + 2048·1536·2; kv: 2048·4 + 2048·512·2) and flash
// attention's q, k, v (4096·(2·64·192 + 64·128)·2 = 268,435,456), and keeps the gathered RoPE key
// (4096·64·2 = 524,288): 276,316,160 bytes less.
TEST(MemoryTest, MlaUpProjectionRecomputeFreesTheLatentNormOutputsAndQkv) {
  const config::ModelConfig model = io::LoadPreset("DeepSeek-V3");
  config::TrainingConfig training;
  training.parallel = {.world_size = 2, .tensor = 2};
  training.sequence_parallel = true;
  training.batch = {.micro_batch_size = 1, .seq_length = 4096};
  training.sequence_layout = config::SequenceLayout::kBshd;
  training.recompute.granularity = config::RecomputeGranularity::kSelective;
  training.recompute.modules = {"core_attn"};
  const int64_t kept = internal::LayerActivationBytes(graph::MakeLayerOpContext(model, training),
                                                      model.layers[0], 1.0);
  training.recompute.modules = {"core_attn", "mla_up_proj"};
  const int64_t recomputed = internal::LayerActivationBytes(
      graph::MakeLayerOpContext(model, training), model.layers[0], 1.0);
  EXPECT_EQ(kept - recomputed,
            (2048 * 4 + 2048 * 1536 * 2) + (2048 * 4 + 2048 * 512 * 2) + 268'435'456 - 524'288);
  EXPECT_EQ(kept - recomputed, 276'316'160);
  // THD pads V to 192 for the kernel (multi_latent_attention.py:85-99): the kernel keeps V and
  // its output at 192 (4096·64·64·2 + 4096·64·192·2 more), linear_proj the trimmed copy.
  training.sequence_layout = config::SequenceLayout::kThd;
  training.recompute.modules = {"core_attn"};
  EXPECT_EQ(internal::LayerActivationBytes(graph::MakeLayerOpContext(model, training),
                                           model.layers[0], 1.0) -
                kept,
            4096 * 64 * 64 * 2 + 4096 * 64 * 192 * 2);
}

}  // namespace
}  // namespace trainscope::cost
