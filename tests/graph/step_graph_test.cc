// Step graph against Megatron-LM d98e8a64: pipeline_parallel/schedules.py (schedules and p2p),
// distributed/ param_and_grad_buffer.py and finalize_model_grads.py (DP gradient sync, embedding
// group), megatron_fsdp.py (Megatron-FSDP) and num_floating_point_operations (FLOPs). Every
// expected value is derived here by hand from those formulas and the model dimensions, not from
// the code.
#include "trainscope/graph/step_graph.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tiny_configs.h"
#include "trainscope/io/hf_config_loader.h"

namespace trainscope::graph {
namespace {

using config::GroupKind;

using testing_configs::TinyModel;
using testing_configs::Training;

// The tiny model with its four layers repeated to `num_layers`.
config::ModelConfig TinyModelWithLayers(int64_t num_layers) {
  config::ModelConfig model = TinyModel();
  model.layers.assign(static_cast<size_t>(num_layers), model.layers.front());
  return model;
}

int64_t CountOps(const StepGraph& graph, Collective collective, Phase phase, int64_t micro_batch) {
  int64_t count = 0;
  for (const Op& op : graph.ops) {
    if (op.collective == collective && op.phase == phase && op.micro_batch == micro_batch) {
      ++count;
    }
  }
  return count;
}

std::vector<Op> Named(const StepGraph& graph, const std::string& prefix) {
  std::vector<Op> out;
  for (const Op& op : graph.ops) {
    if (op.name.starts_with(prefix)) out.push_back(op);
  }
  return out;
}

// The passes in issue order as "F<mb>.<chunk>" / "B<mb>.<chunk>" (recompute counts as B).
std::vector<std::string> PassSequence(const StepGraph& graph) {
  std::vector<std::string> passes;
  for (const Op& op : graph.ops) {
    if (op.micro_batch < 0) continue;
    const std::string key = std::string(op.phase == Phase::kForward ? "F" : "B") +
                            std::to_string(op.micro_batch) + "." + std::to_string(op.model_chunk);
    if (passes.empty() || passes.back() != key) passes.push_back(key);
  }
  return passes;
}

TEST(StepGraphTest, OneFOneBSendsAndReceivesPerStageFollowTheStagePosition) {
  const config::ModelConfig model = TinyModel();
  for (const auto& [p, m] : std::vector<std::pair<int64_t, int64_t>>{{2, 3}, {4, 8}}) {
    const config::TrainingConfig training = Training(1, p, 1, m);
    for (int64_t r = 0; r < p; ++r) {
      const StepGraph graph = BuildStepGraph(model, training, r);
      for (int64_t j = 0; j < m; ++j) {
        // 1F1B: recv-fwd if r > 0, send-fwd if r < p−1, recv-bwd if r < p−1, send-bwd if r > 0.
        EXPECT_EQ(CountOps(graph, Collective::kRecv, Phase::kForward, j), r > 0 ? 1 : 0);
        EXPECT_EQ(CountOps(graph, Collective::kSend, Phase::kForward, j), r < p - 1 ? 1 : 0);
        EXPECT_EQ(CountOps(graph, Collective::kRecv, Phase::kBackward, j), r < p - 1 ? 1 : 0);
        EXPECT_EQ(CountOps(graph, Collective::kSend, Phase::kBackward, j), r > 0 ? 1 : 0);
      }
    }
  }
}

TEST(StepGraphTest, InterleavedSendsAndReceivesIncludeTheWrapAround) {
  for (const auto& [p, v, m] :
       std::vector<std::tuple<int64_t, int64_t, int64_t>>{{2, 2, 4}, {4, 2, 8}, {2, 3, 4}}) {
    const config::ModelConfig model = TinyModelWithLayers(p * v);
    config::TrainingConfig training = Training(1, p, 1, m);
    training.parallel.virtual_stages = v;
    for (int64_t r = 0; r < p; ++r) {
      const StepGraph graph = BuildStepGraph(model, training, r);
      // Interleaved: v forward sends (v−1 on the last rank), v forward receives (v−1 on rank 0);
      // the same for backward, with the roles of the first and last rank swapped.
      const int64_t fwd_sends = v - (r == p - 1 ? 1 : 0);
      const int64_t fwd_recvs = v - (r == 0 ? 1 : 0);
      for (int64_t j = 0; j < m; ++j) {
        EXPECT_EQ(CountOps(graph, Collective::kSend, Phase::kForward, j), fwd_sends);
        EXPECT_EQ(CountOps(graph, Collective::kRecv, Phase::kForward, j), fwd_recvs);
        EXPECT_EQ(CountOps(graph, Collective::kSend, Phase::kBackward, j), fwd_recvs);
        EXPECT_EQ(CountOps(graph, Collective::kRecv, Phase::kBackward, j), fwd_sends);
      }
    }
  }
}

TEST(StepGraphTest, SendsGoToTheNeighbouringStageOfTheSameDataParallelRank) {
  const config::ModelConfig model = TinyModelWithLayers(8);
  config::TrainingConfig training = Training(1, 4, 2, 4);
  training.parallel.virtual_stages = 2;
  // Rank order tp-cp-ep-dp-pp: rank = dp + 2·pp. Rank 5 is (dp 1, pp 2): its neighbours are
  // pp 1 → rank 3 and pp 3 → rank 7.
  const StepGraph middle = BuildStepGraph(model, training, 5);
  for (const Op& op : middle.ops) {
    if (op.collective == Collective::kSend && op.phase == Phase::kForward) {
      EXPECT_EQ(op.peer, 7);
    }
    if (op.collective == Collective::kRecv && op.phase == Phase::kForward) {
      EXPECT_EQ(op.peer, 3);
    }
    if (op.IsComm() && op.group == GroupKind::kPp) {
      EXPECT_EQ(op.group_size, 4);
    }
  }
  // Rank 1 is (dp 1, pp 0): chunk 1 receives its input from pp 3 (rank 7), the wrap-around.
  const StepGraph first = BuildStepGraph(model, training, 1);
  for (const Op& op : first.ops) {
    if (op.collective == Collective::kRecv && op.phase == Phase::kForward) {
      EXPECT_EQ(op.model_chunk, 1);
      EXPECT_EQ(op.peer, 7);
    }
  }
}

TEST(StepGraphTest, PipelineMessageIsTheSequenceParallelSliceOfTheActivation) {
  const config::ModelConfig model = TinyModel();
  config::TrainingConfig training = Training(2, 2, 1, 2);
  training.sequence_parallel = true;
  const StepGraph graph = BuildStepGraph(model, training, 0);
  // p2p tensor: P = s_c·b·h·β/t = 256·1·64·2/2 = 16,384 bytes.
  const std::vector<Op> sends = Named(graph, "pp.send_forward");
  ASSERT_EQ(sends.size(), 2u);
  EXPECT_EQ(sends[0].message_bytes, 16384);
}

TEST(StepGraphTest, OneFOneBWarmUpRunsTheFirstForwardsBeforeAnyBackward) {
  const config::ModelConfig model = TinyModel();
  const config::TrainingConfig training = Training(1, 4, 1, 8);
  // 1F1B, rank 0: w = min(4−0−1, 8) = 3 forwards, 5 (F, B) pairs, 3 backwards.
  const std::vector<std::string> rank0 = {"F0.0", "F1.0", "F2.0", "F3.0", "B0.0", "F4.0",
                                          "B1.0", "F5.0", "B2.0", "F6.0", "B3.0", "F7.0",
                                          "B4.0", "B5.0", "B6.0", "B7.0"};
  EXPECT_EQ(PassSequence(BuildStepGraph(model, training, 0)), rank0);
  // Rank 2: w = min(1, 8) = 1.
  const std::vector<std::string> rank2 = {"F0.0", "F1.0", "B0.0", "F2.0", "B1.0", "F3.0",
                                          "B2.0", "F4.0", "B3.0", "F5.0", "B4.0", "F6.0",
                                          "B5.0", "F7.0", "B6.0", "B7.0"};
  EXPECT_EQ(PassSequence(BuildStepGraph(model, training, 2)), rank2);
}

// forward_only (schedules.py): every forward back to back; no backward, recompute, grad sync or
// optimizer op. Interleaved: the schedule table's order (G = p = 2).
TEST(StepGraphTest, ForwardOnlyRunsEveryForwardAndNothingElse) {
  const config::ModelConfig model = TinyModel();
  config::TrainingConfig training = Training(1, 4, 1, 8);
  training.forward_only = true;
  training.recompute.granularity = config::RecomputeGranularity::kFull;
  training.recompute.method = config::RecomputeMethod::kUniform;
  training.recompute.num_layers = 1;
  const StepGraph graph = BuildStepGraph(model, training, 2);
  EXPECT_EQ(PassSequence(graph), (std::vector<std::string>{"F0.0", "F1.0", "F2.0", "F3.0", "F4.0",
                                                           "F5.0", "F6.0", "F7.0"}));
  for (const Op& op : graph.ops) {
    EXPECT_EQ(op.phase, Phase::kForward) << op.name;
  }
  config::TrainingConfig interleaved = Training(1, 2, 1, 4);
  interleaved.parallel.virtual_stages = 2;
  interleaved.forward_only = true;
  EXPECT_EQ(
      PassSequence(BuildStepGraph(model, interleaved, 0)),
      (std::vector<std::string>{"F0.0", "F1.0", "F0.1", "F1.1", "F2.0", "F3.0", "F2.1", "F3.1"}));
}

TEST(StepGraphTest, InterleavedWarmUpFollowsTheMicroBatchGroupTable) {
  const config::ModelConfig model = TinyModel();
  config::TrainingConfig training = Training(1, 2, 1, 4);
  training.parallel.virtual_stages = 2;
  // Interleaved with G = p = 2: forward order (0,c0) (1,c0) (0,c1) (1,c1) (2,c0) (3,c0) (2,c1)
  // (3,c1); backward k runs the same micro-batch on chunk v−1−c.
  // Rank 0: w = 2(2−0−1) + (2−1)·2 = 4.
  const std::vector<std::string> rank0 = {"F0.0", "F1.0", "F0.1", "F1.1", "F2.0", "B0.1",
                                          "F3.0", "B1.1", "F2.1", "B0.0", "F3.1", "B1.0",
                                          "B2.1", "B3.1", "B2.0", "B3.0"};
  EXPECT_EQ(PassSequence(BuildStepGraph(model, training, 0)), rank0);
  // Rank 1: w = 0 + 2 = 2.
  const std::vector<std::string> rank1 = {"F0.0", "F1.0", "F0.1", "B0.1", "F1.1", "B1.1",
                                          "F2.0", "B0.0", "F3.0", "B1.0", "F2.1", "B2.1",
                                          "F3.1", "B3.1", "B2.0", "B3.0"};
  EXPECT_EQ(PassSequence(BuildStepGraph(model, training, 1)), rank1);
}

TEST(StepGraphTest, DistributedOptimizerReduceScattersThePaddedDenseBuffer) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-0.6B");
  config::TrainingConfig training = Training(2, 1, 4, 1);
  training.data_parallel.distributed_optimizer = true;
  const StepGraph graph = BuildStepGraph(model, training, 0);
  // Qwen3-0.6B at t = 2: h = 1024, F = 3072, q = 16·128 = 2048, kv = 8·128 = 1024, L = 28.
  // Per layer: qkv (2048+2·1024)/2·1024 = 2,097,152; proj 1024·2048/2 = 1,048,576;
  // fc1 2·3072/2·1024 = 3,145,728; fc2 1024·3072/2 = 1,572,864; norms 1024 + 1024 + 128 + 128.
  // Every size is a multiple of 64, so no parameter padding: 7,866,624 per layer.
  const int64_t layer = 2097152 + 1048576 + 3145728 + 1572864 + 1024 + 1024 + 128 + 128;
  // Tied: one embedding, V = ceil(151936/256)·256 = 152,064, shard 76,032·1024; final norm 1024.
  const int64_t numel = 28 * layer + 1024 + 76032 * 1024;
  // Bucket end padded to lcm(4, 128) = 128: 298,123,264 = 128·2,329,088, no padding.
  ASSERT_EQ(numel % 128, 0);
  const std::vector<Op> rs = Named(graph, "dp.grad_reduce_scatter");
  ASSERT_EQ(rs.size(), 1u);  // overlap_grad_reduce off: one bucket
  EXPECT_EQ(rs[0].collective, Collective::kReduceScatter);
  EXPECT_EQ(rs[0].group, GroupKind::kDpCp);
  EXPECT_EQ(rs[0].group_size, 4);
  EXPECT_EQ(rs[0].message_bytes, numel * 4);  // β_g = 4 (grad_reduce_in_fp32 default)
  const std::vector<Op> ag = Named(graph, "dp.param_all_gather");
  ASSERT_EQ(ag.size(), 1u);
  EXPECT_EQ(ag[0].message_bytes, numel * 2);  // bf16 params
}

// The same Qwen3-0.6B buffer with FP8 parameters. TE linear elements per layer: qkv 2,097,152,
// proj 1,048,576, fc1 3,145,728, fc2 1,572,864 = 7,864,320; 28 layers: 220,200,960. The
// embedding and the norms stay bf16.
TEST(StepGraphTest, Fp8ParamGatherGathersTheLinearWeightsInTheirStorageFormat) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-0.6B");
  config::TrainingConfig training = Training(2, 1, 4, 1);
  training.data_parallel.distributed_optimizer = true;
  training.precision.fp8 = config::Fp8Format::kHybrid;
  training.precision.fp8_recipe = config::Fp8Recipe::kTensorwise;
  training.precision.fp8_param_gather = true;
  const int64_t layer = 2097152 + 1048576 + 3145728 + 1572864 + 1024 + 1024 + 128 + 128;
  const int64_t numel = 28 * layer + 1024 + 76032 * 1024;
  const int64_t linear = 28 * 7'864'320;
  {
    // Per-tensor FP8: 1 byte per linear element. The optimizer casts its shard (fp32 read, FP8
    // written: 5 B of 220,200,960 / 4) and, on GPUs with TN-only FP8 GEMMs, transposes the
    // gathered weights (1 B read, 1 B written, all column-wise).
    const StepGraph graph = BuildStepGraph(model, training, 0);
    const std::vector<Op> ag = Named(graph, "dp.param_all_gather");
    ASSERT_EQ(ag.size(), 1u);
    EXPECT_EQ(ag[0].message_bytes, (numel - linear) * 2 + linear);
    const std::vector<Op> quantize = Named(graph, "optimizer.param_quantize");
    ASSERT_EQ(quantize.size(), 1u);
    EXPECT_EQ(quantize[0].bytes, linear / 4 * 5);
    const std::vector<Op> transpose = Named(graph, "optimizer.param_transpose");
    ASSERT_EQ(transpose.size(), 1u);
    EXPECT_EQ(transpose[0].bytes, 2 * linear);
    EXPECT_EQ(transpose[0].fp8_columnwise_bytes, 2 * linear);
  }
  {
    // MXFP8 gathers bf16 through the gradient buffer and quantizes afterwards: bf16 bytes, no
    // shard cast.
    training.precision.fp8_recipe = config::Fp8Recipe::kMxfp8;
    const StepGraph graph = BuildStepGraph(model, training, 0);
    EXPECT_EQ(Named(graph, "dp.param_all_gather")[0].message_bytes, numel * 2);
    EXPECT_TRUE(Named(graph, "optimizer.param_quantize").empty());
  }
  {
    // NVFP4 with --fp4-param-gather: packed half bytes (110,100,480 per bucket), a shard cast
    // writing half a byte, no transpose.
    training.precision.fp8 = config::Fp8Format::kNone;
    training.precision.fp8_param_gather = false;
    training.precision.fp4 = config::Fp4Format::kE2m1;
    training.precision.fp4_param_gather = true;
    const StepGraph graph = BuildStepGraph(model, training, 0);
    EXPECT_EQ(Named(graph, "dp.param_all_gather")[0].message_bytes,
              (numel - linear) * 2 + linear / 2);
    EXPECT_EQ(Named(graph, "optimizer.param_quantize")[0].bytes, linear / 4 * 4 + linear / 8);
    EXPECT_TRUE(Named(graph, "optimizer.param_transpose").empty());
  }
}

