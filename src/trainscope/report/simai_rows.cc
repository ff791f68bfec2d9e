// Assembles the SimAI rows of one rank (SimAI Workload.cc; layout in docs/workload.md) from its
// step graph: the per-micro-batch rows of every layer on the rank's pipeline stage (from
// micro-batch 0's ops, which every micro-batch repeats), the once-per-step rows from the
// gradient-sync and optimizer ops, the header values and the diagnostics.
#include "trainscope/report/simai_rows.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <map>
#include <string_view>
#include <tuple>
#include <utility>

#include "trainscope/config/pipeline_layout.h"
#include "trainscope/config/rank_mapping.h"
#include "trainscope/error.h"
#include "trainscope/graph/layer_ops.h"
#include "trainscope/report/simai_blocks.h"

namespace trainscope::report {
namespace {

using config::GroupKind;
using graph::CommPurpose;
using graph::Op;
using graph::OpBlock;

// Micro-batch 0's ops of one rank's step graph by (chunk, layer, phase), in issue order; pipeline
// transfers and Megatron-FSDP collectives are left out (SimAI carries neither).
class PassOps {
 public:
  explicit PassOps(const graph::StepGraph& graph) {
    for (const Op& op : graph.ops) {
      if (op.micro_batch != 0 || op.role.block == OpBlock::kPipeline ||
          op.role.block == OpBlock::kFsdp) {
        continue;
      }
      ops_[{op.model_chunk, op.layer, op.phase}].push_back(op);
    }
  }
  // The ops of `layer` (-1: outside decoder layers) in one pass of `chunk`; empty when none.
  [[nodiscard]] std::vector<Op> Of(int64_t chunk, int64_t layer, graph::Phase phase) const {
    const auto it = ops_.find({chunk, layer, phase});
    return it == ops_.end() ? std::vector<Op>{} : it->second;
  }

