// Per-layer ops against Megatron-LM d98e8a64 (tensor_parallel/, transformer/moe/, ssm/) and TE
// context_parallel.py, with the sizes of docs/workload.md. Every expected size is written out here
// from those formulas, not taken from the code.
#include "trainscope/graph/layer_ops.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "trainscope/io/hf_config_loader.h"

namespace trainscope::graph {
namespace {

using config::GroupKind;

constexpr int64_t kMiB = 1024 * 1024;
constexpr int64_t kKiB = 1024;

config::TrainingConfig Training(int64_t tp, bool sp) {
  config::TrainingConfig training;
  training.parallel.tensor = tp;
  training.parallel.world_size = tp;
  training.sequence_parallel = sp;
  training.batch.seq_length = 4096;
  training.batch.micro_batch_size = 1;
  training.sequence_layout = config::SequenceLayout::kBshd;
  return training;
}

// Worked example, Qwen3-30B-A3B: t = 2 with SP, e = 8, u = 1, alltoall, fp32 router.
config::TrainingConfig WorkedExampleTraining() {
  config::TrainingConfig training = Training(2, true);
  training.parallel.world_size = 16;
  training.parallel.expert = 8;
  training.parallel.expert_tensor = 1;
  training.moe.dispatcher = config::TokenDispatcher::kAllToAll;
  training.moe.router_dtype = config::RouterDtype::kFp32;
  return training;
}

std::vector<Op> Filter(const std::vector<Op>& ops, GroupKind group) {
  std::vector<Op> out;
  for (const Op& op : ops) {
    if (op.IsComm() && op.group == group) out.push_back(op);
  }
  return out;
}

// TP collectives of the column/row pairs (the g < t KV gather excluded).
std::vector<Op> PairTpOps(const std::vector<Op>& ops) {
  std::vector<Op> out;
  for (const Op& op : Filter(ops, GroupKind::kTp)) {
    if (op.name.find("qkv_gather") == std::string::npos) out.push_back(op);
  }
  return out;
}

std::vector<Op> CommOps(const std::vector<Op>& ops) {
  std::vector<Op> out;
  for (const Op& op : ops) {
    if (op.IsComm()) out.push_back(op);
  }
  return out;
}

// A copy, so callers may pass the temporary vector a builder returns.
Op Named(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (op.name == name) return op;
  }
  ADD_FAILURE() << "no op named " << name;
  return Op{};
}

bool HasOp(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (op.name == name) return true;
  }
  return false;
}

std::vector<Collective> Kinds(const std::vector<Op>& ops) {
  std::vector<Collective> kinds;
  for (const Op& op : ops) kinds.push_back(op.collective);
  return kinds;
}

const Collective kAg = Collective::kAllGather;
const Collective kRs = Collective::kReduceScatter;
const Collective kAr = Collective::kAllReduce;

// Per column/row pair, SP gives fwd AG + RS and bwd AG, AG, RS, all of A = s_c·b·h·2.
TEST(LayerOpsTest, DenseQwen3LayerHasFourForwardAndSixBackwardTpOpsOfSizeAWithSp) {
  for (const char* name :
       {"Qwen3-0.6B", "Qwen3-1.7B", "Qwen3-4B", "Qwen3-8B", "Qwen3-14B", "Qwen3-32B"}) {
    const config::ModelConfig model = io::LoadPreset(name);
    for (int64_t tp : {2, 4, 8}) {
      SCOPED_TRACE(std::string(name) + " t=" + std::to_string(tp));
      const config::TrainingConfig training = Training(tp, true);
      const LayerOpContext context = MakeLayerOpContext(model, training);
      const int64_t a = 4096 * 1 * model.hidden_size * 2;
      const std::vector<Op> fwd = PairTpOps(DecoderLayerForward(context, 0));
      const std::vector<Op> bwd = PairTpOps(DecoderLayerBackward(context, 0));
      EXPECT_EQ(Kinds(fwd), (std::vector<Collective>{kAg, kRs, kAg, kRs}));
      EXPECT_EQ(Kinds(bwd), (std::vector<Collective>{kAg, kAg, kRs, kAg, kAg, kRs}));
      for (const Op& op : fwd) EXPECT_EQ(op.message_bytes, a) << op.name;
      for (const Op& op : bwd) EXPECT_EQ(op.message_bytes, a) << op.name;
      for (const Op& op : bwd) EXPECT_EQ(op.group_size, tp) << op.name;
    }
  }
}

// Without SP: one AR of A forward (row output) and one backward (column dgrad) per pair.
TEST(LayerOpsTest, DenseQwen3LayerHasOneAllReducePerPairAndPhaseWithoutSp) {
  for (const char* name :
       {"Qwen3-0.6B", "Qwen3-1.7B", "Qwen3-4B", "Qwen3-8B", "Qwen3-14B", "Qwen3-32B"}) {
    const config::ModelConfig model = io::LoadPreset(name);
    for (int64_t tp : {2, 4, 8}) {
      SCOPED_TRACE(std::string(name) + " t=" + std::to_string(tp));
      const config::TrainingConfig training = Training(tp, false);
      const LayerOpContext context = MakeLayerOpContext(model, training);
      const int64_t a = 4096 * model.hidden_size * 2;
      const std::vector<Op> fwd = PairTpOps(DecoderLayerForward(context, 1));
      const std::vector<Op> bwd = PairTpOps(DecoderLayerBackward(context, 1));
      EXPECT_EQ(Kinds(fwd), (std::vector<Collective>{kAr, kAr}));
      EXPECT_EQ(Kinds(bwd), (std::vector<Collective>{kAr, kAr}));
      for (const Op& op : fwd) EXPECT_EQ(op.message_bytes, a);
      for (const Op& op : bwd) EXPECT_EQ(op.message_bytes, a);
    }
  }
}

// Qwen3 MoE layers have attention only as a TP pair (no shared expert): 2 fwd, 3 bwd of A.
TEST(LayerOpsTest, Qwen3MoeLayerHasAttentionTpOpsOnlyWithSp) {
  for (const char* name : {"Qwen3-30B-A3B", "Qwen3-235B-A22B"}) {
    const config::ModelConfig model = io::LoadPreset(name);
    for (int64_t tp : {2, 4, 8}) {
      SCOPED_TRACE(std::string(name) + " t=" + std::to_string(tp));
      const config::TrainingConfig training = Training(tp, true);
      const LayerOpContext context = MakeLayerOpContext(model, training);
      const int64_t a = 4096 * model.hidden_size * 2;
      const std::vector<Op> fwd = PairTpOps(DecoderLayerForward(context, 0));
      const std::vector<Op> bwd = PairTpOps(DecoderLayerBackward(context, 0));
      EXPECT_EQ(Kinds(fwd), (std::vector<Collective>{kAg, kRs}));
      EXPECT_EQ(Kinds(bwd), (std::vector<Collective>{kAg, kAg, kRs}));
      for (const Op& op : fwd) EXPECT_EQ(op.message_bytes, a);
      for (const Op& op : bwd) EXPECT_EQ(op.message_bytes, a);
    }
  }
}

// KV gather, Qwen3-30B-A3B (g = 4) at t = 8: s·b·(q + 2kv)·2 = 4096·(4096 + 2·512)·2 = 41,943,040.
TEST(LayerOpsTest, GathersQkvWhenTensorParallelExceedsKvHeads) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  const config::TrainingConfig training = Training(8, true);
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const Op& fwd = Named(DecoderLayerForward(context, 0), "attention.qkv_gather");
  EXPECT_EQ(fwd.collective, kAg);
  EXPECT_EQ(fwd.message_bytes, 41'943'040);
  const Op& bwd = Named(DecoderLayerBackward(context, 0), "attention.qkv_gather.rs_grad");
  EXPECT_EQ(bwd.collective, kRs);
  EXPECT_EQ(bwd.message_bytes, 41'943'040);
  // At t = 4 = g there is no gather.
  const config::TrainingConfig t4 = Training(4, true);
  EXPECT_FALSE(
      HasOp(DecoderLayerForward(MakeLayerOpContext(model, t4), 0), "attention.qkv_gather"));
}

// Qwen3.5-9B (n = 16, g = 4, d_h = 256, output gate) at t = 8, layer 3 (full attention):
// q = 4096, kv = 1024, q_gate = 4096: 4096·(4096 + 2048 + 4096)·2 = 83,886,080.
TEST(LayerOpsTest, GatedAttentionGatherIncludesTheGate) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-9B");
  const config::TrainingConfig training = Training(8, true);
  const LayerOpContext context = MakeLayerOpContext(model, training);
  EXPECT_EQ(Named(DecoderLayerForward(context, 3), "attention.qkv_gather").message_bytes,
            83'886'080);
}

// slime's HuggingfaceAttention (slime_plugins/models/hf_attention.py) gathers the sequence over
// TP (SP) and CP and runs the whole GDN on every rank. Qwen3.5-35B-A3B layer 0 (GDN): h 2048,
// key heads 16·128 = 2048, value heads 32·128 = 4096, in_proj width 2·2048 + 2·4096 + 2·32 =
// 12352. At s 4096, t 2, c 4: slime's in_proj is 2·4096·12352·2048 FLOPs; Megatron-Core's
// sharded one 2·(4096/4)·(12352/2)·2048, t·c = 8 times less. The SP gather moves A = s_c·h·2 =
// 1024·2048·2 bytes, the CP gather (full buffer) c·A.
TEST(LayerOpsTest, SlimeDuplicatesTheGatedDeltaNetOnEveryTensorAndContextRank) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  config::TrainingConfig core;
  core.parallel = {.world_size = 8, .tensor = 2, .context = 4, .expert = 8, .expert_tensor = 1};
  core.sequence_parallel = true;
  config::TrainingConfig slime = core;
  slime.framework.framework = config::Framework::kSlime;
  const std::vector<Op> sharded = DecoderLayerForward(MakeLayerOpContext(model, core), 0);
  const std::vector<Op> duplicated = DecoderLayerForward(MakeLayerOpContext(model, slime), 0);
  const int64_t whole_in_proj = int64_t{2} * 4096 * 12352 * 2048;
  EXPECT_EQ(Named(duplicated, "gdn.in_proj").flops, whole_in_proj);
  EXPECT_EQ(Named(sharded, "gdn.in_proj").flops, whole_in_proj / 8);
  // The kernel count is rounded to whole FLOPs, so the ratio is 8 to within rounding.
  EXPECT_NEAR(static_cast<double>(Named(duplicated, "gdn.kernel").flops) /
                  static_cast<double>(Named(sharded, "gdn.kernel").flops),
              8.0, 1e-8);
  const Op sp_gather = Named(duplicated, "gdn.sp.all_gather");
  EXPECT_EQ(sp_gather.group, GroupKind::kTp);
  EXPECT_EQ(sp_gather.message_bytes, 1024 * 2048 * 2);
  const Op cp_gather = Named(duplicated, "gdn.cp.all_gather");
  EXPECT_EQ(cp_gather.group, GroupKind::kCp);
  EXPECT_EQ(cp_gather.message_bytes, 4 * 1024 * 2048 * 2);
  // The backward only splits: no GDN collectives, and twice the forward kernel work.
  const std::vector<Op> backward = DecoderLayerBackward(MakeLayerOpContext(model, slime), 0);
  for (const Op& op : backward) {
    EXPECT_FALSE(op.IsComm() && op.role.block == OpBlock::kGdn) << op.name;
  }
  EXPECT_EQ(Named(backward, "gdn.kernel.backward").flops,
            2 * Named(duplicated, "gdn.kernel").flops);
}

