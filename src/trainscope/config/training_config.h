// The run configuration: Megatron-Core parallel sizes, batch, pipeline split, recompute, MoE
// dispatcher, precision, overlap and data-parallel options, plus the Megatron-Core version
// profile. Plain aggregates with Megatron's defaults; io/megatron_args fills them from Megatron-LM
// flag names and config/validate checks them against a ModelConfig. Quantities derived from the
// flags (global batch, micro-batch count, interleaved group size, recomputed layers, sequence
// layout, element sizes) are const methods here, so no caller needs the validator to get them.
#ifndef TRAINSCOPE_CONFIG_TRAINING_CONFIG_H_
#define TRAINSCOPE_CONFIG_TRAINING_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/config/framework.h"

namespace trainscope::config {

struct ModelConfig;  // config/model_config.h

// Megatron-Core release whose rules apply (--megatron-core).
enum class CoreVersion { kV0_16, kV0_17, kV0_18 };
inline constexpr CoreVersion kNewestCoreVersion = CoreVersion::kV0_18;

// Order in which parallel dimensions are laid out over ranks, fastest first.
enum class RankOrder {
  kTpCpEpDpPp,  // Megatron's default "tp-cp-ep-dp-pp"
  kTpCpEpPpDp,  // "tp-cp-ep-pp-dp" (--use-tp-pp-dp-mapping)
};

struct ParallelSizes {
  int64_t world_size = 1;                // W (--num-gpus)
  int64_t tensor = 1;                    // t
  int64_t pipeline = 1;                  // p
  int64_t virtual_stages = 1;            // v, model chunks per PP rank (1 = not interleaved)
  int64_t context = 1;                   // c
  int64_t expert = 1;                    // e
  std::optional<int64_t> expert_tensor;  // u if the user stated it (--etp); unset = t
  std::optional<int64_t> data;  // d if the user stated it (--dp); checked against W/(t·p·c)
  RankOrder order = RankOrder::kTpCpEpDpPp;

