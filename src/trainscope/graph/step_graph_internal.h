// Internal pieces of the step-graph builder (step_graph.cc), shared by step_schedule.cc (pipeline
// schedules, passes, p2p), param_layout.cc (parameters, DDP buffers and buckets), grad_sync.cc
// (once-per-step DP sync and optimizer) and megatron_fsdp.cc. Not part of the public API.
#ifndef TRAINSCOPE_GRAPH_STEP_GRAPH_INTERNAL_H_
#define TRAINSCOPE_GRAPH_STEP_GRAPH_INTERNAL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trainscope/config/pipeline_layout.h"
#include "trainscope/config/rank_mapping.h"
#include "trainscope/config/training_config.h"
#include "trainscope/graph/layer_ops.h"
#include "trainscope/graph/op.h"
#include "trainscope/graph/step_graph.h"
#include "trainscope/graph/weights.h"

namespace trainscope::graph::internal {

// Appends ops to a graph it borrows (the vector must outlive the writer), assigning ids and deps
// (deps sorted, unique, all < id; -1 entries dropped). Returns the new op's id.
class GraphWriter {
 public:
  explicit GraphWriter(std::vector<Op>& ops) : ops_(ops) {}
  int64_t Add(Op op, std::vector<int64_t> deps);

 private:
  std::vector<Op>& ops_;
};

// One forward or backward pass of one (micro-batch, model chunk) on this rank.
struct Pass {
  bool forward = true;
  int64_t micro_batch = 0;
  int64_t chunk = 0;
};

// Everything the per-pass emitter needs about this rank's pipeline position.
struct PipelinePeers {
  int64_t p = 1;
  int64_t v = 1;
  int64_t r = 0;
  int64_t previous = -1;  // global rank of PP rank r−1 (wrapping)
  int64_t next = -1;      // global rank of PP rank r+1 (wrapping)
  int64_t message_bytes = 0;
};

// Ids that link passes: the last op of the previous pass (compute runs in issue order) and the
// last op of each (micro-batch, chunk) forward, which its backward needs.
struct ScheduleState {
  int64_t previous_pass_end = -1;
  std::vector<int64_t> forward_end;  // index micro_batch·v + chunk
};

[[nodiscard]] PipelinePeers MakePeers(const config::RankMapping& mapping,
                                      const LayerOpContext& context, int64_t rank);
// The passes of this rank in issue order: 1F1B for v = 1, else interleaved (schedules.py).
[[nodiscard]] std::vector<Pass> RankSchedule(const config::TrainingConfig& training,
                                             const PipelinePeers& peers, int64_t num_micro_batches);
// The passes of `schedule` (RankSchedule) that the combined 1F1B of
// --overlap-moe-expert-parallel-comm runs together, in issue order: without a pipeline
// (combined_1f1b_schedule_for_no_pipelining) F0 alone, then (B_i, F_i+1), then the last backward;
// interleaved, the steady state's (F, B) pairs after the warm-up, which the overlap lengthens by
// one forward (schedules.py "schedule one extra micro-batch forward step"). Empty without the
// overlap, for forward-only runs and for a pipeline without virtual stages (rejected, C14).
[[nodiscard]] std::vector<std::pair<graph::PassId, graph::PassId>> CombinedPasses(
    const config::TrainingConfig& training, const PipelinePeers& peers,
    const std::vector<Pass>& schedule);
// Emits one pass: the receive it waits for, `ops` chained in order (without the casts of cached
// FP8 weights after the chunk's first micro-batch), then the send.
void EmitPass(GraphWriter& writer, const Pass& pass, const std::vector<Op>& ops,
              const PipelinePeers& peers, ScheduleState& state);

// Weight tensors of one chunk in Megatron's registration order (embedding, decoder layers,
// final norm, MTP, output layer). `layer` is the decoder layer (L + i for MTP layer i) or -1
// outside layers; `shared_embedding` marks the word embedding kept in sync over the embedding
// group (language_module.py:208-325).
struct TensorGroup {
  std::vector<WeightTensor> tensors;
  int64_t layer = -1;
  bool shared_embedding = false;
};

// One gradient buffer of one chunk: its reduction group and bucket sizes (elements).
struct GradBuffer {
  int64_t chunk = 0;
  config::GroupKind group = config::GroupKind::kDpCp;
  int64_t group_size = 1;
  std::vector<int64_t> bucket_numels;
  // Per bucket, the TE linear elements (IsTeLinear) among bucket_numels, before padding.
  std::vector<int64_t> bucket_te_linear_numels;
};

// One Megatron-FSDP unit on this rank: a decoder or MTP layer (`layer` >= 0), or the
// root unit of a chunk (`layer` == -1: embedding, vision, final norm, output layer). Numels are
// this rank's TP/EP shard; expert numel is 0 unless experts have their own buffer.
struct FsdpUnit {
  int64_t chunk = 0;
  int64_t layer = -1;
  int64_t dense_numel = 0;   // gathered / reduced over dp×cp
  int64_t expert_numel = 0;  // gathered / reduced over expert-DP
};

// What the once-per-step ops of this rank need to know about its parameters.
struct RankParams {
  std::vector<GradBuffer> buffers;   // chunk order; dense buffer before expert buffer
  std::vector<FsdpUnit> fsdp_units;  // chunk order, root first; empty without Megatron-FSDP
  int64_t tp_synced_numel = 0;       // TP AR: replicated grads that see different data per TP rank
  int64_t shared_embedding_numel = 0;  // tied: local shard of the shared word embedding
  int64_t num_moe_layers = 0;          // routers with an expert bias (decoder and MTP)
};

// The weight groups of one model chunk as `training` holds them (TrainedLayerWeights).
[[nodiscard]] std::vector<TensorGroup> ChunkTensors(const config::ModelConfig& model,
                                                    const config::TrainingConfig& training,
                                                    const config::ModelChunk& chunk);
// Expert weights get their own gradient buffer (over expert-DP) when e > 1 or u ≠ t (Megatron DDP).
[[nodiscard]] bool SeparateExpertBuffer(const config::ParallelSizes& sizes);
[[nodiscard]] RankParams CollectRankParams(const LayerOpContext& context,
                                           const config::PipelineLayout& layout,
                                           const config::RankMapping& mapping,
                                           int64_t pipeline_rank);

// A once-per-step op (micro_batch -1) with the given role and communication fields.
[[nodiscard]] Op StepOp(const std::string& name, OpRole role, Phase phase, Collective collective,
                        config::GroupKind group, int64_t group_size, int64_t message_bytes);
// DDP: per bucket the grad RS / AR, or with `param_gather` the param AG after the step.
// Each emitter below chains its ops after `after` and returns the id of its last op (or
// `after` when it emits nothing).
int64_t EmitBucketOps(GraphWriter& writer, const RankParams& params,
                      const config::TrainingConfig& training, bool param_gather, int64_t after);
// finalize_model_grads.py: TP AR of replicated grads, embedding-group AR, expert-bias AR.
int64_t EmitFinalizeOps(GraphWriter& writer, const RankParams& params,
                        const LayerOpContext& context, const config::RankMapping& mapping,
                        int64_t rank, int64_t after);
// Grad-norm ARs, the Adam step, then the param AG of the (distributed or FSDP) optimizer.
int64_t EmitOptimizerOps(GraphWriter& writer, const RankParams& params,
                         const config::TrainingConfig& training, const config::RankMapping& mapping,
                         int64_t after);

// Per-micro-batch Megatron-FSDP ops of one unit, copied into every pass.
struct FsdpUnitOps {
  std::vector<Op> forward_gather;   // param AG before the unit's forward
  std::vector<Op> backward_gather;  // param AG before its backward (and recompute)
  std::vector<Op> grad_reduce;      // grad RS after its backward
};
using FsdpOpsByLayer = std::map<int64_t, FsdpUnitOps>;

// The per-micro-batch ops of every layer unit, keyed by layer; empty without Megatron-FSDP.
[[nodiscard]] FsdpOpsByLayer BuildFsdpLayerOps(const RankParams& params,
                                               const config::TrainingConfig& training,
                                               const config::RankMapping& mapping);
// Root-unit param AGs once before the first forward (optim_grads_params); returns the last id,
// or -1 when none.
int64_t EmitFsdpRootGather(GraphWriter& writer, const RankParams& params,
                           const config::TrainingConfig& training,
                           const config::RankMapping& mapping);
// End-of-step grad sync replacing the DDP buckets: the root-unit RS (optim_grads[_params]) or
// one RS (optim) / AR (no_shard) per chunk and buffer.
int64_t EmitFsdpGradSync(GraphWriter& writer, const RankParams& params,
                         const config::TrainingConfig& training, const config::RankMapping& mapping,
                         int64_t after);
// Param AG per chunk and buffer after the optimizer step (optim, optim_grads only).
int64_t EmitFsdpParamGather(GraphWriter& writer, const RankParams& params,
                            const config::TrainingConfig& training,
                            const config::RankMapping& mapping, int64_t after);
// Parameters this rank's optimizer updates under Megatron-FSDP.
[[nodiscard]] int64_t FsdpOptimizerNumel(const RankParams& params,
                                         const config::TrainingConfig& training,
                                         const config::RankMapping& mapping);

}  // namespace trainscope::graph::internal

#endif  // TRAINSCOPE_GRAPH_STEP_GRAPH_INTERNAL_H_
