#include "trainscope/report/params_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "trainscope/report/format.h"

namespace trainscope::report {
namespace {

using graph::Component;
using Json = nlohmann::ordered_json;

constexpr Component kAllComponents[] = {
    Component::kEmbedding, Component::kLmHead,        Component::kAttention,     Component::kGdn,
    Component::kDenseMlp,  Component::kRoutedExperts, Component::kSharedExperts, Component::kRouter,
    Component::kNorms,     Component::kMtp,           Component::kVision,
};

int64_t At(const graph::ComponentCounts& counts, Component component) {
  return counts[static_cast<size_t>(component)];
}

std::string LayerKindName(const config::LayerSpec& kind) {
  return config::ToString(kind.mixer) + "+" + config::ToString(kind.ffn);
}

Json ComponentsJson(const graph::ComponentCounts& counts) {
  Json out = Json::object();
  for (Component component : kAllComponents) {
    out[graph::ToString(component)] = At(counts, component);
  }
  return out;
}

Json StageJson(const graph::StageParams& stage) {
  return Json{{"pp_rank", stage.pipeline_rank},
              {"num_ranks", stage.num_ranks},
              {"decoder_layers", stage.num_decoder_layers},
              {"total", stage.total},
              {"dense", stage.dense},
              {"replicated", stage.replicated},
              {"expert", stage.expert},
              {"components", ComponentsJson(stage.by_component)}};
}

std::string ParallelSummary(const config::TrainingConfig& training) {
  const config::ParallelSizes& p = training.parallel;
  return fmt::format("W={} tp={} pp={} vpp={} cp={} ep={} etp={} dp={}", p.world_size, p.tensor,
                     p.pipeline, p.virtual_stages, p.context, p.expert, p.ExpertTensor(), p.Data());
}

}  // namespace

std::string RenderParamsJson(const ParamsReportInput& input) {
  const graph::ParamCounts& counts = input.counts;
  Json out{{"model", input.model.name},
           {"model_type", config::ToString(input.model.family)},
           {"total", counts.total},
           {"text_total", counts.text_total},
           {"non_embedding", counts.non_embedding},
           {"embedding", counts.embedding},
           {"lm_head", counts.lm_head},
           {"active", counts.active},
           {"mtp", counts.mtp},
           {"vision", counts.vision},
           {"components", ComponentsJson(counts.by_component)}};
  Json kinds = Json::array();
  for (const graph::LayerKindCount& kind : counts.layer_kinds) {
    kinds.push_back({{"mixer", config::ToString(kind.kind.mixer)},
                     {"ffn", config::ToString(kind.kind.ffn)},
                     {"num_layers", kind.num_layers},
                     {"params_per_layer", kind.params_per_layer},
                     {"active_params_per_layer", kind.active_params_per_layer}});
  }
  out["layer_kinds"] = kinds;
  if (!input.stages.empty()) {
    const config::ParallelSizes& p = input.training.parallel;
    out["parallel"] = {{"world_size", p.world_size}, {"tp", p.tensor},  {"pp", p.pipeline},
                       {"vpp", p.virtual_stages},    {"cp", p.context}, {"ep", p.expert},
                       {"etp", p.ExpertTensor()},    {"dp", p.Data()}};
    Json per_rank = Json::array();
    for (const graph::StageParams& stage : input.stages) per_rank.push_back(StageJson(stage));
    out["per_rank"] = per_rank;
  }
  return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string RenderParamsText(const ParamsReportInput& input) {
  const graph::ParamCounts& c = input.counts;
  std::string out = fmt::format("{} ({}): {} decoder layers, hidden {}\n\n", input.model.name,
                                config::ToString(input.model.family), input.model.NumLayers(),
                                input.model.hidden_size);
  const auto line = [&out](std::string_view label, int64_t value) {
    out += fmt::format("  {:<16}{:>20}  {:>9}\n", label, WithThousands(value), Abbreviated(value));
  };
  line("total", c.total);
  line("text total", c.text_total);
  line("non-embedding", c.non_embedding);
  line("embedding", c.embedding);
  line("lm head", c.lm_head);
  line("active", c.active);
  line("mtp", c.mtp);
  line("vision", c.vision);
  out += "\nby component\n";
  for (Component component : kAllComponents) {
    if (At(c.by_component, component) == 0) continue;
    line(graph::ToString(component), At(c.by_component, component));
  }
  out += "\nby layer kind\n";
  // 30 columns, wider when a kind needs it (multi_latent_attention+dense_mlp).
  size_t width = 30;
  for (const graph::LayerKindCount& kind : c.layer_kinds) {
    width = std::max(width, LayerKindName(kind.kind).size() + 2);
  }
  out += fmt::format("  {:<{}}{:>7}{:>22}{:>22}\n", "kind", width, "layers", "params/layer",
                     "active/layer");
  for (const graph::LayerKindCount& kind : c.layer_kinds) {
    out += fmt::format("  {:<{}}{:>7}{:>22}{:>22}\n", LayerKindName(kind.kind), width,
                       kind.num_layers, WithThousands(kind.params_per_layer),
                       WithThousands(kind.active_params_per_layer));
  }
  if (input.stages.empty()) return out;
  out += fmt::format("\nper rank ({}; every rank of a stage holds the same counts)\n",
                     ParallelSummary(input.training));
  out += fmt::format("  {:>7}{:>7}{:>8}{:>20}{:>20}{:>16}{:>20}\n", "pp_rank", "ranks", "layers",
                     "total", "dense", "replicated", "expert");
  for (const graph::StageParams& stage : input.stages) {
    out += fmt::format("  {:>7}{:>7}{:>8}{:>20}{:>20}{:>16}{:>20}\n", stage.pipeline_rank,
                       stage.num_ranks, stage.num_decoder_layers, WithThousands(stage.total),
                       WithThousands(stage.dense), WithThousands(stage.replicated),
                       WithThousands(stage.expert));
  }
  return out;
}

}  // namespace trainscope::report