  // u, the expert tensor-parallel size: the stated one, else t (parallel_state.py:874-884).
  [[nodiscard]] int64_t ExpertTensor() const { return expert_tensor.value_or(tensor); }
  // d = W/(t·p·c) (parallel_state.py:814-825); call only after Validate() passed C1.
  [[nodiscard]] int64_t Data() const { return world_size / (tensor * pipeline * context); }
  // d_e = W/(u·e·p) (parallel_state.py:874-884).
  [[nodiscard]] int64_t ExpertData() const {
    return world_size / (ExpertTensor() * expert * pipeline);
  }
  friend bool operator==(const ParallelSizes&, const ParallelSizes&) = default;
};

struct BatchConfig {
  int64_t micro_batch_size = 1;              // b
  std::optional<int64_t> global_batch_size;  // GBS; unset = b·d (one micro-batch per rank)
  int64_t seq_length = 4096;                 // s
  // Image tokens per sample after the vision merger (part of the s text positions); the
  // vision tower encodes vision_tokens_per_sample · spatial_merge_size² patches per sample on
  // the first pipeline stage. 0 = a text-only run.
  int64_t vision_tokens_per_sample = 0;
  // G, micro-batches grouped per virtual stage in the interleaved schedule; unset = p.
  std::optional<int64_t> microbatch_group_size_per_vp_stage;
  // slime's dynamic batching (--use-dynamic-batch-size --max-tokens-per-gpu N): each step's
  // global_batch_size samples are packed into micro-batches of at most N·c tokens and dealt to
  // the data-parallel ranks (cost/dynamic_batching.h); micro_batch_size is then 1 and seq_length
  // the length of every sample when no length distribution is given. Unset = static batching.
  std::optional<int64_t> max_tokens_per_gpu;
  // Samples packed into one simulated micro-batch, where per-sample host work depends on it
  // (slime's CP re-ordering around its duplicated GDN); 0 = micro_batch_size. Dynamic batching
  // sets the step's mean, samples / bins (study/dynamic_batches.cc).
  double samples_per_micro_batch = 0;
  // slime pads each packed micro-batch to a multiple of t times this
  // (--data-pad-size-multiplier, slime/utils/arguments.py default 128).
  int64_t data_pad_size_multiplier = 128;
  friend bool operator==(const BatchConfig&, const BatchConfig&) = default;
};

// One stage of --pipeline-model-parallel-layout: what a (pipeline rank, virtual stage) builds,
// in Megatron-Core's letters (pipeline_parallel_layer_layout.py parse_str_to_list): E the word
// embedding, t a decoder layer, m an MTP layer, L the final norm, output layer and loss.
struct LayoutStage {
  bool embedding = false;
  int64_t decoder_layers = 0;
  int64_t mtp_layers = 0;
  bool loss = false;
  friend bool operator==(const LayoutStage&, const LayoutStage&) = default;
};

// How decoder layers are split over pipeline stages.
struct PipelineSplit {
  // --pipeline-model-parallel-layout: one entry per stage in Megatron's flattened order (stage
  // k = virtual stage k / p of pipeline rank k % p); empty = not given. `layout_text` keeps the
  // string as typed, for messages and for printing the flags back.
  std::vector<LayoutStage> layout;
  std::string layout_text;
  std::optional<int64_t> first_stage_layers;  // --decoder-first-pipeline-num-layers
  std::optional<int64_t> last_stage_layers;   // --decoder-last-pipeline-num-layers
  bool account_for_embedding = false;         // --account-for-embedding-in-pipeline-split
  bool account_for_loss = false;              // --account-for-loss-in-pipeline-split
  friend bool operator==(const PipelineSplit&, const PipelineSplit&) = default;
};

enum class RecomputeGranularity { kNone, kSelective, kFull };
enum class RecomputeMethod { kNone, kUniform, kBlock };

struct RecomputeConfig {
  RecomputeGranularity granularity = RecomputeGranularity::kNone;
  RecomputeMethod method = RecomputeMethod::kNone;
  std::optional<int64_t> num_layers;                 // --recompute-num-layers
  std::vector<std::string> modules = {"core_attn"};  // --recompute-modules (selective only)
  bool distribute_saved_activations = false;