 private:
  std::map<std::tuple<int64_t, int64_t, graph::Phase>, std::vector<Op>> ops_;
};

// Everything the row assembly borrows; all referenced values outlive it.
struct Assembly {
  const graph::LayerOpContext& ops;
  const PassOps& passes;
  const ComputeTime& compute_seconds;
  BlockContext block;
  StageFeatures features;
};

// The ops of `ops` in one of `blocks`; every op when `blocks` is empty.
std::vector<Op> Select(const std::vector<Op>& ops, std::initializer_list<OpBlock> blocks) {
  std::vector<Op> out;
  for (const Op& op : ops) {
    if (blocks.size() == 0 ||
        std::find(blocks.begin(), blocks.end(), op.role.block) != blocks.end()) {
      out.push_back(op);
    }
  }
  return out;
}

// Builds pools from the ops of `forward` and `backward` in `blocks` (all when empty), lets
// `append` write the rows, then records the collectives no row took.
template <typename Append>
void WithPools(Assembly& a, const std::vector<Op>& forward, const std::vector<Op>& backward,
               std::initializer_list<OpBlock> blocks, Append append) {
  OpPool f(Select(forward, blocks), a.compute_seconds);
  OpPool b(Select(backward, blocks), a.compute_seconds);
  append(f, b);
  f.DropRest(*a.block.notes);
  b.DropRest(*a.block.notes);
}

// Layout: recompute is folded into backward compute; a recomputed collective becomes an extra row
// carrying it in the ig column. The rows sit below the layer, so the bottom-up backward walk
// replays them before the layer's own backward.
void AppendRecomputeRows(Assembly& a, int64_t chunk, int64_t layer, std::vector<SimAiRow>& rows) {
  const std::vector<Op> ops = a.passes.Of(chunk, layer, graph::Phase::kRecompute);
  if (ops.empty()) return;
  std::vector<SimAiRow> replay;
  double pending_seconds = 0;
  for (const Op& op : ops) {
    if (!op.IsComm()) {
      pending_seconds += a.compute_seconds(op);
      continue;
    }
    SimAiRow row{.name = "recompute"};
    SetComm(row.ig, &op, SimAiColumnKind::kForwardOrInputGrad, a.block);
    if (row.ig.comm == "NONE") continue;  // dropped and recorded by SetComm
    row.ig.compute_seconds = std::exchange(pending_seconds, 0.0);
    replay.push_back(row);
  }
  if (pending_seconds > 0 || replay.empty()) {
    replay.push_back(SimAiRow{.name = "recompute", .ig = {.compute_seconds = pending_seconds}});
  }
  rows.insert(rows.end(), replay.rbegin(), replay.rend());
}

void AppendLayerRows(Assembly& a, int64_t chunk, int64_t layer, std::vector<SimAiRow>& rows) {
  const std::vector<Op> forward = a.passes.Of(chunk, layer, graph::Phase::kForward);
  const std::vector<Op> backward = a.passes.Of(chunk, layer, graph::Phase::kBackward);
  const config::LayerSpec spec = a.ops.model.layers[static_cast<size_t>(layer)];
  const bool gdn = spec.mixer == config::MixerKind::kGatedDeltaNet;
  a.features.has_gdn = a.features.has_gdn || gdn;
  const TpBlockSpec mixer{.row_prefix = gdn ? "gdn" : "attn"};
  WithPools(a, forward, backward, {gdn ? OpBlock::kGdn : OpBlock::kAttention},
            [&](OpPool& f, OpPool& b) { AppendTpBlockRows(f, b, mixer, a.block, rows); });
  if (spec.ffn == config::FfnKind::kMoe) {
    WithPools(a, forward, backward, {OpBlock::kMoeRouter, OpBlock::kMoeRouted},
              [&](OpPool& f, OpPool& b) { AppendMoeRows(f, b, a.block, rows); });
    WithPools(a, forward, backward, {OpBlock::kMoeShared}, [&](OpPool& f, OpPool& b) {
      const TpBlockSpec shared{.row_prefix = "shared_expert", .separate_output_gate = true};
      if (a.ops.model.moe.HasSharedExpert()) AppendTpBlockRows(f, b, shared, a.block, rows);
    });
  } else {
    WithPools(a, forward, backward, {OpBlock::kMlp}, [&](OpPool& f, OpPool& b) {
      AppendTpBlockRows(f, b, {.row_prefix = "mlp"}, a.block, rows);
    });
  }
  AppendRecomputeRows(a, chunk, layer, rows);
}

// The ops outside decoder layers of one pass, split into the embedding's (forward: the input
// broadcasts up to the last embedding op; backward: the embedding block) and the LM head's.
struct OuterOps {
  std::vector<Op> embedding;
  std::vector<Op> lm_head;
};

// The vision tower's ops are left out: SimAI has no rows for them (a diagnostic says so).
OuterOps SplitOuterOps(const std::vector<Op>& all_ops, graph::Phase phase) {
  std::vector<Op> ops;
  std::copy_if(all_ops.begin(), all_ops.end(), std::back_inserter(ops),
               [](const Op& op) { return op.role.block != OpBlock::kVision; });
  OuterOps out;
  if (phase == graph::Phase::kBackward) {
    for (const Op& op : ops) {
      (op.role.block == OpBlock::kEmbedding ? out.embedding : out.lm_head).push_back(op);
    }
    return out;
  }
  const auto last = std::find_if(ops.rbegin(), ops.rend(),
                                 [](const Op& op) { return op.role.block == OpBlock::kEmbedding; });
  const auto split = last.base();  // one past the last embedding op, or begin()
  out.embedding.assign(ops.begin(), split);
  out.lm_head.assign(split, ops.end());
  return out;
}

void AppendChunkRows(Assembly& a, int64_t index, const config::ModelChunk& chunk,
                     std::vector<SimAiRow>& rows) {
  const OuterOps forward =
      SplitOuterOps(a.passes.Of(index, -1, graph::Phase::kForward), graph::Phase::kForward);
  const OuterOps backward =
      SplitOuterOps(a.passes.Of(index, -1, graph::Phase::kBackward), graph::Phase::kBackward);
  if (chunk.has_embedding) {
    WithPools(a, forward.embedding, backward.embedding, {},
              [&](OpPool& f, OpPool& b) { AppendEmbeddingRow(f, b, a.block, rows); });
  }
  for (int64_t i = 0; i < chunk.num_layers; ++i) {
    AppendLayerRows(a, index, chunk.first_layer + i, rows);
  }
  a.features.has_mtp = a.features.has_mtp || chunk.num_mtp_layers > 0;
  a.features.has_vision = a.features.has_vision ||
                          (chunk.has_vision && a.ops.training.batch.vision_tokens_per_sample > 0);
  if (chunk.has_lm_head) {
    WithPools(a, forward.lm_head, backward.lm_head, {},
              [&](OpPool& f, OpPool& b) { AppendLmHeadRows(f, b, a.block, rows); });
  }
}

// Once-per-step rows in top-to-bottom order (SimAI's bottom-up backward walk then gives
// Megatron's order: gradient reduction, norm-gradient all-reduce, optimizer, parameter gather).
constexpr std::array<std::string_view, 8> kStepRowOrder = {
    "expert_param_gather", "param_gather",          "optimizer_step",
    "norm_grad_allreduce", "expert_grad_allreduce", "expert_grad_reduce_scatter",
    "grad_allreduce",      "grad_reduce_scatter"};

// The step row of a once-per-step op and the column it goes in (ig rows hold TP collectives
// and the optimizer), or nothing when SimAI has no row for it.
struct StepRule {
  std::string_view row;
  SimAiColumnKind column;
};
std::optional<StepRule> StepRuleOf(const Op& op) {
  const graph::OpRole& role = op.role;
  if (role.kind == graph::OpKind::kOptimizer) {
    return StepRule{"optimizer_step", SimAiColumnKind::kForwardOrInputGrad};
  }
  if (role.purpose == CommPurpose::kReplicatedGrad) {
    return StepRule{"norm_grad_allreduce", SimAiColumnKind::kForwardOrInputGrad};
  }
  const bool dense = role.block == OpBlock::kDataParallel;
  const bool expert = role.block == OpBlock::kExpertDataParallel;
  if (!dense && !expert) return std::nullopt;
  constexpr SimAiColumnKind kWg = SimAiColumnKind::kWeightGrad;
  if (role.purpose == CommPurpose::kParamBucket) {
    return StepRule{dense ? "param_gather" : "expert_param_gather", kWg};
  }
  if (role.purpose != CommPurpose::kGradBucket) return std::nullopt;
  if (op.collective == graph::Collective::kReduceScatter) {
    return StepRule{dense ? "grad_reduce_scatter" : "expert_grad_reduce_scatter", kWg};
  }
  return StepRule{dense ? "grad_allreduce" : "expert_grad_allreduce", kWg};
}

// Adds one once-per-step op to its row (bucket sizes summed), or records it as dropped.
void AddStepOp(const Op& op, const BlockContext& block, std::map<std::string, SimAiRow>& rows,
               const ComputeTime& compute_seconds) {
  const std::optional<StepRule> rule = StepRuleOf(op);
  if (rule) {
    SimAiRow& row =
        rows.try_emplace(std::string(rule->row), SimAiRow{.name = std::string(rule->row)})
            .first->second;
    SimAiColumn& column = rule->column == SimAiColumnKind::kWeightGrad ? row.wg : row.ig;
    if (!op.IsComm()) {
      column.compute_seconds += compute_seconds(op);
      return;
    }
    const std::optional<std::string> token = SimAiToken(op, rule->column, block.tensor_parallel);
    if (token) {
      column.comm = *token;
      column.comm_bytes += op.message_bytes;
      return;
    }
  }
  block.notes->Drop(op);
}

std::vector<SimAiRow> BuildStepRows(const graph::StepGraph& graph, const BlockContext& block,
                                    const ComputeTime& compute_seconds) {
  std::map<std::string, SimAiRow> by_name;
  for (const Op& op : graph.ops) {
    if (op.phase == graph::Phase::kGradSync || op.phase == graph::Phase::kOptimizer) {
      AddStepOp(op, block, by_name, compute_seconds);
    }
  }
  std::vector<SimAiRow> rows;
  for (std::string_view name : kStepRowOrder) {
    const auto it = by_name.find(std::string(name));
    if (it != by_name.end()) rows.push_back(it->second);
  }
  return rows;
}

}  // namespace

SimAiWorkload BuildSimAiWorkload(const config::ModelConfig& model,
                                 const config::TrainingConfig& training,
                                 const graph::StepGraph& graph,
                                 const ComputeTime& compute_seconds) {
  const graph::LayerOpContext context = graph::MakeLayerOpContext(model, training);
  const config::PipelineLayout layout = config::BuildPipelineLayout(model, training);
  const config::ParallelSizes& sizes = training.parallel;
  const int64_t pipeline_rank = graph.pipeline_rank;
  ExportNotes micro_batch_notes;
  ExportNotes step_notes;
  const PassOps passes(graph);
  Assembly assembly{.ops = context,
                    .passes = passes,
                    .compute_seconds = compute_seconds,
                    .block = {sizes.tensor, context.SequenceParallel(), &micro_batch_notes}};
  SimAiWorkload workload;
  for (int64_t j = 0; j < layout.virtual_stages; ++j) {
    AppendChunkRows(assembly, j, layout.Chunk(pipeline_rank, j), workload.micro_batch_rows);
  }
  const BlockContext step_block{sizes.tensor, context.SequenceParallel(), &step_notes};
  workload.step_rows = BuildStepRows(graph, step_block, compute_seconds);
  // Header pp_comm is one PP activation send, A/c divided by t under SP (schedules.py).
  const int64_t pp_comm_bytes =
      sizes.pipeline > 1
          ? context.ActivationBytes() / (context.SequenceParallel() ? sizes.tensor : 1)
          : 0;
  workload.header = SimAiHeader{.tensor = sizes.tensor,
                                .expert = sizes.expert,
                                .pipeline = sizes.pipeline,
                                .virtual_stages = sizes.virtual_stages,
                                .num_micro_batches = training.NumMicroBatches(),
                                .world_size = sizes.world_size,
                                .pp_comm_bytes = pp_comm_bytes};
  workload.diagnostics = SimAiDiagnostics(training, workload, pipeline_rank, micro_batch_notes,
                                          step_notes, assembly.features);
  return workload;
}

}  // namespace trainscope::report
