#include "trainscope/plan/search_space.h"

#include <fmt/format.h>

#include <functional>
#include <map>

namespace trainscope::plan {
namespace {

using config::TrainingConfig;

// Sequences at least this long per context-parallel rank are worth splitting: below it CP's
// ring exchange costs more than the attention it shards (Megatron-Bridge recipes use CP only
// from 8k tokens).
constexpr int64_t kMinTokensPerContextRank = 4096;

std::vector<int64_t> DivisorsOf(int64_t n) {
  std::vector<int64_t> divisors;
  for (int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) divisors.push_back(d);
  }
  return divisors;
}

// Replaces every layout by the layouts `expand` makes of it.
std::vector<TrainingConfig> Expand(
    const std::vector<TrainingConfig>& layouts,
    const std::function<std::vector<TrainingConfig>(const TrainingConfig&)>& expand) {
  std::vector<TrainingConfig> out;
  for (const TrainingConfig& layout : layouts) {
    for (TrainingConfig& next : expand(layout)) out.push_back(std::move(next));
  }
  return out;
}

// TP (<= --max-tp, dividing the world), PP (<= the layer count) and CP (long sequences only).
std::vector<TrainingConfig> ExpandGrid(const config::ModelConfig& model, const TrainingConfig& base,
                                       const SearchSpaceOptions& o) {
  const int64_t world = base.parallel.world_size;
  std::vector<TrainingConfig> out;
  for (const int64_t t : DivisorsOf(world)) {
    if (o.pins.tensor ? t != base.parallel.tensor : t > o.max_tensor) continue;
    for (const int64_t p : DivisorsOf(world / t)) {
      if (o.pins.pipeline ? p != base.parallel.pipeline : p > model.NumLayers()) continue;
      for (const int64_t c : DivisorsOf(world / (t * p))) {
        const bool long_enough = base.batch.seq_length / c >= kMinTokensPerContextRank;
        if (o.pins.context ? c != base.parallel.context : (c > 1 && !long_enough)) continue;
        TrainingConfig next = base;
        next.parallel.tensor = t;
        next.parallel.pipeline = p;
        next.parallel.context = c;
        out.push_back(std::move(next));
      }
    }
  }
  return out;
}

// The even split, and the embedding/loss accounting variants that make it legal:
// (L + a_e + a_l) divisible by p (arguments.py:953-975).
std::vector<TrainingConfig> ExpandSplit(const config::ModelConfig& model, const TrainingConfig& t,
                                        const SearchSpaceOptions& o) {
  if (o.pins.split || t.parallel.pipeline == 1) return {t};
  const int64_t layers = model.NumLayers(), p = t.parallel.pipeline;
  std::vector<TrainingConfig> out;
  const auto add = [&](bool embedding, bool loss) {
    if ((layers + embedding + loss) % p != 0) return;
    TrainingConfig next = t;
    next.split = {.account_for_embedding = embedding, .account_for_loss = loss};
    out.push_back(std::move(next));
  };
  add(false, false);
  add(true, true);
  add(true, false);
  add(false, true);
  if (out.empty()) out.push_back(t);  // no legal even split: the validator says why (C15)
  return out;
}

// Virtual stages: every v whose chunks hold a whole number of layers (C16).
std::vector<TrainingConfig> ExpandVirtual(const config::ModelConfig& model, const TrainingConfig& t,
                                          const SearchSpaceOptions& o) {
  if (o.pins.virtual_stages) return {t};
  const int64_t p = t.parallel.pipeline;
  const int64_t slots =
      model.NumLayers() + t.split.account_for_embedding + t.split.account_for_loss;
  if (p == 1 || slots % p != 0) {
    TrainingConfig next = t;
    next.parallel.virtual_stages = 1;
    return {next};
  }
  std::vector<TrainingConfig> out;
  for (const int64_t v : DivisorsOf(slots / p)) {
    TrainingConfig next = t;
    next.parallel.virtual_stages = v;
    out.push_back(std::move(next));
  }
  return out;
}

// EP (divisors of the expert count whose expert grid fills the world) and ETP (1 or t).
std::vector<TrainingConfig> ExpandExperts(const config::ModelConfig& model, const TrainingConfig& t,
                                          const SearchSpaceOptions& o) {
  if (!model.HasMoe()) {
    TrainingConfig next = t;
    next.parallel.expert = 1;
    next.parallel.expert_tensor.reset();
    return {next};
  }
  std::vector<int64_t> etps = {1, t.parallel.tensor};
  if (o.pins.expert_tensor) etps = {t.parallel.ExpertTensor()};
  if (etps.size() == 2 && etps[0] == etps[1]) etps.pop_back();
  std::vector<TrainingConfig> out;
  for (const int64_t u : etps) {
    for (const int64_t e : DivisorsOf(model.moe.num_experts)) {
      if (o.pins.expert ? e != t.parallel.expert
                        : t.parallel.world_size % (u * e * t.parallel.pipeline) != 0) {
        continue;
      }
      TrainingConfig next = t;
      next.parallel.expert = e;
      next.parallel.expert_tensor = u;
      out.push_back(std::move(next));
    }
  }
  return out;
}

std::vector<TrainingConfig> ExpandDispatcher(const config::ModelConfig& model,
                                             const TrainingConfig& t, const SearchSpaceOptions& o) {
  if (!model.HasMoe() || o.pins.dispatcher) return {t};
  std::vector<TrainingConfig> out;
  for (const config::TokenDispatcher dispatcher : o.dispatchers) {
    TrainingConfig next = t;
    next.moe.dispatcher = dispatcher;
    out.push_back(std::move(next));
  }
  return out;
}

std::vector<TrainingConfig> ExpandMicroBatch(const TrainingConfig& t, const SearchSpaceOptions& o) {
  if (o.pins.micro_batch) return {t};
  std::vector<TrainingConfig> out;
  for (const int64_t b : o.micro_batch_sizes) {
    TrainingConfig next = t;
    next.batch.micro_batch_size = b;
    out.push_back(std::move(next));
  }
  return out;
}

// None; selective over core attention (and the MoE activation for MoE models); full uniform
// recompute of every layer.
std::vector<TrainingConfig> ExpandRecompute(const config::ModelConfig& model,
                                            const TrainingConfig& t, const SearchSpaceOptions& o) {
  if (o.pins.recompute) return {t};
  using config::RecomputeGranularity;
  const bool selective =
      o.recompute == RecomputeAllowance::kSelective || o.recompute == RecomputeAllowance::kAny;
  const bool full =
      o.recompute == RecomputeAllowance::kFull || o.recompute == RecomputeAllowance::kAny;
  std::vector<TrainingConfig> out;
  TrainingConfig none = t;
  none.recompute = {};
  out.push_back(none);
  if (selective) {
    TrainingConfig next = none;
    next.recompute.granularity = RecomputeGranularity::kSelective;
    next.recompute.modules = {"core_attn"};
    if (model.HasMoe()) next.recompute.modules.push_back("moe_act");
    out.push_back(std::move(next));
  }
  if (full) {
    TrainingConfig next = none;
    next.recompute.granularity = RecomputeGranularity::kFull;
    next.recompute.method = config::RecomputeMethod::kUniform;
    next.recompute.num_layers = 1;
    out.push_back(std::move(next));
  }
  return out;
}

std::vector<TrainingConfig> ExpandDataParallel(const TrainingConfig& t,
                                               const SearchSpaceOptions& o) {
  if (o.pins.data_parallel) return {t};
  TrainingConfig dist_opt = t;
  dist_opt.data_parallel.distributed_optimizer = true;
  dist_opt.data_parallel.megatron_fsdp = false;
  if (!o.megatron_fsdp) return {dist_opt};
  TrainingConfig fsdp = dist_opt;
  fsdp.data_parallel.megatron_fsdp = true;
  return {dist_opt, fsdp};
}

// SP with TP > 1, grouped GEMM for MoE, DP overlap, TP communication overlap where legal.
void TurnOnOverlaps(const config::ModelConfig& model, const SearchSpaceOptions& o,
                    TrainingConfig& t) {
  const bool tp = t.parallel.tensor > 1;
  if (!o.pins.sequence_parallel) t.sequence_parallel = tp;
  if (!o.pins.grouped_gemm) t.moe.grouped_gemm = model.HasMoe();
  if (!o.pins.dp_overlap) {
    t.data_parallel.overlap_grad_reduce = true;
    t.data_parallel.overlap_param_gather =
        t.data_parallel.distributed_optimizer || t.data_parallel.megatron_fsdp;
  }
  if (!o.pins.tp_comm_overlap) t.overlap.tp_comm_overlap = tp && t.sequence_parallel;
}

// With p = 2 and no virtual stages, accounting for both the embedding and the loss gives each
// stage (L+2)/2 − 1 = L/2 decoder layers: the plain even split under other flags.
bool SameAsPlainSplit(const config::ModelConfig& model, const TrainingConfig& t) {
  return t.parallel.pipeline == 2 && t.parallel.virtual_stages == 1 &&
         t.split.account_for_embedding && t.split.account_for_loss && model.NumLayers() % 2 == 0;
}

}  // namespace

