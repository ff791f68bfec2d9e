// The weight sync from the trainer to the rollout engine in an RL step (docs/rl.md): the bytes of
// the full Hugging Face tensors in the rollout dtype, the TP/ETP/EP (and, for CUDA IPC, PP)
// collectives that rebuild them from the training shards, the buckets they travel in with a fixed
// control-plane cost each, and the transfer over NCCL, CUDA IPC or disk. Pure: the model, the
// training layout and the cluster are borrowed for the call only.
#ifndef TRAINSCOPE_COST_WEIGHT_SYNC_H_
#define TRAINSCOPE_COST_WEIGHT_SYNC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "trainscope/config/cluster.h"
#include "trainscope/config/enum_names.h"
#include "trainscope/config/model_config.h"
#include "trainscope/config/rank_mapping.h"
#include "trainscope/config/training_config.h"

namespace trainscope::cost {

enum class SyncTransport { kNccl, kIpc, kDisk };
enum class RolloutDtype { kBf16, kFp8 };

// The one spelling table of each (flags, JSON).
inline constexpr config::EnumName<SyncTransport> kSyncTransportNames[] = {
    {SyncTransport::kNccl, "nccl"}, {SyncTransport::kIpc, "ipc"}, {SyncTransport::kDisk, "disk"}};
inline constexpr config::EnumName<RolloutDtype> kRolloutDtypeNames[] = {
    {RolloutDtype::kBf16, "bf16"}, {RolloutDtype::kFp8, "fp8"}};

// The rollout side and how weights reach it (`trainscope weight-sync` flags).
struct WeightSyncOptions {
  int64_t rollout_gpus = 1;  // --rollout-gpus
  int64_t rollout_tp = 1;    // --rollout-tp
  int64_t rollout_ep = 1;    // --rollout-ep
  bool colocate = false;     // --colocate: the rollout engines share the training GPUs
  SyncTransport transport = SyncTransport::kNccl;  // --transport
  // --bucket-mib; default slime's --update-weight-buffer-size, 512 MiB (slime/utils/arguments.py).
  int64_t bucket_bytes = int64_t{512} << 20;
  RolloutDtype dtype = RolloutDtype::kBf16;  // --rollout-dtype
};

// The collectives over one training group that rebuild full tensors, batched per bucket.
struct SyncGather {
  config::GroupKind group = config::GroupKind::kTp;
  int64_t group_size = 1;
  int64_t bytes = 0;  // full (gathered) bf16 bytes of the tensors this group rebuilds
  int64_t num_calls = 0;
  double seconds = 0;
};

struct WeightSyncEstimate {
  int64_t bytes = 0;  // the HF checkpoint in the rollout dtype (MTP and vision included)
  int64_t num_buckets = 0;
  std::vector<SyncGather> gathers;  // groups of more than one rank, in the order TP, ETP, EP, PP
  double gather_seconds = 0;
  double transfer_seconds = 0;
  double overhead_seconds = 0;
  double total_seconds = 0;
};

// Per-bucket control-plane cost (Ray RPC, handle serialisation, engine update call): 20 ms, the
// optimised colocated-IPC profile of slime's weight sync (hebiao064.github.io, 41 -> 20 ms per
// bucket); applied to NCCL as well [estimate]. Disk has one checkpoint and no per-bucket call.
inline constexpr double kBucketOverheadSeconds = 0.020;

// Bytes of every checkpoint tensor of `model` in `dtype`: 2 per parameter in bf16. In FP8
// (blockwise 128 x 128, slime quantizer_fp8.py / verl docs/advance/fp8.md) the linear weights of
// the text decoder and MTP whose both dimensions reach 128 take 1 byte per element plus one fp32
// scale per 128 x 128 block; embeddings, the LM head, norms, routers, conv1d and the vision tower
// stay bf16.
[[nodiscard]] int64_t CheckpointBytes(const config::ModelConfig& model, RolloutDtype dtype);

// Estimates one weight sync. Preconditions: Validate() accepted `training`; the options were
// checked (positive sizes, rollout_tp divides rollout_gpus, IPC only colocated). Throws
// InputError when the NCCL transport needs a scale-out bandwidth the cluster does not have.
[[nodiscard]] WeightSyncEstimate EstimateWeightSync(const config::ModelConfig& model,
                                                    const config::TrainingConfig& training,
                                                    const config::ClusterSpec& cluster,
                                                    const WeightSyncOptions& options);

[[nodiscard]] std::string ToString(SyncTransport transport);
[[nodiscard]] std::string ToString(RolloutDtype dtype);

}  // namespace trainscope::cost

#endif  // TRAINSCOPE_COST_WEIGHT_SYNC_H_