TEST(StepGraphTest, DistributedOptimizerPadsParametersAndBucketEnd) {
  const config::ModelConfig model = TinyModel();
  config::TrainingConfig training = Training(1, 1, 3, 1);
  training.data_parallel.distributed_optimizer = true;
  training.precision.grad_reduce_in_fp32 = false;
  const StepGraph graph = BuildStepGraph(model, training, 0);
  // Tiny model, t = 1, reverse order: final norm 64 → end 64. Each layer from an aligned start
  // X: fc2 64·192 = 12288, fc1 384·64 = 24576, pre-MLP norm 64, proj 64·128 = 8192 → X+45120;
  // k_norm 32 → X+45152; q_norm starts at the next multiple of 64, X+45184, → X+45216; qkv
  // (128+2·64)·64 = 16384 starts at X+45248 → X+61632; input norm 64 → X+61696 (aligned).
  // Embedding V = ceil(1000/128)·128 = 1024 rows · 64 = 65536.
  const int64_t end = 64 + 4 * 61696 + 65536;  // 312,384
  // Bucket end padded to lcm(3, 128) = 384: ceil(312384/384)·384 = 814·384 = 312,576.
  const int64_t padded = 814 * 384;
  ASSERT_GE(padded, end);
  const std::vector<Op> rs = Named(graph, "dp.grad_reduce_scatter");
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].message_bytes, padded * 2);  // β_g = 2 with grad_reduce_in_fp32 off
}

