// Reproduction of megatron/training/theoretical_memory_usage.py at NVIDIA/Megatron-LM
// d98e8a64 (compute_weight_and_optimizer_memory, compute_activation_memory). Arithmetic is in
// double, in the order the Python uses, so the figures match what Megatron prints.
#include "trainscope/cost/megatron_memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "trainscope/units.h"

namespace trainscope::cost {
namespace {

using config::FfnKind;
using config::ModelConfig;
using config::TrainingConfig;

constexpr double kGatedLinearMultiplier = 3.0 / 2.0;  // --swiglu (:21)
constexpr double kRmsNormSize = 1;                    // norm_size for RMSNorm (:61)
constexpr double kLayerNormSize = 2;                  // norm_size otherwise (:61)
constexpr double kWithoutSpOverheadFactor = 1.05;     // :448-450

// args.ffn_hidden_size. trainscope keeps no dense width for all-MoE models, so Megatron's
// default for an unset --ffn-hidden-size under --swiglu applies (arguments.py:1320-1327).
int64_t FfnHiddenSizeArg(const ModelConfig& model) {
  if (model.ffn_hidden_size > 0) return model.ffn_hidden_size;
  return static_cast<int64_t>((4.0 * static_cast<double>(model.hidden_size) * 2 / 3) / 64) * 64;
}

// Bytes per parameter (:293-296): 18 without the distributed optimizer, else 6 + 12/d.
double BytesPerParameter(bool distributed_optimizer, int64_t data_parallel_size) {
  if (!distributed_optimizer) return 18;
  return 6 + (12 / static_cast<double>(data_parallel_size));
}

// self_attn_term of the multi_latent_attention branch (:62-80), RMSNorm (norm_size 1): q_term
// (q_lora·(h + n·(nope + rope) + 1), or h·n·(nope + rope) without q_lora) + kv_lora·(h +
// n·(nope + v) + 1) + h·rope + n·v·h.
double MlaAttentionParams(const ModelConfig& model) {
  const config::MlaConfig& mla = model.mla;
  const double h = static_cast<double>(model.hidden_size);
  const double n = static_cast<double>(model.attention.num_heads);
  const double qk = static_cast<double>(mla.QkHeadDim());
  const double q_lora = static_cast<double>(mla.q_lora_rank);
  const double q_term = mla.q_lora_rank > 0 ? q_lora * (h + n * qk + kRmsNormSize) : h * n * qk;
  const double kv_up = n * static_cast<double>(mla.qk_nope_head_dim + mla.v_head_dim);
  return q_term + static_cast<double>(mla.kv_lora_rank) * (h + kv_up + kRmsNormSize) +
         h * static_cast<double>(mla.qk_rope_head_dim) +
         n * static_cast<double>(mla.v_head_dim) * h;
}

// compute_weight_and_optimizer_memory (:12-305) for the standard GPT path and the MLA branch
// (no latent MoE).
double WeightAndOptimizerBytes(const ModelConfig& model, const TrainingConfig& training,
                               double padded_vocab) {
  const config::ParallelSizes& parallel = training.parallel;
  const double h = static_cast<double>(model.hidden_size);
  const double n = static_cast<double>(model.attention.num_heads);
  const double g = static_cast<double>(model.attention.num_kv_heads);
  const double t = static_cast<double>(parallel.tensor);
  const double p = static_cast<double>(parallel.pipeline);
  const bool has_moe = model.HasMoe();
  const double num_experts = has_moe ? static_cast<double>(model.moe.num_experts) : 1;
  const double moe_ffn = has_moe ? static_cast<double>(model.moe.expert_ffn_hidden_size) : 0;
  const double shared_ffn = static_cast<double>(model.moe.shared_expert_ffn_hidden_size);

  // Layer counts from the MoE layer pattern; the MTP layers take the kind of the last layer.
  const double num_moe_layers = static_cast<double>(model.CountLayers(FfnKind::kMoe));
  const double num_dense_layers = static_cast<double>(model.NumLayers()) - num_moe_layers;
  const bool mtp_is_moe = !model.layers.empty() && model.layers.back().ffn == FfnKind::kMoe;
  const double num_mtp = static_cast<double>(model.num_mtp_layers);
  const double mtp_moe_layers = mtp_is_moe ? num_mtp : 0;
  const double mtp_dense_layers = mtp_is_moe ? 0 : num_mtp;

  // Parameter classes (:82-149): P_att, P_mlp, P_sh, P_rt, P_ln, P_r (no linear bias), P_sg.
  const double query_to_hidden_ratio = static_cast<double>(model.attention.QueryWidth()) / h;
  const double attention = model.HasMla() ? MlaAttentionParams(model)
                                          : 2 * h * h * ((1 + (g / n)) * query_to_hidden_ratio);
  // gated_linear_multiplier is 1 without --swiglu (a plain GPT's GeLU MLP); its experts are
  // SwiGLU in every family trainscope models. norm_size is 2 for LayerNorm.
  const double dense_multiplier =
      model.mlp.activation == config::MlpActivation::kGelu ? 1 : kGatedLinearMultiplier;
  const double norm_size =
      model.norm == config::NormKind::kLayerNorm ? kLayerNormSize : kRmsNormSize;
  const double dense_mlp = 2 * h * static_cast<double>(FfnHiddenSizeArg(model)) * dense_multiplier;
  const double shared_expert = 2 * h * shared_ffn * kGatedLinearMultiplier;
  const double routed_experts = 2 * h * moe_ffn * num_experts * kGatedLinearMultiplier;
  const double layernorm = 2 * h * norm_size;
  const double router = has_moe ? h * num_experts : 0;
  const double shared_gate = (shared_ffn > 0 && model.moe.shared_expert_gate) ? h : 0;
  const double final_layernorm = norm_size * h;
  const double embedding = h * padded_vocab;

  const double tp_block =
      (attention + dense_mlp) * num_dense_layers + (attention + shared_expert) * num_moe_layers;
  const double rep_block = layernorm * num_dense_layers +
                           (layernorm + router + shared_gate) * num_moe_layers + final_layernorm;
  const double exp_block = routed_experts * num_moe_layers;
  const double tp_mtp =
      (attention + dense_mlp) * mtp_dense_layers + (attention + shared_expert) * mtp_moe_layers;
  const double rep_mtp =
      layernorm * mtp_dense_layers + (layernorm + router + shared_gate) * mtp_moe_layers;
  const double exp_mtp = routed_experts * mtp_moe_layers;

  // Most-loaded shard: stage 0 with 1/p of the block, the whole MTP block and the embedding
  // (:249-267); the untied output layer only when p = 1.
  double tp_shard = ((tp_block / p) + tp_mtp + embedding) / t;
  const double rep_shard = (rep_block / p) + rep_mtp;
  const double exp_shard =
      ((exp_block / p) + exp_mtp) / static_cast<double>(parallel.ExpertTensor() * parallel.expert);
  if (!model.tied_embeddings && parallel.pipeline == 1) tp_shard += embedding / t;

  // args.data_parallel_size excludes CP; expert DP is W // (u·e·p) (:206-212, :293-303).
  const bool distributed = training.data_parallel.distributed_optimizer;
  return (tp_shard + rep_shard) * BytesPerParameter(distributed, parallel.Data()) +
         exp_shard * BytesPerParameter(distributed, parallel.ExpertData());
}

// φ of compute_activation_memory: the interleaved penalty 1 + (p-1)/(p·v), else min(1, m/p)
// for p > 1, else 1.
double PipelineFactor(const TrainingConfig& training) {
  const double p = static_cast<double>(training.parallel.pipeline);
  if (training.parallel.virtual_stages > 1) {
    return 1 + ((p - 1) / (p * static_cast<double>(training.parallel.virtual_stages)));
  }
  if (training.parallel.pipeline > 1) {
    return std::min(1.0, static_cast<double>(training.NumMicroBatches()) / p);
  }
  return 1;
}

// compute_activation_memory (:308-379): Korthikanti's SP + selective formula, first stage.
double ActivationBytesWithSp(const ModelConfig& model, const TrainingConfig& training,
                             double padded_vocab) {
  const double s = static_cast<double>(training.batch.seq_length);
  const double b = static_cast<double>(training.batch.micro_batch_size);
  const double h = static_cast<double>(model.hidden_size);
  const double p = static_cast<double>(training.parallel.pipeline);
  const double f = static_cast<double>(FfnHiddenSizeArg(model));
  double activations = (s * b * h) * (18 + (4 * (f / h)));
  activations *= static_cast<double>(model.NumLayers());
  activations += 8 * s * b * p;  // embedding input ids, p micro-batches in flight
  activations += s * b * h * p;  // embedding dropout mask
  activations *= PipelineFactor(training);
  if (training.parallel.pipeline == 1) activations += s * b * h * 4 * (1 + (padded_vocab / h));
  return activations / static_cast<double>(training.parallel.tensor);
}

// compute_activation_memory_without_sp (:382-453).
double ActivationBytesWithoutSp(const ModelConfig& model, const TrainingConfig& training,
                                double padded_vocab) {
  const double s = static_cast<double>(training.batch.seq_length);
  const double b = static_cast<double>(training.batch.micro_batch_size);
  const double h = static_cast<double>(model.hidden_size);
  const double p = static_cast<double>(training.parallel.pipeline);
  const double t = static_cast<double>(training.parallel.tensor);
  double activations = s * b * h * (10 + (24 / t)) * static_cast<double>(model.NumLayers());
  activations += 8 * s * b * p;
  activations += s * b * h * p;
  activations *= PipelineFactor(training);
  if (training.parallel.pipeline == 1) {
    const double logits = s * b * padded_vocab / t;
    const double final_norm_output = s * b * h;
    activations += (logits + final_norm_output) * 2;
  }
  return activations * kWithoutSpOverheadFactor;
}

// Megatron-LM turns SP off when t = 1 (arguments.py:1430-1439, C7).
bool UsesSpFormula(const TrainingConfig& training) {
  return training.sequence_parallel && training.parallel.tensor > 1 &&
         training.recompute.granularity == config::RecomputeGranularity::kSelective;
}

void AddArchitectureNotes(const ModelConfig& model, std::vector<std::string>& notes) {
  if (model.HasGdn()) {
    notes.push_back(fmt::format(
        "hybrid model: Megatron's report_theoretical_memory refuses hybrid models "
        "(theoretical_memory_usage.py:457-459); computed anyway with all {} layers costed as "
        "standard attention, so Gated DeltaNet weights, conv and recurrent state are not modelled",
        model.NumLayers()));
  }
  if (model.attention.qk_norm) notes.push_back("qk-norm weights are not counted");
  if (model.HasMla()) {
    notes.push_back(
        "multi-latent attention: its weights follow the formula's MLA branch, its activations the "
        "standard-attention term (the formula has no MLA activation term)");
  }
  if (model.attention.output_gate) {
    notes.push_back("the attention output gate's share of the q projection is not counted");
  }
  if (model.HasMoe()) {
    notes.push_back(
        "MoE activations (T·k routed rows of widths h, 2F_e and F_e, router probabilities) are "
        "not modelled: every layer's activations use the dense per-layer formula");
  }
  if (model.ffn_hidden_size == 0) {
    notes.push_back(fmt::format(
        "no dense FFN: the activation term uses Megatron's default --ffn-hidden-size {} for "
        "--swiglu (arguments.py:1320-1327); recipes that pass the Hugging Face intermediate_size "
        "get a different value",
        FfnHiddenSizeArg(model)));
  }
  if (model.num_mtp_layers > 0) {
    notes.push_back("MTP activations are not modelled (MTP weights are counted on stage 0)");
  }
  if (model.vision.Present()) notes.push_back("the vision tower is not counted");
}

void AddRunNotes(const TrainingConfig& training, std::vector<std::string>& notes) {
  const config::ParallelSizes& parallel = training.parallel;
  const config::RecomputeGranularity granularity = training.recompute.granularity;
  if (granularity == config::RecomputeGranularity::kFull) {
    notes.push_back(
        "full recompute is not modelled: the without-SP formula keeps every layer's activations");
  } else if (!UsesSpFormula(training)) {
    notes.push_back(
        "without SP and selective recompute Megatron uses the without-SP formula (x1.05)");
  }
  if (parallel.context > 1) {
    notes.push_back(fmt::format(
        "context parallelism is not modelled: activations use the full seq_length, not /{}; the "
        "distributed optimizer is taken to shard over d = {} although Megatron shards over "
        "d·c = {}",
        parallel.context, parallel.Data(), parallel.Data() * parallel.context));
  }
  if (parallel.pipeline > 1) {
    notes.push_back("the last stage's output layer (LM head or tied-embedding copy) is ignored");
  }
  if (training.data_parallel.megatron_fsdp || training.data_parallel.torch_fsdp2) {
    notes.push_back("FSDP sharding of weights and gradients is not modelled");
  }
  notes.push_back(
      "assumes bf16 params, fp32 main grads, fp32 master params and Adam states; GQA and "
      "SwiGLU's doubled fc1 output are not in the activation formula; allocator caching, "
      "CUDA/NCCL buffers and fragmentation are not modelled");
}

}  // namespace

MegatronMemoryEstimate MegatronTheoreticalMemory(const config::ModelConfig& model,
                                                 const config::TrainingConfig& training) {
  // V = ceil(V0/(128·t))·128·t (vocab_utils.py:58-59).
  const double padded_vocab = static_cast<double>(
      RoundUp(model.vocab_size, training.make_vocab_size_divisible_by * training.parallel.tensor));
  const double weights = WeightAndOptimizerBytes(model, training, padded_vocab);
  const double activations = UsesSpFormula(training)
                                 ? ActivationBytesWithSp(model, training, padded_vocab)
                                 : ActivationBytesWithoutSp(model, training, padded_vocab);
  MegatronMemoryEstimate estimate;
  estimate.weights_and_optimizer_bytes = std::llround(weights);
  estimate.activations_bytes = std::llround(activations);
  estimate.total_bytes = estimate.weights_and_optimizer_bytes + estimate.activations_bytes;
  AddArchitectureNotes(model, estimate.notes);
  AddRunNotes(training, estimate.notes);
  return estimate;
}

}  // namespace trainscope::cost