// --deterministic-mode: Megatron-Core's torch_chunk_gated_delta_rule (gdn.py:422-527) instead of
// FLA. Qwen3.5-35B-A3B layer 0 at t 2, b 4, s 4096: 4·32/2 = 64 (sequence, value head) pairs of
// L = 4096 positions, N = 64 chunks of C = 64, d_k = d_v = 128. Counted by hand from that code:
//   FLOPs per pair = L·(6C·d_k + 4C·d_v + 6·d_k·d_v) + N·(C−1)C(2C−1)/3
//                  = 4096·180,224 + 64·170,688 = 749,121,536
//   bytes per pair = L·(116·d_k + 106·d_v + 132·C) + N·32·d_k·d_v + N·[18(C−1)C + 10(C−1)C(2C−1)/3]
//                  = 4096·36,864 + 33,554,432 + 64·1,779,456 = 298,434,560
//   launches = 41 + 6(C−1) + 18N = 1571 eager ops; backward twice each.
TEST(LayerOpsTest, DeterministicModeRunsTheTorchNativeChunkLoop) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  config::TrainingConfig training;
  training.parallel = {.world_size = 8, .tensor = 2, .expert = 8, .expert_tensor = 1};
  training.sequence_parallel = true;
  training.batch.micro_batch_size = 4;
  training.batch.seq_length = 4096;
  training.deterministic = true;
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> forward = DecoderLayerForward(context, 0);
  const Op torch = Named(forward, "gdn.torch_chunk");
  EXPECT_EQ(torch.role.kind, OpKind::kGdnTorchKernel);
  EXPECT_EQ(torch.flops, int64_t{64} * 749'121'536);
  EXPECT_EQ(torch.bytes, int64_t{64} * 298'434'560);
  EXPECT_EQ(torch.num_launches, 1571);
  for (const Op& op : forward) EXPECT_NE(op.name, "gdn.kernel");
  // F.conv1d path: 3 launches (contiguous copy, conv, SiLU).
  EXPECT_EQ(Named(forward, "gdn.conv1d").num_launches, 3);
  const Op backward = Named(DecoderLayerBackward(context, 0), "gdn.torch_chunk.backward");
  EXPECT_EQ(backward.flops, 2 * torch.flops);
  EXPECT_EQ(backward.num_launches, 2 * 1571);
}

// Host launches per op (graph/op_sink.h KernelLaunches): a TE GEMM module call counts 3, a
// grouped GEMM 3 plus one per local expert, FLA's delta rule 6 forward and 9 backward Triton
// kernels, communication none. Qwen3.5-35B-A3B at EP 8: 256/8 = 32 local experts.
TEST(LayerOpsTest, OpsCarryTheirHostLaunches) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  config::TrainingConfig training;
  training.parallel = {.world_size = 8, .tensor = 2, .expert = 8, .expert_tensor = 1};
  training.sequence_parallel = true;
  training.moe.grouped_gemm = true;
  training.moe.dispatcher = config::TokenDispatcher::kAllToAll;
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> forward = DecoderLayerForward(context, 0);
  EXPECT_EQ(Named(forward, "gdn.in_proj").num_launches, 3);
  EXPECT_EQ(Named(forward, "gdn.kernel").num_launches, 6);
  EXPECT_EQ(Named(forward, "moe.experts.linear_fc1").num_launches, 3 + 32);
  EXPECT_EQ(Named(DecoderLayerBackward(context, 0), "gdn.kernel.backward").num_launches, 9);
  for (const Op& op : forward) {
    if (op.IsComm()) {
      EXPECT_EQ(op.num_launches, 0) << op.name;
    }
  }
}

// Example: A = 16 MiB, dispatch A2A 64 MiB, probs 64 KiB (fp32), metadata AG 8 KiB, aux AR 1 KiB.
TEST(LayerOpsTest, ReproducesWorkedExampleAllToAllSizes) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  const config::TrainingConfig training = WorkedExampleTraining();
  const LayerOpContext context = MakeLayerOpContext(model, training);
  EXPECT_EQ(context.ActivationBytes(), 16 * kMiB);
  const std::vector<Op> fwd = DecoderLayerForward(context, 0);
  EXPECT_EQ(Named(fwd, "moe.dispatch.a2a_tokens").message_bytes, 64 * kMiB);
  EXPECT_EQ(Named(fwd, "moe.dispatch.a2a_tokens").group, GroupKind::kEp);
  EXPECT_EQ(Named(fwd, "moe.dispatch.a2a_tokens").group_size, 8);
  EXPECT_EQ(Named(fwd, "moe.combine.a2a_tokens").message_bytes, 64 * kMiB);
  EXPECT_EQ(Named(fwd, "moe.dispatch.a2a_probs").message_bytes, 64 * kKiB);
  EXPECT_EQ(Named(fwd, "moe.dispatch.metadata_ag").message_bytes, 8 * kKiB);
  EXPECT_EQ(Named(fwd, "moe.dispatch.metadata_ag").group, GroupKind::kTpEp);
  const Op& aux = Named(fwd, "moe.router.aux_loss_ar");
  EXPECT_EQ(aux.message_bytes, 1 * kKiB);
  EXPECT_EQ(aux.group, GroupKind::kTpCp);
  EXPECT_EQ(aux.group_size, 2);
  EXPECT_TRUE(Filter(fwd, GroupKind::kEtp).empty());  // u = 1
}

// alltoall backward: A2A of the combine grad, probs grad and tokens grad, same volumes as forward.
TEST(LayerOpsTest, AllToAllBackwardMovesTheSameVolumeAsForward) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  const config::TrainingConfig training = WorkedExampleTraining();
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> fwd = Filter(DecoderLayerForward(context, 0), GroupKind::kEp);
  const std::vector<Op> bwd = Filter(DecoderLayerBackward(context, 0), GroupKind::kEp);
  ASSERT_EQ(bwd.size(), 3u);
  int64_t fwd_bytes = 0, bwd_bytes = 0;
  for (const Op& op : fwd) fwd_bytes += op.message_bytes;
  for (const Op& op : bwd) bwd_bytes += op.message_bytes;
  EXPECT_EQ(fwd_bytes, 128 * kMiB + 64 * kKiB);  // dispatch + combine + probs
  EXPECT_EQ(bwd_bytes, fwd_bytes);
}

TEST(LayerOpsTest, ActivationDtypeRouterSendsBf16Probs) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  config::TrainingConfig training = WorkedExampleTraining();
  training.moe.router_dtype = config::RouterDtype::kActivation;
  const LayerOpContext context = MakeLayerOpContext(model, training);
  // T·k·2 = 2048·8·2 = 32 KiB.
  EXPECT_EQ(Named(DecoderLayerForward(context, 0), "moe.dispatch.a2a_probs").message_bytes,
            32 * kKiB);
}

// u = 2: ETP AG of u·R·h·2 = 2·16384·2048·2 = 128 MiB, probs u·R·4 = 128 KiB; RS of the
// expert output in the probs dtype u·R·h·4 = 256 MiB; metadata AG u·e·E·8 = 16 KiB.
TEST(LayerOpsTest, ExpertTensorParallelAddsGatherAndScatter) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  config::TrainingConfig training = WorkedExampleTraining();
  training.parallel.expert_tensor = 2;
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> fwd = DecoderLayerForward(context, 0);
  EXPECT_EQ(Named(fwd, "moe.dispatch.ag_tokens").message_bytes, 128 * kMiB);
  EXPECT_EQ(Named(fwd, "moe.dispatch.ag_probs").message_bytes, 128 * kKiB);
  EXPECT_EQ(Named(fwd, "moe.combine.rs_output").message_bytes, 256 * kMiB);
  EXPECT_EQ(Named(fwd, "moe.dispatch.metadata_ag").message_bytes, 16 * kKiB);
  const std::vector<Op> bwd = Filter(DecoderLayerBackward(context, 0), GroupKind::kEtp);
  EXPECT_EQ(Kinds(bwd), (std::vector<Collective>{kAg, kRs, kRs}));
}

TEST(LayerOpsTest, SingleExpertRankHasNoDispatcherCommunication) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  config::TrainingConfig training = WorkedExampleTraining();
  training.parallel.expert = 1;
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> fwd = DecoderLayerForward(context, 0);
  EXPECT_TRUE(Filter(fwd, GroupKind::kEp).empty());
  EXPECT_FALSE(HasOp(fwd, "moe.dispatch.metadata_ag"));
}

// cf = 1.5: C = ceil(2048·8/128·1.5) = 192, C·E = 24,576 rows, ·2048·2 = 96 MiB; fixed splits,
// so no metadata AG.
TEST(LayerOpsTest, CapacityPaddingSendsCapacityTimesExperts) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  config::TrainingConfig training = WorkedExampleTraining();
  training.moe.capacity_factor = 1.5;
  training.moe.pad_expert_input_to_capacity = true;
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> fwd = DecoderLayerForward(context, 0);
  EXPECT_EQ(Named(fwd, "moe.dispatch.a2a_tokens").message_bytes, 96 * kMiB);
  EXPECT_FALSE(HasOp(fwd, "moe.dispatch.metadata_ag"));
}

// allgather with G = u·e = 8, T = 2048, E = 128, fp32 probs: routing map G·T·E = 2 MiB,
// probs 8 MiB, hidden G·T·h·2 = 64 MiB, RS G·T·h·4 = 128 MiB; backward AG 128 MiB, RS 64 MiB,
// RS 8 MiB.
TEST(LayerOpsTest, AllGatherDispatcherSizesFollowTheTable) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  config::TrainingConfig training = WorkedExampleTraining();
  training.moe.dispatcher = config::TokenDispatcher::kAllGather;
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> fwd = Filter(DecoderLayerForward(context, 0), GroupKind::kTpEp);
  const std::vector<Op> bwd = Filter(DecoderLayerBackward(context, 0), GroupKind::kTpEp);
  ASSERT_EQ(fwd.size(), 4u);
  EXPECT_EQ(fwd[0].message_bytes, 2 * kMiB);
  EXPECT_EQ(fwd[1].message_bytes, 8 * kMiB);
  EXPECT_EQ(fwd[2].message_bytes, 64 * kMiB);
  EXPECT_EQ(fwd[3].message_bytes, 128 * kMiB);
  EXPECT_EQ(fwd[3].collective, kRs);
  ASSERT_EQ(bwd.size(), 3u);
  EXPECT_EQ(Kinds(bwd), (std::vector<Collective>{kAg, kRs, kRs}));
  EXPECT_EQ(bwd[0].message_bytes, 128 * kMiB);
  EXPECT_EQ(bwd[1].message_bytes, 64 * kMiB);
  EXPECT_EQ(bwd[2].message_bytes, 8 * kMiB);
}