std::vector<TrainingConfig> EnumerateLayouts(const config::ModelConfig& model,
                                             const TrainingConfig& base,
                                             const SearchSpaceOptions& options) {
  const SearchSpaceOptions& o = options;
  std::vector<TrainingConfig> layouts = ExpandGrid(model, base, o);
  layouts = Expand(layouts, [&](const TrainingConfig& t) { return ExpandSplit(model, t, o); });
  layouts = Expand(layouts, [&](const TrainingConfig& t) { return ExpandVirtual(model, t, o); });
  layouts = Expand(layouts, [&](const TrainingConfig& t) { return ExpandExperts(model, t, o); });
  layouts = Expand(layouts, [&](const TrainingConfig& t) { return ExpandDispatcher(model, t, o); });
  layouts = Expand(layouts, [&](const TrainingConfig& t) { return ExpandMicroBatch(t, o); });
  layouts = Expand(layouts, [&](const TrainingConfig& t) { return ExpandRecompute(model, t, o); });
  layouts = Expand(layouts, [&](const TrainingConfig& t) { return ExpandDataParallel(t, o); });
  std::map<std::string, TrainingConfig> unique;
  for (TrainingConfig& layout : layouts) {
    if (SameAsPlainSplit(model, layout)) continue;
    TurnOnOverlaps(model, o, layout);
    unique.emplace(LayoutFlags(model, layout), std::move(layout));
  }
  std::vector<TrainingConfig> out;
  out.reserve(unique.size());
  for (auto& [flags, layout] : unique) out.push_back(std::move(layout));
  return out;
}