TEST(StepGraphTest, WithoutDistributedOptimizerAllReducesTheUnpaddedBuffer) {
  const config::ModelConfig model = TinyModel();
  const config::TrainingConfig training = Training(1, 1, 3, 1);
  const StepGraph graph = BuildStepGraph(model, training, 0);
  // Per layer 64 + 16384 + 32 + 32 + 8192 + 64 + 24576 + 12288 = 61,632; no padding.
  const int64_t numel = 4 * 61632 + 64 + 65536;
  const std::vector<Op> ar = Named(graph, "dp.grad_all_reduce");
  ASSERT_EQ(ar.size(), 1u);
  EXPECT_EQ(ar[0].collective, Collective::kAllReduce);
  EXPECT_EQ(ar[0].message_bytes, numel * 4);
  EXPECT_TRUE(Named(graph, "dp.grad_reduce_scatter").empty());
  EXPECT_TRUE(Named(graph, "dp.param_all_gather").empty());
}

TEST(StepGraphTest, ExpertGradientsReduceOverTheExpertDataParallelGroup) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  config::TrainingConfig training = Training(2, 1, 8, 1);
  training.parallel.expert = 8;
  training.parallel.expert_tensor = 1;
  training.sequence_parallel = true;
  training.moe.dispatcher = config::TokenDispatcher::kAllToAll;
  training.data_parallel.distributed_optimizer = true;
  const StepGraph graph = BuildStepGraph(model, training, 0);
  // W = 16, d_e = 16/(1·8·1) = 2. Local experts 128/8 = 16, each fc1 2·768·2048 = 3,145,728 and
  // fc2 2048·768 = 1,572,864 (multiples of 64); 48 layers. lcm(2, 128) = 128 divides the total.
  const int64_t numel = int64_t{48} * 16 * (3145728 + 1572864);
  ASSERT_EQ(numel % 128, 0);
  const std::vector<Op> rs = Named(graph, "edp.grad_reduce_scatter");
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].group, GroupKind::kExpertDp);
  EXPECT_EQ(rs[0].group_size, 2);
  EXPECT_EQ(rs[0].message_bytes, numel * 4);
  const std::vector<Op> dense = Named(graph, "dp.grad_reduce_scatter");
  ASSERT_EQ(dense.size(), 1u);
  EXPECT_EQ(dense[0].group_size, 8);  // d·c = 16/2
}