// flex: D = 8·[1 − C(112,8)/C(128,8)] = 5.33936 (evaluated with Python's math.comb), rows =
// round(2048·D) = 10,935; dispatch rows carry 2048·2 + 8·(4 + 8) = 4192 B, combine rows 4096 B.
TEST(LayerOpsTest, FlexDispatcherSendsDeduplicatedRows) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  config::TrainingConfig training = WorkedExampleTraining();
  training.moe.dispatcher = config::TokenDispatcher::kFlex;
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> fwd = DecoderLayerForward(context, 0);
  EXPECT_EQ(Named(fwd, "moe.dispatch.flex").message_bytes, 10'935 * 4192);
  EXPECT_EQ(Named(fwd, "moe.combine.flex").message_bytes, 10'935 * 4096);
  const std::vector<Op> bwd = Filter(DecoderLayerBackward(context, 0), GroupKind::kTpEp);
  ASSERT_EQ(bwd.size(), 2u);
  EXPECT_EQ(bwd[0].message_bytes, 10'935 * 4096);
}

TEST(LayerOpsTest, QkNormAndTiedEmbeddingsChangeNoCommunication) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::ModelConfig changed = model;
  changed.attention.qk_norm = false;
  changed.tied_embeddings = !model.tied_embeddings;
  const config::TrainingConfig training = Training(4, true);
  const LayerOpContext a = MakeLayerOpContext(model, training);
  const LayerOpContext b = MakeLayerOpContext(changed, training);
  EXPECT_EQ(CommOps(DecoderLayerForward(a, 0)), CommOps(DecoderLayerForward(b, 0)));
  EXPECT_EQ(CommOps(DecoderLayerBackward(a, 0)), CommOps(DecoderLayerBackward(b, 0)));
  EXPECT_EQ(CommOps(EmbeddingForward(a)), CommOps(EmbeddingForward(b)));
  EXPECT_EQ(CommOps(LmHeadAndLossBackward(a)), CommOps(LmHeadAndLossBackward(b)));
}

// Qwen3.5: layer i is full attention iff (i + 1) % 4 == 0; GDN pairs cost 2 fwd / 3 bwd.
TEST(LayerOpsTest, Qwen35LayersFollowTheThreeToOnePatternWithAttentionTpOps) {
  for (const char* name : {"Qwen3.5-9B", "Qwen3.5-27B", "Qwen3.5-35B-A3B"}) {
    SCOPED_TRACE(name);
    const config::ModelConfig model = io::LoadPreset(name);
    const config::TrainingConfig training = Training(2, true);
    const LayerOpContext context = MakeLayerOpContext(model, training);
    const bool moe = model.HasMoe();
    for (int64_t layer = 0; layer < 8; ++layer) {
      const std::vector<Op> fwd = DecoderLayerForward(context, layer);
      const bool attention = (layer + 1) % 4 == 0;
      EXPECT_EQ(HasOp(fwd, "gdn.in_proj"), !attention) << layer;
      EXPECT_EQ(HasOp(fwd, "attention.linear_qkv"), attention) << layer;
      // Dense: mixer + MLP pairs; MoE: mixer + shared-expert pairs.
      EXPECT_EQ(PairTpOps(fwd).size(), 4u) << layer << (moe ? " moe" : "");
      EXPECT_EQ(PairTpOps(DecoderLayerBackward(context, layer)).size(), 6u) << layer;
    }
  }
}

// GDN CP, Qwen3.5-9B, t = 2, c = 2: in = 2·2048 + 2·4096 + 2·32 = 12,352; s_c = 2048:
// A2A in 2048·12352/2·2 = 25,296,896 B; A2A out 2048·4096/2·2 = 8,388,608 B.
TEST(LayerOpsTest, GdnContextParallelAllToAllsOnlyFromCore018) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-9B");
  config::TrainingConfig training = Training(2, true);
  training.parallel.context = 2;
  training.core_version = config::CoreVersion::kV0_18;
  const std::vector<Op> fwd = DecoderLayerForward(MakeLayerOpContext(model, training), 0);
  EXPECT_EQ(Named(fwd, "gdn.cp.a2a_in").message_bytes, 25'296'896);
  EXPECT_EQ(Named(fwd, "gdn.cp.a2a_out").message_bytes, 8'388'608);
  EXPECT_EQ(
      Filter(DecoderLayerBackward(MakeLayerOpContext(model, training), 0), GroupKind::kCp).size(),
      2u);
  training.core_version = config::CoreVersion::kV0_17;
  EXPECT_TRUE(
      Filter(DecoderLayerForward(MakeLayerOpContext(model, training), 0), GroupKind::kCp).empty());
}

// CP, Qwen3-8B (g = 8, d_h = 128), t = 2, c = 4: g_l = 4, s_c = 1024, KV = 2·1024·4·128·2 = 2 MiB.
TEST(LayerOpsTest, CpRingSendsKvForwardAndTwiceBackward) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training = Training(2, true);
  training.parallel.context = 4;
  const LayerOpContext context = MakeLayerOpContext(model, training);
  int64_t fwd_sent = 0, bwd_sent = 0, fwd_sends = 0, bwd_sends = 0;
  for (const Op& op : Filter(DecoderLayerForward(context, 0), GroupKind::kCp)) {
    if (op.collective == Collective::kSend) fwd_sent += op.message_bytes, ++fwd_sends;
  }
  for (const Op& op : Filter(DecoderLayerBackward(context, 0), GroupKind::kCp)) {
    if (op.collective == Collective::kSend) bwd_sent += op.message_bytes, ++bwd_sends;
  }
  EXPECT_EQ(fwd_sends, 3);  // c − 1
  EXPECT_EQ(fwd_sent, 3 * 2 * kMiB);
  EXPECT_EQ(bwd_sends, 4);                // c steps
  EXPECT_EQ(bwd_sent, 2 * 3 * 2 * kMiB);  // 2(c − 1)·KV
}

// all_gather: K and V each gathered to s·b·g_l·d_h·2 = 4096·4·128·2 = 4 MiB.
TEST(LayerOpsTest, CpAllGatherGathersKAndVAndScattersTheirGrads) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training = Training(2, true);
  training.parallel.context = 4;
  training.context.comm_types = {config::CpCommType::kAllGather};
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> fwd = Filter(DecoderLayerForward(context, 0), GroupKind::kCp);
  const std::vector<Op> bwd = Filter(DecoderLayerBackward(context, 0), GroupKind::kCp);
  EXPECT_EQ(Kinds(fwd), (std::vector<Collective>{kAg, kAg}));
  EXPECT_EQ(Kinds(bwd), (std::vector<Collective>{kAg, kAg, kRs, kRs}));
  for (const Op& op : fwd) EXPECT_EQ(op.message_bytes, 4 * kMiB);
  for (const Op& op : bwd) EXPECT_EQ(op.message_bytes, 4 * kMiB);
}

// a2a: Q and O 1024·16·128·2 = 4 MiB, K and V 1024·4·128·2 = 1 MiB.
TEST(LayerOpsTest, CpAllToAllMovesQkvAndOutput) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training = Training(2, true);
  training.parallel.context = 4;
  training.context.comm_types = {config::CpCommType::kA2a};
  const LayerOpContext context = MakeLayerOpContext(model, training);
  std::vector<int64_t> fwd, bwd;
  for (const Op& op : Filter(DecoderLayerForward(context, 0), GroupKind::kCp)) {
    fwd.push_back(op.message_bytes);
  }
  for (const Op& op : Filter(DecoderLayerBackward(context, 0), GroupKind::kCp)) {
    bwd.push_back(op.message_bytes);
  }
  EXPECT_EQ(fwd, (std::vector<int64_t>{4 * kMiB, kMiB, kMiB, 4 * kMiB}));
  EXPECT_EQ(bwd, (std::vector<int64_t>{4 * kMiB, 4 * kMiB, kMiB, kMiB}));
}

// Embedding and CE, Qwen3-8B, t = 4: A = 4096·4096·2 = 32 MiB; CE ARs 4096·4 = 16 KiB.
TEST(LayerOpsTest, EmbeddingLmHeadAndLossCollectivesWithSp) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  const config::TrainingConfig training = Training(4, true);
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> emb_fwd = Filter(EmbeddingForward(context), GroupKind::kTp);
  EXPECT_EQ(Named(emb_fwd, "embedding.rs_output").message_bytes, 32 * kMiB);
  const std::vector<Op> emb_bwd = CommOps(EmbeddingBackward(context));
  EXPECT_EQ(Kinds(emb_bwd), (std::vector<Collective>{kAg}));
  const std::vector<Op> head = LmHeadAndLossForward(context);
  EXPECT_EQ(Named(head, "lm_head.output_layer.ag_input").message_bytes, 32 * kMiB);
  int64_t ce_ars = 0;
  for (const Op& op : head) {
    if (op.collective == kAr) {
      ++ce_ars;
      EXPECT_EQ(op.message_bytes, 16 * kKiB);
    }
  }
  EXPECT_EQ(ce_ars, 3);
  EXPECT_EQ(Kinds(CommOps(LmHeadAndLossBackward(context))), (std::vector<Collective>{kAg, kRs}));
}

TEST(LayerOpsTest, EmbeddingAndLmHeadUseAllReducesWithoutSp) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  const config::TrainingConfig training = Training(4, false);
  const LayerOpContext context = MakeLayerOpContext(model, training);
  EXPECT_EQ(Named(EmbeddingForward(context), "embedding.ar_output").message_bytes, 32 * kMiB);
  EXPECT_TRUE(CommOps(EmbeddingBackward(context)).empty());
  const std::vector<Op> bwd = CommOps(LmHeadAndLossBackward(context));
  EXPECT_EQ(Kinds(bwd), (std::vector<Collective>{kAr}));
  EXPECT_EQ(bwd[0].message_bytes, 32 * kMiB);
}