  // True when full recompute replays the whole layer `index_in_chunk` (0-based position of a
  // decoder layer inside its model chunk) in backward (Megatron-LM transformer_block.py,
  // _checkpointed_forward): every layer with the uniform method, the first num_layers layers of
  // each chunk with the block method, none otherwise.
  [[nodiscard]] bool FullRecomputeLayer(int64_t index_in_chunk) const;
  friend bool operator==(const RecomputeConfig&, const RecomputeConfig&) = default;
};

enum class TokenDispatcher { kAllGather, kAllToAll, kFlex };
enum class LoadBalancing { kAuxLoss, kSeqAuxLoss, kGlobalAuxLoss, kSinkhorn, kNone };
enum class RouterDtype { kActivation, kFp32, kFp64 };

// β_p, bytes of one router-probability element (router.py:105-112): 4 for fp32, 8 for fp64, 2
// for the (bf16) activation dtype.
[[nodiscard]] int64_t BytesOf(RouterDtype dtype);

// The flex dispatcher's kernels (--moe-flex-dispatcher-backend, Megatron-Core's
// TransformerConfig.moe_flex_dispatcher_backend, default "deepep"): DeepEP's normal kernels reach
// NVLink peers only inside a node (no multi-node NVLink); HybridEP spans the whole NVLink domain.
enum class FlexBackend { kDeepEp, kHybridEp };

struct MoeRunConfig {
  TokenDispatcher dispatcher = TokenDispatcher::kAllGather;  // Megatron's default
  bool grouped_gemm = false;
  // --moe-permute-fusion: TE's fused permute/unpermute kernels instead of Megatron's argsort
  // and index_select path (moe_utils.py permute); changes the saved permutation map.
  bool permute_fusion = false;
  // --use-transformer-engine-op-fuser (TransformerConfig use_transformer_engine_op_fuser): the
  // grouped expert MLP runs as TE's fused ops (GroupedLinear with a prob-scaled bias,
  // ScaledClampedQGeGLU; experts.py _is_fused_impl_supported), so the eager clamp and per-expert
  // fc2 bias kernels of GPT-OSS's experts disappear.
  bool te_op_fuser = false;
  std::optional<double> capacity_factor;
  bool pad_expert_input_to_capacity = false;
  // --moe-router-padding-for-quantization (alias --moe-router-padding-for-fp8; TransformerConfig
  // moe_router_padding_for_quantization): the dispatcher pads the routing map so every expert's
  // token count is a multiple of the quantization alignment, and TEGroupedMLP's Fp8Padding has
  // nothing to copy (token_dispatcher.py _pad_routing_map; needs FP8 or FP4, C60).
  bool router_padding_for_quantization = false;
  LoadBalancing load_balancing = LoadBalancing::kAuxLoss;
  RouterDtype router_dtype = RouterDtype::kActivation;
  bool shared_expert_overlap = false;
  bool overlap_expert_parallel_comm = false;  // --overlap-moe-expert-parallel-comm
  // --delay-wgrad-compute: the weight-gradient GEMMs run after the pass's data-gradient chain,
  // so the backward's dispatch exchange also hides behind them (combined 1F1B only).
  bool delay_wgrad_compute = false;
  bool enable_deepep = false;  // --moe-enable-deepep (the deprecated spelling of deepep)
  FlexBackend flex_backend = FlexBackend::kDeepEp;
  // --moe-flex-dispatcher-num-sms (deprecated: --moe-deepep-num-sms, --moe-hybridep-num-sms): SMs
  // the flex kernels hold while they run; unset = FlexDispatchConstants::sm_fraction.
  std::optional<int64_t> flex_num_sms;
  bool router_enable_expert_bias = false;
  // --moe-permute-fusion-into-hybridep (TransformerConfig moe_permute_fusion_into_hybridep, core
  // 0.18+): HybridEP writes the received tokens straight into the per-expert layout and combines
  // from it (fused_a2a.py hybrid_ep_dispatch fuse_permute_dispatch), so no separate permute and
  // unpermute pass over the tokens; read by the HybridEP backend only.
  bool permute_fusion_into_hybridep = false;
  // --moe-expert-rank-capacity-factor (moe_expert_rank_capacity_factor, core 0.18+, HybridEP):
  // a static per-rank budget of ceil(T·k·f) received rows (token_dispatcher.py setup_metadata).
  // HybridEP dispatches without the host waiting for the received count (non_blocking) and every
  // routed-expert buffer has the budget's size; tokens over the budget are dropped and the step
  // is run again without the budget (training.py, the overflow runner).
  std::optional<double> rank_capacity_factor;
  // --moe-paged-stash (moe_paged_stash, core 0.18+): the quantized tensors the fused expert MLP
  // saves for backward are copied into a preallocated pool of 64-token pages sized
  // paged_stash_buffer_factor x the balanced rows (negative: x the busiest rank's rows), and back
  // before the backward (moe/paged_stash.py).
  bool paged_stash = false;
  double paged_stash_buffer_factor = 1.10;  // --moe-paged-stash-buffer-size-factor-cuda
  // The backend that runs: --moe-enable-deepep selects deepep whatever the backend flag says
  // (transformer_config.py __post_init__; naming both is rule C56).
  [[nodiscard]] FlexBackend EffectiveFlexBackend() const {
    return enable_deepep ? FlexBackend::kDeepEp : flex_backend;
  }
  // The flex dispatcher runs HybridEP.
  [[nodiscard]] bool HybridEpRuns() const {
    return dispatcher == TokenDispatcher::kFlex && EffectiveFlexBackend() == FlexBackend::kHybridEp;
  }
  // HybridEP with a rank budget: static shapes, no host wait for the received count.
  [[nodiscard]] bool RankBudgetRuns() const {
    return HybridEpRuns() && rank_capacity_factor.has_value();
  }
  friend bool operator==(const MoeRunConfig&, const MoeRunConfig&) = default;
};

enum class ParamDtype { kBf16, kFp16, kFp32 };
enum class Fp8Format { kNone, kE4m3, kHybrid };
// kNvfp4 is never parsed from --fp8-recipe: graph::MakeFp8Settings selects it for the quantized
// GEMMs of an --fp4-format run (TE NVFP4BlockScaling), which share the FP8 machinery. kRowwise is
// torchao's row-wise recipe (Float8LinearRecipeName.ROWWISE), torchtitan's only (rule TT2).
enum class Fp8Recipe { kDelayed, kTensorwise, kMxfp8, kBlockwise, kNvfp4, kRowwise };
// --fp4-format / --fp4-recipe (Megatron-LM TransformerConfig fp4, fp4_recipe).
enum class Fp4Format { kNone, kE2m1 };
enum class Fp4Recipe { kNvfp4, kCustom };

// Storage dtype of an optimizer tensor (--main-grads-dtype, --main-params-dtype, --exp-avg-dtype,
// --exp-avg-sq-dtype); each flag accepts a subset (arguments.py:3671-3684).
enum class OptimizerDtype { kFp32, kFp16, kBf16, kFp8 };

// Bytes of one element of the params dtype: 4 for fp32, 2 for bf16 and fp16.
[[nodiscard]] int64_t BytesOf(ParamDtype dtype);
// Bytes of one element of an optimizer tensor: 4, 2, 2 or 1 for fp32, fp16, bf16, fp8.
[[nodiscard]] int64_t BytesOf(OptimizerDtype dtype);

struct PrecisionConfig {
  ParamDtype params = ParamDtype::kBf16;
  Fp8Format fp8 = Fp8Format::kNone;
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;
  // --fp8-param-gather: TE linear weights are stored (and all-gathered) in FP8.
  bool fp8_param_gather = false;
  // --fp4-format e2m1: TE linears run NVFP4 GEMMs (exclusive with --fp8-format; Blackwell only).
  Fp4Format fp4 = Fp4Format::kNone;
  Fp4Recipe fp4_recipe = Fp4Recipe::kNvfp4;
  // --fp4-param-gather (TransformerConfig fp4_param): the weights are stored in NVFP4.
  bool fp4_param_gather = false;
  // --disable-parameter-transpose-cache: TE modules get is_first_microbatch = None, so every
  // forward quantizes the weights again instead of reusing the first micro-batch's FP8 copy
  // (megatron/core/extensions/transformer_engine.py, TELinear.forward).
  bool disable_parameter_transpose_cache = false;
  // Megatron-Bridge's mixed_precision.fp8_dot_product_attention (TransformerConfig
  // fp8_dot_product_attention; Megatron-LM's launcher has no flag for it): TE runs the core
  // attention in FP8 through cuDNN (the fp8_dpa of the delayed, tensorwise and MXFP8 recipes,
  // megatron/core/fp8_utils.py). No effect without --fp8-format or with the blockwise recipe,
  // whose TE recipe has no fp8_dpa.
  bool fp8_dot_product_attention = false;
  // --fp8-output-proj (TransformerConfig fp8_output_proj): the LM head's output layer is TE's
  // TELMHeadColumnParallelLinear under the MXFP8 autocast (gpt_model.py,
  // fp8_utils.py is_mxfp8_output_proj_active); needs --fp8-format with --fp8-recipe mxfp8 (C55).
  bool fp8_output_proj = false;
  // Megatron-LM's launcher reduces gradients in fp32 by default (arguments.py:1204-1216);
  // --main-grads-dtype bf16 and --grad-reduce-in-bf16 turn it off.
  bool grad_reduce_in_fp32 = true;
  // --use-precision-aware-optimizer: TE FusedAdam keeps the master weights and Adam moments in
  // the dtypes below (they have no effect without it, except main_grads).
  bool precision_aware_optimizer = false;
  OptimizerDtype main_grads = OptimizerDtype::kFp32;   // fp32 | bf16
  OptimizerDtype main_params = OptimizerDtype::kFp32;  // fp32 | fp16
  OptimizerDtype exp_avg = OptimizerDtype::kFp32;      // fp32 | fp16 | bf16 | fp8
  OptimizerDtype exp_avg_sq = OptimizerDtype::kFp32;   // fp32 | fp16 | bf16 | fp8
  // The TE linear weights live and are gathered quantized: --fp4-param-gather under --fp4-format,
  // or --fp8-param-gather under an FP8 recipe other than MXFP8 (whose parameters Megatron gathers
  // in bf16 through the gradient buffer and quantizes after the gather).
  [[nodiscard]] bool QuantizedParamGather() const {
    if (fp4 != Fp4Format::kNone) return fp4_param_gather;
    return fp8 != Fp8Format::kNone && fp8_param_gather && fp8_recipe != Fp8Recipe::kMxfp8;
  }
  friend bool operator==(const PrecisionConfig&, const PrecisionConfig&) = default;
};

enum class FsdpStrategy { kNoShard, kOptim, kOptimGrads, kOptimGradsParams };

struct DataParallelConfig {
  bool distributed_optimizer = false;
  bool megatron_fsdp = false;
  bool torch_fsdp2 = false;
  FsdpStrategy fsdp_strategy = FsdpStrategy::kOptimGradsParams;
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  std::optional<int64_t> bucket_size_params;  // --ddp-bucket-size
  friend bool operator==(const DataParallelConfig&, const DataParallelConfig&) = default;
};

struct OverlapConfig {
  bool tp_comm_overlap = false;
  // Megatron-LM turns p2p overlap on for VPP unless --no-overlap-p2p-communication.
  bool overlap_p2p_comm = true;
  friend bool operator==(const OverlapConfig&, const OverlapConfig&) = default;
};

// Megatron-Core's CUDA-graph implementation (transformer_config.py cuda_graph_impl):
// none, per-layer graphs of Megatron ("local") or of Transformer Engine's
// make_graphed_callables ("transformer_engine"), or one graph of the whole forward-backward
// path without the optimizer ("full_iteration").
enum class CudaGraphImpl { kNone, kLocal, kTransformerEngine, kFullIteration };
// A capture region of the per-layer graphs (megatron/core/transformer/enums.py CudaGraphModule).
enum class CudaGraphModule { kAttn, kMlp, kMoe, kMoeRouter, kMoePreprocess, kMamba };

// The CUDA-graph flags as given (arguments.py:611-641, 2047-2066). Scope values are Megatron's
// spellings, checked when parsed: a CudaGraphModule name, or the deprecated "full" (the whole
// layer), "full_iteration" (sets the implementation to full_iteration) and
// "full_iteration_inference" (inference only, no effect on training).
struct CudaGraphConfig {
  bool enable_cuda_graph = false;    // --enable-cuda-graph: deprecated spelling of impl local
  bool external_cuda_graph = false;  // --external-cuda-graph: of impl transformer_engine
  CudaGraphImpl impl = CudaGraphImpl::kNone;  // --cuda-graph-impl
  std::vector<std::string> scope;             // --cuda-graph-scope (deprecated alias)
  std::vector<std::string> modules;           // --cuda-graph-modules
  // The implementation in effect: the deprecated switches, then a "full_iteration" scope value,
  // then --cuda-graph-impl.
  [[nodiscard]] CudaGraphImpl EffectiveImpl() const;
  // The capture regions of per-layer graphs; empty = the whole Transformer layer.
  [[nodiscard]] std::vector<CudaGraphModule> EffectiveModules() const;
  friend bool operator==(const CudaGraphConfig&, const CudaGraphConfig&) = default;
};

enum class CpCommType { kP2p, kAllGather, kA2a, kA2aP2p };

struct ContextParallelConfig {
  std::vector<CpCommType> comm_types = {CpCommType::kP2p};  // one, or one per layer
  std::vector<int64_t> hierarchical_sizes;                  // for a2a+p2p
  friend bool operator==(const ContextParallelConfig&, const ContextParallelConfig&) = default;
};

// THD = packed variable-length sequences; BSHD = padded fixed-length batches.
enum class SequenceLayout { kAuto, kThd, kBshd };

enum class OptimizerKind { kAdam, kSgd };

// The vocab-parallel cross-entropy kernel (language_module.py compute_language_model_loss).
enum class CrossEntropyFusionImpl { kNative, kTe };

// --cross-entropy-loss-fusion and --cross-entropy-fusion-impl (model_parallel_config.py: off and
// 'native' by default). Off: tensor_parallel.vocab_parallel_cross_entropy, eager torch ops on an
// fp32 copy of the logits. On: fused_vocab_parallel_cross_entropy (native, jit-fused) or TE's
// parallel_cross_entropy Triton kernels (te).
struct CrossEntropyConfig {
  bool loss_fusion = false;
  CrossEntropyFusionImpl fusion_impl = CrossEntropyFusionImpl::kNative;
  // TE's kernels write the gradient into an fp32 buffer since NVIDIA/TransformerEngine#3193
  // (merged 2026-07-08); before, they overwrote the bf16 logits with it. Not a Megatron flag: the
  // Transformer Engine release decides (the calibration sets it per container).
  bool te_fp32_gradient = true;
  // TE's kernels before #3193: the gradient written over the bf16 logits, which are saved.
  [[nodiscard]] bool TeInPlace() const {
    return loss_fusion && fusion_impl == CrossEntropyFusionImpl::kTe && !te_fp32_gradient;
  }
  friend bool operator==(const CrossEntropyConfig&, const CrossEntropyConfig&) = default;
};

// The optimizer (megatron/core/optimizer/optimizer_config.py) and Megatron-Core's CPU offload of
// its state (HybridDeviceOptimizer, optimizer/cpu_offloading/hybrid_optimizer.py).
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdam;  // --optimizer (arguments.py default adam)
  double sgd_momentum = 0.9;                  // --sgd-momentum (arguments.py default 0.9)
  bool cpu_offload = false;                   // --optimizer-cpu-offload
  double offload_fraction = 1.0;  // --optimizer-offload-fraction (training-args default 1.0)
  bool overlap_d2h_h2d = false;   // --overlap-cpu-optimizer-d2h-h2d
  // The share of this rank's optimizer parameters stepped on the host: the offload fraction
  // with --optimizer-cpu-offload, else 0.
  [[nodiscard]] double HostFraction() const { return cpu_offload ? offload_fraction : 0.0; }
  // Of `numel` optimizer parameters, those stepped on the host: HostFraction()·numel rounded to
  // the nearest parameter (Megatron offloads whole tensors up to the fraction,
  // _get_sub_optimizer_param_groups; tensor granularity is not modelled).
  [[nodiscard]] int64_t HostNumel(int64_t numel) const;
  friend bool operator==(const OptimizerConfig&, const OptimizerConfig&) = default;
};

