// slime's communication memory guard: which ops pay the check in each mode, following the skip
// list of slime/utils/reloadable_process_group.py (see sim/comm_guard.h).
#include "trainscope/sim/comm_guard.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "trainscope/error.h"

namespace trainscope::sim {
namespace {

using graph::Collective;

graph::Op Comm(const char* name, Collective collective,
               graph::CommPurpose purpose = graph::CommPurpose::kTpReduce) {
  graph::Op op;
  op.name = name;
  op.role = graph::OpRole{.kind = graph::OpKind::kCollective, .purpose = purpose};
  op.collective = collective;
  op.group_size = 8;
  op.message_bytes = 1024;
  return op;
}

TEST(CommGuardTest, ParsesTheThreeModes) {
  EXPECT_EQ(ParseCommGuardMode("all"), CommGuardMode::kAll);
  EXPECT_EQ(ParseCommGuardMode("selected"), CommGuardMode::kSelected);
  EXPECT_EQ(ParseCommGuardMode("off"), CommGuardMode::kOff);
}

TEST(CommGuardTest, RejectsUnknownModeNamingTheFlag) {
  EXPECT_THAT([] { (void)ParseCommGuardMode("some"); },
              testing::ThrowsMessage<UsageError>(testing::HasSubstr("--comm-memory-guard")));
}

TEST(CommGuardTest, SelectedGuardsOnlyAllReduceAndBroadcast) {
  const CommGuardMode mode = CommGuardMode::kSelected;
  EXPECT_TRUE(GuardApplies(Comm("attention.linear_proj.ar", Collective::kAllReduce), mode));
  EXPECT_TRUE(GuardApplies(Comm("input.broadcast_tokens", Collective::kBroadcast), mode));
  // all_gather_into_tensor, reduce_scatter_tensor, all_to_all_single, isend / irecv are skipped.
  EXPECT_FALSE(GuardApplies(Comm("attention.linear_qkv.ag", Collective::kAllGather), mode));
  EXPECT_FALSE(
      GuardApplies(Comm("dp.grad_reduce_scatter.bucket0", Collective::kReduceScatter), mode));
  EXPECT_FALSE(GuardApplies(Comm("moe.dispatch.a2a", Collective::kAllToAll), mode));
  EXPECT_FALSE(GuardApplies(Comm("pp.send_next", Collective::kSend), mode));
  EXPECT_FALSE(GuardApplies(Comm("pp.recv_prev", Collective::kRecv), mode));
}

TEST(CommGuardTest, AllGuardsEveryTorchDistributedCall) {
  for (const Collective collective :
       {Collective::kAllGather, Collective::kReduceScatter, Collective::kAllReduce,
        Collective::kAllToAll, Collective::kSend, Collective::kRecv, Collective::kBroadcast}) {
    EXPECT_TRUE(GuardApplies(Comm("op", collective), CommGuardMode::kAll));
  }
}

TEST(CommGuardTest, FlexDispatcherKernelsAreNeverGuarded) {
  EXPECT_FALSE(GuardApplies(
      Comm("moe.dispatch.flex", Collective::kAllToAll, graph::CommPurpose::kEpFlexDispatch),
      CommGuardMode::kAll));
  EXPECT_FALSE(GuardApplies(
      Comm("moe.combine.flex.grad", Collective::kAllToAll, graph::CommPurpose::kEpFlexCombine),
      CommGuardMode::kAll));
}

TEST(CommGuardTest, OffAndComputeOpsAreNeverGuarded) {
  EXPECT_FALSE(GuardApplies(Comm("x", Collective::kAllReduce), CommGuardMode::kOff));
  graph::Op compute;
  compute.name = "attention.core";
  compute.role.kind = graph::OpKind::kAttentionCore;
  EXPECT_FALSE(GuardApplies(compute, CommGuardMode::kAll));
}

TEST(CommGuardTest, ClearFractionIsTheShareOfTheActivationRangeAboveTheLine) {
  // Capacity 58, threshold 3: calls clear above a footprint of 55. Footprints spread uniformly
  // over [40, 60]: (60 − 55) / (60 − 40) = 0.25 of the calls clear.
  EXPECT_DOUBLE_EQ(ClearFraction(40, 60, 58, 3), 0.25);
  EXPECT_DOUBLE_EQ(ClearFraction(40, 55, 58, 3), 0.0);  // the peak leaves exactly 3 free
  EXPECT_DOUBLE_EQ(ClearFraction(56, 60, 58, 3), 1.0);  // even the floor is above the line
  EXPECT_DOUBLE_EQ(ClearFraction(57, 57, 58, 3), 1.0);  // no activations, above the line
}

TEST(CommGuardTest, SlimesThresholdIsThreeGibibytes) {
  // slime/utils/memory_utils.py: free_GB = round(free / 1024**3, 2); the guard clears below 3.
  EXPECT_DOUBLE_EQ(CommGuardClearCost{}.threshold_bytes, 3.0 * 1024 * 1024 * 1024);
}

}  // namespace
}  // namespace trainscope::sim