// GEMM FLOPs, Qwen3-8B, t = 2: linear_qkv 2·4096·4096·(4096 + 2·1024)/2 = 103,079,215,104;
// causal core attention 2·b·(n/t)·d_h·s² = 2·16·128·4096² = 68,719,476,736.
TEST(LayerOpsTest, GemmAndAttentionFlopsFollowClosedForms) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training = Training(2, true);
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const Op& qkv = Named(DecoderLayerForward(context, 0), "attention.linear_qkv");
  EXPECT_EQ(qkv.flops, 103'079'215'104);
  EXPECT_EQ(qkv.gemm, (GemmShape{.m = 4096, .n = 3072, .k = 4096, .groups = 1}));
  const std::vector<Op> bwd = DecoderLayerBackward(context, 0);
  EXPECT_EQ(Named(bwd, "attention.linear_qkv.dgrad").flops, 103'079'215'104);
  EXPECT_EQ(Named(bwd, "attention.linear_qkv.wgrad").flops, 103'079'215'104);
  EXPECT_EQ(Named(DecoderLayerForward(context, 0), "attention.core").flops, 68'719'476'736);
  EXPECT_EQ(Named(bwd, "attention.core.backward").flops, 2 * 68'719'476'736);
  training.sequence_layout = config::SequenceLayout::kThd;  // one packed sequence of length s
  EXPECT_EQ(
      Named(DecoderLayerForward(MakeLayerOpContext(model, training), 0), "attention.core").flops,
      68'719'476'736);
}

// GPT-OSS-120B, t = 2, s = 4096, b = 1: layer 0 attends a 128-token window, layer 1 is full.
// Sliding: Σ_i min(i+1, 128) = 128·4096 − 128·127/2 = 516,160 pairs; FLOPs = 4·b·(n/t)·d_h·pairs
// = 4·32·64·516,160 = 4,228,382,720. Full causal: 2·b·(n/t)·d_h·s² = 2·32·64·4096² =
// 68,719,476,736 (as Qwen3-8B above: same n·d_h per rank).
TEST(LayerOpsTest, SlidingWindowLayersAttendOnlyTheWindow) {
  const config::ModelConfig model = io::LoadPreset("GPT-OSS-120B");
  ASSERT_TRUE(model.layers[0].sliding);
  ASSERT_FALSE(model.layers[1].sliding);
  const config::TrainingConfig training = Training(2, true);  // the context refers to it
  const LayerOpContext context = MakeLayerOpContext(model, training);
  EXPECT_EQ(Named(DecoderLayerForward(context, 0), "attention.core").flops, 4'228'382'720);
  EXPECT_EQ(Named(DecoderLayerBackward(context, 0), "attention.core.backward").flops,
            2 * 4'228'382'720);
  EXPECT_EQ(Named(DecoderLayerForward(context, 1), "attention.core").flops, 68'719'476'736);
  // The sliding layer's kernel carries its band: 128 keys per query over b·(n/t)·s = 32·4096
  // query rows of 4096-token sequences, forward and backward; the full layer carries none.
  for (const Op& op : {Named(DecoderLayerForward(context, 0), "attention.core"),
                       Named(DecoderLayerBackward(context, 0), "attention.core.backward")}) {
    EXPECT_EQ(op.attention_window, 128);
    EXPECT_EQ(op.attention_query_rows, 32 * 4096);
    EXPECT_EQ(op.attention_sequence_tokens, 4096);
  }
  EXPECT_EQ(Named(DecoderLayerForward(context, 1), "attention.core").attention_window, 0);
  EXPECT_EQ(Named(DecoderLayerForward(context, 1), "attention.core").attention_query_rows, 0);
  EXPECT_EQ(Named(DecoderLayerForward(context, 1), "attention.core").attention_sequence_tokens, 0);
}

// DeepSeek-V3 layer 0 (dense), t = 2 with SP, s = 4096, b = 1 (multi_latent_attention.py with
// the TE spec): the down projections are replicated TELinears on the 2048-token sequence shard;
// SP gathers the q latent (4096·1536·2 B), the kv latent (4096·512·2 B) and the shared RoPE key
// (4096·64·2 B) instead of the hidden states; q_up gives n/t·(nope+rope) = 64·192, kv_up
// n/t·(nope+v) = 64·256, linear_proj reads n/t·v = 64·128. Core attention: QKᵀ over d_qk = 192
// and PV over d_v = 128, causal: b·(n/t)·(192 + 128)·s² = 64·320·4096² = 343,597,383,680.
TEST(LayerOpsTest, MlaProjectsThroughReplicatedDownAndColumnParallelUpProjections) {
  const config::ModelConfig model = io::LoadPreset("DeepSeek-V3");
  const config::TrainingConfig training = Training(2, true);
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> fwd = DecoderLayerForward(context, 0);
  EXPECT_EQ(Named(fwd, "attention.linear_q_down_proj").gemm,
            (GemmShape{.m = 2048, .n = 1536, .k = 7168, .groups = 1}));
  EXPECT_EQ(Named(fwd, "attention.linear_kv_down_proj").gemm,
            (GemmShape{.m = 2048, .n = 576, .k = 7168, .groups = 1}));
  EXPECT_EQ(Named(fwd, "attention.linear_q_up_proj").gemm,
            (GemmShape{.m = 4096, .n = 12288, .k = 1536, .groups = 1}));
  EXPECT_EQ(Named(fwd, "attention.linear_kv_up_proj").gemm,
            (GemmShape{.m = 4096, .n = 16384, .k = 512, .groups = 1}));
  EXPECT_EQ(Named(fwd, "attention.linear_proj").gemm,
            (GemmShape{.m = 4096, .n = 7168, .k = 8192, .groups = 1}));
  EXPECT_EQ(Named(fwd, "attention.linear_q_up_proj.ag_input").message_bytes, 4096 * 1536 * 2);
  EXPECT_EQ(Named(fwd, "attention.linear_kv_up_proj.ag_input").message_bytes, 4096 * 512 * 2);
  EXPECT_EQ(Named(fwd, "attention.k_pos_emb.ag").message_bytes, 4096 * 64 * 2);
  EXPECT_FALSE(HasOp(fwd, "attention.linear_qkv"));
  EXPECT_EQ(Named(fwd, "attention.core").flops, 343'597'383'680);
  const std::vector<Op> bwd = DecoderLayerBackward(context, 0);
  EXPECT_EQ(Named(bwd, "attention.core.backward").flops, 2 * 343'597'383'680);
  EXPECT_EQ(Named(bwd, "attention.linear_q_down_proj.wgrad").flops, 2LL * 2048 * 1536 * 7168);
  EXPECT_EQ(Named(bwd, "attention.k_pos_emb.rs_grad").message_bytes, 4096 * 64 * 2);
  // Packed THD pads V to 192 before the kernel (multi_latent_attention.py:85-99):
  // 64·(192 + 192)·4096².
  config::TrainingConfig thd = training;
  thd.sequence_layout = config::SequenceLayout::kThd;
  EXPECT_EQ(Named(DecoderLayerForward(MakeLayerOpContext(model, thd), 0), "attention.core").flops,
            412'316'860'416);
  // The down projections add no TP collective: per pair (q_up, kv_up, proj) fwd AG/RS, bwd
  // AG, RS (column) or AG (row), plus the k_pos_emb gather and its reduce-scatter.
  int64_t tp_ops = 0;
  for (const Op& op : Filter(fwd, GroupKind::kTp)) tp_ops += op.role.block == OpBlock::kAttention;
  EXPECT_EQ(tp_ops, 4);
}

// Moonlight has no q_lora_rank: q comes from one column-parallel linear_q_proj over the gathered
// hidden states.
TEST(LayerOpsTest, MlaWithoutQLoraProjectsQueryFromTheHiddenStates) {
  const config::ModelConfig model = io::LoadPreset("Moonlight-16B-A3B");
  const config::TrainingConfig training = Training(2, true);
  const std::vector<Op> fwd = DecoderLayerForward(MakeLayerOpContext(model, training), 0);
  EXPECT_FALSE(HasOp(fwd, "attention.linear_q_down_proj"));
  EXPECT_EQ(Named(fwd, "attention.linear_q_proj").gemm,
            (GemmShape{.m = 4096, .n = 8 * 192, .k = 2048, .groups = 1}));
  EXPECT_EQ(Named(fwd, "attention.linear_q_proj.ag_input").message_bytes, 4096 * 2048 * 2);
}

TEST(LayerOpsTest, SelectiveCoreAttentionRecomputeReplaysCommunicationOnlyWithCp) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  config::TrainingConfig training = Training(2, true);
  training.recompute.granularity = config::RecomputeGranularity::kSelective;
  training.recompute.modules = {"core_attn"};
  const std::vector<Op> no_cp = DecoderLayerRecompute(MakeLayerOpContext(model, training), 0,
                                                      /*recompute_full_layer=*/false);
  EXPECT_TRUE(CommOps(no_cp).empty());
  EXPECT_TRUE(HasOp(no_cp, "attention.core"));
  training.parallel.context = 2;
  const std::vector<Op> cp = DecoderLayerRecompute(MakeLayerOpContext(model, training), 0, false);
  EXPECT_EQ(CommOps(cp).size(), 2u);  // c − 1 = 1 ring step: send + recv
  for (const Op& op : cp) EXPECT_EQ(op.phase, Phase::kRecompute);
}

TEST(LayerOpsTest, FullRecomputeReplaysEveryForwardOp) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  config::TrainingConfig training = WorkedExampleTraining();
  training.recompute.granularity = config::RecomputeGranularity::kFull;
  const LayerOpContext context = MakeLayerOpContext(model, training);
  std::vector<Op> expected = DecoderLayerForward(context, 5);
  for (Op& op : expected) op.phase = Phase::kRecompute;
  EXPECT_EQ(DecoderLayerRecompute(context, 5, /*recompute_full_layer=*/true), expected);
  training.recompute.granularity = config::RecomputeGranularity::kNone;
  EXPECT_TRUE(DecoderLayerRecompute(MakeLayerOpContext(model, training), 5, false).empty());
}

// MTP, Qwen3.5-9B, t = 2, SP: A = 4096·4096·2 = 32 MiB; eh_proj fwd AG 2A + AG A,
// bwd AG A, AG 2A, RS 2A; the MTP decoder layer has index L = 32.
TEST(LayerOpsTest, MtpLayerGathersTheConcatenatedInput) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-9B");
  const config::TrainingConfig training = Training(2, true);
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> fwd = MtpForward(context);
  EXPECT_EQ(Named(fwd, "mtp.eh_proj.ag_input").message_bytes, 64 * kMiB);
  EXPECT_EQ(Named(fwd, "mtp.eh_proj.ag_output").message_bytes, 32 * kMiB);
  EXPECT_EQ(Named(fwd, "attention.linear_qkv").layer, 32);
  const std::vector<Op> bwd = MtpBackward(context);
  EXPECT_EQ(Named(bwd, "mtp.eh_proj.split.grad").message_bytes, 32 * kMiB);
  EXPECT_EQ(Named(bwd, "mtp.eh_proj.ag_input_wgrad").message_bytes, 64 * kMiB);
  EXPECT_EQ(Named(bwd, "mtp.eh_proj.rs_dgrad").message_bytes, 64 * kMiB);
  const config::ModelConfig no_mtp = io::LoadPreset("Qwen3-8B");
  EXPECT_TRUE(MtpForward(MakeLayerOpContext(no_mtp, training)).empty());
}

// multi_token_prediction.py runs the MTP block in the global FP8 context but ignores FP4
// ("currently ignoring FP4 in MTP layers"): eh_proj and the MTP layer's linears are quantized
// under FP8 and BF16 under FP4, while the decoder's own layers run NVFP4.
TEST(LayerOpsTest, MtpIsQuantizedUnderFp8ButNotUnderFp4) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-9B");
  config::TrainingConfig training = Training(2, true);
  training.precision.fp8 = config::Fp8Format::kHybrid;
  training.precision.fp8_recipe = config::Fp8Recipe::kMxfp8;
  const LayerOpContext fp8 = MakeLayerOpContext(model, training);
  EXPECT_TRUE(Named(MtpForward(fp8), "mtp.eh_proj").gemm_quantized);
  EXPECT_TRUE(Named(MtpForward(fp8), "attention.linear_qkv").gemm_quantized);
  EXPECT_FALSE(Named(MtpForward(fp8), "mtp.lm_head.output_layer").gemm_quantized);
  training.precision.fp8 = config::Fp8Format::kNone;
  training.precision.fp4 = config::Fp4Format::kE2m1;
  const LayerOpContext fp4 = MakeLayerOpContext(model, training);
  EXPECT_FALSE(Named(MtpForward(fp4), "mtp.eh_proj").gemm_quantized);
  EXPECT_FALSE(Named(MtpForward(fp4), "attention.linear_qkv").gemm_quantized);
  EXPECT_TRUE(Named(DecoderLayerForward(fp4, 3), "attention.linear_qkv").gemm_quantized);
}

// Index of the op called `name` in `ops`, or -1.
int64_t IndexOf(const std::vector<Op>& ops, const std::string& name) {
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].name == name) return static_cast<int64_t>(i);
  }
  return -1;
}

std::vector<std::string> ComputeNames(const std::vector<Op>& ops) {
  std::vector<std::string> names;
  for (const Op& op : ops) {
    if (!op.IsComm()) names.push_back(op.name);
  }
  return names;
}

// docs/workload.md element-wise constants: RMSNorm 4 FLOPs and 2·2 B per element. Qwen3-8B
// (h = 4096), s = 4096, b = 1, t = 2. With SP the norm runs on the s·b/t = 2048-token shard:
// 2048·4096 = 8,388,608 elements -> 33,554,432 FLOPs and bytes, before the column AG.
// Without SP on all 4096 tokens: 67,108,864. Backward 2x.
TEST(LayerOpsTest, InputNormRunsOnTheSequenceShardBeforeTheGatherUnderSp) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  const config::TrainingConfig sp_training = Training(2, true);
  const LayerOpContext sp = MakeLayerOpContext(model, sp_training);
  const std::vector<Op> fwd = DecoderLayerForward(sp, 0);
  for (const char* name : {"attention.input_norm", "mlp.input_norm"}) {
    EXPECT_EQ(Named(fwd, name).flops, 33'554'432) << name;
    EXPECT_EQ(Named(fwd, name).bytes, 33'554'432) << name;
  }
  EXPECT_LT(IndexOf(fwd, "attention.input_norm"), IndexOf(fwd, "attention.linear_qkv.ag_input"));
  EXPECT_LT(IndexOf(fwd, "mlp.input_norm"), IndexOf(fwd, "mlp.linear_fc1.ag_input"));
  const std::vector<Op> bwd = DecoderLayerBackward(sp, 0);
  EXPECT_EQ(Named(bwd, "attention.input_norm.backward").bytes, 67'108'864);
  EXPECT_EQ(bwd[bwd.size() - 2].name, "attention.input_norm.backward");  // after the qkv wgrad
  EXPECT_EQ(bwd.back().name, "attention.residual_add.backward");         // then the grad sum
  const config::TrainingConfig no_sp_training = Training(2, false);
  const LayerOpContext no_sp = MakeLayerOpContext(model, no_sp_training);
  const Op& norm = Named(DecoderLayerForward(no_sp, 0), "attention.input_norm");
  EXPECT_EQ(norm.flops, 67'108'864);
  EXPECT_EQ(norm.bytes, 67'108'864);
}

// Qwen3-8B (n = 32, g = 8, d_h = 128) at t = 2: n/t = 16, g_l = 4, over s·b = 4096 gathered
// tokens. q_norm 4096·16·128 = 8,388,608 elements -> 33,554,432 FLOPs and bytes; k_norm
// 4096·4·128 = 2,097,152 -> 8,388,608. RoPE on the 20 heads: FLOPs 4096·20·128·3 = 31,457,280,
// bytes 4096·20·128·4 = 41,943,040.
TEST(LayerOpsTest, QkNormAndRopeRunOnTheLocalHeadsAfterLinearQkv) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  const config::TrainingConfig training = Training(2, true);
  const std::vector<Op> fwd = DecoderLayerForward(MakeLayerOpContext(model, training), 0);
  EXPECT_EQ(Named(fwd, "attention.q_norm").flops, 33'554'432);
  EXPECT_EQ(Named(fwd, "attention.q_norm").bytes, 33'554'432);
  EXPECT_EQ(Named(fwd, "attention.k_norm").flops, 8'388'608);
  EXPECT_EQ(Named(fwd, "attention.k_norm").bytes, 8'388'608);
  EXPECT_EQ(Named(fwd, "attention.rope").flops, 31'457'280);
  EXPECT_EQ(Named(fwd, "attention.rope").bytes, 41'943'040);
  EXPECT_LT(IndexOf(fwd, "attention.linear_qkv"), IndexOf(fwd, "attention.q_norm"));
  EXPECT_LT(IndexOf(fwd, "attention.k_norm"), IndexOf(fwd, "attention.rope"));
  EXPECT_LT(IndexOf(fwd, "attention.rope"), IndexOf(fwd, "attention.core"));
  config::ModelConfig no_qk = model;
  no_qk.attention.qk_norm = false;
  EXPECT_FALSE(
      HasOp(DecoderLayerForward(MakeLayerOpContext(no_qk, training), 0), "attention.q_norm"));
}

// Qwen3.5-9B (d_h = 256, partial_rotary_factor 0.25, n/t = 8, g/t = 2) at t = 2: FLOPs over the
// 64 rotated dims 4096·10·64·3 = 7,864,320, bytes over all 256: 4096·10·256·4 = 41,943,040.
TEST(LayerOpsTest, PartialRotaryCountsFlopsOnTheRotatedDims) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-9B");
  const config::TrainingConfig training = Training(2, true);
  const std::vector<Op> fwd = DecoderLayerForward(MakeLayerOpContext(model, training), 3);
  EXPECT_EQ(Named(fwd, "attention.rope").flops, 7'864'320);
  EXPECT_EQ(Named(fwd, "attention.rope").bytes, 41'943'040);
}

// SwiGLU 6 FLOPs and 3·2 B per output element. Qwen3-8B (F = 12288) at t = 2: fc1 gives
// 2F/t = 12288 columns, the activation F/t = 6144 over 4096 rows = 25,165,824 elements ->
// 150,994,944 FLOPs and bytes; backward 2x.
TEST(LayerOpsTest, SwiGluActivationSitsBetweenFc1AndFc2) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  const config::TrainingConfig training = Training(2, true);
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> fwd = DecoderLayerForward(context, 0);
  EXPECT_EQ(Named(fwd, "mlp.activation").flops, 150'994'944);
  EXPECT_EQ(Named(fwd, "mlp.activation").bytes, 150'994'944);
  EXPECT_EQ(IndexOf(fwd, "mlp.activation"), IndexOf(fwd, "mlp.linear_fc1") + 1);
  EXPECT_EQ(IndexOf(fwd, "mlp.linear_fc2"), IndexOf(fwd, "mlp.activation") + 1);
  const std::vector<Op> bwd = DecoderLayerBackward(context, 0);
  EXPECT_EQ(Named(bwd, "mlp.activation.backward").flops, 2 * 150'994'944);
  EXPECT_EQ(IndexOf(bwd, "mlp.activation.backward"), IndexOf(bwd, "mlp.linear_fc2.wgrad") + 1);
}