struct TrainingConfig {
  ParallelSizes parallel;
  BatchConfig batch;
  PipelineSplit split;
  RecomputeConfig recompute;
  MoeRunConfig moe;
  PrecisionConfig precision;
  DataParallelConfig data_parallel;
  OverlapConfig overlap;
  ContextParallelConfig context;
  bool sequence_parallel = false;
  // --cpu-offloading / --cpu-offloading-num-layers N (Megatron-Core's activation offloading,
  // transformer_block.py get_cpu_offload_context): the saved activations of the first N decoder
  // layers go to pinned host memory during the forward pass and come back before their backward.
  // Megatron turns cpu_offloading on when N > 0 (arguments.py); N = 0 offloads nothing.
  bool cpu_offloading = false;
  int64_t cpu_offloading_num_layers = 0;
  // Decoder layers whose activations are offloaded: cpu_offloading_num_layers when
  // cpu_offloading, else 0.
  [[nodiscard]] int64_t OffloadedLayers() const {
    return cpu_offloading ? cpu_offloading_num_layers : 0;
  }
  // --deterministic-mode: Gated DeltaNet runs Megatron-Core's torch-native chunked delta rule
  // and conv1d instead of the FLA kernels (gdn.py:69-72, 217-229).
  bool deterministic = false;
  CrossEntropyConfig cross_entropy;
  CudaGraphConfig cuda_graph;
  // Megatron pads the vocab to a multiple of this times t (--make-vocab-size-divisible-by).
  int64_t make_vocab_size_divisible_by = 128;
  CoreVersion core_version = kNewestCoreVersion;
  SequenceLayout sequence_layout = SequenceLayout::kAuto;
  FrameworkProfile framework;  // --framework, --megatron-bridge
  OptimizerConfig optimizer;
  // --forward-only: an eval-mode pass (RL ref / old-policy log-probs; schedules.py with
  // forward_only=True): forwards of every micro-batch only, no recompute, no gradients, no DP
  // gradient sync, no optimizer.
  bool forward_only = false;