TEST(StepGraphTest, EmbeddingGroupAllReducesOnlyAcrossStagesWithSharedEmbedding) {
  // Tied, p = 2: both stages all-reduce (V/t)·h·β_g = 1024·64·4 = 262,144 bytes over 2 ranks.
  const config::ModelConfig tied = TinyModel();
  for (int64_t rank : {0, 1}) {
    const std::vector<Op> ar =
        Named(BuildStepGraph(tied, Training(1, 2, 1, 2), rank), "embedding.grad_all_reduce");
    ASSERT_EQ(ar.size(), 1u);
    EXPECT_EQ(ar[0].group, GroupKind::kEmbedding);
    EXPECT_EQ(ar[0].group_size, 2);
    EXPECT_EQ(ar[0].message_bytes, 262144);
  }
  // p = 4: middle stages hold no embedding.
  EXPECT_TRUE(
      Named(BuildStepGraph(tied, Training(1, 4, 1, 4), 1), "embedding.grad_all_reduce").empty());
  // p = 1 tied: no communication.
  EXPECT_TRUE(
      Named(BuildStepGraph(tied, Training(1, 1, 1, 2), 0), "embedding.grad_all_reduce").empty());
  // Untied without MTP: no embedding group traffic.
  config::ModelConfig untied = TinyModel();
  untied.tied_embeddings = false;
  EXPECT_TRUE(
      Named(BuildStepGraph(untied, Training(1, 2, 1, 2), 1), "embedding.grad_all_reduce").empty());
}

TEST(StepGraphTest, OncePerStepOpsFollowFinalizeThenOptimizerOrder) {
  const config::ModelConfig model = TinyModel();
  config::TrainingConfig training = Training(2, 2, 2, 2);
  training.sequence_parallel = true;
  training.data_parallel.distributed_optimizer = true;
  const StepGraph graph = BuildStepGraph(model, training, 0);
  std::vector<std::string> names;
  for (const Op& op : graph.ops) {
    if (op.micro_batch < 0) names.push_back(op.name);
  }
  // finalize_model_grads.py order: DP RS, TP AR (SP norms), embedding AR, grad norm, step,
  // param AG.
  const std::vector<std::string> expected = {
      "dp.grad_reduce_scatter.bucket0", "dp.grad_reduce_scatter.bucket1",
      "tp.replicated_grad_all_reduce",  "embedding.grad_all_reduce",
      "optimizer.grad_norm_all_reduce", "optimizer.step",
      "dp.param_all_gather.bucket0",    "dp.param_all_gather.bucket1"};
  // Two buckets: the shared embedding gets its own bucket under the distributed optimizer.
  EXPECT_EQ(names, expected);
}

// MLA's down projections are TELinear 'duplicated': under SP every TP rank's copy sees other
// tokens, and Megatron marks them sequence_parallel, so finalize_model_grads all-reduces them
// over TP with the norms and the router
// (megatron/core/extensions/transformer_engine.py:1310-1318). DeepSeek-V3 stage 0
// of TP2 PP4 (first stage 15 layers: 3 dense + 12 MoE), fp32 grads:
//   per layer q_down 1536·7168 + q norm 1536 + kv_down 576·7168 + kv norm 512 + 2·7168 norms
//   per MoE layer + router 256·7168 + expert bias 256.
TEST(StepGraphTest, MlaDownProjectionGradientsJoinTheTensorParallelAllReduce) {
  const config::ModelConfig model = io::LoadPreset("DeepSeek-V3");
  config::TrainingConfig training;
  training.parallel = {.world_size = 8, .tensor = 2, .pipeline = 4};
  training.split = {.first_stage_layers = 15, .last_stage_layers = 14};
  training.sequence_parallel = true;
  training.batch = {.micro_batch_size = 1, .global_batch_size = 4, .seq_length = 4096};
  const std::vector<Op> ar = Named(BuildStepGraph(model, training, 0), "tp.replicated_grad");
  ASSERT_EQ(ar.size(), 1u);
  const int64_t mla = 1536 * 7168 + 1536 + 576 * 7168 + 512 + 2 * 7168;
  EXPECT_EQ(ar.front().message_bytes, 4 * (15 * mla + 12 * (256 * 7168 + 256)));
}

TEST(StepGraphTest, FullBlockRecomputeReplaysOnlyTheFirstLayersOfEachChunk) {
  const config::ModelConfig model = TinyModel();
  config::TrainingConfig training = Training(1, 1, 1, 1);
  training.recompute.granularity = config::RecomputeGranularity::kFull;
  training.recompute.method = config::RecomputeMethod::kBlock;
  training.recompute.num_layers = 1;
  std::vector<int64_t> layers;
  for (const Op& op : BuildStepGraph(model, training, 0).ops) {
    if (op.phase == Phase::kRecompute && (layers.empty() || layers.back() != op.layer)) {
      layers.push_back(op.layer);
    }
  }
  EXPECT_EQ(layers, std::vector<int64_t>{0});
  training.recompute.method = config::RecomputeMethod::kUniform;
  layers.clear();
  for (const Op& op : BuildStepGraph(model, training, 0).ops) {
    if (op.phase == Phase::kRecompute && (layers.empty() || layers.back() != op.layer)) {
      layers.push_back(op.layer);
    }
  }
  // Backward visits layers in reverse order, recomputing each before its backward.
  EXPECT_EQ(layers, (std::vector<int64_t>{3, 2, 1, 0}));
}

