// The weight sync to the rollout engine (cost/weight_sync.h): exact checkpoint bytes derived by
// hand from Qwen3.5-35B-A3B's config.json (the formulas of docs/params.md, as in
// param_count_test.cc), the rebuilding gathers, buckets, transfer and per-bucket overhead.
#include "trainscope/cost/weight_sync.h"

#include <gtest/gtest.h>

#include "trainscope/graph/param_count.h"
#include "trainscope/io/hf_config_loader.h"
#include "trainscope/units.h"

namespace trainscope::cost {
namespace {

// Qwen3.5-35B-A3B config.json: hidden 2048; 40 layers (30 GDN + 10 gated attention); attention
// 16 query / 2 KV heads of 256; GDN 16 key heads and 32 value heads of 128, conv kernel 4; 256
// experts of 512, shared expert 512; vocab 248320, untied; 1 MTP layer; vision depth 27,
// hidden 1152, intermediate 4304, output 2048.
constexpr int64_t kH = 2048, kExperts = 256, kExpertFfn = 512, kSharedFfn = 512;

int64_t GatedAttention() {  // q (with gate) 2·H·16·256, k and v 2·H·2·256, o 16·256·H, q/k norms
  return 2 * kH * 16 * 256 + 2 * kH * 2 * 256 + 16 * 256 * kH + 2 * 256;
}

int64_t Gdn() {  // in_proj qkv + z + b/a, conv1d, A_log + dt_bias, out_norm, out_proj
  const int64_t conv = 2 * 16 * 128 + 32 * 128;
  return kH * conv + kH * 32 * 128 + 2 * kH * 32 + 4 * conv + 2 * 32 + 128 + 32 * 128 * kH;
}

int64_t Moe() {  // routed fc1 (2F) + fc2, router, shared fc1 + fc2, shared gate
  return 3 * kExperts * kH * kExpertFfn + kH * kExperts + 3 * kH * kSharedFfn + kH;
}

int64_t Vision() {  // patch embed, position embed, 27 blocks, post norm, merger
  const int64_t hv = 1152, iv = 4304, hm = 4 * hv;
  return (3 * 2 * 16 * 16 * hv + hv) + 2304 * hv +
         27 * (4 * hv + 3 * hv * hv + 3 * hv + hv * hv + hv + 2 * hv * iv + iv + hv) + 2 * hv +
         (hm * hm + hm) + (hm * kH + kH);
}

int64_t CheckpointParams() {
  const int64_t decoder =
      30 * (Gdn() + Moe() + 2 * kH) + 10 * (GatedAttention() + Moe() + 2 * kH) + kH;
  const int64_t embedding = 248320 * kH;  // untied: embedding and LM head
  const int64_t mtp = 2 * kH * kH + 3 * kH + GatedAttention() + Moe() + 2 * kH;
  return decoder + 2 * embedding + mtp + Vision();
}

config::TrainingConfig SlimeLayout() {  // TP2 EP8 ETP1 on 8 GPUs
  config::TrainingConfig training;
  training.parallel = {.world_size = 8, .tensor = 2, .expert = 8, .expert_tensor = 1};
  return training;
}

TEST(WeightSyncTest, Bf16MovesTwoBytesOfEveryCheckpointParameter) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  EXPECT_EQ(CheckpointBytes(model, RolloutDtype::kBf16), 2 * CheckpointParams());
  EXPECT_EQ(CheckpointParams(), graph::CountParams(model).total);
}

// Default 512 MiB buckets; 20 ms each; EP gathers every routed expert of the 40 layers and the
// MTP layer (2 bytes each), TP the TP-split dense tensors; ETP 1 gathers nothing.
TEST(WeightSyncTest, CountsBucketsAndTheExpertGatherOverEp) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  const config::ClusterSpec cluster = config::DefaultCluster(*config::FindGpu("H100"));
  const WeightSyncEstimate estimate = EstimateWeightSync(
      model, SlimeLayout(), cluster, WeightSyncOptions{.rollout_gpus = 8, .rollout_tp = 8});
  const int64_t bytes = 2 * CheckpointParams();
  const int64_t bucket = int64_t{512} << 20;
  EXPECT_EQ(estimate.num_buckets, (bytes + bucket - 1) / bucket);
  EXPECT_DOUBLE_EQ(estimate.overhead_seconds, 0.020 * static_cast<double>(estimate.num_buckets));
  ASSERT_EQ(estimate.gathers.size(), 2u);
  EXPECT_EQ(estimate.gathers[0].group, config::GroupKind::kTp);
  EXPECT_EQ(estimate.gathers[0].group_size, 2);
  EXPECT_EQ(estimate.gathers[1].group, config::GroupKind::kEp);
  EXPECT_EQ(estimate.gathers[1].group_size, 8);
  EXPECT_EQ(estimate.gathers[1].bytes, 2 * 41 * 3 * kExperts * kH * kExpertFfn);
  EXPECT_LT(estimate.gathers[0].bytes + estimate.gathers[1].bytes, bytes);
  EXPECT_DOUBLE_EQ(estimate.total_seconds,
                   estimate.gather_seconds + estimate.transfer_seconds + estimate.overhead_seconds);
  EXPECT_GT(estimate.transfer_seconds, 0);
}