  // GBS: --global-batch-size, else b·d (one micro-batch per data-parallel rank, as Megatron-LM
  // defaults it). Precondition: t·p·c > 0.
  [[nodiscard]] int64_t GlobalBatchSize() const;
  // Micro-batches per step m = GBS/(b·d) (num_microbatches_calculator.py:381), rounded down.
  // Precondition: Validate() accepted the sizes (T1), the grid (C1) and the batch (C23); checked
  // with TRAINSCOPE_CHECK where a violation would divide by zero.
  [[nodiscard]] int64_t NumMicroBatches() const;
  // G, micro-batches per group in the interleaved schedule
  // (--microbatch-group-size-per-virtual-pipeline-stage, schedules.py:1160-1180), default p.
  [[nodiscard]] int64_t MicroBatchGroupSize() const;
  // β_g, bytes of one gradient element in the grad buffer and on the wire: 4 with
  // grad_reduce_in_fp32, else 2; under Megatron-FSDP the grad-communication dtype `auto` = the
  // params dtype (arguments.py:3687-3694).
  [[nodiscard]] int64_t GradReduceBytes() const;
  // The sequence layout actually used: the explicit choice, or for kAuto THD (packed) unless the
  // model has Gated DeltaNet layers and the core version (<= 0.17), micro-batch size (> 1 on
  // 0.18) or deterministic mode forbids packed sequences, in which case BSHD (padded). Under a
  // framework profile, kAuto follows the framework for GDN models: slime always packs (THD,
  // its GDN is not Megatron-Core's); AReaL and verl pad (BSHD).
  [[nodiscard]] SequenceLayout ResolvedSequenceLayout(const ModelConfig& model) const;
  friend bool operator==(const TrainingConfig&, const TrainingConfig&) = default;
};

