// Assembles the SimAI rows of one rank (SimAI Workload.cc; layout in docs/workload.md): the
// per-micro-batch rows of every layer on the rank's pipeline stage, the once-per-step rows from
// the step graph's gradient-sync and optimizer ops, the header values and the diagnostics.
#include "trainscope/report/simai_rows.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <string_view>
#include <utility>

#include "trainscope/config/pipeline_layout.h"
#include "trainscope/config/rank_mapping.h"
#include "trainscope/error.h"
#include "trainscope/graph/layer_ops.h"
#include "trainscope/graph/step_graph.h"
#include "trainscope/report/simai_blocks.h"

namespace trainscope::report {
namespace {

using config::GroupKind;
using graph::Op;

// Everything the row assembly borrows; all referenced values outlive it.
struct Assembly {
  const graph::LayerOpContext& ops;
  const RooflineSpec& roofline;
  BlockContext block;
  StageFeatures features;
};

std::vector<Op> Select(const std::vector<Op>& ops, std::string_view prefix,
                       std::string_view except = {}) {
  std::vector<Op> out;
  for (const Op& op : ops) {
    if (!op.name.starts_with(prefix)) continue;
    if (!except.empty() && op.name.starts_with(except)) continue;
    out.push_back(op);
  }
  return out;
}

// Builds pools from the parts of `forward` and `backward` named `prefix` (minus `except`), lets
// `append` write the rows, then records the collectives no row took.
template <typename Append>
void WithPools(Assembly& a, const std::vector<Op>& forward, const std::vector<Op>& backward,
               std::string_view prefix, std::string_view except, Append append) {
  OpPool f(Select(forward, prefix, except), a.roofline);
  OpPool b(Select(backward, prefix, except), a.roofline);
  append(f, b);
  f.DropRest(*a.block.notes);
  b.DropRest(*a.block.notes);
}

// Layout: recompute is folded into backward compute; a recomputed collective becomes an extra row
// carrying it in the ig column. The rows sit below the layer, so the bottom-up backward walk
// replays them before the layer's own backward.
void AppendRecomputeRows(Assembly& a, int64_t layer, bool full, std::vector<SimAiRow>& rows) {
  const std::vector<Op> ops = graph::DecoderLayerRecompute(a.ops, layer, full);
  if (ops.empty()) return;
  std::vector<SimAiRow> replay;
  double pending_seconds = 0;
  for (const Op& op : ops) {
    if (!op.IsComm()) {
      pending_seconds += RooflineSeconds(op, a.roofline);
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

void AppendLayerRows(Assembly& a, int64_t layer, bool full_recompute, std::vector<SimAiRow>& rows) {
  const std::vector<Op> forward = graph::DecoderLayerForward(a.ops, layer);
  const std::vector<Op> backward = graph::DecoderLayerBackward(a.ops, layer);
  const config::LayerSpec spec = a.ops.model.layers[static_cast<size_t>(layer)];
  const bool gdn = spec.mixer == config::MixerKind::kGatedDeltaNet;
  a.features.has_gdn = a.features.has_gdn || gdn;
  const TpBlockNames mixer =
      gdn ? TpBlockNames{"gdn", "gdn.in_proj", "gdn.out_proj", "", "gdn.input_norm", ""}
          : TpBlockNames{"attn",
                         "attention.linear_qkv",
                         "attention.linear_proj",
                         "attention.qkv_gather",
                         "attention.input_norm",
                         ""};
  WithPools(a, forward, backward, gdn ? "gdn." : "attention.", "",
            [&](OpPool& f, OpPool& b) { AppendTpBlockRows(f, b, mixer, a.block, rows); });
  if (spec.ffn == config::FfnKind::kMoe) {
    WithPools(a, forward, backward, "moe.", "moe.shared_experts.",
              [&](OpPool& f, OpPool& b) { AppendMoeRows(f, b, a.block, rows); });
    WithPools(a, forward, backward, "moe.shared_experts.", "", [&](OpPool& f, OpPool& b) {
      const TpBlockNames shared{"shared_expert",
                                "moe.shared_experts.linear_fc1",
                                "moe.shared_experts.linear_fc2",
                                "",
                                "",
                                "moe.shared_experts.gate"};
      if (a.ops.model.moe.HasSharedExpert()) AppendTpBlockRows(f, b, shared, a.block, rows);
    });
  } else {
    WithPools(a, forward, backward, "mlp.", "", [&](OpPool& f, OpPool& b) {
      AppendTpBlockRows(f, b, {"mlp", "mlp.linear_fc1", "mlp.linear_fc2", "", "mlp.input_norm", ""},
                        a.block, rows);
    });
  }
  AppendRecomputeRows(a, layer, full_recompute, rows);
}

void AppendChunkRows(Assembly& a, const config::ModelChunk& chunk, std::vector<SimAiRow>& rows) {
  if (chunk.has_embedding) {
    WithPools(a, graph::EmbeddingForward(a.ops), graph::EmbeddingBackward(a.ops), "", "",
              [&](OpPool& f, OpPool& b) { AppendEmbeddingRow(f, b, a.block, rows); });
  }
  for (int64_t i = 0; i < chunk.num_layers; ++i) {
    AppendLayerRows(a, chunk.first_layer + i, a.ops.training.recompute.FullRecomputeLayer(i), rows);
  }
  a.features.has_mtp = a.features.has_mtp || chunk.num_mtp_layers > 0;
  a.features.has_vision = a.features.has_vision || chunk.has_vision;
  if (chunk.has_lm_head) {
    WithPools(a, graph::LmHeadAndLossForward(a.ops), graph::LmHeadAndLossBackward(a.ops), "", "",
              [&](OpPool& f, OpPool& b) { AppendLmHeadRows(f, b, a.block, rows); });
  }
}

// Once-per-step rows in top-to-bottom order (SimAI's bottom-up backward walk then gives
// Megatron's order: gradient reduction, norm-gradient all-reduce, optimizer, parameter gather).
constexpr std::array<std::string_view, 8> kStepRowOrder = {
    "expert_param_gather", "param_gather",          "optimizer_step",
    "norm_grad_allreduce", "expert_grad_allreduce", "expert_grad_reduce_scatter",
    "grad_allreduce",      "grad_reduce_scatter"};

// Step-graph op name prefix -> step row; ig rows hold TP collectives and the optimizer.
struct StepRule {
  std::string_view op_prefix;
  std::string_view row;
  SimAiColumnKind column;
};
constexpr std::array<StepRule, 8> kStepRules = {{
    {"dp.grad_reduce_scatter", "grad_reduce_scatter", SimAiColumnKind::kWeightGrad},
    {"dp.grad_all_reduce", "grad_allreduce", SimAiColumnKind::kWeightGrad},
    {"edp.grad_reduce_scatter", "expert_grad_reduce_scatter", SimAiColumnKind::kWeightGrad},
    {"edp.grad_all_reduce", "expert_grad_allreduce", SimAiColumnKind::kWeightGrad},
    {"dp.param_all_gather", "param_gather", SimAiColumnKind::kWeightGrad},
    {"edp.param_all_gather", "expert_param_gather", SimAiColumnKind::kWeightGrad},
    {"tp.replicated_grad_all_reduce", "norm_grad_allreduce", SimAiColumnKind::kForwardOrInputGrad},
    {"optimizer.step", "optimizer_step", SimAiColumnKind::kForwardOrInputGrad},
}};

// Adds one once-per-step op to its row (bucket sizes summed), or records it as dropped.
void AddStepOp(const Op& op, const BlockContext& block, std::map<std::string, SimAiRow>& rows,
               const RooflineSpec& roofline) {
  for (const StepRule& rule : kStepRules) {
    if (!op.name.starts_with(rule.op_prefix)) continue;
    SimAiRow& row = rows.try_emplace(std::string(rule.row), SimAiRow{.name = std::string(rule.row)})
                        .first->second;
    SimAiColumn& column = rule.column == SimAiColumnKind::kWeightGrad ? row.wg : row.ig;
    if (!op.IsComm()) {
      column.compute_seconds += RooflineSeconds(op, roofline);
      return;
    }
    const std::optional<std::string> token = SimAiToken(op, rule.column, block.tensor_parallel);
    if (!token) break;
    column.comm = *token;
    column.comm_bytes += op.message_bytes;
    return;
  }
  block.notes->Drop(op);
}

std::vector<SimAiRow> BuildStepRows(const config::ModelConfig& model,
                                    const config::TrainingConfig& training, int64_t rank,
                                    const BlockContext& block, const RooflineSpec& roofline) {
  const graph::StepGraph graph = graph::BuildStepGraph(model, training, rank);
  std::map<std::string, SimAiRow> by_name;
  for (const Op& op : graph.ops) {
    if (op.phase == graph::Phase::kGradSync || op.phase == graph::Phase::kOptimizer) {
      AddStepOp(op, block, by_name, roofline);
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

double RooflineSeconds(const Op& op, const RooflineSpec& roofline) {
  if (op.IsComm()) return 0;
  return std::max(static_cast<double>(op.flops) / roofline.peak_flops_per_second,
                  static_cast<double>(op.bytes) / roofline.hbm_bytes_per_second);
}

SimAiWorkload BuildSimAiWorkload(const config::ModelConfig& model,
                                 const config::TrainingConfig& training, int64_t rank,
                                 const RooflineSpec& roofline) {
  const graph::LayerOpContext context = graph::MakeLayerOpContext(model, training);
  const config::PipelineLayout layout = config::BuildPipelineLayout(model, training);
  const config::ParallelSizes& sizes = training.parallel;
  const int64_t pipeline_rank = config::RankMapping(sizes).Coordinates(rank).pp;
  ExportNotes micro_batch_notes;
  ExportNotes step_notes;
  Assembly assembly{.ops = context,
                    .roofline = roofline,
                    .block = {sizes.tensor, context.SequenceParallel(), &micro_batch_notes}};
  SimAiWorkload workload;
  for (int64_t j = 0; j < layout.virtual_stages; ++j) {
    AppendChunkRows(assembly, layout.Chunk(pipeline_rank, j), workload.micro_batch_rows);
  }
  const BlockContext step_block{sizes.tensor, context.SequenceParallel(), &step_notes};
  workload.step_rows = BuildStepRows(model, training, rank, step_block, roofline);
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