// Plain GPT (GPT-1.7B: h = 2304, F = 4h = 9216) at t = 2 with SP: fc1 is F/t = 4608 wide (no
// gate), the GeLU runs on 4096 × 4608 = 18,874,368 elements at 8 FLOPs and 2·2 B each, the
// norms are LayerNorms (5 FLOPs per element on the 2048-token SP shard of h), and there is no
// RoPE (learned absolute positions).
TEST(LayerOpsTest, PlainGptHasGeluMlpLayerNormsAndNoRope) {
  const config::ModelConfig model = io::LoadPreset("GPT-1.7B");
  const config::TrainingConfig training = Training(2, true);  // the context refers to it
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> fwd = DecoderLayerForward(context, 0);
  EXPECT_EQ(Named(fwd, "mlp.linear_fc1").gemm, (GemmShape{.m = 4096, .n = 4608, .k = 2304}));
  EXPECT_EQ(Named(fwd, "mlp.linear_fc2").gemm, (GemmShape{.m = 4096, .n = 2304, .k = 4608}));
  EXPECT_EQ(Named(fwd, "mlp.activation").flops, int64_t{18'874'368} * 8);
  EXPECT_EQ(Named(fwd, "mlp.activation").bytes, int64_t{18'874'368} * 4);
  EXPECT_EQ(Named(fwd, "mlp.input_norm").flops, int64_t{2048} * 2304 * 5);
  EXPECT_EQ(IndexOf(fwd, "attention.rope"), -1);
}

// docs/workload.md, MLA forward order: the input norm, both replicated down projections, the
// latent norms, the up projections, RoPE, the kernel, linear_proj; SP collectives: the RoPE key
// gather, the two latent gathers and linear_proj's reduce-scatter.
TEST(LayerOpsTest, MlaForwardRunsInMegatronsOrder) {
  const config::ModelConfig model = io::LoadPreset("DeepSeek-V3");
  const config::TrainingConfig training = Training(2, true);
  const std::vector<Op> fwd = DecoderLayerForward(MakeLayerOpContext(model, training), 0);
  const std::vector<std::string> compute = ComputeNames(fwd);
  const std::vector<std::string> attention(compute.begin(), compute.begin() + 10);
  EXPECT_EQ(attention,
            (std::vector<std::string>{"attention.input_norm", "attention.linear_q_down_proj",
                                      "attention.linear_kv_down_proj", "attention.q_layernorm",
                                      "attention.kv_layernorm", "attention.linear_q_up_proj",
                                      "attention.linear_kv_up_proj", "attention.rope",
                                      "attention.core", "attention.linear_proj"}));
  std::vector<std::string> comms;
  for (const Op& op : CommOps(fwd)) {
    if (op.role.block == OpBlock::kAttention) comms.push_back(op.name);
  }
  EXPECT_EQ(comms, (std::vector<std::string>{
                       "attention.k_pos_emb.ag", "attention.linear_q_up_proj.ag_input",
                       "attention.linear_kv_up_proj.ag_input", "attention.linear_proj.rs_output"}));
}

// Residual adds (transformer_layer.py self_attn_bda / mlp_bda with no bias and dropout 0):
// 1 FLOP and 3·2 B per element of the residual stream. Qwen3-8B, s = 4096, b = 1, t = 2 with SP:
// 2048·4096 = 8,388,608 elements -> 8,388,608 FLOPs and 50,331,648 bytes, after each block's
// row linear. The backward sum of the block input's two gradients costs the same, after the
// block's input norm.
TEST(LayerOpsTest, ResidualAddsCloseEachBlockOnTheSequenceShard) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  const config::TrainingConfig training = Training(2, true);
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> fwd = DecoderLayerForward(context, 0);
  const std::vector<Op> bwd = DecoderLayerBackward(context, 0);
  for (const char* name : {"attention.residual_add", "mlp.residual_add"}) {
    EXPECT_EQ(Named(fwd, name).flops, 8'388'608) << name;
    EXPECT_EQ(Named(fwd, name).bytes, 50'331'648) << name;
    EXPECT_EQ(Named(bwd, std::string(name) + ".backward").bytes, 50'331'648) << name;
    EXPECT_EQ(Named(fwd, name).role.module, OpModule::kResidualAdd) << name;
  }
  EXPECT_GT(IndexOf(fwd, "attention.residual_add"),
            IndexOf(fwd, "attention.linear_proj.rs_output"));
  EXPECT_LT(IndexOf(fwd, "attention.residual_add"), IndexOf(fwd, "mlp.input_norm"));
  EXPECT_GT(IndexOf(fwd, "mlp.residual_add"), IndexOf(fwd, "mlp.linear_fc2.rs_output"));
  EXPECT_GT(IndexOf(bwd, "mlp.residual_add.backward"), IndexOf(bwd, "mlp.input_norm.backward"));
  EXPECT_LT(IndexOf(bwd, "mlp.residual_add.backward"), IndexOf(bwd, "attention.linear_proj.dgrad"));
}

// docs/workload.md: a Qwen3 dense layer forward has 13 compute ops and 17 in backward.
TEST(LayerOpsTest, DenseLayerHasThirteenForwardComputeOps) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-8B");
  const config::TrainingConfig training = Training(2, true);
  const LayerOpContext context = MakeLayerOpContext(model, training);
  EXPECT_EQ(ComputeNames(DecoderLayerForward(context, 0)),
            (std::vector<std::string>{"attention.input_norm", "attention.linear_qkv",
                                      "attention.q_norm", "attention.k_norm", "attention.rope",
                                      "attention.core", "attention.linear_proj",
                                      "attention.residual_add", "mlp.input_norm", "mlp.linear_fc1",
                                      "mlp.activation", "mlp.linear_fc2", "mlp.residual_add"}));
  EXPECT_EQ(ComputeNames(DecoderLayerBackward(context, 0)).size(), 17u);
}