[[nodiscard]] std::string ToString(CoreVersion version);
[[nodiscard]] std::string ToString(TokenDispatcher dispatcher);
[[nodiscard]] std::string ToString(RecomputeGranularity granularity);
[[nodiscard]] std::string ToString(RecomputeMethod method);
[[nodiscard]] std::string ToString(CpCommType type);
[[nodiscard]] std::string ToString(SequenceLayout layout);
[[nodiscard]] std::string ToString(RankOrder order);

// `training` with the defaults of its framework profile where the user left a value unset:
// AReaL's expert-TP size 1 (areal/api/alloc_mode.py, ParallelStrategy.expert_tensor_parallel_size);
// sequence parallelism whenever t > 1 under AReaL and verl, whose HF-to-Megatron config
// converters set sequence_parallel = (TP size > 1) (verl/models/mcore/config_converter.py); and
// slime's distributed optimizer (slime/backends/megatron_utils/arguments.py,
// _set_default_megatron_args: "always use zero optimizer").
[[nodiscard]] TrainingConfig WithFrameworkDefaults(TrainingConfig training);

// The configuration one rank of slime's duplicated Gated DeltaNet computes under: no TP or CP
// split and no sequence parallelism (slime_plugins/models/hf_attention.py,
// HuggingfaceAttention.forward), no Megatron deterministic GDN path (the module is Hugging
// Face's), every other setting kept; the framework is reset so that builders given it do not
// duplicate again.
[[nodiscard]] TrainingConfig UnsplitGdnTraining(const TrainingConfig& training);

}  // namespace trainscope::config

#endif  // TRAINSCOPE_CONFIG_TRAINING_CONFIG_H_