TEST(StepGraphTest, IdsAreIndicesAndDependenciesPointBackwards) {
  const config::ModelConfig model = TinyModelWithLayers(8);
  config::TrainingConfig training = Training(2, 2, 2, 4);
  training.parallel.virtual_stages = 2;
  training.sequence_parallel = true;
  training.data_parallel.distributed_optimizer = true;
  for (int64_t rank = 0; rank < training.parallel.world_size; ++rank) {
    const StepGraph graph = BuildStepGraph(model, training, rank);
    for (size_t i = 0; i < graph.ops.size(); ++i) {
      EXPECT_EQ(graph.ops[i].id, static_cast<int64_t>(i));
      for (const int64_t dep : graph.ops[i].deps) {
        EXPECT_GE(dep, 0);
        EXPECT_LT(dep, graph.ops[i].id);
      }
    }
  }
}

TEST(StepGraphTest, BackwardOfAMicroBatchDependsOnItsForward) {
  const StepGraph graph = BuildStepGraph(TinyModel(), Training(1, 2, 1, 2), 0);
  // The first backward op of micro-batch 0 (after its receive) lists the last forward op of
  // micro-batch 0 among its dependencies.
  int64_t last_forward = -1;
  for (const Op& op : graph.ops) {
    if (op.phase == Phase::kForward && op.micro_batch == 0 && !op.IsComm()) last_forward = op.id;
    if (op.phase == Phase::kBackward && op.micro_batch == 0 && op.collective != Collective::kRecv) {
      EXPECT_NE(std::find(op.deps.begin(), op.deps.end(), last_forward), op.deps.end());
      break;
    }
  }
}

TEST(StepGraphTest, BuildingTwiceGivesIdenticalGraphs) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  config::TrainingConfig training = Training(2, 4, 2, 8);
  training.parallel.expert = 4;
  training.parallel.expert_tensor = 1;  // d_e = 16/(1·4·4) = 1
  training.sequence_parallel = true;
  training.data_parallel.distributed_optimizer = true;
  const StepGraph first = BuildStepGraph(model, training, 9);
  const StepGraph second = BuildStepGraph(model, training, 9);
  EXPECT_EQ(first.ops, second.ops);
  EXPECT_EQ(first.pipeline_rank, second.pipeline_rank);
}

TEST(StepGraphTest, BuildsTheLastRankOfALargeMoeCluster) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-397B-A17B");
  config::TrainingConfig training = Training(2, 4, 512, 2);  // W = 4096, GBS 1024, m = 2
  training.parallel.expert = 32;
  training.parallel.expert_tensor = 1;
  training.sequence_parallel = true;
  training.batch.seq_length = 4096;
  training.moe.dispatcher = config::TokenDispatcher::kAllToAll;
  training.data_parallel.distributed_optimizer = true;
  // Speed is measured in bench/ (BM_BuildStepGraphLargeMoe), never asserted here.
  const StepGraph graph = BuildStepGraph(model, training, 4095);
  EXPECT_EQ(graph.pipeline_rank, 3);
  EXPECT_EQ(graph.num_micro_batches, 2);
}

TEST(StepGraphTest, MegatronFlopsOfDenseQwen3With8BParameters) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  const config::TrainingConfig training = Training(1, 1, 1, 1);  // GBS 1, s = 256
  // Megatron FLOPs: h = 4096, F = 12288, L = 36, q = 32·128 = 4096, kv = 8·128 = 1024, no gate, no
  // MTP; V = ceil(151936/128)·128 = 151,936. N = 256, Q = 256².
  const int64_t n = 256;
  const int64_t ffn = int64_t{6} * 4096 * (12288 * 3 * 36);
  const int64_t attention = int64_t{6} * (4096 * (4096 + 2 * 1024) + 4096 * 4096) * 36;
  const int64_t head = int64_t{6} * 4096 * 151936;
  const int64_t core = int64_t{256} * 256 * (6 * 4096) * 36;
  EXPECT_EQ(static_cast<int64_t>(MegatronModelFlopsPerStep(model, training)),
            n * (ffn + attention + head) + core);
}

// A plain GPT's GeLU MLP has Megatron's expansion factor 2 (training.py: 3 only with --swiglu).
TEST(StepGraphTest, MegatronFlopsOfPlainGptUseTheGeluExpansionFactor) {
  const config::ModelConfig model = io::LoadPreset("GPT-1.7B");
  const config::TrainingConfig training = Training(1, 1, 1, 1);  // GBS 1, s = 256
  // h = 2304, F = 4h = 9216, L = 24, 24 heads of 96 (MHA), tied; V = ceil(51200/128)·128.
  const int64_t n = 256;
  const int64_t ffn = int64_t{6} * 2304 * (9216 * 2 * 24);
  const int64_t attention = int64_t{6} * (2304 * (2304 + 2 * 2304) + 2304 * 2304) * 24;
  const int64_t head = int64_t{6} * 2304 * 51200;
  const int64_t core = int64_t{256} * 256 * (6 * 2304) * 24;
  EXPECT_EQ(static_cast<int64_t>(MegatronModelFlopsPerStep(model, training)),
            n * (ffn + attention + head) + core);
}

TEST(StepGraphTest, MegatronFlopsOfMoeCountsActiveExperts) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  const config::TrainingConfig training = Training(2, 1, 1, 4);  // GBS 4, s = 256
  // h = 2048, L = 48 MoE, F_e = 768, k = 8, no shared expert; q = 4096, kv = 4·128 = 512;
  // V = ceil(151936/256)·256 = 152,064 at t = 2. N = 4·256, Q = 4·256².
  const int64_t n = 4 * 256;
  const int64_t ffn = int64_t{6} * 2048 * ((768 * 8 * 3) * 48);
  const int64_t attention = int64_t{6} * (2048 * (4096 + 2 * 512) + 4096 * 2048) * 48;
  const int64_t head = int64_t{6} * 2048 * 152064;
  const int64_t core = int64_t{4} * 256 * 256 * (6 * 4096) * 48;
  EXPECT_EQ(static_cast<int64_t>(MegatronModelFlopsPerStep(model, training)),
            n * (ffn + attention + head) + core);
}

