#include "trainscope/cost/weight_sync.h"

#include <algorithm>
#include <numeric>

#include "trainscope/config/rank_mapping.h"
#include "trainscope/cost/collective_cost.h"
#include "trainscope/error.h"
#include "trainscope/graph/weights.h"
#include "trainscope/units.h"

namespace trainscope::cost {
namespace {

using config::GroupKind;
using graph::Split;
using graph::WeightTensor;

constexpr const char* kWhat = "weight-sync bytes";
// Blockwise FP8: one fp32 scale per 128 x 128 block (slime quantizer_fp8.py, block 128).
constexpr int64_t kFp8Block = 128;

// Every tensor of the checkpoint: embedding, decoder layers, final norm, untied head, MTP layers
// and the vision tower (graph/weights.h).
std::vector<WeightTensor> CheckpointTensors(const config::ModelConfig& model) {
  std::vector<WeightTensor> tensors = graph::EmbeddingWeights(model);
  const auto append = [&tensors](const std::vector<WeightTensor>& more) {
    tensors.insert(tensors.end(), more.begin(), more.end());
  };
  for (const config::LayerSpec& layer : model.layers) {
    append(graph::DecoderLayerWeights(model, layer));
  }
  append(graph::FinalNormWeights(model));
  append(graph::LmHeadWeights(model));
  for (int64_t i = 0; i < model.num_mtp_layers; ++i) append(graph::MtpLayerWeights(model));
  append(graph::VisionWeights(model));
  return tensors;
}

bool QuantizedToFp8(const WeightTensor& tensor) {
  return tensor.split != Split::kVocab && tensor.component != graph::Component::kVision &&
         tensor.component != graph::Component::kRouter && tensor.rows >= kFp8Block &&
         tensor.cols >= kFp8Block;
}

int64_t TensorBytes(const WeightTensor& tensor, RolloutDtype dtype) {
  const int64_t numel = tensor.Numel();
  if (dtype == RolloutDtype::kBf16 || !QuantizedToFp8(tensor)) {
    return CheckedMul(numel, kBf16Bytes, kWhat);
  }
  const int64_t blocks = CeilDiv(tensor.rows, kFp8Block) * CeilDiv(tensor.cols, kFp8Block);
  return CheckedAdd(CheckedMul(numel, kFp8Bytes, kWhat),
                    CheckedMul(blocks * tensor.copies, kFp32Bytes, kWhat), kWhat);
}

// `bytes` moved over training group `kind` in bucket-sized calls (slime batches the gathers of a
// bucket, all_gather_params_async): ceil(bytes / bucket) collectives of equal size.
SyncGather GatherOver(GroupKind kind, graph::Collective collective, int64_t bytes,
                      const config::RankMapping& mapping, const config::ClusterSpec& cluster,
                      int64_t bucket_bytes) {
  SyncGather gather{.group = kind, .group_size = mapping.GroupSize(kind), .bytes = bytes};
  if (gather.group_size <= 1 || bytes == 0) return gather;
  gather.num_calls = CeilDiv(bytes, bucket_bytes);
  const GroupPlacement placement = PlaceGroup(mapping.GroupOf(kind, 0), cluster);
  gather.seconds =
      static_cast<double>(gather.num_calls) *
      CollectiveSeconds(collective, CeilDiv(bytes, gather.num_calls), placement, cluster);
  return gather;
}

// The rebuilding collectives: TP all-gathers of every TP-split dense tensor, ETP then EP
// all-gathers of the routed experts (slime _iter_non_expert_chunks / _iter_expert_chunks,
// Megatron-Bridge gather_from_tp_ranks / gather_from_ep_ranks), and for CUDA IPC a PP broadcast
// of every bucket from its owning stage, since every GPU materialises every tensor
// (slime _get_megatron_full_params).
std::vector<SyncGather> Gathers(const std::vector<WeightTensor>& tensors,
                                const config::TrainingConfig& training,
                                const config::ClusterSpec& cluster,
                                const WeightSyncOptions& options) {
  int64_t dense_split = 0;
  int64_t expert = 0;
  int64_t all = 0;
  for (const WeightTensor& tensor : tensors) {
    const int64_t bytes = TensorBytes(tensor, RolloutDtype::kBf16);
    all += bytes;
    if (tensor.expert) {
      expert += bytes;
    } else if (tensor.split != Split::kReplicated) {
      dense_split += bytes;
    }
  }
  const config::RankMapping mapping(training.parallel);
  const int64_t e = training.parallel.expert;
  const int64_t bucket = options.bucket_bytes;
  std::vector<SyncGather> gathers = {
      GatherOver(GroupKind::kTp, graph::Collective::kAllGather, dense_split, mapping, cluster,
                 bucket),
      GatherOver(GroupKind::kEtp, graph::Collective::kAllGather, expert / e, mapping, cluster,
                 bucket),
      GatherOver(GroupKind::kEp, graph::Collective::kAllGather, expert, mapping, cluster, bucket)};
  if (options.transport == SyncTransport::kIpc) {
    gathers.push_back(
        GatherOver(GroupKind::kPp, graph::Collective::kBroadcast, all, mapping, cluster, bucket));
  }
  std::erase_if(gathers, [](const SyncGather& g) { return g.num_calls == 0; });
  return gathers;
}

// Transfer of `bytes` in `num_buckets` buckets.
// NCCL: each bucket broadcast from the stage's source rank to every rollout GPU
// (update_weights_from_distributed; buckets serialised by slime's rollout_engine_lock); the
// rollout GPUs follow the W training ranks unless colocated.
// IPC: per bucket every GPU flattens it (a read and a write of the bucket) and each engine rank
// copies its 1/T shard out of it (FlattenedTensorBucket, update_weights_from_tensor), at HBM
// bandwidth.
// Disk: the trainer writes the HF checkpoint and the engines read it back.
double TransferSeconds(int64_t bytes, int64_t num_buckets, const config::TrainingConfig& training,
                       const config::ClusterSpec& cluster, const WeightSyncOptions& options) {
  const auto total = static_cast<double>(bytes);
  switch (options.transport) {
    case SyncTransport::kNccl: {
      std::vector<int64_t> ranks(static_cast<size_t>(options.rollout_gpus + 1));
      const int64_t first = options.colocate ? 0 : training.parallel.world_size;
      std::iota(ranks.begin() + 1, ranks.end(), first);
      if (options.colocate) ranks.erase(ranks.begin());  // rank 0 is a rollout GPU as well
      const GroupPlacement placement = PlaceGroup(ranks, cluster);
      return static_cast<double>(num_buckets) * CollectiveSeconds(graph::Collective::kBroadcast,
                                                                  CeilDiv(bytes, num_buckets),
                                                                  placement, cluster);
    }
    case SyncTransport::kIpc: {
      const double copied = 2 * total + 2 * total / static_cast<double>(options.rollout_tp);
      return copied / cluster.gpu.hbm_bytes_per_second;
    }
    case SyncTransport::kDisk:
      return 2 * total / cluster.storage_bytes_per_second;
  }
  return 0;
}

}  // namespace

int64_t CheckpointBytes(const config::ModelConfig& model, RolloutDtype dtype) {
  int64_t bytes = 0;
  for (const WeightTensor& tensor : CheckpointTensors(model)) {
    bytes = CheckedAdd(bytes, TensorBytes(tensor, dtype), kWhat);
  }
  return bytes;
}

WeightSyncEstimate EstimateWeightSync(const config::ModelConfig& model,
                                      const config::TrainingConfig& training,
                                      const config::ClusterSpec& cluster,
                                      const WeightSyncOptions& options) {
  TRAINSCOPE_CHECK(options.bucket_bytes > 0 && options.rollout_gpus > 0 && options.rollout_tp > 0,
                   "weight-sync options must be positive");
  const std::vector<WeightTensor> tensors = CheckpointTensors(model);
  WeightSyncEstimate estimate;
  for (const WeightTensor& tensor : tensors) {
    estimate.bytes = CheckedAdd(estimate.bytes, TensorBytes(tensor, options.dtype), kWhat);
  }
  estimate.num_buckets = CeilDiv(estimate.bytes, options.bucket_bytes);
  estimate.gathers = Gathers(tensors, training, cluster, options);
  for (const SyncGather& gather : estimate.gathers) estimate.gather_seconds += gather.seconds;
  estimate.transfer_seconds =
      TransferSeconds(estimate.bytes, estimate.num_buckets, training, cluster, options);
  if (options.transport != SyncTransport::kDisk) {
    estimate.overhead_seconds = static_cast<double>(estimate.num_buckets) * kBucketOverheadSeconds;
  }
  estimate.total_seconds =
      estimate.gather_seconds + estimate.transfer_seconds + estimate.overhead_seconds;
  return estimate;
}

std::string ToString(SyncTransport transport) {
  return config::NameOf(kSyncTransportNames, transport);
}

std::string ToString(RolloutDtype dtype) { return config::NameOf(kRolloutDtypeNames, dtype); }

}  // namespace trainscope::cost
