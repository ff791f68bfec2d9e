// torchtitan's layers as PyTorch runs them (--framework torchtitan): the element-wise chains of
// its Llama modules, eager or fused by torch.compile, the K/V head copies F.scaled_dot_product_
// attention needs, the fp32 loss, and op-level selective checkpointing. torchtitan citations
// are at commit 9dec370 (2024-12-26), the code its December 2024 H100 benchmarks ran
// (torchtitan/models/norms.py, torchtitan/models/llama/model.py, train.py,
// torchtitan/parallelisms/parallelize_llama.py). Bytes per element are counted kernel by kernel
// from the ops each line issues and the ops autograd runs for them (docs/cost-model.md,
// "torchtitan").

#include <string>

#include "trainscope/graph/elementwise_ops.h"
#include "trainscope/graph/layer_ops_internal.h"

namespace trainscope::graph::internal {
namespace {

// RMSNorm, eager (norms.py RMSNorm.forward: self._norm(x.float()).type_as(x) * self.weight, with
// _norm = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)); bytes per hidden element with
// x in bf16 (FSDP2's param_dtype bf16 also makes the weight bf16):
//   forward: float() 2+4, pow 4+4, mean 4, x·rsqrt 4+4, type_as 4+2, ·weight 2+2 = 36 B, 7 kernels
//   (with the row-sized add and rsqrt);
//   backward: ·weight 2+2 and its weight gradient (g·y 2+2+2, row sum 2), type_as 2+4, x·rsqrt
//   4+4 and its rsqrt gradient (g·x 4+4+4, row sum 4), mean's expand 4, pow's 2x 4+4 and product
//   4+4+4, the sum of x's two gradient paths 4+4+4, float() 4+2 = 84 B, 13 kernels.
constexpr EagerChainCost kEagerRmsNormPerElement{.flops = 4,
                                                 .forward_bytes = 36,
                                                 .forward_launches = 7,
                                                 .backward_bytes = 84,
                                                 .backward_launches = 13};
// apply_rotary_emb per q or k element: xq.float() 2+4, the complex product with freqs_cis 4+4
// (the per-position table is shared by the heads and batch), type_as 4+2 = 20 B in 3 kernels
// per tensor; backward the same three in reverse (grad·conj(freqs), float and back) = 20 B.
constexpr int64_t kEagerRopeBytes = 20;
constexpr int64_t kEagerRopeLaunchesPerTensor = 3;
// F.silu(a) * b per FFN element: silu 2+2, product 2+2+2 = 10 B in 2 kernels; backward the two
// product gradients (g·b and g·silu(a): 2+2+2 each) and silu's 2+2+2 = 18 B in 3 kernels.
constexpr EagerChainCost kEagerSwiGluPerElement{.flops = 6,
                                                .forward_bytes = 10,
                                                .forward_launches = 2,
                                                .backward_bytes = 18,
                                                .backward_launches = 3};
// cross_entropy(pred.float()) per logit: the fp32 copy 2+4, log_softmax (max and sum passes over
// the row, then the write) 4+4+4 = 18 B; backward nll_loss's zero-filled gradient 4,
// log_softmax's 4+4+4, and the cast back 4+2 = 22 B. 3 kernels forward (float, log_softmax,
// nll_loss) and 3 backward.
constexpr EagerChainCost kFp32LossPerLogit{.flops = 5,
                                           .forward_bytes = 18,
                                           .forward_launches = 3,
                                           .backward_bytes = 22,
                                           .backward_launches = 3};

int64_t LocalHeads(const LayerOpContext& c) { return c.model.attention.num_heads / Tp(c); }

}  // namespace

void TorchRmsNorm(OpSink& sink, OpRole role, const std::string& name, int64_t elements,
                  bool compiled) {
  if (compiled) {
    Elementwise(sink, role, name, elements, kRmsNorm);
    return;
  }
  EagerChain(sink, role, name, Times(kEagerRmsNormPerElement, elements));
}

void TorchRope(OpSink& sink, const LayerOpContext& c, int64_t elements, int64_t rotated_elements) {
  const OpRole role = KernelRole(OpKind::kElementwise, OpBlock::kAttention);
  if (c.training.framework.torch_compile) {
    Kernel(sink, role, "attention.rope", rotated_elements * kRope.flops, elements * kRope.bytes);
    return;
  }
  constexpr int64_t kTensors = 2;  // q and k
  const int64_t launches = kTensors * kEagerRopeLaunchesPerTensor;
  EagerChain(sink, role, "attention.rope",
             EagerChainCost{.flops = rotated_elements * kRope.flops,
                            .forward_bytes = kEagerRopeBytes * elements,
                            .forward_launches = launches,
                            .backward_bytes = kEagerRopeBytes * elements,
                            .backward_launches = launches});
}

void TorchSwiGlu(OpSink& sink, const LayerOpContext& c, OpRole role, const std::string& name,
                 int64_t elements) {
  if (c.training.framework.torch_compile) {
    Elementwise(sink, role, name, elements, kSwiGlu);
    return;
  }
  EagerChain(sink, role, name, Times(kEagerSwiGluPerElement, elements));
}

void RepeatKv(OpSink& sink, const LayerOpContext& c) {
  const int64_t heads = LocalHeads(c), kv_heads = LocalKvHeads(c);
  if (kv_heads >= heads) return;  // n_rep == 1 returns x itself
  // repeat_kv's expand + reshape copies K and V: read g_l heads, write n_l heads, each of d_h
  // bf16; its backward sums the copies back (read n_l, write g_l): the same bytes, one kernel
  // per tensor each way.
  const config::AttentionConfig& a = c.model.attention;
  const int64_t bytes = 2 * c.TokensPerRank() * (heads + kv_heads) * a.head_dim * kBf16Bytes;
  const OpRole role = KernelRole(OpKind::kElementwise, OpBlock::kAttention);
  const bool backward = sink.phase() == Phase::kBackward;
  // The backward's sum adds n_l − g_l copies per K and V element.
  const int64_t sum_flops = 2 * c.TokensPerRank() * (heads - kv_heads) * a.head_dim;
  sink.Compute(backward ? "attention.repeat_kv.backward" : "attention.repeat_kv", role,
               backward ? sum_flops : 0, bytes, 2);
}

void TorchCrossEntropy(OpSink& sink, OpRole role, const std::string& name, int64_t tokens,
                       int64_t vocab) {
  EagerChain(sink, role, name, Times(kFp32LossPerLogit, tokens * vocab));
}

// parallelize_llama.py: _save_list holds aten.mm, the SDPA kernels, reduce_scatter and the fp8
// amax ops; the policy saves them "except every second mm" of the block. Everything else the
// backward needs is recomputed. The block's mms in order are wq, wk, wv, wo, w1, w3, w2, so wk,
// wo and w3 are replayed, with every element-wise op: the two norms, RoPE, repeat_kv, the
// attention residual add and the SwiGLU product; under TP with sequence parallelism also the
// all-gathers of the attention's and the FFN's input (all_gather is not in the save list, and the
// replayed wk and w3 read its output), while wo's reduce-scatter output is saved.
void TorchOpSacRecompute(OpSink& sink, const LayerOpContext& c) {
  const config::AttentionConfig& a = c.model.attention;
  const int64_t h = c.model.hidden_size, tokens = c.TokensPerRank();
  HiddenNorm(sink, c, OpBlock::kAttention, "attention.input_norm");
  ColumnForward(sink, c, OpBlock::kAttention, "attention.linear_k", LocalKvHeads(c) * a.head_dim, h,
                c.ActivationBytes());
  Rope(sink, c);
  RepeatKv(sink, c);
  sink.Gemm("attention.linear_proj",
            KernelRole(OpKind::kGemm, OpBlock::kAttention, OpModule::kRowLinear), tokens, h,
            a.QueryWidth() / Tp(c));
  ResidualAdd(sink, c, OpBlock::kAttention, "attention.residual_add");
  HiddenNorm(sink, c, OpBlock::kMlp, "mlp.input_norm");
  const int64_t ffn = c.model.ffn_hidden_size / Tp(c);
  ColumnForward(sink, c, OpBlock::kMlp, "mlp.linear_fc1.w3", ffn, h, c.ActivationBytes());
  TorchSwiGlu(sink, c, KernelRole(OpKind::kElementwise, OpBlock::kMlp), "mlp.activation",
              tokens * ffn);
}

}  // namespace trainscope::graph::internal