TEST(StepGraphTest, MegatronFlopsOfGdnHybridCountsTheMtpLayerAsLinearAttention) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  const config::TrainingConfig training = Training(1, 1, 1, 1);  // GBS 1, s = 256
  // h = 2048, L = 40 (every 4th full attention), D = 1 MTP, all MoE: F_e = 512, k = 8,
  // F_s = 512. N_moe = 40 + 1 = 41. L' = 41: softmax at i = 3, 7, …, 39 (10 layers); i = 40 has
  // (40+1) % 4 = 1 ≠ 0, so the MTP layer counts as GDN: N_la = 31, N_sa = 10.
  // Attention: q = 16·256 = 4096, kv = 2·256 = 512, q_gate = 4096.
  // GDN: qk = 16·128 = 2048, vd = 32·128 = 4096, H_v = 32, d_v = 128, K = 4;
  // in = 2·2048 + 2·4096 + 2·32 = 12,352; conv = 2·2048 + 4096 = 8192. V = 248,320 (t = 1).
  const int64_t n = 256;
  const int64_t ffn = int64_t{6} * 2048 * ((512 * 8 * 3 + 512 * 3) * 41);
  const int64_t gdn =
      int64_t{6} * (2048 * 12352 + 4 * 8192 + 4 * 32 * 128 * 128 + 2048 * 4096) * 31;
  const int64_t attention = int64_t{6} * (2048 * (4096 + 2 * 512 + 4096) + 4096 * 2048) * 10;
  const int64_t mtp = int64_t{6} * 1 * (3 * 2048 + 2 * 2048 * 2048);
  const int64_t head = int64_t{6} * 2048 * 248320 * 2;
  const int64_t core = int64_t{256} * 256 * (6 * 4096) * 10;
  EXPECT_EQ(static_cast<int64_t>(MegatronModelFlopsPerStep(model, training)),
            n * (ffn + gdn + attention + mtp + head) + core);
}

TEST(StepGraphTest, MegatronFlopsOfDeepSeekV3FollowTheMlaBranch) {
  const config::ModelConfig model = io::LoadPreset("DeepSeek-V3");
  const config::TrainingConfig training = Training(1, 1, 1, 1);  // GBS 1, s = 256
  // training.py num_floating_point_operations, multi_latent_attention branch: h = 7168, n = 128,
  // q_lora = 1536, kv_lora = 512, nope = 128, rope = 64, v = 128. L = 61 + 1 MTP: 3 dense
  // (F = 18432), 58 + 1 MoE (F_e = 2048, k = 8, F_s = 2048). V = ceil(129280/128)·128 = 129,280.
  const int64_t n = 256;
  const int64_t ffn = int64_t{6} * 7168 * (18432 * 3 * 3 + (2048 * 8 * 3 + 2048 * 3) * 59);
  const int64_t q_term = int64_t{1536} * (7168 + 128 * 192 + 1);
  const int64_t kv_term = int64_t{512} * (7168 + 128 * 256 + 1);
  const int64_t attention = 6 * (q_term + kv_term + 7168 * 64 + 128 * 128 * 7168) * int64_t{62};
  const int64_t mtp = int64_t{6} * (3 * 7168 + 2 * 7168 * 7168);
  const int64_t head = int64_t{6} * 7168 * 129280 * 2;
  // Core: 6·(n·(nope + rope)/2 + n·v/2) per token and key, 62 attention layers.
  const int64_t core = int64_t{256} * 256 * 6 * (128 * 192 / 2 + 128 * 128 / 2) * 62;
  EXPECT_EQ(static_cast<int64_t>(MegatronModelFlopsPerStep(model, training)),
            n * (ffn + attention + mtp + head) + core);
}

}  // namespace
}  // namespace trainscope::graph

