// Compute cost of one kernel: a roofline over the GPU's tensor-core peak and HBM bandwidth, with
// an efficiency per kernel class (GEMM, attention forward / backward, GDN per backend, fused) and
// a shape-aware GEMM efficiency (published per-shape tables per GPU family, rows per expert for
// grouped GEMMs, tile and wave quantisation elsewhere; cost/gemm_efficiency.h). Pure functions
// over plain values; the formulas, default constants and omissions are listed in
// docs/cost-model.md.
#ifndef TRAINSCOPE_COST_COMPUTE_COST_H_
#define TRAINSCOPE_COST_COMPUTE_COST_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/config/hardware.h"
#include "trainscope/cost/gemm_types.h"
#include "trainscope/graph/op.h"

namespace trainscope::cost {

// Kernel library of the Gated DeltaNet chunked delta rule (slime's --qwen-gdn-backend fla|flashqla;
// slime's default is fla): FLA's Triton kernels or Qwen's TileLang FlashQLA kernels.
enum class GdnBackend { kFla, kFlashQla };

// "fla" / "flashqla" <-> GdnBackend, the one table of names. nullopt for any other name.
[[nodiscard]] std::optional<GdnBackend> GdnBackendFromName(std::string_view name);
[[nodiscard]] std::string_view GdnBackendName(GdnBackend backend);

// The efficiency class of a compute op: which field of ComputeEfficiency scales its FLOP rate.
enum class KernelClass {
  kGemm,               // op.gemm.m > 0: the GEMM efficiency of the precision times tile efficiency
  kAttentionForward,   // OpKind::kAttentionCore forward: flash / fused attention
  kAttentionBackward,  // OpKind::kAttentionCore backward
  kGdnForward,         // OpKind::kGdnKernel forward: chunked gated delta rule
  kGdnBackward,        // OpKind::kGdnKernel backward
  kTorchFp32,          // OpKind::kGdnTorchKernel: eager fp32 ops (TF32 matmuls), fused efficiency
  kFp8Cast,            // OpKind::kFp8Quantize / kFp8ScaleUpdate: memory-bound at
                       // fp8_cast_memory_efficiency of HBM
  kFused,              // any other compute op: fused_kernel_efficiency
};

// How a GEMM's shape scales its efficiency (cost/gemm_efficiency.h). kTable: the published
// per-shape tables of the GPU family with the fallback formula outside them (the default); kTile:
// tile quantisation only (the model before the tables).
enum class GemmShapeModel { kTable, kTile };

// "table" / "tile" <-> GemmShapeModel, the one table of names. nullopt for any other name.
[[nodiscard]] std::optional<GemmShapeModel> GemmShapeModelFromName(std::string_view name);
[[nodiscard]] std::string_view GemmShapeModelName(GemmShapeModel model);

// Achieved fractions of the hardware peaks. fp8_gemm_efficiency, the attention efficiencies,
// memory_efficiency and gpu_throughput_scale are fitted by scripts/fit_calibration to the
// published runs of data/calibration/calibration_runs.csv (hardware parameters only; the values are
// data/calibration/fitted_efficiencies.json, and a test keeps the two equal). They are effective
// values that also absorb what the model leaves out (docs/cost-model.md). bf16_gemm_efficiency
// and fused_kernel_efficiency are Hopper starting values (no BF16 Megatron run to fit); the GDN
// defaults come from kernel benchmarks (cited at each field). A calibration file
// (io/calibration_file.h) can override every field.
struct ComputeEfficiency {
  // Fraction of the BF16 / FP8 tensor-core peak a large, tile-aligned GEMM reaches: the plateau
  // that the shape factor (cost/gemm_efficiency.h) is relative to.
  double bf16_gemm_efficiency = 0.78;
  double fp8_gemm_efficiency = 0.6207;
  // NVFP4 GEMMs reach this fraction of fp8_gemm_efficiency (both as fractions of their own
  // peak), measured kernel-only (inputs already quantized), not fitted:
  // - Blackwell (SM 10.0: B200, GB200): vLLM's CUTLASS benchmarks at N = 6144, K = 4096,
  //   M = 16384: NVFP4 3904 TFLOP/s (vllm-project/vllm #20646) against FP8 per-tensor 2545
  //   (#19566), 1.534x on a part whose dense FP4 peak is 2x its FP8 one: 0.767.
  // - Blackwell Ultra (SM 10.3: B300, GB300): TE's GEMM profiling guide on B300, 12 GEMMs of a
  //   layer at M = 15,872, hidden 4096, FFN 16384: MXFP8 7.161 ms, NVFP4 3.764 ms, 1.903x on a
  //   3x peak ratio (13.5 vs 4.5 PFLOP/s): 0.634.
  double fp4_over_fp8_gemm_efficiency = 0.767;
  double fp4_over_fp8_gemm_efficiency_ultra = 0.634;
  GemmShapeModel gemm_shape_model = GemmShapeModel::kTable;
  // Multiplies the shape factor of one GPU family and number format, keyed "<family>_<dtype>"
  // ("hopper_bf16", "blackwell_fp8", "other_bf16", ...; absent = 1); in (0, 2].
  std::map<std::string, double> gemm_shape_scale;
  // User-measured GEMM efficiencies (calibration file); they win over the published tables at
  // their shape and join the interpolation around it (cost/gemm_efficiency.h).
  std::vector<GemmEfficiencyPoint> gemm_efficiency_points;
  // Fallback shape factor (where no table covers the shape): the per-tile fixed cost, in
  // elements of K and of N, of the small-K and small-N penalties. Derived from the K = 512 and
  // N = 576 rows of kernel-benchmarks.md §1.2 / §1.6 (docs/cost-model.md).
  int64_t gemm_fallback_k0 = 256;
  int64_t gemm_fallback_n0 = 128;
  // Output tile (m x n) and reduction step (k) of the GEMM kernel; a partial tile costs as much
  // as a full one. 128 x 128 x 64 is the common BF16 Hopper CUTLASS / cuBLASLt configuration.
  int64_t gemm_tile_m = 128;
  int64_t gemm_tile_n = 128;
  int64_t gemm_tile_k = 64;
  // Fraction of the BF16 peak reached by compute ops of KernelClass::kFused (normalisations,
  // activations, permutations, which are normally memory-bound anyway).
  double fused_kernel_efficiency = 0.55;
  // Fraction of the HBM bandwidth reached by memory-bound kernels.
  double memory_efficiency = 0.6386;
  // Fraction of the HBM bandwidth reached by Transformer Engine's FP8 cast, amax, transpose and
  // scale kernels (KernelClass::kFp8Cast). Not fitted to whole steps: the minimax value over
  // the published quantization cost per layer (TE GEMM profiling guide, autocast minus
  // pre-quantized, M = 15,872, hidden 4096, FFN 16384): current scaling 3.50 ms on H200 NVL
  // (0.83 of 4.8 TB/s for the modelled bytes) and 2.34 ms on B300 (0.66 of 8 TB/s), MXFP8
  // 1.82 ms on B300 (0.63); 0.73 reproduces all three within 14 % (docs/cost-model.md).
  double fp8_cast_memory_efficiency = 0.73;
  // Flash attention, head dim 128, H100 SXM BF16 (989 TFLOP/s), 8k-16k tokens: FlashAttention-3
  // forward 614-621 TFLOP/s (pytorch/benchmark commit ff65cb6, "Fix dimension order for
  // FlashAttention-3", B·S = 16k) = 0.62; backward cuDNN 516-518 and FlashAttention-3 559-561
  // TFLOP/s (FlashAttention-3 paper, arXiv:2407.08608, backward figure for head dim 128) =
  // 0.52-0.57. Transformer Engine uses cuDNN on Hopper. Those kernel figures (0.60 / 0.50) were
  // the starting values; the fitted effective values are lower (docs/cost-model.md).
  double attention_forward_efficiency = 0.4459;
  double attention_backward_efficiency = 0.4483;
  // Whether the two above are plateaus scaled down for small kernels by the measured occupancy
  // curve (cost/attention_efficiency.h), or flat.
  bool attention_occupancy = true;
  // Whether they are also scaled by the kernel's head dim against 128, the head dim they were
  // measured at, as measured on the GPU's generation (cost/attention_efficiency.h
  // AttentionHeadDimFactor), or not. The generation's own factor (AttentionArchFactor, Blackwell
  // Ultra's faster softmax) applies either way.
  bool attention_head_dim = true;
  // Whether a sliding-window kernel pays the key tiles its band touches and a fixed cost per
  // query tile (cost/attention_efficiency.h AttentionWindowFactor, in place of the occupancy
  // curve), or runs like a causal kernel of its exact pairs.
  bool attention_window_tiles = true;
  // Chunked gated delta rule, fraction of the BF16 peak against the dense chunked FLOP count of
  // graph "gdn.kernel" (FLA chunk_gated_delta_rule, counted step by step). QwenLM/FlashQLA
  // benchmark/benchmark_results_H200.txt (fla 0.5.1, tilelang 0.1.9, CUDA graphs), Qwen3.5-35B
  // shape (16 key / 32 value heads, d = 128): FLA forward 0.472 ms at 8k and 1.890 ms at 32k
  // tokens = 102 TFLOP/s = 0.10; FLA backward 1.444 / 5.697 ms = 66-67 TFLOP/s = 0.07; FlashQLA
  // forward 0.280 / 0.877 ms = 0.17-0.22; FlashQLA backward 0.789 / 2.515 ms = 0.12-0.15. The
  // FlashQLA README claims 2-3x forward and 2x backward over FLA on Hopper; these rows give
  // 1.7-2.2x and 1.8-2.3x. FlashQLA defaults are therefore 2x the FLA ones.
  double gdn_fla_forward_efficiency = 0.10;
  double gdn_fla_backward_efficiency = 0.07;
  double gdn_flashqla_forward_efficiency = 0.20;
  double gdn_flashqla_backward_efficiency = 0.14;
  // Host time of one eager PyTorch kernel launch, per host CPU (config::HostCpu): the CPU time
  // of one torch.nn.Linear forward (BF16, 8192 tokens x 2048, one cuBLAS GEMM) measured in
  // NVIDIA/TransformerEngine#2053: 13.48 µs on a DGX H100 (Xeon Platinum 8480C); 33.17 µs on
  // GH200 and 37.08 µs on GB200, whose mean 35.1 µs is the Grace value. Ops inside a captured
  // CUDA graph pay none (cost/launch_overhead.h).
  double launch_host_seconds_x86 = 13.48e-6;
  double launch_host_seconds_grace = 35.1e-6;
  // Host time of one blocking device-to-host round trip (a 4-byte D2H copy plus
  // cudaStreamSynchronize on an idle stream): median 32.21 µs over 2,000 iterations on an
  // RTX 5090 (sm_120a), min 9.67 µs (kekzl/imp#1654). No data-centre figure is published; the
  // GPU sits idle for it, and the host then issues the next kernel from an empty queue.
  double host_sync_seconds = 32.21e-6;
  // Achieved FLOP rate of a GPU type relative to what the fractions above give on its preset
  // peaks, by GPU preset name (absent = 1). The fractions are Hopper figures; newer kernels and
  // peaks no NVIDIA datasheet confirms (B300/GB300) differ per type. Fitted to the
  // published runs of each type (data/calibration/fitted_efficiencies.json); in (0, 2]. B300
  // has no dense run to fit and takes B200's value: the same preset peaks, and maximum achievable
  // matmul within 1.4 % (BF16) and 2.3 % (FP8) of B200's (stas00/ml-engineering MAMF table).
  std::map<std::string, double> gpu_throughput_scale = {
      {"B200", 0.8621}, {"B300", 0.8621}, {"GB200", 0.8621}, {"GB300", 1.0592}};
  friend bool operator==(const ComputeEfficiency&, const ComputeEfficiency&) = default;
};

// The class of a compute op, from its GEMM shape and its name (exact graph op names, listed at
// KernelClass). Precondition (checked): !op.IsComm().
[[nodiscard]] KernelClass ClassifyKernel(const graph::Op& op);

// TF32 dense tensor-core peak over the BF16 one: 494.7 / 989.4 TFLOP/s on H100 SXM, 1.1 / 2.25
// PFLOP/s on B200 (NVIDIA datasheets). fp32 matmuls run in TF32 when cuBLAS may use it (NGC
// PyTorch containers set TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1).
inline constexpr double kTf32PerBf16Peak = 0.5;

// The one place that picks an op's efficiency: the fraction of the BF16 peak (or of the FP8 peak
// for GEMMs under kFp8) the op reaches, before the GEMM shape factor. kGemm -> the GEMM efficiency
// of `precision`; attention -> attention_forward/backward_efficiency; GDN -> the field of
// `gdn_backend` and direction; anything else (kTorchFp32 included) -> fused_kernel_efficiency.
[[nodiscard]] double KernelEfficiency(const graph::Op& op, const ComputeEfficiency& eff,
                                      MathPrecision precision, GdnBackend gdn_backend);

// The tile-quantisation efficiency of a GEMM shape, in (0, 1]: the product over m, n and k of
// extent / padded extent, where the padded extent rounds up to the tile. For a grouped GEMM
// (groups > 1) the summed axis (shape.grouped_axis) is split evenly over the groups that
// receive tokens, g = min(groups, extent), and each group is padded on its own:
// padded = g · RoundUp(CeilDiv(extent, g), tile). 1 for tile-aligned shapes.
// Precondition (checked): m, n, k, groups >= 1 and every tile size >= 1.
[[nodiscard]] double GemmTileEfficiency(const graph::GemmShape& shape,
                                        const ComputeEfficiency& eff);

// True when `gpu`'s FP8 GEMMs accept non-TN layouts, so a per-tensor FP8 tensor serves its
// row- and column-wise usages from one buffer: compute capability 10.x-11.x and 13+ (TE
// transformer_engine/pytorch/utils.py, is_non_tn_fp8_gemm_supported).
[[nodiscard]] bool HasNonTnFp8Gemm(const config::GpuSpec& gpu);

// The measured NVFP4-over-FP8 GEMM efficiency of `gpu`'s generation:
// fp4_over_fp8_gemm_efficiency_ultra on Blackwell Ultra (SM 10.3), else
// fp4_over_fp8_gemm_efficiency.
[[nodiscard]] double Fp4OverFp8Efficiency(const config::GpuSpec& gpu, const ComputeEfficiency& eff);

// Seconds one compute op takes on `gpu`: max(flops / achieved peak, bytes / achieved HBM
// bandwidth). FP8 cast ops (KernelClass::kFp8Cast) move op.bytes, less op.fp8_columnwise_bytes
// on a GPU with HasNonTnFp8Gemm, at fp8_cast_memory_efficiency. The achieved peak is the BF16 peak
// (the FP8 peak for GEMMs under kFp8; under kFp4 the FP4 peak, the efficiency also times
// fp4_over_fp8_gemm_efficiency[_ultra]) times gpu_throughput_scale times KernelEfficiency, where
// for GEMMs KernelEfficiency is first multiplied by GemmShapeFactor (cost/gemm_efficiency.h) and
// capped at 1, and for core attention by the GPU generation's measured factors: head dim,
// Blackwell Ultra, FP8 attention (cost/attention_efficiency.h). An op with no FLOPs and no bytes
// takes 0 seconds. Throws InputError when the op needs a rate the GPU preset does not have (FP8 on
// A100). Preconditions (checked): !op.IsComm(), flops and bytes >= 0, efficiencies in (0, 1].
[[nodiscard]] double ComputeSeconds(const graph::Op& op, const config::GpuSpec& gpu,
                                    const ComputeEfficiency& eff,
                                    MathPrecision precision = MathPrecision::kBf16,
                                    GdnBackend gdn_backend = GdnBackend::kFla);

}  // namespace trainscope::cost

#endif  // TRAINSCOPE_COST_COMPUTE_COST_H_