std::string LayoutFlags(const config::ModelConfig& model, const TrainingConfig& t) {
  const config::ParallelSizes& p = t.parallel;
  std::string out = fmt::format("--tensor-model-parallel-size {}", p.tensor);
  if (t.sequence_parallel) out += " --sequence-parallel";
  if (t.overlap.tp_comm_overlap) out += " --tp-comm-overlap";
  out += fmt::format(" --pipeline-model-parallel-size {}", p.pipeline);
  if (!t.split.layout.empty()) {
    out += fmt::format(" --pipeline-model-parallel-layout \"{}\"", t.split.layout_text);
    if (!t.overlap.overlap_p2p_comm) out += " --no-overlap-p2p-communication";
  } else if (p.virtual_stages > 1) {
    out += fmt::format(" --num-virtual-stages-per-pipeline-rank {}", p.virtual_stages);
    if (!t.overlap.overlap_p2p_comm) out += " --no-overlap-p2p-communication";
  }
  if (t.split.first_stage_layers) {
    out += fmt::format(" --decoder-first-pipeline-num-layers {}", *t.split.first_stage_layers);
  }
  if (t.split.last_stage_layers) {
    out += fmt::format(" --decoder-last-pipeline-num-layers {}", *t.split.last_stage_layers);
  }
  if (t.split.account_for_embedding) out += " --account-for-embedding-in-pipeline-split";
  if (t.split.account_for_loss) out += " --account-for-loss-in-pipeline-split";
  if (p.context > 1) out += fmt::format(" --context-parallel-size {}", p.context);
  if (model.HasMoe()) {
    out += fmt::format(" --expert-model-parallel-size {} --expert-tensor-parallel-size {}",
                       p.expert, p.ExpertTensor());
    out += fmt::format(" --moe-token-dispatcher-type {}",
                       config::NameOf(config::kDispatcherNames, t.moe.dispatcher));
    if (t.moe.grouped_gemm) out += " --moe-grouped-gemm";
  }
  out += fmt::format(" --micro-batch-size {}", t.batch.micro_batch_size);
  const config::RecomputeConfig& r = t.recompute;
  if (r.granularity == config::RecomputeGranularity::kSelective) {
    out += " --recompute-granularity selective --recompute-modules";
    for (const std::string& module : r.modules) out += " " + module;
  } else if (r.granularity == config::RecomputeGranularity::kFull) {
    out += fmt::format(" --recompute-granularity full --recompute-method {}",
                       config::NameOf(config::kRecomputeMethodNames, r.method));
    if (r.num_layers) out += fmt::format(" --recompute-num-layers {}", *r.num_layers);
  }
  const config::DataParallelConfig& dp = t.data_parallel;
  if (dp.distributed_optimizer) out += " --use-distributed-optimizer";
  if (dp.megatron_fsdp) out += " --use-megatron-fsdp";
  if (dp.overlap_grad_reduce) out += " --overlap-grad-reduce";
  if (dp.overlap_param_gather) out += " --overlap-param-gather";
  return out;
}

}  // namespace trainscope::plan