namespace trainscope::graph {
namespace {

TEST(StepGraphTest, MegatronFlopsStayExactBeyondInt64) {
  // Qwen3.5-397B-A17B, GBS 65536 x 4096 tokens: ~6 x 17e9 x 2.7e8 ~ 2.7e19 FLOPs, above
  // 2^63 ~ 9.2e18. The formula is linear in GBS, so it must equal 16 x the value at GBS 4096
  // (which fits in int64) exactly.
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-397B-A17B");
  config::TrainingConfig training;
  training.parallel = {
      .world_size = 131072, .tensor = 4, .pipeline = 4, .expert = 64, .expert_tensor = 1};
  training.batch = {.micro_batch_size = 1, .global_batch_size = 65536, .seq_length = 4096};
  const long double large = MegatronModelFlopsPerStep(model, training);
  training.batch.global_batch_size = 4096;
  const long double small = MegatronModelFlopsPerStep(model, training);
  EXPECT_GT(large, 9223372036854775807.0L);
  EXPECT_EQ(large, 16 * small);
}

// Qwen3-8B at t = 2, d = 4 (W = 8), m = 2 under Megatron-FSDP with `strategy` (megatron_fsdp.py).
config::TrainingConfig FsdpTraining(config::FsdpStrategy strategy) {
  config::TrainingConfig training = Training(2, 1, 4, 2);
  training.data_parallel.distributed_optimizer = true;
  training.data_parallel.megatron_fsdp = true;
  training.data_parallel.fsdp_strategy = strategy;
  return training;
}

// Qwen3-8B, one decoder layer at t = 2: h = 4096, q = 32·128 = 4096, kv = 8·128 = 1024,
// F = 12288. qkv (4096+2·1024)·4096/2, proj 4096·4096/2, fc1 2·12288·4096/2, fc2 4096·12288/2,
// replicated input/pre-MLP norms 2·4096 and q/k norms 2·128.
constexpr int64_t kQwen3With8BLayerNumel = (4096 + 2 * 1024) * 4096 / 2 + 4096 * 4096 / 2 +
                                           2 * 12288 * 4096 / 2 + 4096 * 12288 / 2 + 2 * 4096 +
                                           2 * 128;  // 96,477,440
// Root unit: untied embedding and output layer, V = ceil(151936/256)·256 = 152,064 rows split
// over t = 2, plus the final norm.
constexpr int64_t kQwen3With8BRootNumel = 2 * (152064 / 2) * 4096 + 4096;

std::vector<Op> Matching(const StepGraph& graph, Collective collective, int64_t layer,
                         int64_t micro_batch) {
  std::vector<Op> out;
  for (const Op& op : graph.ops) {
    if (op.collective == collective && op.layer == layer && op.micro_batch == micro_batch) {
      out.push_back(op);
    }
  }
  return out;
}

TEST(StepGraphTest, MegatronFsdpGathersEachLayerTwiceAndReduceScattersItOncePerMicroBatch) {
  const StepGraph graph = BuildStepGraph(io::LoadPreset("Qwen3-8B"),
                                         FsdpTraining(config::FsdpStrategy::kOptimGradsParams), 0);
  // optim_grads_params: AG before forward, AG before backward, RS after backward; bf16
  // params and grad-comm dtype `auto` = bf16, whatever grad_reduce_in_fp32 says.
  for (int64_t layer = 0; layer < 36; ++layer) {
    for (int64_t micro_batch = 0; micro_batch < 2; ++micro_batch) {
      const std::vector<Op> ag = Matching(graph, Collective::kAllGather, layer, micro_batch);
      const std::vector<Op> rs = Matching(graph, Collective::kReduceScatter, layer, micro_batch);
      // Without SP and with g = 8 >= t the layer has no TP all-gather or reduce-scatter.
      ASSERT_EQ(ag.size(), 2u);
      ASSERT_EQ(rs.size(), 1u);
      EXPECT_EQ(ag[0].phase, Phase::kForward);
      EXPECT_EQ(ag[1].phase, Phase::kBackward);
      EXPECT_EQ(rs[0].phase, Phase::kBackward);
      EXPECT_EQ(rs[0].name, "fsdp.grad_reduce_scatter");
      for (const Op& op : {ag[0], ag[1], rs[0]}) {
        EXPECT_EQ(op.group, GroupKind::kDpCp);
        EXPECT_EQ(op.group_size, 4);
        EXPECT_EQ(op.message_bytes, kQwen3With8BLayerNumel * 2);
      }
    }
  }
  EXPECT_TRUE(Named(graph, "dp.grad_reduce_scatter").empty());
  EXPECT_TRUE(Named(graph, "dp.param_all_gather").empty());
  EXPECT_EQ(Named(graph, "fsdp.param_all_gather").size(), 36u * 2 * 2);  // none after the step
}

TEST(StepGraphTest, MegatronFsdpGathersJustBeforeTheLayerAndReducesJustAfterItsBackward) {
  const StepGraph graph = BuildStepGraph(io::LoadPreset("Qwen3-8B"),
                                         FsdpTraining(config::FsdpStrategy::kOptimGradsParams), 0);
  // megatron_fsdp.py hooks: pre-forward unshard, pre-backward unshard, post-backward reduce.
  // Layer 5, micro-batch 1: the forward AG is followed by the layer's first forward op, the
  // backward AG by its first backward op, and the RS follows its last backward op.
  std::vector<const Op*> layer_ops;
  for (const Op& op : graph.ops) {
    if (op.layer == 5 && op.micro_batch == 1) layer_ops.push_back(&op);
  }
  ASSERT_GE(layer_ops.size(), 4u);
  EXPECT_EQ(layer_ops.front()->name, "fsdp.param_all_gather");
  EXPECT_EQ(layer_ops.back()->name, "fsdp.grad_reduce_scatter");
  size_t backward_gather = 0;
  for (size_t i = 1; i < layer_ops.size(); ++i) {
    if (layer_ops[i]->phase == Phase::kBackward && layer_ops[i - 1]->phase == Phase::kForward) {
      backward_gather = i;
    }
  }
  EXPECT_EQ(layer_ops[backward_gather]->name, "fsdp.param_all_gather");
  EXPECT_EQ(layer_ops[1]->deps, std::vector<int64_t>{layer_ops[0]->id});
}

TEST(StepGraphTest, MegatronFsdpGathersTheRootUnitBeforeTheFirstForwardAndReducesItAtTheEnd) {
  const StepGraph graph = BuildStepGraph(io::LoadPreset("Qwen3-8B"),
                                         FsdpTraining(config::FsdpStrategy::kOptimGradsParams), 0);
  ASSERT_FALSE(graph.ops.empty());
  EXPECT_EQ(graph.ops.front().name, "fsdp.root_param_all_gather");
  EXPECT_EQ(graph.ops.front().message_bytes, kQwen3With8BRootNumel * 2);
  const std::vector<Op> rs = Named(graph, "fsdp.root_grad_reduce_scatter");
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].phase, Phase::kGradSync);
  EXPECT_EQ(rs[0].micro_batch, -1);
  EXPECT_EQ(rs[0].message_bytes, kQwen3With8BRootNumel * 2);
}

TEST(StepGraphTest, MegatronFsdpGathersExpertParametersOverExpertDataParallel) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  config::TrainingConfig training = Training(2, 1, 8, 1);
  training.parallel.expert = 8;
  training.parallel.expert_tensor = 1;
  training.sequence_parallel = true;
  training.moe.dispatcher = config::TokenDispatcher::kAllToAll;
  training.data_parallel.distributed_optimizer = true;
  training.data_parallel.megatron_fsdp = true;
  const StepGraph graph = BuildStepGraph(model, training, 0);
  // W = 16, d_e = 16/(1·8·1) = 2: 128/8 = 16 local experts, each fc1 2·768·2048 + fc2 2048·768.
  const int64_t expert = int64_t{16} * (2 * 768 * 2048 + 2048 * 768);
  // Dense part at t = 2 over d·c = 8: qkv (4096+2·512)·2048/2, proj 2048·4096/2, replicated
  // router 128·2048, norms 2·2048 + 2·128.
  const int64_t dense =
      (4096 + 2 * 512) * 2048 / 2 + 2048 * 4096 / 2 + 128 * 2048 + 2 * 2048 + 2 * 128;
  const std::vector<Op> ag = Named(graph, "fsdp.expert_param_all_gather");
  ASSERT_EQ(ag.size(), 48u * 2);
  EXPECT_EQ(ag[0].group, GroupKind::kExpertDp);
  EXPECT_EQ(ag[0].group_size, 2);
  EXPECT_EQ(ag[0].message_bytes, expert * 2);
  const std::vector<Op> rs = Named(graph, "fsdp.expert_grad_reduce_scatter");
  ASSERT_EQ(rs.size(), 48u);
  EXPECT_EQ(rs[0].message_bytes, expert * 2);
  const std::vector<Op> dense_ag = Named(graph, "fsdp.param_all_gather");
  ASSERT_EQ(dense_ag.size(), 48u * 2);
  EXPECT_EQ(dense_ag[0].group_size, 8);
  EXPECT_EQ(dense_ag[0].message_bytes, dense * 2);
}