// Worked example (Qwen3-30B-A3B, T = 2048, k = 8, h = 2048, e = 8, u = 1): the permute
// gathers T·k = 16,384 rows of h, 33,554,432 elements, reading and writing 2 B each:
// 134,217,728 bytes, no FLOPs. The unpermute adds the 16,384 rows back into T rows: 33,554,432
// FLOPs, (16,384 + 2048)·2048·2 = 75,497,472 bytes. E/e = 16 local experts, so the rows are also
// sorted by expert (134,217,728 bytes). Expert SwiGLU with probs: 16,384·768 = 12,582,912
// elements · 7 = 88,080,384 FLOPs.
TEST(LayerOpsTest, MoePermuteMovesTopKRowsOfHidden) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  const config::TrainingConfig training = WorkedExampleTraining();
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> fwd = DecoderLayerForward(context, 0);
  EXPECT_EQ(Named(fwd, "moe.permute").bytes, 134'217'728);
  EXPECT_EQ(Named(fwd, "moe.permute").flops, 0);
  EXPECT_EQ(Named(fwd, "moe.unpermute").flops, 33'554'432);
  EXPECT_EQ(Named(fwd, "moe.unpermute").bytes, 75'497'472);
  EXPECT_EQ(Named(fwd, "moe.sort_chunks").bytes, 134'217'728);
  EXPECT_EQ(Named(fwd, "moe.experts.activation").flops, 88'080'384);
  EXPECT_LT(IndexOf(fwd, "moe.permute"), IndexOf(fwd, "moe.dispatch.a2a_tokens"));
  EXPECT_GT(IndexOf(fwd, "moe.unpermute"), IndexOf(fwd, "moe.combine.a2a_tokens"));
  EXPECT_LT(IndexOf(fwd, "moe.input_norm"), IndexOf(fwd, "moe.router"));
  const std::vector<Op> bwd = DecoderLayerBackward(context, 0);
  EXPECT_EQ(Named(bwd, "moe.permute.backward").bytes, 2 * 134'217'728);
  EXPECT_EQ(bwd.front().name, "moe.unpermute.backward");
  EXPECT_EQ(bwd.back().name, "attention.residual_add.backward");
  EXPECT_LT(IndexOf(bwd, "moe.input_norm.backward"), IndexOf(bwd, "moe.residual_add.backward"));
  EXPECT_EQ(Named(bwd, "moe.residual_add.backward").role.block, OpBlock::kMoeRouter);
}

// Selective `layernorm` replays only separate norm modules (a MoE layer's pre-MLP norm), `moe_act`
// the expert activation; full recompute replays every element-wise op.
TEST(LayerOpsTest, SelectiveRecomputeReplaysNormAndActivationModules) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  config::TrainingConfig training = WorkedExampleTraining();
  training.recompute.granularity = config::RecomputeGranularity::kSelective;
  training.recompute.modules = {"layernorm", "moe_act"};
  const std::vector<Op> ops = DecoderLayerRecompute(MakeLayerOpContext(model, training), 0, false);
  EXPECT_EQ(ComputeNames(ops),
            (std::vector<std::string>{"moe.input_norm", "moe.experts.activation"}));
  const config::ModelConfig dense = io::LoadPreset("Qwen3-8B");
  EXPECT_TRUE(
      DecoderLayerRecompute(MakeLayerOpContext(dense, training), 0, false).empty());  // fused
}

// Selective mla_up_proj recompute replays the latent norms, both up projections with their SP
// gathers, and RoPE (multi_latent_attention.py:983-988); core_attn adds the kernel.
TEST(LayerOpsTest, MlaUpProjRecomputeReplaysTheUpProjectionsAndRope) {
  const config::ModelConfig model = io::LoadPreset("DeepSeek-V3");
  config::TrainingConfig training = Training(2, true);
  training.recompute.granularity = config::RecomputeGranularity::kSelective;
  training.recompute.modules = {"mla_up_proj"};
  const std::vector<Op> ops = DecoderLayerRecompute(MakeLayerOpContext(model, training), 0, false);
  EXPECT_EQ(ComputeNames(ops),
            (std::vector<std::string>{"attention.q_layernorm", "attention.kv_layernorm",
                                      "attention.linear_q_up_proj", "attention.linear_kv_up_proj",
                                      "attention.rope"}));
  EXPECT_EQ(Named(ops, "attention.linear_q_up_proj.ag_input").message_bytes, 4096 * 1536 * 2);
  EXPECT_EQ(Named(ops, "attention.linear_kv_up_proj.ag_input").message_bytes, 4096 * 512 * 2);
}

// The final norm precedes the LM head's AG; Qwen3.5-9B's MTP layer adds enorm, hnorm and its
// own final norm, each on the 2048-token SP shard of h = 4096 (33,554,432 bytes).
TEST(LayerOpsTest, FinalAndMtpNormsRunOnTheSequenceShard) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-9B");
  const config::TrainingConfig training = Training(2, true);
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> head = LmHeadAndLossForward(context);
  EXPECT_LT(IndexOf(head, "lm_head.final_norm"), IndexOf(head, "lm_head.output_layer.ag_input"));
  EXPECT_EQ(Named(head, "lm_head.final_norm").bytes, 33'554'432);
  EXPECT_EQ(LmHeadAndLossBackward(context).back().name, "lm_head.final_norm.backward");
  const std::vector<Op> mtp = MtpForward(context);
  for (const char* name : {"mtp.enorm", "mtp.hnorm", "mtp.final_norm"}) {
    EXPECT_EQ(Named(mtp, name).bytes, 33'554'432) << name;
  }
  EXPECT_LT(IndexOf(mtp, "mtp.hnorm"), IndexOf(mtp, "mtp.eh_proj"));
  EXPECT_TRUE(HasOp(MtpBackward(context), "mtp.enorm.backward"));
}

// GDN gated out-norm (10 FLOPs, 3·2 B per element) on the local value heads: Qwen3.5-9B at t = 2,
// vd/t = 2048 over 4096 tokens = 8,388,608 elements -> 83,886,080 FLOPs, 50,331,648 bytes.
TEST(LayerOpsTest, GdnOutNormHasABackward) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-9B");
  const config::TrainingConfig training = Training(2, true);
  const LayerOpContext context = MakeLayerOpContext(model, training);
  EXPECT_EQ(Named(DecoderLayerForward(context, 0), "gdn.out_norm").flops, 83'886'080);
  EXPECT_EQ(Named(DecoderLayerForward(context, 0), "gdn.out_norm").bytes, 50'331'648);
  EXPECT_EQ(Named(DecoderLayerBackward(context, 0), "gdn.out_norm.backward").bytes, 2 * 50'331'648);
}

// TE's Fp8Padding / Fp8Unpadding around the FP8 grouped expert GEMMs (experts.py, TE
// fp8_padding.py), Qwen3-30B-A3B worked example (alltoall, t = 2 with SP, e = 8): R = b·s/t·k =
// 2,048·8 = 16,384 rows of h = 2,048, E = 33,554,432 elements. Padding copies the tokens (read
// and write 2 B each: 4E = 134,217,728 B) and the fp32 probs (8 B per row: 131,072 B) in 2
// launches; unpadding copies the fc2 output back (4E) in 1; each backward the same.
TEST(LayerOpsTest, Fp8ExpertPaddingCopiesUnlessCountsAreAligned) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  config::TrainingConfig training = WorkedExampleTraining();
  training.moe.grouped_gemm = true;
  training.precision.fp8 = config::Fp8Format::kE4m3;
  training.precision.fp8_recipe = config::Fp8Recipe::kTensorwise;
  const auto ops = [&model](const config::TrainingConfig& t) {
    const LayerOpContext context = MakeLayerOpContext(model, t);
    return std::pair{DecoderLayerForward(context, 0), DecoderLayerBackward(context, 0)};
  };
  const auto [fwd, bwd] = ops(training);
  EXPECT_EQ(Named(fwd, "moe.experts.quantization_padding").bytes, 134'348'800);
  EXPECT_EQ(Named(fwd, "moe.experts.quantization_padding").num_launches, 2);
  EXPECT_EQ(Named(fwd, "moe.experts.quantization_unpadding").bytes, 134'217'728);
  EXPECT_EQ(Named(fwd, "moe.experts.quantization_unpadding").num_launches, 1);
  EXPECT_EQ(Named(bwd, "moe.experts.quantization_padding.backward").bytes, 134'348'800);
  EXPECT_EQ(Named(bwd, "moe.experts.quantization_unpadding.backward").bytes, 134'217'728);
  EXPECT_LT(IndexOf(fwd, "moe.experts.quantization_padding"),
            IndexOf(fwd, "moe.experts.linear_fc1"));
  EXPECT_GT(IndexOf(fwd, "moe.experts.quantization_unpadding"),
            IndexOf(fwd, "moe.experts.linear_fc2"));
  EXPECT_LT(IndexOf(bwd, "moe.experts.quantization_unpadding.backward"),
            IndexOf(bwd, "moe.experts.linear_fc2.dgrad"));
  // No copy: BF16; the router pads its map; HybridEP pads inside its dispatch.
  config::TrainingConfig bf16 = training;
  bf16.precision.fp8 = config::Fp8Format::kNone;
  EXPECT_FALSE(HasOp(ops(bf16).first, "moe.experts.quantization_padding"));
  config::TrainingConfig router_padded = training;
  router_padded.moe.router_padding_for_quantization = true;
  EXPECT_FALSE(HasOp(ops(router_padded).first, "moe.experts.quantization_padding"));
  config::TrainingConfig hybrid_ep = training;
  hybrid_ep.moe.dispatcher = config::TokenDispatcher::kFlex;
  hybrid_ep.moe.flex_backend = config::FlexBackend::kHybridEp;
  EXPECT_FALSE(HasOp(ops(hybrid_ep).first, "moe.experts.quantization_padding"));
  // Drop-and-pad: capacity ceil(16,384/128 · cf) per expert. cf 1.0 gives 128, a multiple of
  // 16: no copy; cf 1.1 gives 141: the copy over 141·128 = 18,048 rows, 4·18,048·2,048 B.
  config::TrainingConfig capacity = training;
  capacity.moe.capacity_factor = 1.0;
  capacity.moe.pad_expert_input_to_capacity = true;
  EXPECT_FALSE(HasOp(ops(capacity).first, "moe.experts.quantization_padding"));
  capacity.moe.capacity_factor = 1.1;
  EXPECT_EQ(Named(ops(capacity).first, "moe.experts.quantization_unpadding").bytes,
            4 * 18'048 * 2'048);
}

