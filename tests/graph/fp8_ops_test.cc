// FP8 overhead ops against hand-derived byte counts (bf16 read = 2 B per element, FP8 write =
// 1 B per element and usage, scales per recipe as docs/cost-model.md "FP8 overhead kernels"
// derives them) and against where Transformer Engine runs them: the input and weight casts
// before each forward GEMM (module/linear.py, _Linear.forward), the output-gradient cast before
// dgrad, none before wgrad, the weight cast once per chunk with the FP8 weight cache
// (is_first_microbatch), and delayed scaling's update once per pass.
#include "trainscope/graph/fp8_ops.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tiny_configs.h"
#include "trainscope/graph/layer_ops.h"
#include "trainscope/graph/step_graph.h"

namespace trainscope::graph {
namespace {

using config::Fp8Recipe;
using testing_configs::TinyModel;
using testing_configs::Training;

constexpr Fp8Usage kBoth{.rowwise = true, .columnwise = true};
constexpr Fp8Usage kRowwise{.rowwise = true, .columnwise = false};

// A 4096 x 1024 tensor: E elements, a multiple of every block size.
constexpr int64_t kE = 4096 * 1024;

TEST(Fp8OpsTest, DelayedCastReadsOnceAndWritesEachUsage) {
  // 2E read (amax fused), E row-wise + E column-wise written, one fp32 scale_inv.
  EXPECT_EQ(QuantizeTraffic(Fp8Recipe::kDelayed, kE, kBoth, /*weight=*/false),
            (Fp8QuantizeTraffic{.bytes = 4 * kE + 4, .columnwise_bytes = kE, .num_launches = 1}));
  EXPECT_EQ(QuantizeTraffic(Fp8Recipe::kDelayed, kE, kRowwise, false),
            (Fp8QuantizeTraffic{.bytes = 3 * kE + 4, .columnwise_bytes = 0, .num_launches = 1}));
}

TEST(Fp8OpsTest, TensorwiseCastAddsAnAmaxPassAndTwoKernels) {
  // amax pass 2E, cast 2E + 2E written, scale 12 B + scale_inv 4 B; amax, scale, cast kernels.
  EXPECT_EQ(QuantizeTraffic(Fp8Recipe::kTensorwise, kE, kBoth, false),
            (Fp8QuantizeTraffic{.bytes = 6 * kE + 16, .columnwise_bytes = kE, .num_launches = 3}));
}

TEST(Fp8OpsTest, BlockwiseWritesOneFp32ScalePerBlockAndUsage) {
  // Activations 1x128: 2 usages x E/128 x 4 B = E/16. Weights 128x128: 2 x E/16384 x 4 B.
  EXPECT_EQ(QuantizeTraffic(Fp8Recipe::kBlockwise, kE, kBoth, false),
            (Fp8QuantizeTraffic{.bytes = 4 * kE + kE / 16, .num_launches = 1}));
  EXPECT_EQ(QuantizeTraffic(Fp8Recipe::kBlockwise, kE, kBoth, /*weight=*/true),
            (Fp8QuantizeTraffic{.bytes = 4 * kE + 8 * kE / 16384, .num_launches = 1}));
}

TEST(Fp8OpsTest, Mxfp8WritesOneE8m0ScalePer32ElementsAndUsage) {
  EXPECT_EQ(QuantizeTraffic(Fp8Recipe::kMxfp8, kE, kBoth, false),
            (Fp8QuantizeTraffic{.bytes = 4 * kE + 2 * kE / 32, .num_launches = 1}));
  EXPECT_EQ(QuantizeTraffic(Fp8Recipe::kMxfp8, kE, kRowwise, false),
            (Fp8QuantizeTraffic{.bytes = 3 * kE + kE / 32, .num_launches = 1}));
}

// torchao's row-wise recipe (torchao/float8/float8_scaling_utils.py, compiled): the row-wise
// cast reduces along the contiguous dim in the kernel that casts, 2E read + E written, 1 launch;
// the column-wise cast needs an amax pass across rows first, 2E + 2E read + E written, 2
// launches; no per-tensor scale bytes (the fp32 row scales are not counted).
TEST(Fp8OpsTest, RowwiseCastsEachAxisSeparately) {
  EXPECT_EQ(QuantizeTraffic(Fp8Recipe::kRowwise, kE, kRowwise, false),
            (Fp8QuantizeTraffic{.bytes = 3 * kE, .num_launches = 1}));
  EXPECT_EQ(QuantizeTraffic(Fp8Recipe::kRowwise, kE, Fp8Usage{.rowwise = false, .columnwise = true},
                            true),
            (Fp8QuantizeTraffic{.bytes = 5 * kE, .num_launches = 2}));
  EXPECT_EQ(QuantizeTraffic(Fp8Recipe::kRowwise, kE, kBoth, false, 2),
            (Fp8QuantizeTraffic{.bytes = 16 * kE, .num_launches = 6}));
  // The backward GEMMs' outputs are rescaled: read and write 2 B per element, one kernel; no
  // other recipe rescales.
  EXPECT_EQ(OutputRescaleTraffic(Fp8Recipe::kRowwise, kE),
            (Fp8QuantizeTraffic{.bytes = 4 * kE, .num_launches = 1}));
  for (Fp8Recipe recipe : {Fp8Recipe::kDelayed, Fp8Recipe::kTensorwise, Fp8Recipe::kMxfp8,
                           Fp8Recipe::kBlockwise, Fp8Recipe::kNvfp4}) {
    EXPECT_EQ(OutputRescaleTraffic(recipe, kE), Fp8QuantizeTraffic{});
  }
}

TEST(Fp8OpsTest, GroupedTensorsMultiplyBytesAndLaunches) {
  const Fp8QuantizeTraffic one = QuantizeTraffic(Fp8Recipe::kTensorwise, kE, kBoth, true);
  const Fp8QuantizeTraffic eight = QuantizeTraffic(Fp8Recipe::kTensorwise, kE, kBoth, true, 8);
  EXPECT_EQ(eight.bytes, 8 * one.bytes);
  EXPECT_EQ(eight.columnwise_bytes, 8 * one.columnwise_bytes);
  EXPECT_EQ(eight.num_launches, 24);
}

TEST(Fp8OpsTest, OnlyMxfp8SwizzlesScalesReadAndWrittenOnce) {
  EXPECT_EQ(ScaleSwizzleTraffic(Fp8Recipe::kMxfp8, kE, 2 * kE),
            (Fp8QuantizeTraffic{.bytes = 2 * (kE / 32 + 2 * kE / 32), .num_launches = 2}));
  for (Fp8Recipe recipe : {Fp8Recipe::kDelayed, Fp8Recipe::kTensorwise, Fp8Recipe::kBlockwise}) {
    EXPECT_EQ(ScaleSwizzleTraffic(recipe, kE, kE), Fp8QuantizeTraffic{});
  }
}

// NVFP4 (TE NVFP4BlockScaling): an amax pass (2E read) for the global scale, a second one over
// the random-Hadamard-transformed values when an activation or gradient also needs its
// column-wise copy, then the cast: 2E read, E/2 written per usage, one 1-byte E4M3 scale per 16
// elements per usage (per 16x16 block for weights), 4 B global scale.
TEST(Fp8OpsTest, Nvfp4CastHalvesTheWriteAndAddsAmaxPasses) {
  // Activation, both usages: 2E + 2E (amaxes) + 2E (cast) + E (2 x E/2) + 2 x E/16 + 4.
  EXPECT_EQ(QuantizeTraffic(Fp8Recipe::kNvfp4, kE, kBoth, /*weight=*/false),
            (Fp8QuantizeTraffic{.bytes = 7 * kE + kE / 8 + 4, .num_launches = 3}));
  // Row-wise only (no RHT copy): 2E + 2E + E/2 + E/16 + 4, amax and cast kernels.
  EXPECT_EQ(QuantizeTraffic(Fp8Recipe::kNvfp4, kE, kRowwise, false),
            (Fp8QuantizeTraffic{.bytes = 4 * kE + kE / 2 + kE / 16 + 4, .num_launches = 2}));
  // Weight, both usages, 2D 16x16 scales, no RHT: 2E + 2E + E + 2 x E/256 + 4.
  EXPECT_EQ(QuantizeTraffic(Fp8Recipe::kNvfp4, kE, kBoth, /*weight=*/true),
            (Fp8QuantizeTraffic{.bytes = 5 * kE + kE / 128 + 4, .num_launches = 2}));
}

TEST(Fp8OpsTest, Nvfp4SwizzlesOneScalePer16Elements) {
  EXPECT_EQ(ScaleSwizzleTraffic(Fp8Recipe::kNvfp4, kE, 2 * kE),
            (Fp8QuantizeTraffic{.bytes = 2 * (kE / 16 + 2 * kE / 16), .num_launches = 2}));
}

TEST(Fp8OpsTest, ScaleUpdateMovesThirtyTwoBytesPerTensorInTwoLaunches) {
  EXPECT_EQ(ScaleUpdateTraffic(10), (Fp8QuantizeTraffic{.bytes = 320, .num_launches = 2}));
}

config::TrainingConfig Fp8Training(Fp8Recipe recipe, int64_t num_micro_batches = 1) {
  config::TrainingConfig training = Training(1, 1, 1, num_micro_batches);
  training.precision.fp8 = config::Fp8Format::kHybrid;
  training.precision.fp8_recipe = recipe;
  return training;
}

std::vector<Op> Casts(const std::vector<Op>& ops) {
  std::vector<Op> out;
  for (const Op& op : ops) {
    if (op.role.kind == OpKind::kFp8Quantize) out.push_back(op);
  }
  return out;
}

const Op* Find(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

// --fp4-format e2m1 runs the layers' TE linears under NVFP4 (megatron/core/fp4_utils.py
// get_fp4_recipe) with the FP8 machinery: same places, NVFP4 traffic, no FP8 attention.
TEST(Fp8OpsTest, Fp4FormatQuantizesTheLinearsWithNvfp4) {
  config::TrainingConfig training = Training(1, 1, 1, 1);
  training.precision.fp4 = config::Fp4Format::kE2m1;
  training.precision.fp8_dot_product_attention = true;
  const Fp8Settings settings = MakeFp8Settings(training);
  EXPECT_TRUE(settings.enabled);
  EXPECT_EQ(settings.recipe, Fp8Recipe::kNvfp4);
  EXPECT_FALSE(settings.weights_in_fp8);
  EXPECT_FALSE(settings.dot_product_attention);
  training.precision.fp4_param_gather = true;
  EXPECT_TRUE(MakeFp8Settings(training).weights_in_fp8);

  const config::ModelConfig model = TinyModel();
  training.precision.fp4_param_gather = false;
  const std::vector<Op> fwd = DecoderLayerForward(MakeLayerOpContext(model, training), 0);
  // qkv input 256 x 64 = 16,384 elements, both usages: 7E + E/8 + 4 bytes.
  EXPECT_EQ(Find(fwd, "attention.linear_qkv.fp8_cast_input")->bytes, 7 * 16'384 + 2'048 + 4);
  EXPECT_TRUE(Find(fwd, "attention.linear_qkv")->gemm_quantized);
  // Four linears: input and weight casts and a scale swizzle each.
  EXPECT_EQ(Casts(fwd).size(), 12u);
}

// Megatron's output layer is a plain ColumnParallelLinear (gpt_model.py): no casts and a BF16
// GEMM in an FP8 run, while the layers' linears are quantized.
TEST(Fp8OpsTest, LmHeadOutputLayerStaysBf16UnderFp8) {
  const config::ModelConfig model = TinyModel();
  const config::TrainingConfig training = Fp8Training(Fp8Recipe::kMxfp8);
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> fwd = LmHeadAndLossForward(context);
  const std::vector<Op> bwd = LmHeadAndLossBackward(context);
  EXPECT_TRUE(Casts(fwd).empty());
  EXPECT_TRUE(Casts(bwd).empty());
  int gemms = 0;
  for (const std::vector<Op>* ops : {&fwd, &bwd}) {
    for (const Op& op : *ops) {
      if (op.role.kind != OpKind::kGemm) continue;
      ++gemms;
      EXPECT_FALSE(op.gemm_quantized) << op.name;
    }
  }
  EXPECT_EQ(gemms, 3);  // forward, dgrad, wgrad
  const std::vector<Op> layer = DecoderLayerForward(context, 0);
  EXPECT_TRUE(Find(layer, "mlp.linear_fc1")->gemm_quantized);
}

// --fp8-output-proj under MXFP8 makes the output layer TE's TELMHeadColumnParallelLinear
// (gpt_model.py is_mxfp8_output_proj_active): quantized GEMMs with their input and weight casts
// and scale swizzle forward, the gradient cast backward.
TEST(Fp8OpsTest, Fp8OutputProjQuantizesTheLmHeadUnderMxfp8) {
  const config::ModelConfig model = TinyModel();
  config::TrainingConfig training = Fp8Training(Fp8Recipe::kMxfp8);
  training.precision.fp8_output_proj = true;
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> fwd = LmHeadAndLossForward(context);
  EXPECT_TRUE(Find(fwd, "lm_head.output_layer")->gemm_quantized);
  EXPECT_NE(Find(fwd, "lm_head.output_layer.fp8_cast_input"), nullptr);
  EXPECT_NE(Find(fwd, "lm_head.output_layer.fp8_cast_weight"), nullptr);
  EXPECT_NE(Find(LmHeadAndLossBackward(context), "lm_head.output_layer.fp8_cast_grad_output"),
            nullptr);
  // Other recipes ignore it (Megatron rejects the combination, rule C55).
  training.precision.fp8_recipe = Fp8Recipe::kTensorwise;
  EXPECT_FALSE(
      Find(LmHeadAndLossForward(MakeLayerOpContext(model, training)), "lm_head.output_layer")
          ->gemm_quantized);
}

TEST(Fp8OpsTest, Bf16LayersHaveNoFp8Ops) {
  const config::ModelConfig model = TinyModel();
  const config::TrainingConfig training = Training(1, 1, 1, 1);
  const LayerOpContext context = MakeLayerOpContext(model, training);
  EXPECT_TRUE(Casts(DecoderLayerForward(context, 0)).empty());
  EXPECT_TRUE(Casts(DecoderLayerBackward(context, 0)).empty());
}

// Tiny Qwen3 (h 64, F 192, 4 heads of 32, 2 KV heads), s·b = 256 tokens, t = 1.
TEST(Fp8OpsTest, ForwardCastsTheInputAndWeightOfEachLinearBeforeItsGemm) {
  const config::ModelConfig model = TinyModel();
  const config::TrainingConfig training = Fp8Training(Fp8Recipe::kTensorwise);
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> fwd = DecoderLayerForward(context, 0);
  // qkv: input 256 x 64, weight (4 + 2·2)·32 = 256 x 64; both usages: 6E + 16 bytes each.
  const Op* input = Find(fwd, "attention.linear_qkv.fp8_cast_input");
  const Op* weight = Find(fwd, "attention.linear_qkv.fp8_cast_weight");
  ASSERT_NE(input, nullptr);
  ASSERT_NE(weight, nullptr);
  EXPECT_EQ(input->bytes, 6 * 256 * 64 + 16);
  EXPECT_EQ(input->fp8_columnwise_bytes, 256 * 64);
  EXPECT_EQ(input->num_launches, 3);
  EXPECT_EQ(input->role.operand, Fp8Operand::kInput);
  EXPECT_EQ(input->role.block, OpBlock::kAttention);
  EXPECT_EQ(weight->bytes, 6 * 256 * 64 + 16);
  EXPECT_EQ(weight->role.operand, Fp8Operand::kCachedWeight);
  // fc2: input 256 x 192 (F), weight 64 x 192.
  EXPECT_EQ(Find(fwd, "mlp.linear_fc2.fp8_cast_input")->bytes, 6 * 256 * 192 + 16);
  EXPECT_EQ(Find(fwd, "mlp.linear_fc2.fp8_cast_weight")->bytes, 6 * 64 * 192 + 16);
  // Each weight cast directly precedes its GEMM.
  for (size_t i = 0; i + 1 < fwd.size(); ++i) {
    if (fwd[i].role.operand == Fp8Operand::kCachedWeight) {
      EXPECT_EQ(fwd[i + 1].role.kind, OpKind::kGemm) << fwd[i].name;
    }
  }
  // Four TE linears (qkv, proj, fc1, fc2): two casts each, no swizzle outside MXFP8.
  EXPECT_EQ(Casts(fwd).size(), 8u);
}

TEST(Fp8OpsTest, BackwardCastsTheOutputGradientBeforeEachDgradOnly) {
  const config::ModelConfig model = TinyModel();
  const config::TrainingConfig training = Fp8Training(Fp8Recipe::kDelayed);
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> bwd = DecoderLayerBackward(context, 0);
  const std::vector<Op> casts = Casts(bwd);
  ASSERT_EQ(casts.size(), 4u);
  for (const Op& op : casts) {
    EXPECT_EQ(op.role.operand, Fp8Operand::kGradOutput) << op.name;
    EXPECT_EQ(op.role.pass, OpPass::kBackward) << op.name;
  }
  // fc2's dgrad input is the 256 x 64 output gradient: 2E read + 2E written + 4 B.
  EXPECT_EQ(Find(bwd, "mlp.linear_fc2.fp8_cast_grad_output")->bytes, 4 * 256 * 64 + 4);
}

// FP8 attention (--fp8-dot-product-attention), tiny Qwen3 (4 heads of 32, 2 KV heads), 256
// tokens: Q 256·4·32 = 32,768 and K, V 256·2·32 = 16,384 elements each. Delayed scaling,
// row-wise only: read 2 B, write 1 B per element, 4 B of scale_inv per tensor. Forward: the
// mixed QKV buffer as one tensor, 3·65,536 + 4 bytes; backward: O and dO, 2·(3·32,768 + 4).
TEST(Fp8OpsTest, Fp8AttentionCastsQkvForwardAndODoBackward) {
  const config::ModelConfig model = TinyModel();
  config::TrainingConfig training = Fp8Training(Fp8Recipe::kDelayed);
  training.precision.fp8_dot_product_attention = true;
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> fwd = DecoderLayerForward(context, 0);
  const std::vector<Op> bwd = DecoderLayerBackward(context, 0);
  const Op* qkv = Find(fwd, "attention.dpa.fp8_cast_qkv");
  const Op* o_do = Find(bwd, "attention.dpa.fp8_cast_o_do");
  ASSERT_NE(qkv, nullptr);
  ASSERT_NE(o_do, nullptr);
  EXPECT_EQ(qkv->bytes, 3 * 65'536 + 4);
  EXPECT_EQ(qkv->fp8_columnwise_bytes, 0);
  EXPECT_EQ(o_do->bytes, 2 * (3 * 32'768 + 4));
  EXPECT_EQ(o_do->role.operand, Fp8Operand::kGradOutput);
  EXPECT_EQ(Find(fwd, "attention.core")->attention_precision, AttentionPrecision::kFp8PerTensor);
  EXPECT_EQ(Find(bwd, "attention.core.backward")->attention_precision,
            AttentionPrecision::kFp8PerTensor);
  // The cast directly precedes its kernel.
  for (size_t i = 0; i + 1 < fwd.size(); ++i) {
    if (fwd[i].name == "attention.dpa.fp8_cast_qkv") {
      EXPECT_EQ(fwd[i + 1].name, "attention.core");
    }
  }
  // MXFP8 runs the MXFP8 kernel; the blockwise recipe has no FP8 attention (its TE recipe takes
  // no fp8_dpa), nor does BF16 training with the switch on.
  training.precision.fp8_recipe = Fp8Recipe::kMxfp8;
  EXPECT_EQ(Find(DecoderLayerForward(MakeLayerOpContext(model, training), 0), "attention.core")
                ->attention_precision,
            AttentionPrecision::kMxfp8);
  training.precision.fp8_recipe = Fp8Recipe::kBlockwise;
  const std::vector<Op> blockwise = DecoderLayerForward(MakeLayerOpContext(model, training), 0);
  EXPECT_EQ(Find(blockwise, "attention.dpa.fp8_cast_qkv"), nullptr);
  EXPECT_EQ(Find(blockwise, "attention.core")->attention_precision, AttentionPrecision::kBf16);
  training.precision.fp8 = config::Fp8Format::kNone;
  EXPECT_TRUE(Casts(DecoderLayerForward(MakeLayerOpContext(model, training), 0)).empty());
}

TEST(Fp8OpsTest, Mxfp8SwizzlesScalesBeforeEveryGemm) {
  const config::ModelConfig model = TinyModel();
  const config::TrainingConfig training = Fp8Training(Fp8Recipe::kMxfp8);
  const LayerOpContext context = MakeLayerOpContext(model, training);
  int64_t swizzles = 0;
  for (const std::vector<Op>& ops :
       {DecoderLayerForward(context, 0), DecoderLayerBackward(context, 0)}) {
    for (const Op& op : ops) swizzles += op.role.operand == Fp8Operand::kGemmScales;
  }
  EXPECT_EQ(swizzles, 12);  // 4 linears x (fprop, dgrad, wgrad)
  // wgrad of fc2: column-wise grad output 256 x 64 and input 256 x 192, 1 B per 32, r + w.
  const std::vector<Op> bwd = DecoderLayerBackward(context, 0);
  EXPECT_EQ(Find(bwd, "mlp.linear_fc2.wgrad.fp8_scale_swizzle")->bytes,
            2 * (256 * 64 / 32 + 256 * 192 / 32));
}

TEST(Fp8OpsTest, RecomputeReplaysInputCastsButNotCachedWeights) {
  const config::ModelConfig model = TinyModel();
  config::TrainingConfig training = Fp8Training(Fp8Recipe::kTensorwise);
  const LayerOpContext cached = MakeLayerOpContext(model, training);
  const std::vector<Op> replay = Casts(DecoderLayerRecompute(cached, 0, /*full=*/true));
  EXPECT_EQ(replay.size(), 4u);
  for (const Op& op : replay) EXPECT_EQ(op.role.operand, Fp8Operand::kInput) << op.name;
  // Without the cache every forward, the replay included, quantizes the weights again.
  training.precision.disable_parameter_transpose_cache = true;
  const LayerOpContext uncached = MakeLayerOpContext(model, training);
  EXPECT_EQ(Casts(DecoderLayerRecompute(uncached, 0, true)).size(), 8u);
}

// torchao row-wise under torchtitan, tiny Qwen3 (h 64, F 192), 256 tokens. Forward: each linear
// casts its input and its weight row-wise only (3 B per element; no FP8 weight cache, so every
// forward casts the weight). Backward, per linear: the output gradient both ways (8 B), the
// weight column-wise for dgrad (5 B), the saved bf16 input column-wise for wgrad (5 B), and the
// dgrad and wgrad outputs rescaled (4 B per element). fc2: input 256 x 192, weight 64 x 192,
// output gradient 256 x 64.
TEST(Fp8OpsTest, RowwiseCastsEachOperandWhereItsGemmRunsAndRescalesBackwardOutputs) {
  const config::ModelConfig model = TinyModel();
  config::TrainingConfig training = Fp8Training(Fp8Recipe::kRowwise);
  training.framework.framework = config::Framework::kTorchtitan;
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> fwd = DecoderLayerForward(context, 0);
  EXPECT_EQ(Find(fwd, "mlp.linear_fc2.fp8_cast_input")->bytes, 3 * 256 * 192);
  EXPECT_EQ(Find(fwd, "mlp.linear_fc2.fp8_cast_weight")->bytes, 3 * 64 * 192);
  EXPECT_EQ(Find(fwd, "mlp.linear_fc2.fp8_cast_weight")->role.operand, Fp8Operand::kWeight);
  EXPECT_EQ(Casts(fwd).size(), 8u);  // 4 linears x (input, weight); no attention casts
  const std::vector<Op> bwd = DecoderLayerBackward(context, 0);
  EXPECT_EQ(Find(bwd, "mlp.linear_fc2.fp8_cast_grad_output")->bytes, 8 * 256 * 64);
  EXPECT_EQ(Find(bwd, "mlp.linear_fc2.fp8_cast_weight_t")->bytes, 5 * 64 * 192);
  EXPECT_EQ(Find(bwd, "mlp.linear_fc2.fp8_cast_input_t")->bytes, 5 * 256 * 192);
  const Op* dgrad_rescale = Find(bwd, "mlp.linear_fc2.dgrad.fp8_rescale");
  const Op* wgrad_rescale = Find(bwd, "mlp.linear_fc2.wgrad.fp8_rescale");
  ASSERT_NE(dgrad_rescale, nullptr);
  ASSERT_NE(wgrad_rescale, nullptr);
  EXPECT_EQ(dgrad_rescale->bytes, 4 * 256 * 192);
  EXPECT_EQ(wgrad_rescale->bytes, 4 * 64 * 192);
  EXPECT_EQ(dgrad_rescale->role.operand, Fp8Operand::kGemmOutput);
  EXPECT_EQ(dgrad_rescale->role.pass, OpPass::kBackward);
  // Each rescale follows its GEMM.
  for (size_t i = 1; i < bwd.size(); ++i) {
    if (bwd[i].role.operand == Fp8Operand::kGemmOutput) {
      EXPECT_EQ(bwd[i - 1].role.kind, OpKind::kGemm) << bwd[i].name;
    }
  }
  // 4 linears x (grad output, weight_t, input_t, 2 rescales).
  EXPECT_EQ(Casts(bwd).size(), 20u);
}

TEST(Fp8OpsTest, Fp8ParamGatherLeavesNoWeightCasts) {
  const config::ModelConfig model = TinyModel();
  config::TrainingConfig training = Fp8Training(Fp8Recipe::kDelayed);
  training.precision.fp8_param_gather = true;
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> casts = Casts(DecoderLayerForward(context, 0));
  EXPECT_EQ(casts.size(), 4u);
  for (const Op& op : casts) EXPECT_EQ(op.role.operand, Fp8Operand::kInput) << op.name;
}

TEST(Fp8OpsTest, Mxfp8ParamGatherStillCastsTheWeightsOncePerStep) {
  // MXFP8 parameters are gathered in bf16 through the gradient buffer and quantized after the
  // gather (param_and_grad_buffer.py _post_param_sync): the four cached weight casts stay.
  const config::ModelConfig model = TinyModel();
  config::TrainingConfig training = Fp8Training(Fp8Recipe::kMxfp8);
  training.precision.fp8_param_gather = true;
  const LayerOpContext context = MakeLayerOpContext(model, training);
  int64_t weights = 0;
  for (const Op& op : Casts(DecoderLayerForward(context, 0))) {
    weights += op.role.operand == Fp8Operand::kCachedWeight;
  }
  EXPECT_EQ(weights, 4);
}

int64_t CountOperand(const StepGraph& graph, Fp8Operand operand, int64_t micro_batch) {
  int64_t count = 0;
  for (const Op& op : graph.ops) {
    count += op.role.operand == operand && op.micro_batch == micro_batch;
  }
  return count;
}

// Four layers of four TE linears, four micro-batches, one stage.
TEST(Fp8OpsTest, CachedWeightsAreCastOnTheFirstMicroBatchOnly) {
  const config::ModelConfig model = TinyModel();
  config::TrainingConfig training = Fp8Training(Fp8Recipe::kTensorwise, 4);
  const StepGraph cached = BuildStepGraph(model, training, 0);
  EXPECT_EQ(CountOperand(cached, Fp8Operand::kCachedWeight, 0), 16);
  for (int64_t mb = 1; mb < 4; ++mb) {
    EXPECT_EQ(CountOperand(cached, Fp8Operand::kCachedWeight, mb), 0);
    EXPECT_EQ(CountOperand(cached, Fp8Operand::kInput, mb), 16);
    EXPECT_EQ(CountOperand(cached, Fp8Operand::kGradOutput, mb), 16);
  }
  training.precision.disable_parameter_transpose_cache = true;
  const StepGraph uncached = BuildStepGraph(model, training, 0);
  for (int64_t mb = 0; mb < 4; ++mb) EXPECT_EQ(CountOperand(uncached, Fp8Operand::kWeight, mb), 16);
}

int64_t CountScaleUpdates(const StepGraph& graph, Phase phase) {
  int64_t count = 0;
  for (const Op& op : graph.ops) {
    count += op.role.kind == OpKind::kFp8ScaleUpdate && op.phase == phase;
  }
  return count;
}

TEST(Fp8OpsTest, DelayedScalingUpdatesScalesOncePerForwardAndBackwardPass) {
  const config::ModelConfig model = TinyModel();
  const StepGraph delayed = BuildStepGraph(model, Fp8Training(Fp8Recipe::kDelayed, 3), 0);
  EXPECT_EQ(CountScaleUpdates(delayed, Phase::kForward), 3);
  EXPECT_EQ(CountScaleUpdates(delayed, Phase::kBackward), 3);
  for (const Op& op : delayed.ops) {
    if (op.role.kind != OpKind::kFp8ScaleUpdate) continue;
    EXPECT_EQ(op.role.block, OpBlock::kFp8Scaling);
    EXPECT_EQ(op.num_launches, 2);
  }
  const StepGraph current = BuildStepGraph(model, Fp8Training(Fp8Recipe::kTensorwise, 3), 0);
  EXPECT_EQ(CountScaleUpdates(current, Phase::kForward), 0);
  EXPECT_EQ(CountScaleUpdates(current, Phase::kBackward), 0);
}

}  // namespace
}  // namespace trainscope::graph
