// The roles the graph builders set on every op (graph/op.h): each op has a kind and a block,
// every collective a purpose, and each role agrees with the op's display name, so consumers that
// branch on roles see the same ops they used to find by name. Names are only read here, in a
// test, to cross-check the roles.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "tiny_configs.h"
#include "trainscope/config/validate.h"
#include "trainscope/graph/op.h"
#include "trainscope/graph/step_graph.h"
#include "trainscope/io/hf_config_loader.h"

namespace trainscope::graph {
namespace {

using testing_configs::TinyModel;
using testing_configs::Training;

struct Case {
  std::string label;
  config::ModelConfig model;
  config::TrainingConfig training;
};

// Tiny dense model: t = 2 with SP, p = 2, d = 2, m = 4, distributed optimizer (buckets, PP).
Case DenseCase() {
  config::TrainingConfig training = Training(2, 2, 2, 4);
  training.sequence_parallel = true;
  training.data_parallel.distributed_optimizer = true;
  return {"dense", TinyModel(), training};
}

// Tiny dense model without SP (all-reduces), t = 2, d = 2, full recompute.
Case DenseNoSpCase() {
  config::TrainingConfig training = Training(2, 1, 2, 2);
  training.recompute.granularity = config::RecomputeGranularity::kFull;
  training.recompute.method = config::RecomputeMethod::kUniform;
  training.recompute.num_layers = 1;
  return {"dense_nosp", TinyModel(), training};
}

// Tiny dense model with c = 2 and the given CP communication type, d = 2.
Case ContextParallelCase(config::CpCommType type) {
  config::TrainingConfig training = Training(1, 1, 2, 2);
  training.parallel.context = 2;
  training.parallel.world_size = 4;
  training.context.comm_types = {type};
  return {"cp_" + config::ToString(type), TinyModel(), training};
}

// Tiny dense model under Megatron-FSDP (per-micro-batch gathers and reductions).
Case FsdpCase() {
  config::TrainingConfig training = Training(2, 1, 4, 2);
  training.data_parallel.distributed_optimizer = true;
  training.data_parallel.megatron_fsdp = true;
  training.data_parallel.fsdp_strategy = config::FsdpStrategy::kOptimGradsParams;
  return {"fsdp", TinyModel(), training};
}

// Qwen3.5-35B-A3B cut to its first four layers (GDN and gated attention, MoE with a gated shared
// expert, MTP): t = 2 with SP, e = 2, the given dispatcher, selective recompute of the MoE.
Case MoeCase(config::TokenDispatcher dispatcher) {
  config::ModelConfig model = io::LoadPreset("Qwen3.5-35B-A3B");
  model.layers.resize(4);
  config::TrainingConfig training = Training(2, 1, 2, 2);
  training.parallel.expert = 2;
  training.sequence_parallel = true;
  training.data_parallel.distributed_optimizer = true;
  training.moe.dispatcher = dispatcher;
  training.moe.grouped_gemm = true;
  training.recompute.granularity = config::RecomputeGranularity::kSelective;
  training.recompute.modules = {"core_attn", "moe"};
  return {"moe_" + config::ToString(dispatcher), model, training};
}

// FP8 cases: the dense case with delayed scaling (scale updates, cached weight casts) and full
// recompute; the MoE case with MXFP8 (grouped weight casts, scale swizzles).
Case Fp8DenseCase() {
  Case c = DenseNoSpCase();
  c.training.precision.fp8 = config::Fp8Format::kHybrid;
  c.training.precision.fp8_recipe = config::Fp8Recipe::kDelayed;
  c.label = "dense_fp8_delayed";
  return c;
}

Case Fp8MoeCase() {
  Case c = MoeCase(config::TokenDispatcher::kAllToAll);
  c.training.precision.fp8 = config::Fp8Format::kE4m3;
  c.training.precision.fp8_recipe = config::Fp8Recipe::kMxfp8;
  c.label = "moe_fp8_mxfp8";
  return c;
}

std::vector<Case> AllCases() {
  std::vector<Case> cases = {DenseCase(), DenseNoSpCase(), FsdpCase(), Fp8DenseCase(),
                             Fp8MoeCase()};
  for (const config::CpCommType type :
       {config::CpCommType::kP2p, config::CpCommType::kAllGather, config::CpCommType::kA2a}) {
    cases.push_back(ContextParallelCase(type));
  }
  for (const config::TokenDispatcher dispatcher :
       {config::TokenDispatcher::kAllToAll, config::TokenDispatcher::kAllGather,
        config::TokenDispatcher::kFlex}) {
    cases.push_back(MoeCase(dispatcher));
  }
  return cases;
}

// Every op of rank 0's step graph of every case (the last PP rank too, for the LM head).
std::vector<Op> AllOps(const Case& c) {
  const config::ValidationResult validation = config::Validate(c.model, c.training);
  EXPECT_TRUE(validation.ok()) << c.label << ": " << validation.errors.front().message;
  std::vector<Op> ops = BuildStepGraph(c.model, c.training, 0).ops;
  const int64_t last = c.training.parallel.world_size - 1;
  const std::vector<Op> tail = BuildStepGraph(c.model, c.training, last).ops;
  ops.insert(ops.end(), tail.begin(), tail.end());
  return ops;
}

bool StartsWith(std::string_view text, std::string_view prefix) { return text.starts_with(prefix); }

TEST(OpRolesTest, EveryOpHasKindAndBlockAndEveryCollectiveAPurpose) {
  for (const Case& c : AllCases()) {
    for (const Op& op : AllOps(c)) {
      SCOPED_TRACE(c.label + " " + op.name);
      EXPECT_NE(op.role.kind, OpKind::kUnset);
      EXPECT_NE(op.role.block, OpBlock::kUnset);
      EXPECT_EQ(op.IsComm(), op.role.kind == OpKind::kCollective);
      EXPECT_EQ(op.IsComm(), op.role.purpose != CommPurpose::kNone);
    }
  }
}

TEST(OpRolesTest, FamilyNameIsTheFirstComponentOfTheName) {
  for (const Case& c : AllCases()) {
    for (const Op& op : AllOps(c)) {
      EXPECT_EQ(FamilyName(op.role.block), op.name.substr(0, op.name.find('.')))
          << c.label << " " << op.name;
    }
  }
}

TEST(OpRolesTest, CoreKernelsAndGemmPassesMatchTheirNames) {
  for (const Case& c : AllCases()) {
    for (const Op& op : AllOps(c)) {
      SCOPED_TRACE(c.label + " " + op.name);
      const bool backward = op.name.ends_with(".backward");
      EXPECT_EQ(op.role.kind == OpKind::kAttentionCore, StartsWith(op.name, "attention.core"));
      EXPECT_EQ(op.role.kind == OpKind::kGdnKernel, StartsWith(op.name, "gdn.kernel"));
      EXPECT_EQ(op.role.kind == OpKind::kGdnTorchKernel, StartsWith(op.name, "gdn.torch_chunk"));
      if (op.role.kind == OpKind::kAttentionCore || op.role.kind == OpKind::kGdnKernel) {
        EXPECT_EQ(op.role.pass == OpPass::kBackward, backward);
      }
      EXPECT_EQ(op.role.kind == OpKind::kGemm, op.gemm.m > 0);
      EXPECT_EQ(op.role.pass == OpPass::kDgrad, op.name.ends_with(".dgrad"));
      EXPECT_EQ(op.role.pass == OpPass::kWgrad, op.name.ends_with(".wgrad"));
    }
  }
}

TEST(OpRolesTest, SimulatorBlocksAndPurposesMatchTheNamesTheyReplace) {
  for (const Case& c : AllCases()) {
    for (const Op& op : AllOps(c)) {
      SCOPED_TRACE(c.label + " " + op.name);
      const bool routed =
          StartsWith(op.name, "moe.dispatch") || StartsWith(op.name, "moe.combine") ||
          StartsWith(op.name, "moe.experts") || StartsWith(op.name, "moe.permute") ||
          StartsWith(op.name, "moe.unpermute") || StartsWith(op.name, "moe.sort_chunks") ||
          StartsWith(op.name, "moe.unsort_chunks");
      EXPECT_EQ(op.role.block == OpBlock::kMoeRouted, routed);
      EXPECT_EQ(op.role.block == OpBlock::kMoeShared, StartsWith(op.name, "moe.shared_experts"));
      EXPECT_EQ(op.role.block == OpBlock::kFsdp, StartsWith(op.name, "fsdp."));
      EXPECT_EQ(op.role.purpose == CommPurpose::kCpExchange,
                StartsWith(op.name, "attention.cp.p2p"));
      const bool bucket = op.name.find(".bucket") != std::string::npos;
      EXPECT_EQ(op.role.purpose == CommPurpose::kGradBucket ||
                    op.role.purpose == CommPurpose::kParamBucket,
                bucket);
      const bool flex =
          StartsWith(op.name, "moe.dispatch.flex") || StartsWith(op.name, "moe.combine.flex");
      EXPECT_EQ(op.role.purpose == CommPurpose::kEpFlexDispatch ||
                    op.role.purpose == CommPurpose::kEpFlexCombine,
                flex);
    }
  }
}

TEST(OpRolesTest, TensorParallelLinearsHaveTheirModule) {
  for (const Case& c : AllCases()) {
    for (const Op& op : AllOps(c)) {
      SCOPED_TRACE(c.label + " " + op.name);
      const std::string_view n = op.name;
      const bool column = n.find("linear_qkv") != n.npos || n.find("in_proj") != n.npos ||
                          n.find("linear_fc1") != n.npos || n.find("output_layer") != n.npos ||
                          n.find("eh_proj.") != n.npos || n.ends_with("eh_proj");
      const bool row = n.find("linear_proj") != n.npos || n.find("out_proj") != n.npos ||
                       n.find("linear_fc2") != n.npos;
      const bool routed_expert = StartsWith(n, "moe.experts");
      EXPECT_EQ(op.role.module == OpModule::kColumnLinear, column && !routed_expert &&
                                                               n != "mtp.eh_proj.ag_output" &&
                                                               n != "mtp.eh_proj.split.grad");
      EXPECT_EQ(op.role.module == OpModule::kRowLinear, row && !routed_expert);
      EXPECT_EQ(op.role.module == OpModule::kPreNorm,
                n.find("input_norm") != n.npos || n.find("final_norm") != n.npos ||
                    n.find("mtp.enorm") != n.npos || n.find("mtp.hnorm") != n.npos);
    }
  }
}

TEST(OpRolesTest, MoeLayerDispatchAndCombineHaveTheirPurposes) {
  const std::vector<Op> ops = AllOps(MoeCase(config::TokenDispatcher::kAllToAll));
  int dispatch = 0, combine = 0, token_counts = 0;
  for (const Op& op : ops) {
    if (op.name == "moe.dispatch.a2a_tokens") {
      ++dispatch;
      EXPECT_EQ(op.role.purpose, CommPurpose::kEpDispatch);
      EXPECT_EQ(op.role.block, OpBlock::kMoeRouted);
    }
    if (op.name == "moe.combine.a2a_tokens") {
      ++combine;
      EXPECT_EQ(op.role.purpose, CommPurpose::kEpCombine);
    }
    if (op.name == "moe.dispatch.metadata_ag") {
      ++token_counts;
      EXPECT_EQ(op.role.purpose, CommPurpose::kEpTokenCounts);
    }
    if (op.name == "moe.dispatch.a2a_probs") {
      EXPECT_EQ(op.role.purpose, CommPurpose::kEpDispatchProbs);
    }
  }
  EXPECT_GT(dispatch, 0);
  EXPECT_GT(combine, 0);
  EXPECT_GT(token_counts, 0);
}

TEST(OpRolesTest, DataParallelBucketsAreGradAndParamBuckets) {
  const std::vector<Op> ops = BuildStepGraph(TinyModel(), DenseCase().training, 0).ops;
  int grad = 0, param = 0;
  for (const Op& op : ops) {
    if (op.phase == Phase::kGradSync && op.collective == Collective::kReduceScatter) {
      EXPECT_EQ(op.role.purpose, CommPurpose::kGradBucket) << op.name;
      EXPECT_EQ(op.role.block, OpBlock::kDataParallel) << op.name;
      ++grad;
    }
    if (op.phase == Phase::kOptimizer && op.collective == Collective::kAllGather) {
      EXPECT_EQ(op.role.purpose, CommPurpose::kParamBucket) << op.name;
      ++param;
    }
  }
  EXPECT_GT(grad, 0);
  EXPECT_EQ(grad, param);
}

TEST(OpRolesTest, PipelineTransfersAndOptimizerStepHaveTheirRoles) {
  const std::vector<Op> ops = BuildStepGraph(TinyModel(), DenseCase().training, 0).ops;
  int p2p = 0, steps = 0;
  for (const Op& op : ops) {
    if (op.group == config::GroupKind::kPp) {
      ++p2p;
      EXPECT_EQ(op.role.purpose, CommPurpose::kPipeline);
      EXPECT_EQ(op.role.block, OpBlock::kPipeline);
    }
    if (op.role.kind == OpKind::kOptimizer) ++steps;
  }
  EXPECT_GT(p2p, 0);
  EXPECT_EQ(steps, 1);
}

}  // namespace
}  // namespace trainscope::graph