// CUDA IPC: every GPU flattens each bucket (read + write) and copies its 1/T shard out (read +
// write) at HBM bandwidth: (2·B + 2·B/T) / HBM. It also broadcasts over PP (here PP 1: none).
TEST(WeightSyncTest, IpcCopiesTheBucketsAtHbmBandwidth) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  const config::ClusterSpec cluster = config::DefaultCluster(*config::FindGpu("H100"));
  const WeightSyncOptions options{
      .rollout_gpus = 8, .rollout_tp = 4, .colocate = true, .transport = SyncTransport::kIpc};
  const WeightSyncEstimate estimate = EstimateWeightSync(model, SlimeLayout(), cluster, options);
  const auto bytes = static_cast<double>(2 * CheckpointParams());
  EXPECT_DOUBLE_EQ(estimate.transfer_seconds,
                   (2 * bytes + 2 * bytes / 4) / cluster.gpu.hbm_bytes_per_second);
}

// Disk: the checkpoint written and read back through the storage, no per-bucket calls.
TEST(WeightSyncTest, DiskWritesAndReadsTheCheckpoint) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  config::ClusterSpec cluster = config::DefaultCluster(*config::FindGpu("H100"));
  cluster.storage_bytes_per_second = 4e9;
  const WeightSyncEstimate estimate = EstimateWeightSync(
      model, SlimeLayout(), cluster,
      WeightSyncOptions{.rollout_gpus = 8, .rollout_tp = 8, .transport = SyncTransport::kDisk});
  EXPECT_DOUBLE_EQ(estimate.transfer_seconds,
                   2 * static_cast<double>(2 * CheckpointParams()) / 4e9);
  EXPECT_EQ(estimate.overhead_seconds, 0);
}

// FP8: one byte per quantized element plus a 4-byte scale per 128 x 128 block, so between half
// and all of the bf16 bytes; a 2048 x 2048 weight is 2048² + 16·16·4 bytes.
TEST(WeightSyncTest, Fp8QuantizesTheLinearWeights) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  const int64_t bf16 = CheckpointBytes(model, RolloutDtype::kBf16);
  const int64_t fp8 = CheckpointBytes(model, RolloutDtype::kFp8);
  EXPECT_LT(fp8, bf16);
  EXPECT_GT(fp8, bf16 / 2);
  // Routed experts dominate: their fc1 [1024, 2048] and fc2 [2048, 512] per expert and layer.
  const int64_t expert_blocks = (8 * 16 + 16 * 4) * 4;
  const int64_t expert_saving = 41 * kExperts * (3 * kH * kExpertFfn - expert_blocks);
  EXPECT_LE(bf16 - fp8, bf16 / 2);
  EXPECT_GE(bf16 - fp8, expert_saving);
}

}  // namespace
}  // namespace trainscope::cost
