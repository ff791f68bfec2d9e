// Validator rules on the parallel sizes: positive sizes, the dense and expert grids, the
// data-parallel sizes, the TP/EP/ETP splits of heads and weights, the MoE dispatcher options and
// the EP communication overlap (rules C1-C42 of docs/validation.md, each with the Megatron-LM line
// that enforces it).
#include <fmt/format.h>

#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/config/validate_rules.h"

namespace trainscope::config::internal {

// T1: every size that is set is positive (unset optional sizes take their defaults).
bool CheckSizes(const TrainingConfig& training, ValidationResult& result) {
  struct Field {
    const char* flag;
    std::optional<int64_t> value;  // unset = the flag's default
  };
  const ParallelSizes& parallel = training.parallel;
  const Field fields[] = {{kNumGpus, parallel.world_size},
                          {kTp, parallel.tensor},
                          {kPp, parallel.pipeline},
                          {kVpp, parallel.virtual_stages},
                          {kCp, parallel.context},
                          {kEp, parallel.expert},
                          {kEtp, parallel.expert_tensor},
                          {kMbs, training.batch.micro_batch_size},
                          {kSeqLength, training.batch.seq_length},
                          {kMbGroup, training.batch.microbatch_group_size_per_vp_stage},
                          {kDp, parallel.data},
                          {kGbs, training.batch.global_batch_size},
                          {kRecomputeLayers, training.recompute.num_layers},
                          {kBucketSize, training.data_parallel.bucket_size_params}};
  bool ok = true;
  for (const Field& field : fields) {
    if (!field.value || *field.value >= 1) continue;
    ok = false;
    AddError(result, "T1", {field.flag},
             fmt::format("{} {}: must be at least 1", field.flag, *field.value),
             fmt::format("use {} 1 or larger", field.flag));
  }
  return ok;
}

// C1, C2: the dense and expert grids fill the world.
void CheckWorldDivisibility(const ModelConfig& model, const TrainingConfig& training,
                            ValidationResult& result) {
  const ParallelSizes& par = training.parallel;
  const int64_t num_experts = model.HasMoe() ? model.moe.num_experts : 0;
  const int64_t model_size = par.tensor * par.pipeline * par.context;
  const int64_t expert_size = par.ExpertTensor() * par.expert * par.pipeline;
  if (par.world_size % model_size != 0) {
    AddError(
        result, "C1", {kNumGpus, kTp, kPp, kCp},
        fmt::format("--num-gpus {}: not divisible by t·p·c = {}·{}·{} = {}", par.world_size,
                    par.tensor, par.pipeline, par.context, model_size),
        fmt::format("use --num-gpus {} (multiples of {}), or change --tensor-model-parallel-size, "
                    "--pipeline-model-parallel-size or --context-parallel-size",
                    NearestMultiples(par.world_size, model_size), model_size));
  }
  // With e = 1 and u = t the expert grid t·p divides t·p·c, so C1 already reports any problem.
  const bool expert_grid_differs = par.expert > 1 || par.ExpertTensor() != par.tensor;
  if (expert_grid_differs && par.world_size % expert_size != 0) {
    // EP sizes that fit W/(u·p) and, for an MoE model, divide the experts.
    const int64_t room = par.world_size / (par.ExpertTensor() * par.pipeline);
    const int64_t ep_bound = num_experts > 0 ? std::gcd(num_experts, room) : room;
    AddError(result, "C2", {kNumGpus, kEtp, kEp, kPp},
             fmt::format("--num-gpus {}: not divisible by u·e·p = {}·{}·{} = {} (expert-tensor x "
                         "expert x pipeline parallel; --expert-tensor-parallel-size defaults to t)",
                         par.world_size, par.ExpertTensor(), par.expert, par.pipeline, expert_size),
             par.world_size % (par.ExpertTensor() * par.pipeline) == 0
                 ? fmt::format("use --expert-model-parallel-size {} (dividing W/(u·p) = {}), or a "
                               "smaller --expert-tensor-parallel-size",
                               JoinChoices(Divisors(ep_bound)), room)
                 : std::string("use --expert-tensor-parallel-size 1 and an "
                               "--expert-model-parallel-size dividing W/p"));
  }
}

// C3, T2: the data-parallel sizes. Both need the grids of C1 and C2 to divide the world.
void CheckDataParallelSizes(const TrainingConfig& training, ValidationResult& result) {
  const ParallelSizes& par = training.parallel;
  const int64_t model_size = par.tensor * par.pipeline * par.context;
  const int64_t expert_size = par.ExpertTensor() * par.expert * par.pipeline;
  const bool both_grids = par.world_size % model_size == 0 && par.world_size % expert_size == 0;
  if (both_grids && par.order == RankOrder::kTpCpEpPpDp && par.pipeline > 1 &&
      par.Data() != par.ExpertData()) {
    AddError(
        result, "C3", {kTpPpDpMapping, kEp, kEtp, kPp},
        fmt::format("--use-tp-pp-dp-mapping with --pipeline-model-parallel-size {}: expert-data "
                    "size d_e = W/(u·e·p) = {} differs from data size d = W/(t·p·c) = {}",
                    par.pipeline, par.ExpertData(), par.Data()),
        fmt::format("drop --use-tp-pp-dp-mapping, or choose --expert-model-parallel-size and "
                    "--expert-tensor-parallel-size with u·e = t·c = {}",
                    par.tensor * par.context));
  }
  if (par.data && par.world_size % model_size == 0 && *par.data != par.Data()) {
    AddError(result, "T2", {kDp, kNumGpus, kTp, kPp, kCp},
             fmt::format("--data-parallel-size {}: W/(t·p·c) = {}/({}·{}·{}) = {}", *par.data,
                         par.world_size, par.tensor, par.pipeline, par.context, par.Data()),
             fmt::format("use --data-parallel-size {} or omit it", par.Data()));
  }
}

// C4, C5: the attention heads over tensor-parallel ranks.
void CheckAttentionHeads(const ModelConfig& model, const TrainingConfig& training,
                         ValidationResult& result) {
  const int64_t t = training.parallel.tensor;
  const int64_t w = training.parallel.world_size;
  const int64_t n = model.attention.num_heads;
  const int64_t g = model.attention.num_kv_heads;
  if (n > 0 && n % t != 0) {
    AddError(
        result, "C4", {kTp},
        fmt::format("--tensor-model-parallel-size {}: {} attention heads are not divisible by {}",
                    t, n, t),
        fmt::format("use --tensor-model-parallel-size {} (divisors of {} heads that divide {} "
                    "GPUs)",
                    JoinChoices(Divisors(std::gcd(n, w))), n, w));
  }
  if (g > 0 && g % t != 0 && t % g != 0) {
    std::vector<int64_t> choices;
    for (int64_t k : Divisors(std::gcd(n > 0 ? n : g, w))) {
      if (g % k == 0 || k % g == 0) choices.push_back(k);
    }
    AddError(result, "C5", {kTp},
             fmt::format("--tensor-model-parallel-size {}: {} key/value heads (query groups) are "
                         "neither a multiple nor a divisor of {}",
                         t, g, t),
             fmt::format("use --tensor-model-parallel-size {}", JoinChoices(choices)));
  }
}

// T3 (dense FFN), T6 (vision tower), T9 (MTP eh_proj): the other widths a column- or
// row-parallel linear divides by t (tensor_parallel/layers.py:1038, 1408, divide()).
void CheckLinearSplits(const ModelConfig& model, const TrainingConfig& training,
                       ValidationResult& result) {
  const int64_t t = training.parallel.tensor;
  const int64_t w = training.parallel.world_size;
  if (model.CountLayers(FfnKind::kDense) > 0 && model.ffn_hidden_size % t != 0) {
    AddError(
        result, "T3", {kTp, kFfn},
        fmt::format("--tensor-model-parallel-size {}: dense ffn_hidden_size {} is not divisible "
                    "by {}",
                    t, model.ffn_hidden_size, t),
        fmt::format("use --tensor-model-parallel-size {}",
                    JoinChoices(Divisors(std::gcd(model.ffn_hidden_size, w)))));
  }
  const VisionConfig& vision = model.vision;
  if (vision.Present() && (vision.num_heads % t != 0 || vision.intermediate_size % t != 0)) {
    AddError(
        result, "T6", {kTp},
        fmt::format("--tensor-model-parallel-size {}: the vision tower's {} heads and MLP width "
                    "{} must both be divisible by {}",
                    t, vision.num_heads, vision.intermediate_size, t),
        fmt::format("use --tensor-model-parallel-size {}",
                    JoinChoices(Divisors(
                        std::gcd(std::gcd(vision.num_heads, vision.intermediate_size), w)))));
  }
  if (model.num_mtp_layers > 0 && model.hidden_size % t != 0) {
    AddError(result, "T9", {kTp},
             fmt::format("--tensor-model-parallel-size {}: the MTP eh_proj output (hidden size {}) "
                         "is not divisible by {}",
                         t, model.hidden_size, t),
             fmt::format("use --tensor-model-parallel-size {}",
                         JoinChoices(Divisors(std::gcd(model.hidden_size, w)))));
  }
}

// C8, C9, T4, T5: expert placement and the MoE weight splits.
void CheckExpertSplits(const ModelConfig& model, const TrainingConfig& training,
                       ValidationResult& result) {
  const ParallelSizes& par = training.parallel;
  const int64_t num_experts = model.moe.num_experts;
  if (model.HasMoe() && par.tensor > 1 && !training.sequence_parallel) {
    AddError(result, "C8", {kSp, kTp},
             fmt::format("--sequence-parallel is off: MoE layers with --tensor-model-parallel-size "
                         "{} raise during training unless sequence parallelism is on",
                         par.tensor),
             "add --sequence-parallel");
  }
  if (par.expert > 1 && (!model.HasMoe() || num_experts <= 0)) {
    AddError(result, "C9", {kEp},
             fmt::format("--expert-model-parallel-size {}: model {} has no experts (num_experts "
                         "unset)",
                         par.expert, model.name),
             "use --expert-model-parallel-size 1");
  } else if (model.HasMoe() && num_experts > 0 && num_experts % par.expert != 0) {
    AddError(result, "C9", {kEp},
             fmt::format("--expert-model-parallel-size {}: {} experts are not divisible by {}",
                         par.expert, num_experts, par.expert),
             fmt::format("use --expert-model-parallel-size {} (divisors of {} experts that divide "
                         "{} GPUs)",
                         JoinChoices(Divisors(std::gcd(num_experts, par.world_size))), num_experts,
                         par.world_size));
  }
  const int64_t u = par.ExpertTensor();
  if (model.HasMoe() && model.moe.expert_ffn_hidden_size % u != 0) {
    AddError(
        result, "T4", {kEtp, kExpertFfn},
        fmt::format("--expert-tensor-parallel-size {}: expert ffn width {} is not divisible by "
                    "{} (defaults to --tensor-model-parallel-size)",
                    u, model.moe.expert_ffn_hidden_size, u),
        fmt::format(
            "use --expert-tensor-parallel-size {}",
            JoinChoices(Divisors(std::gcd(model.moe.expert_ffn_hidden_size, par.world_size)))));
  }
  if (model.HasMoe() && model.moe.HasSharedExpert() &&
      model.moe.shared_expert_ffn_hidden_size % par.tensor != 0) {
    AddError(result, "T5", {kTp, kSharedFfn},
             fmt::format("--tensor-model-parallel-size {}: shared-expert ffn width {} is not "
                         "divisible by {}",
                         par.tensor, model.moe.shared_expert_ffn_hidden_size, par.tensor),
             fmt::format("use --tensor-model-parallel-size {}",
                         JoinChoices(Divisors(
                             std::gcd(model.moe.shared_expert_ffn_hidden_size, par.world_size)))));
  }
}

// C11, C12, C13: dispatcher and capacity options.
void CheckDispatcher(const ModelConfig& model, const TrainingConfig& training,
                     ValidationResult& result) {
  const MoeRunConfig& moe = training.moe;
  const std::string dispatcher = ToString(moe.dispatcher);
  if (model.moe.HasSharedExpert() && moe.shared_expert_overlap &&
      moe.dispatcher == TokenDispatcher::kAllGather) {
    AddError(result, "C11", {kSharedOverlap, kDispatcher},
             fmt::format("--moe-shared-expert-overlap: needs the alltoall or flex dispatcher (got "
                         "--moe-token-dispatcher-type {})",
                         dispatcher),
             "use --moe-token-dispatcher-type alltoall, or drop --moe-shared-expert-overlap");
  }
  if (moe.capacity_factor && *moe.capacity_factor >= 0 &&
      moe.load_balancing == LoadBalancing::kSinkhorn) {
    AddError(result, "C12", {kCapacity, kLoadBalancing},
             fmt::format("--moe-expert-capacity-factor {}: needs --moe-router-load-balancing-type "
                         "aux_loss, seq_aux_loss, global_aux_loss or none (got sinkhorn)",
                         *moe.capacity_factor),
             "use --moe-router-load-balancing-type aux_loss, or drop --moe-expert-capacity-factor");
  }
  if (moe.pad_expert_input_to_capacity && (!moe.capacity_factor || *moe.capacity_factor < 0)) {
    AddError(result, "C12", {kPadToCapacity, kCapacity},
             "--moe-pad-expert-input-to-capacity: needs --moe-expert-capacity-factor",
             "add --moe-expert-capacity-factor (e.g. 1.0), or drop "
             "--moe-pad-expert-input-to-capacity");
  }
  if (moe.enable_deepep && moe.dispatcher != TokenDispatcher::kFlex) {
    AddError(result, "C13", {kDeepEp, kDispatcher},
             fmt::format("--moe-enable-deepep: DeepEP needs --moe-token-dispatcher-type flex (got "
                         "{})",
                         dispatcher),
             "use --moe-token-dispatcher-type flex, or drop --moe-enable-deepep");
  }
  // C56: the flex dispatcher's backend (transformer_config.py __post_init__): one backend only,
  // and DeepEP cannot pad every expert to capacity.
  if (moe.enable_deepep && moe.flex_backend == FlexBackend::kHybridEp) {
    AddError(result, "C56", {kDeepEp, kFlexBackend},
             "--moe-enable-deepep: selects the deepep backend, but --moe-flex-dispatcher-backend "
             "is hybridep (Megatron-Core allows one backend)",
             "drop --moe-enable-deepep (deprecated), or use --moe-flex-dispatcher-backend deepep");
  }
  if (moe.dispatcher == TokenDispatcher::kFlex && moe.pad_expert_input_to_capacity &&
      moe.EffectiveFlexBackend() == FlexBackend::kDeepEp) {
    AddError(result, "C56", {kPadToCapacity, kFlexBackend},
             "--moe-pad-expert-input-to-capacity: the flex dispatcher's deepep backend does not "
             "pad to capacity",
             "use --moe-flex-dispatcher-backend hybridep, or drop "
             "--moe-pad-expert-input-to-capacity");
  }
  // C60: transformer_config.py __post_init__ ("fp8/fp4 must be specified when
  // moe_router_padding_for_quantization is True", "allgather and alltoall_seq dispatcher does not
  // support moe_router_padding_for_quantization").
  if (moe.router_padding_for_quantization) {
    if (training.precision.fp8 == Fp8Format::kNone && training.precision.fp4 == Fp4Format::kNone) {
      AddError(result, "C60", {kRouterPadding, kFp8Format},
               "--moe-router-padding-for-quantization: pads to the FP8/FP4 alignment; it needs "
               "--fp8-format or --fp4-format",
               "add --fp8-format e4m3, or drop --moe-router-padding-for-quantization");
    }
    if (moe.dispatcher == TokenDispatcher::kAllGather) {
      AddError(
          result, "C60", {kRouterPadding, kDispatcher},
          "--moe-router-padding-for-quantization: not with --moe-token-dispatcher-type allgather",
          "use --moe-token-dispatcher-type alltoall or flex, or drop the padding");
    }
  }
  const int64_t tp_ep = training.parallel.ExpertTensor() * training.parallel.expert;
  if (model.HasMoe() && moe.dispatcher == TokenDispatcher::kFlex && tp_ep == 1) {
    AddError(result, "C13", {kDispatcher, kEp, kEtp},
             "--moe-token-dispatcher-type flex: the DeepEP dispatcher needs u·e > 1 (got "
             "--expert-tensor-parallel-size 1 and --expert-model-parallel-size 1)",
             "use --expert-model-parallel-size 2 or more, or --moe-token-dispatcher-type alltoall");
  }
}

// C57-C59: HybridEP's rank budget, paged stash and fused permute (Megatron-Core 0.18,
// transformer_config.py __post_init__: "moe_expert_rank_capacity_factor requires
// use_transformer_engine_op_fuser to be enabled", "... requires moe_flex_dispatcher_backend to be
// 'hybridep'", "moe_paged_stash cannot be enabled with cpu_offloading", "moe_paged_stash requires
// moe_expert_rank_capacity_factor to be set").
void CheckHybridEpOptions(const TrainingConfig& training, ValidationResult& result) {
  const MoeRunConfig& moe = training.moe;
  if (moe.rank_capacity_factor) {
    if (!moe.HybridEpRuns()) {
      AddError(result, "C57", {kRankCapacity, kDispatcher, kFlexBackend},
               fmt::format("--moe-expert-rank-capacity-factor {:g}: the rank budget is HybridEP's; "
                           "it needs --moe-token-dispatcher-type flex with "
                           "--moe-flex-dispatcher-backend hybridep",
                           *moe.rank_capacity_factor),
               "add --moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep, or "
               "drop --moe-expert-rank-capacity-factor");
    }
    if (!moe.te_op_fuser) {
      AddError(result, "C57", {kRankCapacity, kTeOpFuser},
               "--moe-expert-rank-capacity-factor: the budget-sized expert buffers need TE's "
               "fused expert MLP (--use-transformer-engine-op-fuser)",
               "add --use-transformer-engine-op-fuser, or drop --moe-expert-rank-capacity-factor");
    }
  }
  if (moe.paged_stash && !moe.rank_capacity_factor) {
    AddError(result, "C58", {kPagedStash, kRankCapacity},
             "--moe-paged-stash: the stash pages a rank budget's buffers; it needs "
             "--moe-expert-rank-capacity-factor",
             "add --moe-expert-rank-capacity-factor (e.g. 1.5), or drop --moe-paged-stash");
  }
  if (moe.paged_stash && training.cpu_offloading) {
    AddError(result, "C58", {kPagedStash, kCpuOffloading},
             "--moe-paged-stash: not with --cpu-offloading", "drop one of the two");
  }
  if (training.core_version <= CoreVersion::kV0_17) {
    const std::pair<bool, const char*> options[] = {
        {moe.permute_fusion_into_hybridep, kHybridEpPermuteFusion},
        {moe.rank_capacity_factor.has_value(), kRankCapacity},
        {moe.paged_stash, kPagedStash}};
    for (const auto& [set, flag] : options) {
      if (!set) continue;
      AddError(result, "C59", {flag, kCore},
               fmt::format("{}: Megatron-Core {} has no such option (it arrived in 0.18)", flag,
                           ToString(training.core_version)),
               fmt::format("use --megatron-core 0.18, or drop {}", flag));
    }
  }
}

// C14: every requirement of --overlap-moe-expert-parallel-comm, reported as one violation.
void CheckEpOverlap(const TrainingConfig& training, ValidationResult& result) {
  if (training.moe.delay_wgrad_compute && !training.moe.overlap_expert_parallel_comm) {
    // transformer_config.py __post_init__: "overlap_moe_expert_parallel_comm must be enabled
    // when enabling delay_wgrad_compute".
    AddError(result, "C51", {kDelayWgrad, kEpOverlap},
             "--delay-wgrad-compute requires --overlap-moe-expert-parallel-comm",
             "add --overlap-moe-expert-parallel-comm, or drop --delay-wgrad-compute");
  }
  if (!training.moe.overlap_expert_parallel_comm) return;
  const ParallelSizes& par = training.parallel;
  const RecomputeConfig& recompute = training.recompute;
  std::vector<std::string> reasons;
  std::vector<std::string> flags = {kEpOverlap};
  const auto require = [&](bool holds, const std::string& reason, const char* flag) {
    if (holds) return;
    reasons.push_back(reason);
    flags.push_back(flag);
  };
  require(par.expert > 1, "--expert-model-parallel-size must be > 1", kEp);
  require(training.moe.dispatcher != TokenDispatcher::kAllGather,
          "--moe-token-dispatcher-type must be alltoall or flex", kDispatcher);
  require(par.pipeline == 1 || par.virtual_stages > 1,
          "--num-virtual-stages-per-pipeline-rank must be set when "
          "--pipeline-model-parallel-size > 1",
          kVpp);
  require(recompute.granularity != RecomputeGranularity::kFull,
          "--recompute-granularity full is not allowed", kGranularity);
  require(recompute.method == RecomputeMethod::kNone, "--recompute-method must be unset", kMethod);
  require(!recompute.num_layers, "--recompute-num-layers must be unset", kRecomputeLayers);
  const bool moe_recompute = recompute.granularity == RecomputeGranularity::kSelective &&
                             Contains(recompute.modules, "moe");
  require(!moe_recompute, "--recompute-modules must not contain moe", kModules);
  require(training.precision.params != ParamDtype::kFp32, "parameters must be bf16 or fp16", kBf16);
  require(!training.moe.shared_expert_overlap, "--moe-shared-expert-overlap is not allowed",
          kSharedOverlap);
  if (reasons.empty()) return;
  AddError(result, "C14", flags,
           fmt::format("--overlap-moe-expert-parallel-comm: {}", fmt::join(reasons, "; ")),
           "change the listed options, or drop --overlap-moe-expert-parallel-comm");
}

}  // namespace trainscope::config::internal
