#include "trainscope/report/validate_report.h"

#include <fmt/format.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trainscope/config/pipeline_layout.h"

namespace trainscope::report {
namespace {

using config::ModelChunk;
using config::ModelConfig;
using config::PipelineLayout;
using config::TrainingConfig;
using config::ValidationResult;
using config::Violation;
using Json = nlohmann::ordered_json;

// Width of the label column of the valid summary.
constexpr int kLabelWidth = 15;

std::string Row(const std::string& label, const std::string& value) {
  return fmt::format("{:<{}}{}\n", label, kLabelWidth, value);
}

// "  [C4] message\n       fix: ...\n       profile: megatron-core 0.18\n" (no profile line
// for a violation without one).
std::string ViolationLines(const Violation& violation) {
  const std::string prefix = fmt::format("  [{}] ", violation.rule);
  std::string text = fmt::format("{}{}\n{:>{}}fix: {}\n", prefix, violation.message, "",
                                 prefix.size(), violation.fix);
  if (!violation.profile.empty()) {
    text += fmt::format("{:>{}}profile: {}\n", "", prefix.size(), violation.profile);
  }
  return text;
}

std::string WarningLines(const std::vector<Violation>& warnings) {
  if (warnings.empty()) return Row("warnings", "none");
  std::string text = fmt::format("warnings ({})\n", warnings.size());
  for (const Violation& warning : warnings) text += ViolationLines(warning);
  return text;
}

std::string ModelDescription(const ModelConfig& model) {
  std::string text = fmt::format("{} ({}, {} decoder layers", model.name,
                                 config::ToString(model.family), model.NumLayers());
  if (model.HasGdn()) {
    text += fmt::format(": {} Gated DeltaNet + {} attention",
                        model.CountLayers(config::MixerKind::kGatedDeltaNet),
                        model.NumLayers() - model.CountLayers(config::MixerKind::kGatedDeltaNet));
  }
  if (model.HasMoe()) {
    text += fmt::format(", {} experts top-{}", model.moe.num_experts, model.moe.top_k);
  }
  if (model.num_mtp_layers > 0) text += fmt::format(", {} MTP layer(s)", model.num_mtp_layers);
  if (model.vision.Present()) text += ", vision tower";
  return text + ")";
}

// "0-1 +embedding", "93 +lm-head +mtp(1)", "none".
std::string ChunkDescription(const ModelChunk& chunk) {
  std::string text;
  if (chunk.num_layers == 0) {
    text = "none";
  } else if (chunk.num_layers == 1) {
    text = std::to_string(chunk.first_layer);
  } else {
    text = fmt::format("{}-{}", chunk.first_layer, chunk.first_layer + chunk.num_layers - 1);
  }
  if (chunk.has_vision) text += " +vision";
  if (chunk.has_embedding) text += " +embedding";
  if (chunk.num_mtp_layers > 0) text += fmt::format(" +mtp({})", chunk.num_mtp_layers);
  if (chunk.has_lm_head) text += " +lm-head";
  return text;
}

std::string StageLines(const PipelineLayout& layout) {
  std::string text = Row("pipeline", "decoder layers per pipeline rank and virtual chunk");
  for (int64_t rank = 0; rank < layout.pipeline_size; ++rank) {
    std::vector<std::string> chunks;
    for (int64_t chunk = 0; chunk < layout.virtual_stages; ++chunk) {
      const std::string description = ChunkDescription(layout.Chunk(rank, chunk));
      chunks.push_back(layout.virtual_stages == 1
                           ? description
                           : fmt::format("chunk {}: {}", chunk, description));
    }
    text += fmt::format("  pp {:<3} {:>3} layers  {}\n", rank, layout.LayersOnRank(rank),
                        fmt::join(chunks, " | "));
  }
  return text;
}

std::string ExpertLine(const ModelConfig& model, const config::ParallelSizes& parallel) {
  if (!model.HasMoe()) return Row("experts", "none (dense model)");
  return Row("experts", fmt::format("{} experts, {} per EP rank (e={}), expert-DP size d_e={}",
                                    model.moe.num_experts, model.moe.num_experts / parallel.expert,
                                    parallel.expert, parallel.ExpertData()));
}

// "megatron-core", "megatron-bridge 0.4", "areal (megatron-bridge 0.4)", "slime".
std::string FrameworkDescription(const config::FrameworkProfile& profile) {
  std::string text = config::ToString(profile.framework);
  if (profile.framework == config::Framework::kMegatronBridge) {
    text.append(" ").append(config::ToString(profile.bridge_version));
  } else if (profile.UsesBridge()) {
    text.append(" (megatron-bridge ").append(config::ToString(profile.bridge_version)).append(")");
  }
  return text;
}

std::string ValidSummary(const ModelConfig& model, const TrainingConfig& training) {
  const config::ParallelSizes& par = training.parallel;
  const int64_t num_micro_batches = training.NumMicroBatches();
  const int64_t global_batch = training.GlobalBatchSize();
  std::string text = "configuration is valid\n";
  text += Row("model", ModelDescription(model));
  text += Row("world size", fmt::format("{} GPUs", par.world_size));
  text += Row("parallelism", fmt::format("t={} p={} v={} c={} e={} u={} d={} d_e={}", par.tensor,
                                         par.pipeline, par.virtual_stages, par.context, par.expert,
                                         par.ExpertTensor(), par.Data(), par.ExpertData()));
  if (const std::optional<int64_t> budget = training.batch.max_tokens_per_gpu) {
    text += Row("batch", fmt::format("global batch {}, slime's dynamic batching: at most {} x {} "
                                     "tokens per micro-batch (count: trainscope simulate)",
                                     global_batch, *budget, par.context));
  } else {
    text +=
        Row("batch", fmt::format("micro-batch {}, global batch {}, {} micro-batches per step "
                                 "(m = GBS/(b·d))",
                                 training.batch.micro_batch_size, global_batch, num_micro_batches));
  }
  text += Row("sequence", fmt::format("{} tokens, layout {}", training.batch.seq_length,
                                      config::ToString(training.ResolvedSequenceLayout(model))));
  text += Row("megatron-core", config::ToString(training.core_version));
  text += Row("framework", FrameworkDescription(training.framework));
  text += StageLines(config::BuildPipelineLayout(model, training));
  text += ExpertLine(model, par);
  return text;
}

Json ViolationsJson(const std::vector<Violation>& violations) {
  Json list = Json::array();
  for (const Violation& violation : violations) {
    list.push_back(Json{{"rule", violation.rule},
                        {"flags", violation.flags},
                        {"message", violation.message},
                        {"fix", violation.fix},
                        {"profile", violation.profile}});
  }
  return list;
}

Json StagesJson(const PipelineLayout& layout) {
  Json stages = Json::array();
  for (int64_t rank = 0; rank < layout.pipeline_size; ++rank) {
    Json chunks = Json::array();
    for (int64_t index = 0; index < layout.virtual_stages; ++index) {
      const ModelChunk& chunk = layout.Chunk(rank, index);
      chunks.push_back(Json{{"chunk", index},
                            {"first_layer", chunk.first_layer},
                            {"num_layers", chunk.num_layers},
                            {"embedding", chunk.has_embedding},
                            {"lm_head", chunk.has_lm_head},
                            {"mtp_layers", chunk.num_mtp_layers},
                            {"vision", chunk.has_vision}});
    }
    stages.push_back(Json{{"pp_rank", rank}, {"chunks", std::move(chunks)}});
  }
  return stages;
}

Json LayoutJson(const ModelConfig& model, const TrainingConfig& training) {
  const config::ParallelSizes& par = training.parallel;
  const std::optional<int64_t> budget = training.batch.max_tokens_per_gpu;
  // Under dynamic batching the micro-batch count comes from the packing (simulate reports it).
  const Json num_micro_batches = budget ? Json() : Json(training.NumMicroBatches());
  return Json{{"world_size", par.world_size},
              {"tp", par.tensor},
              {"pp", par.pipeline},
              {"vpp", par.virtual_stages},
              {"cp", par.context},
              {"ep", par.expert},
              {"etp", par.ExpertTensor()},
              {"dp", par.Data()},
              {"edp", par.ExpertData()},
              {"micro_batch_size", training.batch.micro_batch_size},
              {"global_batch_size", training.GlobalBatchSize()},
              {"num_micro_batches", num_micro_batches},
              {"max_tokens_per_gpu", budget ? Json(*budget) : Json()},
              {"seq_length", training.batch.seq_length},
              {"sequence_layout", config::ToString(training.ResolvedSequenceLayout(model))},
              {"megatron_core", config::ToString(training.core_version)},
              {"framework", config::ToString(training.framework.framework)},
              {"megatron_bridge", training.framework.UsesBridge()
                                      ? config::ToString(training.framework.bridge_version)
                                      : std::string()},
              {"stages", StagesJson(config::BuildPipelineLayout(model, training))},
              {"experts_per_ep_rank", model.HasMoe() ? model.moe.num_experts / par.expert : 0}};
}

}  // namespace

std::string RenderValidationText(const ModelConfig& model, const TrainingConfig& training,
                                 const ValidationResult& result) {
  if (!result.ok()) {
    std::string text =
        fmt::format("configuration is invalid: {} problem(s)\n", result.errors.size());
    for (const Violation& error : result.errors) text += ViolationLines(error);
    return text + WarningLines(result.warnings);
  }
  return ValidSummary(model, training) + WarningLines(result.warnings);
}

std::string RenderValidationJson(const ModelConfig& model, const TrainingConfig& training,
                                 const ValidationResult& result) {
  Json report{{"valid", result.ok()},
              {"errors", ViolationsJson(result.errors)},
              {"warnings", ViolationsJson(result.warnings)}};
  if (result.ok()) report["layout"] = LayoutJson(model, training);
  return report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace trainscope::report