// GPT-OSS-120B's eager kernels, t = 2 (no SP), s = 4096, b = 1, EP 1 (ETP 1: 128 local experts,
// rows R = s·k = 16,384, fc1 width 2·2880 = 5,760, h = 2,880):
// - the clamp before the fused activation (fused_bias_geglu.py): 8 B forward, 10 B backward per
//   fc1-output element: 8·16,384·5,760 = 754,974,720 and 943,718,400 bytes;
// - the per-expert fc2 bias (experts.py _apply_bias): 12 B / 16 B per fc2-output element:
//   12·16,384·2,880 = 566,231,040 and 754,974,720 bytes, in 2·128 + 1 and 4·128 + 1 launches;
// - the unfused RoPE under YaRN's concentration 1.35 (rope_utils.py): q and k, 32 + 4 local
//   heads of 64: 4,096·36·64 = 9,437,184 elements at 24 B forward, 20 B backward.
// --use-transformer-engine-op-fuser removes the first two (TE's fused GroupedLinear and
// ScaledClampedQGeGLU).
TEST(LayerOpsTest, GptOssEagerClampBiasAndUnfusedRope) {
  const config::ModelConfig model = io::LoadPreset("GPT-OSS-120B");
  config::TrainingConfig training = Training(2, false);
  training.parallel.expert_tensor = 1;
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> fwd = DecoderLayerForward(context, 1);
  const std::vector<Op> bwd = DecoderLayerBackward(context, 1);
  EXPECT_EQ(Named(fwd, "moe.experts.activation_clamp").bytes, 754'974'720);
  EXPECT_EQ(Named(bwd, "moe.experts.activation_clamp.backward").bytes, 943'718'400);
  EXPECT_EQ(Named(fwd, "moe.experts.linear_fc2.bias").bytes, 566'231'040);
  EXPECT_EQ(Named(fwd, "moe.experts.linear_fc2.bias").num_launches, 257);
  EXPECT_EQ(Named(bwd, "moe.experts.linear_fc2.bias.backward").bytes, 754'974'720);
  EXPECT_EQ(Named(bwd, "moe.experts.linear_fc2.bias.backward").num_launches, 513);
  EXPECT_EQ(Named(fwd, "attention.rope").bytes, 24 * 9'437'184);
  EXPECT_EQ(Named(bwd, "attention.rope.backward").bytes, 20 * 9'437'184);
  // The clamp sits between fc1 and the activation, the bias after fc2; backward in reverse.
  // Between the clamp and the fused activation, torch.tensor(linear_offset, device=...) copies a
  // host scalar with a blocking memcpy_and_sync (pytorch/pytorch#120996): one host sync and one
  // launch per forward, none in the backward.
  EXPECT_EQ(IndexOf(fwd, "moe.experts.activation_clamp") + 1,
            IndexOf(fwd, "moe.experts.activation.linear_offset_h2d"));
  EXPECT_EQ(IndexOf(fwd, "moe.experts.activation_clamp") + 2,
            IndexOf(fwd, "moe.experts.activation"));
  EXPECT_EQ(Named(fwd, "moe.experts.activation.linear_offset_h2d").num_host_syncs, 1);
  EXPECT_EQ(Named(fwd, "moe.experts.activation.linear_offset_h2d").num_launches, 1);
  EXPECT_EQ(Named(fwd, "moe.experts.activation_clamp").num_launches, 3);
  EXPECT_FALSE(HasOp(bwd, "moe.experts.activation.linear_offset_h2d"));
  // A moe_act recompute replays the forward activation function, its copy included.
  config::TrainingConfig recompute = training;
  recompute.recompute.granularity = config::RecomputeGranularity::kSelective;
  recompute.recompute.modules = {"moe_act"};
  const std::vector<Op> replay =
      DecoderLayerRecompute(MakeLayerOpContext(model, recompute), 1, false);
  EXPECT_EQ(Named(replay, "moe.experts.activation.linear_offset_h2d").num_host_syncs, 1);
  EXPECT_EQ(IndexOf(fwd, "moe.experts.linear_fc2") + 1,
            IndexOf(fwd, "moe.experts.linear_fc2.bias"));
  training.moe.te_op_fuser = true;
  const std::vector<Op> fused = DecoderLayerForward(MakeLayerOpContext(model, training), 1);
  EXPECT_FALSE(HasOp(fused, "moe.experts.activation_clamp"));
  EXPECT_FALSE(HasOp(fused, "moe.experts.linear_fc2.bias"));
  EXPECT_FALSE(HasOp(fused, "moe.experts.activation.linear_offset_h2d"));
  // Qwen3-8B: no YaRN, TE's fused RoPE at 4 B per element.
  const config::ModelConfig qwen = io::LoadPreset("Qwen3-8B");
  const config::TrainingConfig qwen_training = Training(2, false);
  EXPECT_EQ(Named(DecoderLayerForward(MakeLayerOpContext(qwen, qwen_training), 0), "attention.rope")
                .bytes,
            4096 * (16 + 4) * 128 * 4);
}

