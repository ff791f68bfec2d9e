#include "trainscope/config/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <string_view>
#include <utility>

#include "trainscope/error.h"

namespace trainscope::config {
namespace {

// Megatron-LM flag spellings (megatron/training/arguments.py) plus trainscope's own run flags.
constexpr char kNumGpus[] = "--num-gpus";
constexpr char kDp[] = "--data-parallel-size";
constexpr char kTp[] = "--tensor-model-parallel-size";
constexpr char kPp[] = "--pipeline-model-parallel-size";
constexpr char kVpp[] = "--num-virtual-stages-per-pipeline-rank";
constexpr char kCp[] = "--context-parallel-size";
constexpr char kCpCommType[] = "--cp-comm-type";
constexpr char kHierCp[] = "--hierarchical-context-parallel-sizes";
constexpr char kEp[] = "--expert-model-parallel-size";
constexpr char kEtp[] = "--expert-tensor-parallel-size";
constexpr char kTpPpDpMapping[] = "--use-tp-pp-dp-mapping";
constexpr char kSp[] = "--sequence-parallel";
constexpr char kMbs[] = "--micro-batch-size";
constexpr char kGbs[] = "--global-batch-size";
constexpr char kSeqLength[] = "--seq-length";
constexpr char kMaxPositions[] = "--max-position-embeddings";
constexpr char kMbGroup[] = "--microbatch-group-size-per-virtual-pipeline-stage";
constexpr char kNoP2pOverlap[] = "--no-overlap-p2p-communication";
constexpr char kFirstStage[] = "--decoder-first-pipeline-num-layers";
constexpr char kLastStage[] = "--decoder-last-pipeline-num-layers";
constexpr char kAccountEmbedding[] = "--account-for-embedding-in-pipeline-split";
constexpr char kAccountLoss[] = "--account-for-loss-in-pipeline-split";
constexpr char kFfn[] = "--ffn-hidden-size";
constexpr char kExpertFfn[] = "--moe-ffn-hidden-size";
constexpr char kSharedFfn[] = "--moe-shared-expert-intermediate-size";
constexpr char kDispatcher[] = "--moe-token-dispatcher-type";
constexpr char kGroupedGemm[] = "--moe-grouped-gemm";
constexpr char kCapacity[] = "--moe-expert-capacity-factor";
constexpr char kPadToCapacity[] = "--moe-pad-expert-input-to-capacity";
constexpr char kLoadBalancing[] = "--moe-router-load-balancing-type";
constexpr char kSharedOverlap[] = "--moe-shared-expert-overlap";
constexpr char kDeepEp[] = "--moe-enable-deepep";
constexpr char kEpOverlap[] = "--overlap-moe-expert-parallel-comm";
constexpr char kBf16[] = "--bf16";
constexpr char kFp8Format[] = "--fp8-format";
constexpr char kFp8Recipe[] = "--fp8-recipe";
constexpr char kDistOpt[] = "--use-distributed-optimizer";
constexpr char kMegatronFsdp[] = "--use-megatron-fsdp";
constexpr char kTorchFsdp2[] = "--use-torch-fsdp2";
constexpr char kUntie[] = "--untie-embeddings-and-output-weights";
constexpr char kOverlapGrad[] = "--overlap-grad-reduce";
constexpr char kOverlapParam[] = "--overlap-param-gather";
constexpr char kTpCommOverlap[] = "--tp-comm-overlap";
constexpr char kBucketSize[] = "--ddp-bucket-size";
constexpr char kGranularity[] = "--recompute-granularity";
constexpr char kMethod[] = "--recompute-method";
constexpr char kRecomputeLayers[] = "--recompute-num-layers";
constexpr char kModules[] = "--recompute-modules";
constexpr char kDistributeSaved[] = "--distribute-saved-activations";
constexpr char kCpuOffloading[] = "--cpu-offloading";
constexpr char kDeterministic[] = "--deterministic-mode";
constexpr char kCore[] = "--megatron-core";
constexpr char kLayout[] = "--sequence-layout";
constexpr char kGdnConv[] = "--linear-conv-kernel-dim";
constexpr char kGdnKeyDim[] = "--linear-key-head-dim";
constexpr char kGdnValueDim[] = "--linear-value-head-dim";
constexpr char kGdnKeyHeads[] = "--linear-num-key-heads";
constexpr char kGdnValueHeads[] = "--linear-num-value-heads";

// Selective-recompute modules Megatron accepts (transformer_config.py:1942-1958).
constexpr std::string_view kRecomputeModules[] = {
    "core_attn",      "moe_act",      "layernorm",   "mla_up_proj", "mlp", "moe",
    "shared_experts", "gdn_norm_out", "gdp_in_proj", "gdp_qkv",     "mhc"};

void AddError(ValidationResult& result, std::string rule, std::vector<std::string> flags,
              std::string message, std::string fix) {
  result.errors.push_back(
      Violation{std::move(rule), std::move(flags), std::move(message), std::move(fix)});
}

void AddWarning(ValidationResult& result, std::string rule, std::vector<std::string> flags,
                std::string message, std::string fix) {
  result.warnings.push_back(
      Violation{std::move(rule), std::move(flags), std::move(message), std::move(fix)});
}

// Divisors of `n` (n >= 1) in increasing order.
std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> small;
  std::vector<int64_t> large;
  for (int64_t k = 1; k * k <= n; ++k) {
    if (n % k != 0) continue;
    small.push_back(k);
    if (k != n / k) large.push_back(n / k);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

bool Contains(const std::vector<std::string>& modules, std::string_view name) {
  return std::find(modules.begin(), modules.end(), name) != modules.end();
}

// "1, 2, 4 or 8".
std::string JoinChoices(const std::vector<int64_t>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += i + 1 == values.size() ? " or " : ", ";
    out += std::to_string(values[i]);
  }
  return out;
}

// The multiples of `step` nearest to `value`: "96 or 104" (only the upper one below `step`).
std::string NearestMultiples(int64_t value, int64_t step) {
  const int64_t lower = value / step * step;
  const int64_t upper = lower + step;
  return lower > 0 ? fmt::format("{} or {}", lower, upper) : std::to_string(upper);
}

bool IsCore017OrOlder(const TrainingConfig& training) {
  return training.core_version <= CoreVersion::kV0_17;
}

bool GridDivides(const ParallelSizes& parallel) {
  return parallel.world_size % (parallel.tensor * parallel.pipeline * parallel.context) == 0;
}

// T1: every size is positive (expert_tensor 0 and microbatch group 0 mean "default").
bool CheckSizes(const TrainingConfig& training, ValidationResult& result) {
  struct Field {
    const char* flag;
    int64_t value;
    int64_t minimum;
  };
  const ParallelSizes& parallel = training.parallel;
  std::vector<Field> fields = {{kNumGpus, parallel.world_size, 1},
                               {kTp, parallel.tensor, 1},
                               {kPp, parallel.pipeline, 1},
                               {kVpp, parallel.virtual_stages, 1},
                               {kCp, parallel.context, 1},
                               {kEp, parallel.expert, 1},
                               {kEtp, parallel.expert_tensor, 0},
                               {kMbs, training.batch.micro_batch_size, 1},
                               {kSeqLength, training.batch.seq_length, 1},
                               {kMbGroup, training.batch.microbatch_group_size_per_vp_stage, 0}};
  if (parallel.data) fields.push_back({kDp, *parallel.data, 1});
  if (training.batch.global_batch_size)
    fields.push_back({kGbs, *training.batch.global_batch_size, 1});
  if (training.recompute.num_layers)
    fields.push_back({kRecomputeLayers, *training.recompute.num_layers, 1});
  if (training.data_parallel.bucket_size_params) {
    fields.push_back({kBucketSize, *training.data_parallel.bucket_size_params, 1});
  }
  bool ok = true;
  for (const Field& field : fields) {
    if (field.value >= field.minimum) continue;
    ok = false;
    const bool has_default = field.minimum == 0;
    AddError(result, "T1", {field.flag},
             fmt::format("{} {}: must be at least 1{}", field.flag, field.value,
                         has_default ? " (or 0 for the default)" : ""),
             fmt::format("use {} 1 or larger{}", field.flag,
                         has_default ? ", or omit it for the default" : ""));
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
  const int64_t tp_ep = training.parallel.ExpertTensor() * training.parallel.expert;
  if (model.HasMoe() && moe.dispatcher == TokenDispatcher::kFlex && tp_ep == 1) {
    AddError(result, "C13", {kDispatcher, kEp, kEtp},
             "--moe-token-dispatcher-type flex: the DeepEP dispatcher needs u·e > 1 (got "
             "--expert-tensor-parallel-size 1 and --expert-model-parallel-size 1)",
             "use --expert-model-parallel-size 2 or more, or --moe-token-dispatcher-type alltoall");
  }
}

// C14: every requirement of --overlap-moe-expert-parallel-comm, reported as one violation.
void CheckEpOverlap(const TrainingConfig& training, ValidationResult& result) {
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

void CheckPipelineSplit(const ModelConfig& model, const TrainingConfig& training,
                        ValidationResult& result) {
  if (training.split.first_stage_layers || training.split.last_stage_layers) {
    CheckUnevenSplit(model, training, result);
  } else {
    CheckEvenSplit(model, training, result);
  }
}

// C22: the interleaved schedule's micro-batch groups (schedules.py:1160-1180).
void CheckMicroBatchGroups(const TrainingConfig& training, int64_t num_micro_batches,
                           ValidationResult& result) {
  const ParallelSizes& par = training.parallel;
  if (par.virtual_stages == 1 || par.pipeline == 1) return;
  const int64_t p = par.pipeline;
  const int64_t m = num_micro_batches;
  const int64_t group = training.batch.microbatch_group_size_per_vp_stage > 0
                            ? training.batch.microbatch_group_size_per_vp_stage
                            : p;
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

// C23 and C22 (needs C1 for d), then T7.
void CheckBatch(const ModelConfig& model, const TrainingConfig& training,
                ValidationResult& result) {
  const ParallelSizes& par = training.parallel;
  const BatchConfig& batch = training.batch;
  if (GridDivides(par)) {
    const int64_t batch_per_micro = batch.micro_batch_size * par.Data();
    const int64_t global = batch.global_batch_size.value_or(batch_per_micro);
    if (global % batch_per_micro != 0) {
      AddError(result, "C23", {kGbs, kMbs},
               fmt::format("--global-batch-size {}: not divisible by b·d = {}·{} = {}", global,
                           batch.micro_batch_size, par.Data(), batch_per_micro),
               fmt::format("use --global-batch-size {} (multiples of {})",
                           NearestMultiples(global, batch_per_micro), batch_per_micro));
    } else {
      CheckMicroBatchGroups(training, global / batch_per_micro, result);
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
}

bool UsesCommType(const TrainingConfig& training, CpCommType type) {
  const std::vector<CpCommType>& types = training.context.comm_types;
  return std::find(types.begin(), types.end(), type) != types.end();
}

// C27: a2a+p2p needs hierarchical sizes, and given sizes multiply to c (arguments.py:580-585).
// Returns whether the sizes are usable.
bool CheckHierarchicalSizes(const TrainingConfig& training, ValidationResult& result) {
  const std::vector<int64_t>& sizes = training.context.hierarchical_sizes;
  const bool needed = UsesCommType(training, CpCommType::kA2aP2p);
  if (!needed && sizes.empty()) return true;
  const int64_t product =
      std::accumulate(sizes.begin(), sizes.end(), int64_t{1}, std::multiplies<int64_t>());
  if (!sizes.empty() && product == training.parallel.context) return true;
  AddError(result, "C27", {kHierCp, kCpCommType, kCp},
           sizes.empty() ? std::string("--hierarchical-context-parallel-sizes: must be set when "
                                       "--cp-comm-type includes a2a+p2p")
                         : fmt::format("--hierarchical-context-parallel-sizes {}: product {} "
                                       "differs from --context-parallel-size {}",
                                       fmt::join(sizes, " "), product, training.parallel.context),
           fmt::format("give --hierarchical-context-parallel-sizes A B with A·B = {} (A = a2a "
                       "group, B = p2p group)",
                       training.parallel.context));
  return false;
}

// C25: the a2a (Ulysses) group must divide the local query and key/value heads.
void CheckA2aHeads(const ModelConfig& model, const TrainingConfig& training, int64_t group,
                   const char* comm_type, ValidationResult& result) {
  const int64_t t = training.parallel.tensor;
  const int64_t n = model.attention.num_heads;
  const int64_t g = model.attention.num_kv_heads;
  if (n % t != 0 || group <= 1) return;  // C4 reports the TP split
  const int64_t local_heads = n / t;
  const int64_t local_kv_heads = std::max<int64_t>(1, g / t);
  if (local_heads % group == 0 && local_kv_heads % group == 0) return;
  AddError(
      result, "C25", {kCpCommType, kCp, kTp},
      fmt::format("--cp-comm-type {}: the a2a group of {} ranks must divide the {} query heads "
                  "and {} key/value heads per tensor-parallel rank",
                  comm_type, group, local_heads, local_kv_heads),
      fmt::format("use --cp-comm-type p2p, or an a2a group size among {}",
                  JoinChoices(Divisors(std::gcd(local_heads, local_kv_heads)))));
}

// C24, C26, C27, C25: context parallelism.
void CheckContextParallel(const ModelConfig& model, const TrainingConfig& training,
                          ValidationResult& result) {
  const int64_t c = training.parallel.context;
  const int64_t s = training.batch.seq_length;
  if (c > 1 && s % (2 * c) != 0) {
    AddError(result, "C24", {kSeqLength, kCp},
             fmt::format("--seq-length {}: not divisible by 2·c = {} (--context-parallel-size {})",
                         s, 2 * c, c),
             fmt::format("use --seq-length {}", NearestMultiples(s, 2 * c)));
  }
  const size_t num_types = training.context.comm_types.size();
  if (c > 1 && num_types != 1 && num_types != static_cast<size_t>(model.NumLayers())) {
    AddError(
        result, "C26", {kCpCommType},
        fmt::format("--cp-comm-type: {} entries; give one for all layers or one per layer ({})",
                    num_types, model.NumLayers()),
        fmt::format("give 1 or {} values to --cp-comm-type", model.NumLayers()));
  }
  const bool hierarchical_ok = CheckHierarchicalSizes(training, result);
  if (c == 1) return;
  if (UsesCommType(training, CpCommType::kA2a)) CheckA2aHeads(model, training, c, "a2a", result);
  if (UsesCommType(training, CpCommType::kA2aP2p) && hierarchical_ok) {
    CheckA2aHeads(model, training, training.context.hierarchical_sizes.front(), "a2a+p2p", result);
  }
}

// C28: the Gated DeltaNet dimensions are set (transformer_config.py:1470-1497). Returns whether
// they are, so that the rules dividing by them can run.
bool CheckGdnDims(const GdnConfig& gdn, ValidationResult& result) {
  const std::pair<const char*, int64_t> dims[] = {{kGdnConv, gdn.conv_kernel},
                                                  {kGdnKeyDim, gdn.key_head_dim},
                                                  {kGdnValueDim, gdn.value_head_dim},
                                                  {kGdnKeyHeads, gdn.num_key_heads},
                                                  {kGdnValueHeads, gdn.num_value_heads}};
  bool ok = true;
  for (const auto& [flag, value] : dims) {
    if (value > 0) continue;
    ok = false;
    AddError(
        result, "C28", {flag},
        fmt::format("{} {}: Gated DeltaNet layers need it set to a positive value", flag, value),
        "load the model from its config.json (linear_* keys)");
  }
  return ok;
}

// C29, C30: head counts and their tensor/context-parallel split (transformer_config.py:1493-1509;
// `% t` only up to core 0.17, section 7.5).
void CheckGdnHeads(const GdnConfig& gdn, const TrainingConfig& training, ValidationResult& result) {
  if (gdn.num_value_heads % gdn.num_key_heads != 0) {
    AddError(result, "C29", {kGdnValueHeads, kGdnKeyHeads},
             fmt::format("--linear-num-value-heads {}: not a multiple of --linear-num-key-heads {}",
                         gdn.num_value_heads, gdn.num_key_heads),
             "fix the model configuration (linear_num_value_heads)");
  }
  const int64_t t = training.parallel.tensor;
  const int64_t c = training.parallel.context;
  const bool per_tc = !IsCore017OrOlder(training);
  const int64_t divisor = per_tc ? t * c : t;
  if (gdn.num_key_heads % divisor == 0 && gdn.num_value_heads % divisor == 0) return;
  const std::string product =
      per_tc ? fmt::format("t·c = {}·{} = {}", t, c, divisor) : fmt::format("t = {}", t);
  AddError(
      result, "C30",
      per_tc ? std::vector<std::string>{kTp, kCp, kCore} : std::vector<std::string>{kTp, kCore},
      fmt::format("--tensor-model-parallel-size {}: Gated DeltaNet key heads {} and value "
                  "heads {} must be divisible by {} (Megatron-Core {})",
                  t, gdn.num_key_heads, gdn.num_value_heads, product,
                  ToString(training.core_version)),
      fmt::format("use {} {} (divisors of {} key heads and {} value heads)",
                  per_tc ? "--tensor-model-parallel-size and --context-parallel-size with t·c"
                         : "--tensor-model-parallel-size",
                  JoinChoices(Divisors(std::gcd(gdn.num_key_heads, gdn.num_value_heads))),
                  gdn.num_key_heads, gdn.num_value_heads));
}

// C31, C32: context parallelism and packed sequences per core version (section 7.5;
// gdn.py:137-140).
void CheckGdnVersion(const ModelConfig& model, const TrainingConfig& training,
                     ValidationResult& result) {
  const std::string core = ToString(training.core_version);
  const bool thd = ResolveSequenceLayout(model, training) == SequenceLayout::kThd;
  if (IsCore017OrOlder(training)) {
    if (training.parallel.context > 1) {
      AddError(result, "C31", {kCp, kCore},
               fmt::format("--context-parallel-size {}: Megatron-Core {} asserts context parallel "
                           "size 1 for Gated DeltaNet",
                           training.parallel.context, core),
               "use --context-parallel-size 1, or --megatron-core 0.18");
    }
    if (thd) {
      AddError(result, "C31", {kLayout, kCore},
               fmt::format("--sequence-layout thd: Megatron-Core {} does not support packed "
                           "sequences with Gated DeltaNet",
                           core),
               "use --sequence-layout bshd (or auto), or --megatron-core 0.18");
    }
    return;
  }
  if (thd && training.batch.micro_batch_size != 1) {
    AddError(result, "C32", {kLayout, kMbs},
             fmt::format("--sequence-layout thd: packed sequences with Gated DeltaNet need "
                         "--micro-batch-size 1 (got {})",
                         training.batch.micro_batch_size),
             "use --micro-batch-size 1, or --sequence-layout bshd (or auto)");
  }
  if (thd && training.deterministic) {
    AddError(result, "C32", {kDeterministic, kLayout},
             "--deterministic-mode: packed sequences (--sequence-layout thd) with Gated DeltaNet "
             "do not support deterministic mode",
             "use --sequence-layout bshd, or drop --deterministic-mode");
  }
}

// C33: the FP8 GEMM alignment of the fused in_proj output (common.py:205-210; 32 for MXFP8,
// fp8_utils.py:356-361).
void CheckGdnFp8(const GdnConfig& gdn, const TrainingConfig& training, ValidationResult& result) {
  if (training.precision.fp8 == Fp8Format::kNone) return;
  const int64_t align = training.precision.fp8_recipe == Fp8Recipe::kMxfp8 ? 32 : 16;
  if (gdn.InProjWidth() % align == 0) return;
  AddError(result, "C33", {kFp8Format, kFp8Recipe},
           fmt::format("--fp8-format: the Gated DeltaNet in_proj width {} is not a multiple of {}",
                       gdn.InProjWidth(), align),
           "drop --fp8-format (train in bf16)");
}

void CheckGdn(const ModelConfig& model, const TrainingConfig& training, ValidationResult& result) {
  if (!model.HasGdn()) return;
  if (!CheckGdnDims(model.gdn, result)) return;
  CheckGdnHeads(model.gdn, training, result);
  CheckGdnVersion(model, training, result);
  CheckGdnFp8(model.gdn, training, result);
}

// C7 (warning), C37: sequence parallelism and TP communication overlap (arguments.py:1430-1442).
void CheckSequenceParallel(const TrainingConfig& training, ValidationResult& result) {
  const bool sp_active = training.sequence_parallel && training.parallel.tensor > 1;
  if (training.sequence_parallel && training.parallel.tensor == 1) {
    AddWarning(result, "C7", {kSp, kTp},
               "--sequence-parallel: has no effect with --tensor-model-parallel-size 1; "
               "Megatron-LM turns it off",
               "drop --sequence-parallel, or use --tensor-model-parallel-size 2 or more");
  }
  if (training.overlap.tp_comm_overlap && !sp_active) {
    AddError(result, "C37", {kTpCommOverlap, kSp},
             fmt::format("--tp-comm-overlap: needs --sequence-parallel with "
                         "--tensor-model-parallel-size > 1 (got sequence parallel {}, t = {})",
                         training.sequence_parallel ? "on" : "off", training.parallel.tensor),
             "add --sequence-parallel (with t > 1), or drop --tp-comm-overlap");
  }
}

// C38, C39, T8: data-parallel wrappers and their overlap options.
void CheckDataParallel(const ModelConfig& model, const TrainingConfig& training,
                       ValidationResult& result) {
  const DataParallelConfig& dp = training.data_parallel;
  if (dp.overlap_param_gather && !dp.distributed_optimizer && !dp.megatron_fsdp) {
    AddError(result, "C38", {kOverlapParam, kDistOpt},
             "--overlap-param-gather: needs --use-distributed-optimizer or --use-megatron-fsdp",
             "add --use-distributed-optimizer, or drop --overlap-param-gather");
  }
  if (dp.overlap_param_gather && !dp.overlap_grad_reduce) {
    AddError(result, "C38", {kOverlapParam, kOverlapGrad},
             "--overlap-param-gather: needs --overlap-grad-reduce",
             "add --overlap-grad-reduce, or drop --overlap-param-gather");
  }
  if (dp.torch_fsdp2) {
    std::vector<std::string> reasons;
    if (training.parallel.pipeline > 1)
      reasons.push_back("--pipeline-model-parallel-size must be 1");
    if (training.parallel.expert > 1) reasons.push_back("--expert-model-parallel-size must be 1");
    if (dp.distributed_optimizer) reasons.push_back("--use-distributed-optimizer is not allowed");
    if (model.tied_embeddings) {
      reasons.push_back(fmt::format("{} is required, but model {} ties them", kUntie, model.name));
    }
    if (!reasons.empty()) {
      AddError(result, "C39", {kTorchFsdp2, kPp, kEp, kDistOpt},
               fmt::format("--use-torch-fsdp2: {}", fmt::join(reasons, "; ")),
               "change the listed options, or use --use-megatron-fsdp instead");
    }
  }
  if (dp.megatron_fsdp && dp.torch_fsdp2) {
    AddError(
        result, "T8", {kMegatronFsdp, kTorchFsdp2},
        "--use-megatron-fsdp and --use-torch-fsdp2: only one data-parallel wrapper can be used",
        "drop one of --use-megatron-fsdp and --use-torch-fsdp2");
  } else if (dp.megatron_fsdp && !dp.distributed_optimizer) {
    AddWarning(result, "T8", {kMegatronFsdp, kDistOpt},
               "--use-megatron-fsdp without --use-distributed-optimizer: Megatron-FSDP (v1) "
               "requires the distributed optimizer; Megatron-LM turns it on",
               "add --use-distributed-optimizer");
  }
}

// C40: granularity, method and layer count (transformer_config.py:1900-1937; arguments.py
// asserts that selective forbids a method and that distributing saved activations needs t > 1
// and full recompute with a method).
void CheckRecomputeOptions(const TrainingConfig& training, ValidationResult& result) {
  const RecomputeConfig& recompute = training.recompute;
  const std::string granularity = ToString(recompute.granularity);
  const bool has_method = recompute.method != RecomputeMethod::kNone;
  switch (recompute.granularity) {
    case RecomputeGranularity::kFull:
      if (!has_method || !recompute.num_layers) {
        AddError(result, "C40", {kGranularity, kMethod, kRecomputeLayers},
                 "--recompute-granularity full: needs --recompute-method (uniform or block) and "
                 "--recompute-num-layers",
                 "add --recompute-method uniform --recompute-num-layers 1");
      }
      break;
    case RecomputeGranularity::kSelective:
      if (has_method || recompute.num_layers) {
        AddError(result, "C40", {kGranularity, kMethod, kRecomputeLayers},
                 "--recompute-granularity selective: --recompute-method and "
                 "--recompute-num-layers must be unset",
                 "drop --recompute-method and --recompute-num-layers, or use "
                 "--recompute-granularity full");
      }
      break;
    case RecomputeGranularity::kNone:
      if (has_method || recompute.num_layers) {
        AddWarning(result, "C40", {kMethod, kRecomputeLayers, kGranularity},
                   "--recompute-method / --recompute-num-layers: ignored without "
                   "--recompute-granularity",
                   "add --recompute-granularity full, or drop the recompute options");
      }
      break;
  }
  if (!recompute.distribute_saved_activations) return;
  if (training.sequence_parallel || training.parallel.tensor == 1 ||
      recompute.granularity != RecomputeGranularity::kFull || !has_method) {
    AddError(result, "C40", {kDistributeSaved, kSp, kTp, kGranularity},
             fmt::format("--distribute-saved-activations: needs --recompute-granularity full with "
                         "a --recompute-method, --tensor-model-parallel-size > 1 and no "
                         "--sequence-parallel (got {}, t = {}, sequence parallel {})",
                         granularity, training.parallel.tensor,
                         training.sequence_parallel ? "on" : "off"),
             "drop --distribute-saved-activations");
  }
}

// C41: selective-recompute modules (transformer_config.py:1939-2012).
void CheckRecomputeModules(const ModelConfig& model, const TrainingConfig& training,
                           ValidationResult& result) {
  const std::vector<std::string>& modules = training.recompute.modules;
  if (training.recompute.granularity != RecomputeGranularity::kSelective) return;
  for (const std::string& module : modules) {
    if (std::find(std::begin(kRecomputeModules), std::end(kRecomputeModules), module) !=
        std::end(kRecomputeModules)) {
      continue;
    }
    AddError(result, "C41", {kModules},
             fmt::format("--recompute-modules {}: unknown module", module),
             "use core_attn, moe_act, layernorm, mlp, moe, shared_experts or gdn_norm_out");
  }
  // Each entry: the module, whether this configuration forbids it, why, and the flags involved.
  struct Requirement {
    std::string_view module;
    bool forbidden;
    std::string why;
    std::vector<std::string> flags;
  };
  const bool delayed_fp8 = training.precision.fp8 != Fp8Format::kNone &&
                           training.precision.fp8_recipe == Fp8Recipe::kDelayed;
  const Requirement requirements[] = {
      {"moe_act", !training.moe.grouped_gemm, "needs --moe-grouped-gemm", {kModules, kGroupedGemm}},
      {"mla_up_proj",
       true,
       "needs multi-latent attention, which this model does not use",
       {kModules}},
      {"mhc", true, "needs mHC connections, which this model does not use", {kModules}},
      {"gdn_norm_out", !model.HasGdn(), "needs Gated DeltaNet layers", {kModules}},
      {"shared_experts",
       model.moe.HasSharedExpert() && training.moe.shared_expert_overlap,
       "cannot be combined with --moe-shared-expert-overlap",
       {kModules, kSharedOverlap}},
      {"moe_act",
       delayed_fp8,
       "is not supported with --fp8-recipe delayed",
       {kModules, kFp8Recipe}},
      {"layernorm",
       delayed_fp8,
       "is not supported with --fp8-recipe delayed",
       {kModules, kFp8Recipe}},
  };
  for (const Requirement& requirement : requirements) {
    if (!requirement.forbidden || !Contains(modules, requirement.module)) continue;
    AddError(result, "C41", requirement.flags,
             fmt::format("--recompute-modules {}: {}", requirement.module, requirement.why),
             fmt::format("remove {} from --recompute-modules", requirement.module));
  }
}

// C42: CPU offloading (transformer_config.py:1891-1899).
void CheckCpuOffloading(const TrainingConfig& training, ValidationResult& result) {
  if (!training.cpu_offloading) return;
  if (training.parallel.pipeline > 1) {
    AddError(result, "C42", {kCpuOffloading, kPp},
             fmt::format("--cpu-offloading: not supported with --pipeline-model-parallel-size {}",
                         training.parallel.pipeline),
             "drop --cpu-offloading, or use --pipeline-model-parallel-size 1");
  }
  if (training.recompute.granularity != RecomputeGranularity::kNone) {
    AddError(result, "C42", {kCpuOffloading, kGranularity},
             fmt::format("--cpu-offloading: does not work with --recompute-granularity {}",
                         ToString(training.recompute.granularity)),
             "drop --cpu-offloading or --recompute-granularity");
  }
}

}  // namespace

ValidationResult Validate(const ModelConfig& model, const TrainingConfig& training) {
  ValidationResult result;
  // Every later rule divides by these sizes, so nothing else is checked until they are positive.
  if (!CheckSizes(training, result)) return result;
  CheckWorldDivisibility(model, training, result);
  CheckDataParallelSizes(training, result);
  CheckVirtualStages(training, result);
  CheckAttentionHeads(model, training, result);
  CheckLinearSplits(model, training, result);
  CheckExpertSplits(model, training, result);
  CheckDispatcher(model, training, result);
  CheckEpOverlap(training, result);
  CheckPipelineSplit(model, training, result);
  CheckBatch(model, training, result);
  CheckContextParallel(model, training, result);
  CheckGdn(model, training, result);
  CheckSequenceParallel(training, result);
  CheckDataParallel(model, training, result);
  CheckRecomputeOptions(training, result);
  CheckRecomputeModules(model, training, result);
  CheckCpuOffloading(training, result);
  return result;
}

SequenceLayout ResolveSequenceLayout(const ModelConfig& model, const TrainingConfig& training) {
  if (training.sequence_layout != SequenceLayout::kAuto) return training.sequence_layout;
  // Section 7.5 and C32: packed sequences with Gated DeltaNet need core >= 0.18, micro-batch 1
  // and no deterministic mode; auto picks THD only where it is legal.
  const bool packed_forbidden =
      model.HasGdn() &&
      (IsCore017OrOlder(training) || training.batch.micro_batch_size > 1 || training.deterministic);
  return packed_forbidden ? SequenceLayout::kBshd : SequenceLayout::kThd;
}

int64_t NumMicroBatches(const TrainingConfig& training) {
  const ParallelSizes& parallel = training.parallel;
  TRAINSCOPE_CHECK(parallel.tensor > 0 && parallel.pipeline > 0 && parallel.context > 0 &&
                       training.batch.micro_batch_size > 0 && GridDivides(parallel),
                   "NumMicroBatches needs a validated configuration");
  const int64_t batch_per_micro = training.batch.micro_batch_size * parallel.Data();
  TRAINSCOPE_CHECK(batch_per_micro > 0, "NumMicroBatches needs W >= t·p·c");
  return training.batch.global_batch_size.value_or(batch_per_micro) / batch_per_micro;
}

}  // namespace trainscope::config
