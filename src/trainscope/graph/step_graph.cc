// BuildStepGraph: assembles one rank's step from the per-chunk op templates (with the
// Megatron-FSDP unit collectives woven in), the pipeline schedule and the once-per-step gradient
// sync and optimizer ops; plus MegatronModelFlopsPerStep, Megatron's reported FLOPs.
#include "trainscope/graph/step_graph.h"

#include <utility>

#include "trainscope/config/pipeline_layout.h"
#include "trainscope/config/rank_mapping.h"
#include "trainscope/graph/fp8_ops.h"
#include "trainscope/graph/layer_ops.h"
#include "trainscope/graph/param_count.h"
#include "trainscope/graph/step_graph_internal.h"

namespace trainscope::graph {
namespace {

using config::ModelChunk;
using config::TrainingConfig;
using internal::FsdpOpsByLayer;
using internal::FsdpUnitOps;
using internal::GraphWriter;
using internal::Pass;
using internal::PipelinePeers;
using internal::RankParams;
using internal::ScheduleState;

void Append(std::vector<Op>& out, const std::vector<Op>& ops) {
  out.insert(out.end(), ops.begin(), ops.end());
}

// Appends the `which` ops of layer unit `layer` (nothing without Megatron-FSDP).
void AppendFsdp(std::vector<Op>& out, const FsdpOpsByLayer& fsdp, int64_t layer,
                std::vector<Op> FsdpUnitOps::*which) {
  const auto it = fsdp.find(layer);
  if (it != fsdp.end()) Append(out, it->second.*which);
}

// The compute and collective ops of one chunk's forward and backward pass (one micro-batch).
struct ChunkOps {
  std::vector<Op> forward;
  std::vector<Op> backward;
};

// Delayed scaling's amax-history and scale update after the decoder layers' forward or
// backward pass: Megatron wraps the whole TransformerBlock pass in one fp8 autocast for the
// delayed recipe (megatron/core/transformer/transformer_block.py, TransformerBlock.forward), and
// TE updates at its exit (forward) and after the first module's backward (quantization.py,
// reduce_and_update_fp8_tensors). It covers the casts of `ops[first, end)`. Nothing for the
// other recipes (they derive each scale from the tensor it quantizes) or without FP8.
void AppendFp8ScaleUpdate(std::vector<Op>& ops, size_t first, Phase phase,
                          const LayerOpContext& context) {
  const Fp8Settings fp8 = MakeFp8Settings(context.training);
  if (!fp8.enabled || fp8.recipe != config::Fp8Recipe::kDelayed) return;
  int64_t num_tensors = 0;
  for (size_t i = first; i < ops.size(); ++i) {
    const Fp8Operand operand = ops[i].role.operand;
    num_tensors += operand != Fp8Operand::kNone && operand != Fp8Operand::kGemmScales;
  }
  if (num_tensors == 0) return;
  const Fp8QuantizeTraffic traffic = ScaleUpdateTraffic(num_tensors);
  Op op;
  op.phase = phase;
  op.name = "fp8.scale_update";
  op.role = OpRole{.kind = OpKind::kFp8ScaleUpdate,
                   .block = OpBlock::kFp8Scaling,
                   .pass = phase == Phase::kForward ? OpPass::kForward : OpPass::kBackward};
  op.bytes = traffic.bytes;
  op.num_launches = traffic.num_launches;
  ops.push_back(std::move(op));
}

// The copy of decoder layer `layer`'s saved activations to the host after its forward
// (`forward`) or back before its backward, for a layer --cpu-offloading-num-layers offloads
// (Transformer Engine's group offload: the first N layers). The simulator prices it and sets
// its overlap (sim/sim_graph.cc, OverlapActivationOffload).
void AppendActivationOffload(std::vector<Op>& ops, const LayerOpContext& context, int64_t layer,
                             bool forward) {
  if (layer >= context.training.OffloadedLayers()) return;
  Op op;
  op.phase = forward ? Phase::kForward : Phase::kBackward;
  op.name = forward ? "activation.offload_d2h" : "activation.reload_h2d";
  op.role = OpRole{.kind = OpKind::kActivationOffload,
                   .block = OpBlock::kActivationOffload,
                   .pass = forward ? OpPass::kForward : OpPass::kBackward};
  op.layer = layer;
  ops.push_back(std::move(op));
}

// Step order; each FSDP unit's param AG precedes its forward and its backward (with recompute),
// its grad RS follows its backward. The MTP units are gathered and reduced around MtpForward /
// MtpBackward as a block.
ChunkOps BuildChunkOps(const LayerOpContext& context, const ModelChunk& chunk,
                       const FsdpOpsByLayer& fsdp) {
  ChunkOps ops;
  const int64_t num_layers = context.model.NumLayers();
  if (chunk.has_vision) Append(ops.forward, VisionForward(context));
  if (chunk.has_embedding) Append(ops.forward, EmbeddingForward(context));
  const size_t forward_layers_begin = ops.forward.size();
  for (int64_t i = 0; i < chunk.num_layers; ++i) {
    AppendFsdp(ops.forward, fsdp, chunk.first_layer + i, &FsdpUnitOps::forward_gather);
    Append(ops.forward, DecoderLayerForward(context, chunk.first_layer + i));
    AppendActivationOffload(ops.forward, context, chunk.first_layer + i, true);
  }
  AppendFp8ScaleUpdate(ops.forward, forward_layers_begin, Phase::kForward, context);
  for (int64_t i = 0; i < chunk.num_mtp_layers; ++i) {
    AppendFsdp(ops.forward, fsdp, num_layers + i, &FsdpUnitOps::forward_gather);
  }
  if (chunk.num_mtp_layers > 0) Append(ops.forward, MtpForward(context));
  if (chunk.has_lm_head) Append(ops.forward, LmHeadAndLossForward(context));
  if (chunk.has_lm_head) Append(ops.backward, LmHeadAndLossBackward(context));
  for (int64_t i = 0; i < chunk.num_mtp_layers; ++i) {
    AppendFsdp(ops.backward, fsdp, num_layers + i, &FsdpUnitOps::backward_gather);
  }
  if (chunk.num_mtp_layers > 0) Append(ops.backward, MtpBackward(context));
  for (int64_t i = 0; i < chunk.num_mtp_layers; ++i) {
    AppendFsdp(ops.backward, fsdp, num_layers + i, &FsdpUnitOps::grad_reduce);
  }
  const size_t backward_layers_begin = ops.backward.size();
  for (int64_t i = chunk.num_layers - 1; i >= 0; --i) {
    const int64_t layer = chunk.first_layer + i;
    AppendActivationOffload(ops.backward, context, layer, false);
    AppendFsdp(ops.backward, fsdp, layer, &FsdpUnitOps::backward_gather);
    Append(ops.backward,
           DecoderLayerRecompute(context, layer, context.training.recompute.FullRecomputeLayer(i)));
    Append(ops.backward, DecoderLayerBackward(context, layer));
    AppendFsdp(ops.backward, fsdp, layer, &FsdpUnitOps::grad_reduce);
  }
  AppendFp8ScaleUpdate(ops.backward, backward_layers_begin, Phase::kBackward, context);
  if (chunk.has_embedding) Append(ops.backward, EmbeddingBackward(context));
  if (chunk.has_vision) Append(ops.backward, VisionBackward(context));
  return ops;
}

}  // namespace

StepGraph BuildStepGraph(const config::ModelConfig& model, const TrainingConfig& training,
                         int64_t rank) {
  const config::PipelineLayout layout = config::BuildPipelineLayout(model, training);
  const config::RankMapping mapping(training.parallel);
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const PipelinePeers peers = internal::MakePeers(mapping, context, rank);
  const RankParams params = internal::CollectRankParams(context, layout, mapping, peers.r);
  const FsdpOpsByLayer fsdp = internal::BuildFsdpLayerOps(params, training, mapping);
  StepGraph graph{.rank = rank,
                  .pipeline_rank = peers.r,
                  .num_micro_batches = training.NumMicroBatches(),
                  .ops = {}};
  // Per-chunk op templates are built once and copied per micro-batch.
  std::vector<ChunkOps> chunk_ops;
  for (int64_t j = 0; j < peers.v; ++j) {
    chunk_ops.push_back(BuildChunkOps(context, layout.Chunk(peers.r, j), fsdp));
  }
  GraphWriter writer(graph.ops);
  ScheduleState state;
  state.forward_end.assign(static_cast<size_t>(graph.num_micro_batches * peers.v), -1);
  state.previous_pass_end = internal::EmitFsdpRootGather(writer, params, training, mapping);
  const std::vector<Pass> schedule =
      internal::RankSchedule(training, peers, graph.num_micro_batches);
  for (const Pass& pass : schedule) {
    const ChunkOps& ops = chunk_ops[static_cast<size_t>(pass.chunk)];
    internal::EmitPass(writer, pass, pass.forward ? ops.forward : ops.backward, peers, state);
  }
  graph.combined_passes = internal::CombinedPasses(training, peers, schedule);
  // An eval-mode pass has no gradients to reduce and no optimizer step.
  if (training.forward_only) return graph;
  int64_t last =
      training.data_parallel.megatron_fsdp
          ? internal::EmitFsdpGradSync(writer, params, training, mapping, state.previous_pass_end)
          : internal::EmitBucketOps(writer, params, training, /*param_gather=*/false,
                                    state.previous_pass_end);
  last = internal::EmitFinalizeOps(writer, params, context, mapping, rank, last);
  internal::EmitOptimizerOps(writer, params, training, mapping, last);
  return graph;
}

namespace {

// FLOPs layer counts over L' = L + D: MoE vs dense FFN (the MTP layers take the last layer's
// FFN) and linear vs softmax attention, the MTP layers indexed by Megatron's
// linear_attention_freq pattern ((i+1) % freq == 0 is softmax) even though it builds them as
// attention (the documented quirk).
struct FlopsLayerCounts {
  int64_t moe = 0, dense = 0, linear = 0, softmax = 0;
};

FlopsLayerCounts CountFlopsLayers(const config::ModelConfig& model) {
  FlopsLayerCounts counts;
  const int64_t num_layers = model.NumLayers();
  const int64_t mtp = model.num_mtp_layers;
  counts.moe = model.CountLayers(config::FfnKind::kMoe);
  counts.dense = num_layers - counts.moe;
  const bool last_moe = num_layers > 0 && model.layers.back().ffn == config::FfnKind::kMoe;
  (last_moe ? counts.moe : counts.dense) += mtp;
  if (!model.HasGdn()) {
    counts.softmax = num_layers + mtp;
    return counts;
  }
  // linear_attention_freq: the first softmax-attention layer sits at index freq − 1.
  int64_t freq = 0;
  for (int64_t i = 0; i < num_layers && freq == 0; ++i) {
    if (model.layers[static_cast<size_t>(i)].mixer != config::MixerKind::kGatedDeltaNet) {
      freq = i + 1;
    }
  }
  counts.linear = model.CountLayers(config::MixerKind::kGatedDeltaNet);
  for (int64_t i = num_layers; i < num_layers + mtp; ++i) {
    const bool softmax = freq > 0 && (i + 1) % freq == 0;
    (softmax ? counts.softmax : counts.linear) += 1;
  }
  counts.softmax += num_layers - model.CountLayers(config::MixerKind::kGatedDeltaNet);
  return counts;
}

// The token-linear part of one MLA block in Megatron's model FLOPs (training.py
// num_floating_point_operations, the multi_latent_attention branch): 6·(q_term +
// kv_lora·(h + n·(nope + v) + 1) + h·rope + n·v·h) with q_term = q_lora·(h + n·(nope + rope) + 1),
// or h·n·(nope + rope) without q_lora_rank. The "+ 1"s are Megatron's norm terms.
__int128 MlaLinearFlopsPerToken(const config::ModelConfig& model) {
  using Wide = __int128;
  const config::MlaConfig& mla = model.mla;
  const Wide h = model.hidden_size;
  const Wide heads = model.attention.num_heads;
  const Wide q_term = mla.q_lora_rank > 0
                          ? Wide{mla.q_lora_rank} * (h + heads * mla.QkHeadDim() + 1)
                          : h * heads * mla.QkHeadDim();
  const Wide kv_term =
      Wide{mla.kv_lora_rank} * (h + heads * (mla.qk_nope_head_dim + mla.v_head_dim) + 1);
  return 6 * (q_term + kv_term + h * mla.qk_rope_head_dim + heads * mla.v_head_dim * h);
}

}  // namespace

long double MegatronModelFlopsPerStep(const config::ModelConfig& model,
                                      const TrainingConfig& training) {
  using Wide = __int128;  // Megatron computes with Python ints; 64 bits overflow at scale
  const config::ParallelSizes& sizes = training.parallel;
  const Wide s = training.batch.seq_length;
  const Wide gbs = training.GlobalBatchSize();
  const Wide tokens = gbs * s;  // N
  const Wide h = model.hidden_size;
  const Wide mtp = model.num_mtp_layers;
  const Wide vocab =
      PaddedVocabSize(model.vocab_size, sizes.tensor, training.make_vocab_size_divisible_by);
  const FlopsLayerCounts n = CountFlopsLayers(model);
  const config::AttentionConfig& a = model.attention;
  const config::GdnConfig& g = model.gdn;
  const config::MoeConfig& moe = model.moe;
  constexpr int64_t kSwiGlu = 3;  // f (training.py:1070)
  constexpr int64_t kGelu = 2;    // f without --swiglu (training.py:1070)
  const int64_t dense_factor =
      model.mlp.activation == config::MlpActivation::kGelu ? kGelu : kSwiGlu;
  const Wide ffn = 6 * h *
                   (Wide{model.ffn_hidden_size} * dense_factor * n.dense +
                    (Wide{moe.expert_ffn_hidden_size} * moe.top_k * kSwiGlu +
                     Wide{moe.shared_expert_ffn_hidden_size} * kSwiGlu) *
                        n.moe);
  const Wide attention_linear =
      model.HasMla()
          ? MlaLinearFlopsPerToken(model)
          : 6 * (h * (a.QueryWidth() + 2 * a.KvWidth() + a.GateWidth()) + Wide{a.QueryWidth()} * h);
  const Wide gdn_linear =
      6 * (h * g.InProjWidth() + Wide{g.conv_kernel} * g.ConvChannels() +
           Wide{4} * g.num_value_heads * g.value_head_dim * g.value_head_dim + h * g.ValueWidth());
  const Wide per_token = ffn + gdn_linear * n.linear + attention_linear * n.softmax +
                         6 * mtp * (3 * h + 2 * h * h) + 6 * h * vocab * (mtp + 1);
  // Core attention: 6·n·(d_qk/2 + d_v/2) per token and key (the MLA branch); 6·n·d_h with
  // d_qk = d_v = d_h (the MHA/GQA branch).
  const Wide core = tokens * s * 3 * a.num_heads * (a.head_dim + a.ValueHeadDim()) * n.softmax;
  return static_cast<long double>(tokens * per_token + core);
}

}  // namespace trainscope::graph