// torchtitan's Llama-3-8B layer (--framework torchtitan; torchtitan 9dec370 norms.py, model.py,
// train.py, parallelize_llama.py), t = 1, s = 4096, b = 1 (T = 4,096 tokens; h 4,096, 32 query
// and 8 KV heads of 128, FFN 14,336, vocabulary 128,256, already a multiple of 128):
// - eager RMSNorm over T·h = 16,777,216 elements: 36 B forward in 7 kernels (float 6, pow 8,
//   mean 4, scale 8, type_as 6, weight 4), 84 B backward in 13: 603,979,776 and 1,409,286,144 B;
// - compiled (Inductor), the one-pass 4 B per element: 67,108,864 B; the final norm stays eager
//   (only the TransformerBlocks are compiled);
// - the complex RoPE over q and k, T·(32 + 8)·128 = 20,971,520 elements at 20 B each way, 6
//   kernels: 419,430,400 B;
// - repeat_kv copies K and V to 32 heads: 2·T·(32 + 8)·128·2 B = 83,886,080 B; its backward
//   sums the 32 − 8 extra copies of each K and V element back;
// - eager SwiGLU over T·14,336 = 58,720,256 elements: 10 B forward, 18 B backward;
// - the fp32 loss over T·128,256 = 525,336,576 logits: 18 B forward, 22 B backward;
// - op-level SAC replays wk, wo and w3: 2·T·h·(1,024 + 4,096 + 14,336) = 652,835,028,992 FLOPs;
// - the core attention is PyTorch SDPA's FlashAttention-2 kernel.
TEST(LayerOpsTest, TorchtitanEagerAndCompiledKernels) {
  const config::ModelConfig model = io::LoadPreset("Llama-3-8B");
  config::TrainingConfig training = Training(1, false);
  training.framework.framework = config::Framework::kTorchtitan;
  training.recompute.granularity = config::RecomputeGranularity::kSelective;
  const LayerOpContext context = MakeLayerOpContext(model, training);
  const std::vector<Op> fwd = DecoderLayerForward(context, 0);
  const std::vector<Op> bwd = DecoderLayerBackward(context, 0);
  EXPECT_EQ(Named(fwd, "attention.input_norm").bytes, 603'979'776);
  EXPECT_EQ(Named(fwd, "attention.input_norm").num_launches, 7);
  EXPECT_EQ(Named(bwd, "attention.input_norm.backward").bytes, 1'409'286'144);
  EXPECT_EQ(Named(bwd, "attention.input_norm.backward").num_launches, 13);
  EXPECT_EQ(Named(fwd, "attention.rope").bytes, 419'430'400);
  EXPECT_EQ(Named(bwd, "attention.rope.backward").bytes, 419'430'400);
  EXPECT_EQ(Named(fwd, "attention.rope").num_launches, 6);
  EXPECT_EQ(Named(fwd, "attention.repeat_kv").bytes, 83'886'080);
  EXPECT_EQ(Named(bwd, "attention.repeat_kv.backward").bytes, 83'886'080);
  EXPECT_EQ(Named(bwd, "attention.repeat_kv.backward").flops, 2 * 4096 * (32 - 8) * 128);
  EXPECT_EQ(IndexOf(fwd, "attention.repeat_kv") + 1, IndexOf(fwd, "attention.core"));
  EXPECT_EQ(Named(fwd, "attention.core").attention_kernel, AttentionKernel::kTorchSdpaFlash);
  EXPECT_EQ(Named(fwd, "mlp.activation").bytes, 10 * 58'720'256);
  EXPECT_EQ(Named(bwd, "mlp.activation.backward").bytes, 18 * 58'720'256);
  const std::vector<Op> head = LmHeadAndLossForward(context);
  EXPECT_EQ(Named(head, "lm_head.cross_entropy").bytes, 18 * 525'336'576LL);
  EXPECT_EQ(Named(LmHeadAndLossBackward(context), "lm_head.cross_entropy.backward").bytes,
            22 * 525'336'576LL);
  int64_t replayed_gemm_flops = 0;
  for (const Op& op : DecoderLayerRecompute(context, 0, /*recompute_full_layer=*/false)) {
    if (op.role.kind == OpKind::kGemm) replayed_gemm_flops += op.flops;
  }
  EXPECT_EQ(replayed_gemm_flops, 652'835'028'992);

  config::TrainingConfig compiled = training;
  compiled.framework.torch_compile = true;
  const LayerOpContext compiled_context = MakeLayerOpContext(model, compiled);
  EXPECT_EQ(Named(DecoderLayerForward(compiled_context, 0), "attention.input_norm").bytes,
            67'108'864);
  EXPECT_EQ(Named(LmHeadAndLossForward(compiled_context), "lm_head.final_norm").bytes, 603'979'776);

  // Under TP 2 with sequence parallelism the replay also all-gathers the attention's and the
  // FFN's input (all_gather is not in the save list): A = T·h·2 = 33,554,432 B each; the GEMM
  // FLOPs halve with the sharded wk, wo and w3.
  config::TrainingConfig tp2 = training;
  tp2.parallel.tensor = 2;
  tp2.parallel.world_size = 2;
  tp2.sequence_parallel = true;
  const std::vector<Op> replay =
      DecoderLayerRecompute(MakeLayerOpContext(model, tp2), 0, /*recompute_full_layer=*/false);
  EXPECT_EQ(Named(replay, "attention.linear_k.ag_input").message_bytes, 33'554'432);
  EXPECT_EQ(Named(replay, "mlp.linear_fc1.w3.ag_input").message_bytes, 33'554'432);
  int64_t tp2_gemm_flops = 0;
  for (const Op& op : replay) {
    if (op.role.kind == OpKind::kGemm) tp2_gemm_flops += op.flops;
  }
  EXPECT_EQ(tp2_gemm_flops, 652'835'028'992 / 2);

  // Megatron-Core's layer keeps TE's kernels: no K/V copy, fused attention.
  config::TrainingConfig megatron = training;
  megatron.framework = {};
  const LayerOpContext megatron_context = MakeLayerOpContext(model, megatron);
  EXPECT_FALSE(HasOp(DecoderLayerForward(megatron_context, 0), "attention.repeat_kv"));
  EXPECT_EQ(Named(DecoderLayerForward(megatron_context, 0), "attention.core").attention_kernel,
            AttentionKernel::kTeFused);
}

// slime's CP re-ordering (hf_attention.py HuggingfaceAttention.forward) slices every sample
// with bounds read back from the GPU tensor cu_seqlens. Counted from that loop at c = 4, per
// sample: 2c = 8 slices of two bounds = 16 syncs, 2c + 3 = 11 kernels (the bound additions,
// seqlen, //2, //c); after the GDN one slice (2 syncs) and the same 3 kernels. At 2.5 packed
// samples per micro-batch: 40 and 27.5 -> 28 (rounded to nearest), 5 and 7.5 -> 8. None at
// c = 1 and none backward.
// The three Megatron cross-entropy paths on Llama-3-8B at t = 2: T = 4,096 tokens against
// V/t = 128,256 / 2 = 64,128 local logits each, L = 262,668,288 logits. Bytes per logit, read off
// the kernels (hand count, cross_entropy.py, fused_cross_entropy.py, TE's
// pytorch/triton/cross_entropy.py):
// - unfused: forward fp32 copy 2+4, max 4, subtract 4+4, exp 4+4, sum 4, divide 4+4 = 38 in 6
//   kernels; backward multiply 4+4 and the cast to bf16 4+2 = 14 in 2; 3 AR of T·4 = 16,384 B;
// - native fused: 6 + 8 + 8 = 22 in 3, backward 4+2 = 6 in 2; AR of 16,384 B, then of 32,768 B;
// - TE, fp32 gradient: 2 + 2+4 = 8 in 2, backward 4+4 + 4+2 = 14 in 2; one all-gather of the
//   per-row triple, t·T·3·4 = 98,304 B gathered;
// - TE before #3193, in place: 2 + 2+2 = 6 in 2, backward 2+2 = 4 in 1.
TEST(LayerOpsTest, CrossEntropyPathsFollowTheFusionFlags) {
  const config::ModelConfig model = io::LoadPreset("Llama-3-8B");
  constexpr int64_t kLogits = 4096LL * 64'128;
  struct Case {
    config::CrossEntropyConfig ce;
    int64_t forward_bytes, forward_launches, backward_bytes, backward_launches;
    std::vector<std::pair<std::string, int64_t>> comms;
  };
  using Impl = config::CrossEntropyFusionImpl;
  const std::vector<Case> cases = {
      {{},
       38,
       6,
       14,
       2,
       {{"lm_head.cross_entropy.ar_max", 16'384},
        {"lm_head.cross_entropy.ar_target_logit", 16'384},
        {"lm_head.cross_entropy.ar_exp_sum", 16'384}}},
      {{.loss_fusion = true},
       22,
       3,
       6,
       2,
       {{"lm_head.cross_entropy.ar_max", 16'384},
        {"lm_head.cross_entropy.ar_target_logit_exp_sum", 32'768}}},
      {{.loss_fusion = true, .fusion_impl = Impl::kTe},
       8,
       2,
       14,
       2,
       {{"lm_head.cross_entropy.ag_stats", 98'304}}},
      {{.loss_fusion = true, .fusion_impl = Impl::kTe, .te_fp32_gradient = false},
       6,
       2,
       4,
       1,
       {{"lm_head.cross_entropy.ag_stats", 98'304}}},
  };
  for (const Case& c : cases) {
    config::TrainingConfig training = Training(2, false);
    training.cross_entropy = c.ce;
    const LayerOpContext context = MakeLayerOpContext(model, training);
    const std::vector<Op> head = LmHeadAndLossForward(context);
    const Op loss = Named(head, "lm_head.cross_entropy");
    EXPECT_EQ(loss.bytes, c.forward_bytes * kLogits);
    EXPECT_EQ(loss.num_launches, c.forward_launches);
    EXPECT_EQ(loss.flops, 5 * kLogits);
    const Op backward = Named(LmHeadAndLossBackward(context), "lm_head.cross_entropy.backward");
    EXPECT_EQ(backward.bytes, c.backward_bytes * kLogits);
    EXPECT_EQ(backward.num_launches, c.backward_launches);
    std::vector<std::pair<std::string, int64_t>> comms;
    for (const Op& op : CommOps(head)) {
      if (op.name.find("cross_entropy") != std::string::npos) {
        comms.emplace_back(op.name, op.message_bytes);
      }
    }
    EXPECT_EQ(comms, c.comms);
  }
}

TEST(LayerOpsTest, SlimeSlicesEachSampleWithHostSyncsUnderContextParallelism) {
  const config::ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  config::TrainingConfig slime;
  slime.parallel = {.world_size = 8, .tensor = 2, .context = 4, .expert = 8, .expert_tensor = 1};
  slime.sequence_parallel = true;
  slime.framework.framework = config::Framework::kSlime;
  slime.batch.samples_per_micro_batch = 2.5;
  const std::vector<Op> forward = DecoderLayerForward(MakeLayerOpContext(model, slime), 0);
  const Op& gather = Named(forward, "gdn.cp.sample_slices");
  EXPECT_EQ(gather.role.kind, OpKind::kHostSync);
  EXPECT_EQ(gather.num_host_syncs, 40);
  EXPECT_EQ(gather.num_launches, 28);
  EXPECT_EQ(gather.flops + gather.bytes, 0);
  const Op& scatter = Named(forward, "gdn.cp.sample_slices_out");
  EXPECT_EQ(scatter.num_host_syncs, 5);
  EXPECT_EQ(scatter.num_launches, 8);
  EXPECT_LT(IndexOf(forward, "gdn.cp.all_gather"), IndexOf(forward, "gdn.cp.sample_slices"));
  EXPECT_LT(IndexOf(forward, "gdn.cp.sample_slices"), IndexOf(forward, "gdn.in_proj"));
  EXPECT_GT(IndexOf(forward, "gdn.cp.sample_slices_out"), IndexOf(forward, "gdn.out_proj"));
  for (const Op& op : DecoderLayerBackward(MakeLayerOpContext(model, slime), 0)) {
    EXPECT_EQ(op.num_host_syncs, 0) << op.name;
  }
  // Without context parallelism there is nothing to re-order; unset samples = b.
  slime.parallel.context = 1;
  slime.parallel.world_size = 2;
  slime.parallel.expert = 2;
  for (const Op& op : DecoderLayerForward(MakeLayerOpContext(model, slime), 0)) {
    EXPECT_NE(op.role.block == OpBlock::kGdn && op.role.kind == OpKind::kHostSync, true) << op.name;
  }
}

// The MoE dispatchers read the token counts back once per forward dispatch
// (token_dispatcher.py): alltoall waits at "before_ep_alltoall" after D2H copies of
// tokens_per_expert, input_splits, output_splits, output_splits_tp and (several local experts,
// no permute fusion) num_global_tokens_per_local_expert: 1 sync, 4 extra copies (3 with permute
// fusion); allgather's tokens_per_expert.cpu(): 1 sync, none extra; padding to capacity: none;
// flex (DeepEP's normal dispatch): the host polls the received-token counter, 1 sync, after the
// dispatch and before the permute.
TEST(LayerOpsTest, MoeDispatchersSyncTheHostOncePerForwardDispatch) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  config::TrainingConfig training = WorkedExampleTraining();  // 16 local experts
  const std::vector<Op> fwd = DecoderLayerForward(MakeLayerOpContext(model, training), 0);
  const Op& sync = Named(fwd, "moe.dispatch.token_counts_d2h");
  EXPECT_EQ(sync.num_host_syncs, 1);
  EXPECT_EQ(sync.num_launches, 4);
  EXPECT_LT(IndexOf(fwd, "moe.permute"), IndexOf(fwd, "moe.dispatch.token_counts_d2h"));
  EXPECT_LT(IndexOf(fwd, "moe.dispatch.token_counts_d2h"), IndexOf(fwd, "moe.dispatch.a2a_tokens"));
  for (const Op& op : DecoderLayerBackward(MakeLayerOpContext(model, training), 0)) {
    EXPECT_EQ(op.num_host_syncs, 0) << op.name;
  }
  training.moe.permute_fusion = true;
  EXPECT_EQ(Named(DecoderLayerForward(MakeLayerOpContext(model, training), 0),
                  "moe.dispatch.token_counts_d2h")
                .num_launches,
            3);
  training.moe.dispatcher = config::TokenDispatcher::kAllGather;
  const Op& gathered = Named(DecoderLayerForward(MakeLayerOpContext(model, training), 0),
                             "moe.dispatch.token_counts_d2h");
  EXPECT_EQ(gathered.num_host_syncs, 1);
  EXPECT_EQ(gathered.num_launches, 0);
  training.moe.dispatcher = config::TokenDispatcher::kFlex;
  const std::vector<Op> flex = DecoderLayerForward(MakeLayerOpContext(model, training), 0);
  EXPECT_EQ(Named(flex, "moe.dispatch.deepep_recv_counts").num_host_syncs, 1);
  EXPECT_LT(IndexOf(flex, "moe.dispatch.flex"), IndexOf(flex, "moe.dispatch.deepep_recv_counts"));
  EXPECT_LT(IndexOf(flex, "moe.dispatch.deepep_recv_counts"), IndexOf(flex, "moe.permute"));
  for (const Op& op : DecoderLayerBackward(MakeLayerOpContext(model, training), 0)) {
    EXPECT_EQ(op.num_host_syncs, 0) << op.name;
  }
}

// HybridEP's core 0.18 options on the flex path (fused_a2a.py hybrid_ep_dispatch /
// hybrid_ep_combine, token_dispatcher.py _HybridEPManager, moe/paged_stash.py), Qwen3-30B-A3B at
// EP8.
TEST(LayerOpsTest, HybridEpFusedPermuteRankBudgetAndPagedStash) {
  const config::ModelConfig model = io::LoadPreset("Qwen3-30B-A3B");
  config::TrainingConfig training = WorkedExampleTraining();
  training.moe.dispatcher = config::TokenDispatcher::kFlex;
  training.moe.flex_backend = config::FlexBackend::kHybridEp;
  const auto forward = [&] { return DecoderLayerForward(MakeLayerOpContext(model, training), 0); };
  const auto backward = [&] {
    return DecoderLayerBackward(MakeLayerOpContext(model, training), 0);
  };
  const auto count = [](const std::vector<Op>& ops, const std::string& name) {
    return std::count_if(ops.begin(), ops.end(), [&](const Op& op) { return op.name == name; });
  };
  // Unfused: HybridEP's own permute and unpermute passes, and the host wait for the count.
  EXPECT_EQ(count(forward(), "moe.permute"), 1);
  EXPECT_EQ(count(backward(), "moe.permute.backward"), 1);
  EXPECT_EQ(Named(forward(), "moe.dispatch.deepep_recv_counts").num_host_syncs, 1);
  training.moe.permute_fusion_into_hybridep = true;
  for (const std::vector<Op>& ops : {forward(), backward()}) {
    for (const char* pass : {"moe.permute", "moe.unpermute"}) {
      EXPECT_EQ(count(ops, pass), 0);
      EXPECT_EQ(count(ops, std::string(pass) + ".backward"), 0);
    }
  }
  // The fusion is HybridEP's: the deepep backend keeps the passes.
  training.moe.flex_backend = config::FlexBackend::kDeepEp;
  EXPECT_EQ(count(forward(), "moe.permute"), 1);
  training.moe.flex_backend = config::FlexBackend::kHybridEp;
  // A rank budget sizes the buffers statically: no host wait (non_blocking dispatch).
  training.moe.rank_capacity_factor = 1.5;
  EXPECT_EQ(count(forward(), "moe.dispatch.deepep_recv_counts"), 0);
  // The paged stash's copies run on its pack / unpack streams, waited for one grouped MLP later
  // (paged_stash.py PipelinePreScheduleFunction): no op on the step's streams.
  training.moe.paged_stash = true;
  training.precision.fp8 = config::Fp8Format::kE4m3;
  training.precision.fp8_recipe = config::Fp8Recipe::kMxfp8;
  EXPECT_EQ(forward().size(), [&] {
    config::TrainingConfig without = training;
    without.moe.paged_stash = false;
    return DecoderLayerForward(MakeLayerOpContext(model, without), 0).size();
  }());
}

}  // namespace

}  // namespace trainscope::graph
