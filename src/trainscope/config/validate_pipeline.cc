// Validator rules on the pipeline: the interleaved schedule's pipeline size, the even and uneven
// split of decoder layers over stages and virtual stages, and the batch and micro-batch-group
// rules (rules C1-C42 of docs/validation.md, each with the Megatron-LM line that enforces it).
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/config/validate_rules.h"

namespace trainscope::config::internal {
namespace {

// C15, C16: the even split over L + a_e + a_l layer slots.
void CheckEvenSplit(const ModelConfig& model, const TrainingConfig& training,
                    ValidationResult& result) {
  const ParallelSizes& par = training.parallel;
  const PipelineSplit& split = training.split;
  const int64_t num_layers = model.NumLayers();
  const int64_t slots =
      num_layers + (split.account_for_embedding ? 1 : 0) + (split.account_for_loss ? 1 : 0);
  if (slots % par.pipeline != 0) {
    std::string fix = fmt::format(
        "use --pipeline-model-parallel-size {} (divisors of {} layer "
        "slots that divide {} GPUs)",
        JoinChoices(Divisors(std::gcd(slots, par.world_size))), slots, par.world_size);
    if ((num_layers + 2) % par.pipeline == 0 && slots != num_layers + 2) {
      fix += fmt::format(", or add {} and {} ({} slots = {}·{})", kAccountEmbedding, kAccountLoss,
                         num_layers + 2, par.pipeline, (num_layers + 2) / par.pipeline);
    }
    fix += fmt::format(", or set {} / {}", kFirstStage, kLastStage);
    AddError(result, "C15", {kPp, kAccountEmbedding, kAccountLoss},
             fmt::format(
                 "--pipeline-model-parallel-size {}: {} layer slots ({} decoder layers{}{}) "
                 "are not divisible by {}",
                 par.pipeline, slots, num_layers, split.account_for_embedding ? " + embedding" : "",
                 split.account_for_loss ? " + loss" : "", par.pipeline),
             fix);
    return;
  }
  const int64_t per_rank = slots / par.pipeline;
  if (per_rank % par.virtual_stages != 0) {
    AddError(result, "C16", {kVpp, kPp},
             fmt::format("--num-virtual-stages-per-pipeline-rank {}: {} layer slots per pipeline "
                         "rank are not divisible by {}",
                         par.virtual_stages, per_rank, par.virtual_stages),
             fmt::format("use --num-virtual-stages-per-pipeline-rank {}",
                         JoinChoices(Divisors(per_rank))));
  }
}

// C18, C19: the uneven split's middle stages and its division over virtual stages.
// Precondition: C17 holds (the given counts are positive, no account-for options).
void CheckUnevenSplitCounts(const ModelConfig& model, const TrainingConfig& training,
                            ValidationResult& result) {
  const ParallelSizes& par = training.parallel;
  const PipelineSplit& split = training.split;
  const int64_t first = split.first_stage_layers.value_or(0);
  const int64_t last = split.last_stage_layers.value_or(0);
  const int64_t middle_layers = model.NumLayers() - first - last;
  const int64_t middle_stages =
      par.pipeline - (split.first_stage_layers ? 1 : 0) - (split.last_stage_layers ? 1 : 0);
  const bool mismatch = middle_stages < 0 || middle_layers < 0 ||
                        (middle_layers == 0) != (middle_stages == 0) ||
                        (middle_stages > 0 && middle_layers % middle_stages != 0);
  if (mismatch) {
    AddError(result, "C18", {kFirstStage, kLastStage, kPp},
             fmt::format("--decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers "
                         "({} / {}): leave {} of {} decoder layers for {} middle pipeline stages "
                         "(--pipeline-model-parallel-size {}); they must be both zero or divide "
                         "evenly",
                         split.first_stage_layers ? std::to_string(first) : "unset",
                         split.last_stage_layers ? std::to_string(last) : "unset", middle_layers,
                         model.NumLayers(), middle_stages, par.pipeline),
             "choose first and last counts so that the remaining layers split evenly over the "
             "middle stages");
    return;
  }
  const int64_t v = par.virtual_stages;
  const int64_t per_middle = middle_stages > 0 ? middle_layers / middle_stages : 0;
  if (v > 1 && (first % v != 0 || last % v != 0 || per_middle % v != 0)) {
    AddError(result, "C19", {kVpp, kFirstStage, kLastStage},
             fmt::format("--num-virtual-stages-per-pipeline-rank {}: the layers of the first "
                         "stage ({}), the last stage ({}) and each middle stage ({}) must be "
                         "divisible by {}",
                         v, split.first_stage_layers ? std::to_string(first) : "unset",
                         split.last_stage_layers ? std::to_string(last) : "unset",
                         middle_stages > 0 ? std::to_string(per_middle) : "none", v),
             fmt::format("use --num-virtual-stages-per-pipeline-rank {}",
                         JoinChoices(Divisors(std::gcd(std::gcd(first, last), per_middle)))));
  }
}

// C17, then C18 and C19 when the uneven counts are usable.
void CheckUnevenSplit(const ModelConfig& model, const TrainingConfig& training,
                      ValidationResult& result) {
  const PipelineSplit& split = training.split;
  bool usable = true;
  if (split.account_for_embedding || split.account_for_loss) {
    usable = false;
    AddError(result, "C17", {kFirstStage, kLastStage, kAccountEmbedding, kAccountLoss},
             "--decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers cannot be "
             "combined with --account-for-embedding-in-pipeline-split or "
             "--account-for-loss-in-pipeline-split",
             "drop the account-for options, or drop the first/last stage counts");
  }
  const std::pair<const char*, std::optional<int64_t>> counts[] = {
      {kFirstStage, split.first_stage_layers}, {kLastStage, split.last_stage_layers}};
  for (const auto& [flag, count] : counts) {
    if (!count || *count > 0) continue;
    usable = false;
    AddError(result, "C17", {flag}, fmt::format("{} {}: must be larger than 0", flag, *count),
             fmt::format("use {} 1 or more, or omit it", flag));
  }
  if (usable) CheckUnevenSplitCounts(model, training, result);
}

// C22: the interleaved schedule's micro-batch groups (schedules.py:1160-1180).
void CheckMicroBatchGroups(const TrainingConfig& training, int64_t num_micro_batches,
                           ValidationResult& result) {
  const ParallelSizes& par = training.parallel;
  if (par.virtual_stages == 1 || par.pipeline == 1) return;
  const int64_t p = par.pipeline;
  const int64_t m = num_micro_batches;
  const int64_t group = training.MicroBatchGroupSize();
  const int64_t batch_per_micro = training.batch.micro_batch_size * par.Data();
  const std::vector<std::string> flags = {kGbs, kMbGroup, kMbs, kPp, kVpp};
  if (group < p || group > m) {
    AddError(result, "C22", flags,
             fmt::format("--global-batch-size {} gives m = {} micro-batches; the interleaved "
                         "schedule needs p <= G <= m with p = {} and G = {} "
                         "(--microbatch-group-size-per-virtual-pipeline-stage, default p)",
                         m * batch_per_micro, m, p, group),
             m < p
                 ? fmt::format("use --global-batch-size {} or more (p·b·d)", p * batch_per_micro)
                 : fmt::format("use --microbatch-group-size-per-virtual-pipeline-stage between {} "
                               "and {}",
                               p, m));
    return;
  }
  const int64_t remainder = m % group;
  if (remainder != 0 && remainder < p) {
    AddError(result, "C22", flags,
             fmt::format("--global-batch-size {} gives m = {} micro-batches; m mod G = {} mod {} = "
                         "{} must be 0 or at least p = {}",
                         m * batch_per_micro, m, m, group, remainder, p),
             fmt::format("use --global-batch-size {} (a multiple of G·b·d = {})",
                         NearestMultiples(m * batch_per_micro, group * batch_per_micro),
                         group * batch_per_micro));
  }
}

}  // namespace

// C20, C21: the interleaved schedule's pipeline size.
void CheckVirtualStages(const TrainingConfig& training, ValidationResult& result) {
  const ParallelSizes& par = training.parallel;
  if (par.virtual_stages > 1 && par.pipeline == 1) {
    AddError(
        result, "C20", {kVpp, kPp},
        fmt::format("--num-virtual-stages-per-pipeline-rank {}: the interleaved schedule needs "
                    "--pipeline-model-parallel-size > 1 (got 1)",
                    par.virtual_stages),
        "use --num-virtual-stages-per-pipeline-rank 1, or --pipeline-model-parallel-size 2 or "
        "more");
  }
  if (par.virtual_stages > 1 && par.pipeline == 2 && !training.overlap.overlap_p2p_comm) {
    AddError(
        result, "C21", {kNoP2pOverlap, kPp, kVpp},
        "--no-overlap-p2p-communication: the interleaved schedule without p2p overlap needs "
        "--pipeline-model-parallel-size > 2 (got 2)",
        "drop --no-overlap-p2p-communication, or use --pipeline-model-parallel-size 3 or more");
  }
}

// C50: --pipeline-model-parallel-layout (transformer_config.py __post_init__ "PP layout";
// pipeline_parallel_layer_layout.py __init__ and validate_layer_layout). The order rules (E
// first, L last, t before m) are checked when the string is parsed.
void CheckLayout(const ModelConfig& model, const TrainingConfig& training,
                 ValidationResult& result) {
  const PipelineSplit& split = training.split;
  const ParallelSizes& par = training.parallel;
  const std::vector<LayoutStage>& stages = split.layout;
  if (split.first_stage_layers || split.last_stage_layers || split.account_for_embedding ||
      split.account_for_loss) {
    AddError(result, "C50", {kPpLayout, kFirstStage, kLastStage, kAccountEmbedding, kAccountLoss},
             "--pipeline-model-parallel-layout cannot be set with other pipeline layout "
             "arguments (first/last stage counts, account-for options)",
             "drop the other pipeline layout arguments: the layout places every layer");
    return;
  }
  const auto num_stages = static_cast<int64_t>(stages.size());
  if (num_stages % par.pipeline != 0) {
    AddError(result, "C50", {kPpLayout, kPp},
             fmt::format("--pipeline-model-parallel-layout: {} stages are not divisible by "
                         "--pipeline-model-parallel-size {}",
                         num_stages, par.pipeline),
             fmt::format("give p·v stages ('|' separates them), or use "
                         "--pipeline-model-parallel-size {}",
                         JoinChoices(Divisors(num_stages))));
    return;
  }
  const int64_t v = num_stages / par.pipeline;
  if (par.virtual_stages != v) {
    AddError(result, "C50", {kPpLayout, kVpp},
             fmt::format("--num-virtual-stages-per-pipeline-rank {} conflicts with the {} stages "
                         "of --pipeline-model-parallel-layout over {} pipeline ranks (v = {})",
                         par.virtual_stages, num_stages, par.pipeline, v),
             "drop --num-virtual-stages-per-pipeline-rank: the layout sets it");
  }
  int64_t embeddings = 0;
  int64_t losses = 0;
  int64_t decoders = 0;
  int64_t mtps = 0;
  for (const LayoutStage& stage : stages) {
    embeddings += stage.embedding ? 1 : 0;
    losses += stage.loss ? 1 : 0;
    decoders += stage.decoder_layers;
    mtps += stage.mtp_layers;
  }
  if (embeddings != 1 || !stages.front().embedding || losses != 1 || !stages.back().loss) {
    AddError(result, "C50", {kPpLayout},
             "--pipeline-model-parallel-layout: the layout must start with E (embedding) and "
             "end with L (loss), each exactly once",
             "write E at the start and L at the end, e.g. \"Et*4|(t*4|)*14tmL\"");
  }
  if (decoders != model.NumLayers()) {
    AddError(result, "C50", {kPpLayout},
             fmt::format("--pipeline-model-parallel-layout: {} decoder layers (t) where the model "
                         "has {}",
                         decoders, model.NumLayers()),
             fmt::format("place exactly {} t", model.NumLayers()));
  }
  if (mtps != model.num_mtp_layers) {
    AddError(
        result, "C50", {kPpLayout},
        fmt::format("--pipeline-model-parallel-layout: {} MTP layers (m) where the model has {}",
                    mtps, model.num_mtp_layers),
        fmt::format("place exactly {} m", model.num_mtp_layers));
  }
  for (int64_t k = 0; k < num_stages; ++k) {
    const LayoutStage& stage = stages[static_cast<size_t>(k)];
    if (stage.mtp_layers == 0) continue;
    const bool last_virtual = k / par.pipeline == v - 1;
    if (!last_virtual || stage.mtp_layers != model.num_mtp_layers) {
      AddError(result, "C50", {kPpLayout},
               "--pipeline-model-parallel-layout: all MTP layers must sit in one stage, the last "
               "virtual stage of its pipeline rank",
               "move every m into the stage with L");
      break;
    }
    if (!stage.loss) {
      // Megatron's standalone MTP stage (mtp_standalone) runs the output layer a second time;
      // trainscope places MTP with the loss only.
      AddError(result, "T11", {kPpLayout},
               "--pipeline-model-parallel-layout: an MTP stage without the loss (Megatron's "
               "standalone MTP) is not modelled",
               "move every m into the stage with L");
      break;
    }
  }
}

void CheckPipelineSplit(const ModelConfig& model, const TrainingConfig& training,
                        ValidationResult& result) {
  if (!training.split.layout.empty()) {
    CheckLayout(model, training, result);
  } else if (training.split.first_stage_layers || training.split.last_stage_layers) {
    CheckUnevenSplit(model, training, result);
  } else {
    CheckEvenSplit(model, training, result);
  }
}

// T10: trainscope counts the FLOPs and bytes of every op exactly in 64 bits. The largest op of
// a micro-batch is causal core attention, 2·b·(n/t)·d_h·s·(s/c) FLOPs forward and twice that
// backward (attention_ops.cc), or the LM head, 2·(b·s/c)·h·V forward; both are computed here in
// long double and must stay below 2^62 (a factor of two to spare for sums within an op).
namespace {

void CheckOpSizesFit(const ModelConfig& model, const TrainingConfig& training,
                     ValidationResult& result) {
  const ParallelSizes& par = training.parallel;
  const auto b = static_cast<long double>(training.batch.micro_batch_size);
  const auto s = static_cast<long double>(training.batch.seq_length);
  const auto c = static_cast<long double>(par.context);
  const auto t = static_cast<long double>(par.tensor);
  const long double heads_dim = static_cast<long double>(model.attention.num_heads) *
                                static_cast<long double>(model.attention.head_dim);
  const long double attention = 4 * b * heads_dim / t * s * (s / c);
  const long double lm_head = 2 * b * s / c * static_cast<long double>(model.hidden_size) *
                              static_cast<long double>(model.vocab_size);
  const long double limit = 0x1p62L;
  if (attention < limit && lm_head < limit) return;
  AddError(result, "T10", {kSeqLength, kMbs, kCp, kTp},
           fmt::format("--seq-length {} with --micro-batch-size {}: one micro-batch's largest op "
                       "would be {:.3g} FLOPs per rank, beyond the 2^62 trainscope counts exactly",
                       training.batch.seq_length, training.batch.micro_batch_size,
                       static_cast<double>(std::max(attention, lm_head))),
           "use a shorter --seq-length, a smaller --micro-batch-size, or more "
           "--context-parallel-size");
}

}  // namespace

// C23 and C22 (needs C1 for d), then T7 and T10. Under slime's dynamic batching the micro-batch
// count comes from the packing, a multiple of d (and of G with VPP) by construction
// (slime/utils/dp_schedule.py, build_dp_schedule), so C23 and C22 do not apply.
void CheckBatch(const ModelConfig& model, const TrainingConfig& training,
                ValidationResult& result) {
  const ParallelSizes& par = training.parallel;
  const BatchConfig& batch = training.batch;
  if (GridDivides(par) && !batch.max_tokens_per_gpu) {
    const int64_t batch_per_micro = batch.micro_batch_size * par.Data();
    const int64_t global = training.GlobalBatchSize();
    if (global % batch_per_micro != 0) {
      AddError(result, "C23", {kGbs, kMbs},
               fmt::format("--global-batch-size {}: not divisible by b·d = {}·{} = {}", global,
                           batch.micro_batch_size, par.Data(), batch_per_micro),
               fmt::format("use --global-batch-size {} (multiples of {})",
                           NearestMultiples(global, batch_per_micro), batch_per_micro));
    } else {
      CheckMicroBatchGroups(training, training.NumMicroBatches(), result);
    }
  }
  if (model.max_position_embeddings > 0 && batch.seq_length > model.max_position_embeddings) {
    AddWarning(result, "T7", {kSeqLength, kMaxPositions},
               fmt::format("--seq-length {}: longer than the model's max_position_embeddings {}",
                           batch.seq_length, model.max_position_embeddings),
               fmt::format("use --seq-length {} or less, or pass --max-position-embeddings {} "
                           "if the RoPE scaling supports it",
                           model.max_position_embeddings, batch.seq_length));
  }
  CheckOpSizesFit(model, training, result);
}

}  // namespace trainscope::config::internal