TEST(StepGraphTest, MegatronFsdpOptimGradsReduceScattersEveryMicroBatchWithoutGathering) {
  const StepGraph graph = BuildStepGraph(io::LoadPreset("Qwen3-8B"),
                                         FsdpTraining(config::FsdpStrategy::kOptimGrads), 0);
  // No parameter gathers during the passes (and, without SP, no TP all-gathers either).
  for (int64_t micro_batch = 0; micro_batch < 2; ++micro_batch) {
    EXPECT_EQ(CountOps(graph, Collective::kAllGather, Phase::kForward, micro_batch), 0);
    EXPECT_EQ(CountOps(graph, Collective::kAllGather, Phase::kBackward, micro_batch), 0);
  }
  const std::vector<Op> rs = Named(graph, "fsdp.grad_reduce_scatter");
  ASSERT_EQ(rs.size(), 36u * 2);
  EXPECT_EQ(rs[0].micro_batch, 0);
  EXPECT_EQ(rs[0].message_bytes, kQwen3With8BLayerNumel * 2);
  EXPECT_TRUE(Named(graph, "fsdp.root_param_all_gather").empty());
  // Each rank holds all parameters but updates a shard: one AG of the whole buffer after the
  // step, (36·layer + root)·2 bytes.
  const std::vector<Op> ag = Named(graph, "fsdp.param_all_gather");
  ASSERT_EQ(ag.size(), 1u);
  EXPECT_EQ(ag[0].phase, Phase::kOptimizer);
  EXPECT_EQ(ag[0].message_bytes, (36 * kQwen3With8BLayerNumel + kQwen3With8BRootNumel) * 2);
}

TEST(StepGraphTest, MegatronFsdpNoShardAllReducesEachBufferOnceAtTheEnd) {
  const StepGraph graph =
      BuildStepGraph(io::LoadPreset("Qwen3-8B"), FsdpTraining(config::FsdpStrategy::kNoShard), 0);
  const std::vector<Op> ar = Named(graph, "fsdp.grad_all_reduce");
  ASSERT_EQ(ar.size(), 1u);  // one chunk, dense buffer only
  EXPECT_EQ(ar[0].phase, Phase::kGradSync);
  EXPECT_EQ(ar[0].group, GroupKind::kDpCp);
  EXPECT_EQ(ar[0].message_bytes, (36 * kQwen3With8BLayerNumel + kQwen3With8BRootNumel) * 2);
  for (const Op& op : graph.ops) {
    EXPECT_FALSE(op.name.starts_with("fsdp.") && op.name != "fsdp.grad_all_reduce") << op.name;
  }
  EXPECT_TRUE(Named(graph, "dp.").empty());
}

TEST(StepGraphTest, MegatronFsdpOptimReduceScattersEachBufferOnceAndGathersAfterTheStep) {
  const StepGraph graph =
      BuildStepGraph(io::LoadPreset("Qwen3-8B"), FsdpTraining(config::FsdpStrategy::kOptim), 0);
  const int64_t buffer = 36 * kQwen3With8BLayerNumel + kQwen3With8BRootNumel;
  const std::vector<Op> rs = Named(graph, "fsdp.grad_reduce_scatter");
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].micro_batch, -1);
  EXPECT_EQ(rs[0].message_bytes, buffer * 2);
  const std::vector<Op> ag = Named(graph, "fsdp.param_all_gather");
  ASSERT_EQ(ag.size(), 1u);
  EXPECT_EQ(ag[0].phase, Phase::kOptimizer);
  // Optimizer shard ceil(buffer/4) parameters at 14 FLOPs each.
  const std::vector<Op> step = Named(graph, "optimizer.step");
  ASSERT_EQ(step.size(), 1u);
  EXPECT_EQ(step[0].flops, (buffer + 3) / 4 * 14);
}

// The same optimizer shard n = ceil(buffer/4) offloaded whole (HybridDeviceOptimizer.step):
// grad D2H n·4 B (fp32 pinned buffer), CPU Adam n·14 FLOPs, param H2D n·2 B (bf16), no GPU step.
// With --overlap-cpu-optimizer-d2h-h2d one CPU op carries the D2H bytes it overlaps.
TEST(StepGraphTest, CpuOffloadedOptimizerCopiesGradsDownAndParamsUp) {
  config::TrainingConfig training = FsdpTraining(config::FsdpStrategy::kOptim);
  training.optimizer.cpu_offload = true;
  const int64_t n = (36 * kQwen3With8BLayerNumel + kQwen3With8BRootNumel + 3) / 4;
  const StepGraph serial = BuildStepGraph(io::LoadPreset("Qwen3-8B"), training, 0);
  ASSERT_EQ(Named(serial, "optimizer.grad_d2h").size(), 1u);
  EXPECT_EQ(Named(serial, "optimizer.grad_d2h")[0].bytes, 4 * n);
  EXPECT_EQ(Named(serial, "optimizer.grad_d2h")[0].role.kind, OpKind::kHostTransfer);
  ASSERT_EQ(Named(serial, "optimizer.cpu_step").size(), 1u);
  EXPECT_EQ(Named(serial, "optimizer.cpu_step")[0].flops, 14 * n);
  EXPECT_EQ(Named(serial, "optimizer.cpu_step")[0].bytes, 0);
  ASSERT_EQ(Named(serial, "optimizer.param_h2d").size(), 1u);
  EXPECT_EQ(Named(serial, "optimizer.param_h2d")[0].bytes, 2 * n);
  EXPECT_TRUE(Named(serial, "optimizer.step").empty());

  training.optimizer.overlap_d2h_h2d = true;
  const StepGraph overlapped = BuildStepGraph(io::LoadPreset("Qwen3-8B"), training, 0);
  EXPECT_TRUE(Named(overlapped, "optimizer.grad_d2h").empty());
  ASSERT_EQ(Named(overlapped, "optimizer.cpu_step").size(), 1u);
  EXPECT_EQ(Named(overlapped, "optimizer.cpu_step")[0].bytes, 4 * n);
}

// SGD with momentum: 7 FLOPs per parameter (unscale 1, weight decay 2, momentum 2, update 2).
TEST(StepGraphTest, SgdStepCountsSevenFlopsPerParameter) {
  config::TrainingConfig training = FsdpTraining(config::FsdpStrategy::kOptim);
  training.optimizer.kind = config::OptimizerKind::kSgd;
  const int64_t n = (36 * kQwen3With8BLayerNumel + kQwen3With8BRootNumel + 3) / 4;
  const std::vector<Op> step =
      Named(BuildStepGraph(io::LoadPreset("Qwen3-8B"), training, 0), "optimizer.step");
  ASSERT_EQ(step.size(), 1u);
  EXPECT_EQ(step[0].flops, 7 * n);
}

}  // namespace
}  // namespace trainscope::graph
