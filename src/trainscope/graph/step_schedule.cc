// Pipeline schedules of one rank (1F1B and interleaved tables, schedules.py) and the emission of
// each pass into the step graph with its pipeline sends and receives to the peer stages
// (schedules.py, p2p_communication.py).
#include <algorithm>

#include "trainscope/config/rank_mapping.h"
#include "trainscope/error.h"
#include "trainscope/graph/step_graph_internal.h"
#include "trainscope/units.h"

namespace trainscope::graph::internal {
namespace {

using config::GroupKind;

// 1F1B (schedules.py:2147-2509): w = min(p−r−1, m) forwards, m−w (F, B) pairs, w backwards.
std::vector<Pass> OneFOneBSchedule(int64_t p, int64_t r, int64_t m) {
  const int64_t warmup = std::min(p - r - 1, m);
  std::vector<Pass> passes;
  for (int64_t i = 0; i < warmup; ++i) passes.push_back({true, i, 0});
  for (int64_t i = 0; i < m - warmup; ++i) {
    passes.push_back({true, warmup + i, 0});
    passes.push_back({false, i, 0});
  }
  for (int64_t i = m - warmup; i < m; ++i) passes.push_back({false, i, 0});
  return passes;
}

// Megatron's get_schedule_table (schedules.py): micro-batches in groups of G, each group
// visiting chunk 0..v−1 in turn. Entry k is the (micro-batch, chunk) of virtual micro-batch k.
std::vector<Pass> ScheduleTable(int64_t m, int64_t v, int64_t group) {
  std::vector<Pass> table;
  for (int64_t first = 0; first < m; first += group) {
    const int64_t end = first + group >= m ? m : first + group;
    for (int64_t chunk = 0; chunk < v; ++chunk) {
      for (int64_t i = first; i < end; ++i) table.push_back({true, i, chunk});
    }
  }
  return table;
}

// Interleaved (schedules.py:949-986, 1019-): w = min(2(p−r−1) + (v−1)·G + ω, m·v) forward
// passes, then (F, B) pairs, then the remaining backwards; backward k runs chunk v−1−chunk_k.
int64_t InterleavedWarmup(int64_t p, int64_t r, int64_t v, int64_t m, int64_t group,
                          int64_t extra_warmup) {
  return std::min(2 * (p - r - 1) + (v - 1) * group + extra_warmup, m * v);
}

std::vector<Pass> InterleavedSchedule(int64_t p, int64_t r, int64_t v, int64_t m, int64_t group,
                                      int64_t extra_warmup) {
  const std::vector<Pass> table = ScheduleTable(m, v, group);
  const int64_t total = m * v;
  const int64_t warmup = InterleavedWarmup(p, r, v, m, group, extra_warmup);
  auto backward = [&](int64_t k) {
    const Pass& entry = table[static_cast<size_t>(k)];
    return Pass{false, entry.micro_batch, v - 1 - entry.chunk};
  };
  std::vector<Pass> passes;
  for (int64_t k = 0; k < warmup; ++k) passes.push_back(table[static_cast<size_t>(k)]);
  for (int64_t k = 0; k < total - warmup; ++k) {
    passes.push_back(table[static_cast<size_t>(warmup + k)]);
    passes.push_back(backward(k));
  }
  for (int64_t k = total - warmup; k < total; ++k) passes.push_back(backward(k));
  return passes;
}

Op P2pOp(const PipelinePeers& peers, const Pass& pass, bool send) {
  const bool towards_next = pass.forward == send;
  Op op;
  op.phase = pass.forward ? Phase::kForward : Phase::kBackward;
  op.micro_batch = pass.micro_batch;
  op.model_chunk = pass.chunk;
  op.name =
      std::string("pp.") + (send ? "send_" : "recv_") + (pass.forward ? "forward" : "backward");
  op.role = OpRole{.kind = OpKind::kCollective,
                   .block = OpBlock::kPipeline,
                   .pass = pass.forward ? OpPass::kForward : OpPass::kBackward,
                   .purpose = CommPurpose::kPipeline};
  op.collective = send ? Collective::kSend : Collective::kRecv;
  op.group = GroupKind::kPp;
  op.group_size = peers.p;
  op.message_bytes = peers.message_bytes;
  op.peer = towards_next ? peers.next : peers.previous;
  return op;
}

// schedules.py: the very first stage (rank 0, chunk 0) has no upstream, the very last (rank p−1,
// chunk v−1) no downstream; every other pass exchanges with a neighbour (wrapping between chunks).
bool HasUpstream(const PipelinePeers& peers, int64_t chunk) {
  return peers.p > 1 && !(peers.r == 0 && chunk == 0);
}
bool HasDownstream(const PipelinePeers& peers, int64_t chunk) {
  return peers.p > 1 && !(peers.r == peers.p - 1 && chunk == peers.v - 1);
}

}  // namespace

int64_t GraphWriter::Add(Op op, std::vector<int64_t> deps) {
  op.id = static_cast<int64_t>(ops_.size());
  deps.erase(std::remove(deps.begin(), deps.end(), int64_t{-1}), deps.end());
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  TRAINSCOPE_CHECK(deps.empty() || deps.back() < op.id, "dependency on a later op");
  op.deps = std::move(deps);
  ops_.push_back(std::move(op));
  return ops_.back().id;
}

PipelinePeers MakePeers(const config::RankMapping& mapping, const LayerOpContext& context,
                        int64_t rank) {
  const config::ParallelSizes& sizes = context.training.parallel;
  PipelinePeers peers{.p = sizes.pipeline, .v = sizes.virtual_stages};
  peers.r = mapping.Coordinates(rank).pp;
  const std::vector<int64_t> group = mapping.GroupOf(GroupKind::kPp, rank);
  peers.previous = group[static_cast<size_t>((peers.r + peers.p - 1) % peers.p)];
  peers.next = group[static_cast<size_t>((peers.r + 1) % peers.p)];
  // schedules.py:2115-2144: P = s_c·b·h·β / (t if SP), β = params dtype (argument_utils.py:306).
  const int64_t split = context.SequenceParallel() ? sizes.tensor : 1;
  peers.message_bytes = context.TokensPerRank() * context.model.hidden_size *
                        config::BytesOf(context.training.precision.params) / split;
  return peers;
}

std::vector<Pass> RankSchedule(const config::TrainingConfig& training, const PipelinePeers& peers,
                               int64_t num_micro_batches) {
  // forward_only (schedules.py): every forward back to back, in the interleaved table's order
  // (num_warmup_microbatches = total_num_microbatches) or micro-batch order without VPP.
  if (training.forward_only) {
    return ScheduleTable(num_micro_batches, peers.v,
                         peers.v == 1 ? num_micro_batches : training.MicroBatchGroupSize());
  }
  if (peers.v == 1) return OneFOneBSchedule(peers.p, peers.r, num_micro_batches);
  const int64_t group = training.MicroBatchGroupSize();
  const int64_t extra = training.moe.overlap_expert_parallel_comm ? 1 : 0;
  return InterleavedSchedule(peers.p, peers.r, peers.v, num_micro_batches, group, extra);
}

std::vector<std::pair<graph::PassId, graph::PassId>> CombinedPasses(
    const config::TrainingConfig& training, const PipelinePeers& peers,
    const std::vector<Pass>& schedule) {
  std::vector<std::pair<PassId, PassId>> pairs;
  if (!training.moe.overlap_expert_parallel_comm || training.forward_only) return pairs;
  const auto id = [](const Pass& pass) {
    return graph::PassId{
        .forward = pass.forward, .micro_batch = pass.micro_batch, .model_chunk = pass.chunk};
  };
  // The schedule's index of the first combined step and the number of steps.
  int64_t first = 0, steps = 0;
  const int64_t total = static_cast<int64_t>(schedule.size());
  if (peers.p == 1 && peers.v == 1) {
    first = 1;  // F0 B0 F1 B1 ...: (B0, F1), (B1, F2), ...
    steps = total / 2 - 1;
  } else if (peers.v > 1) {
    const int64_t m = total / (2 * peers.v);
    first = InterleavedWarmup(peers.p, peers.r, peers.v, m, training.MicroBatchGroupSize(), 1);
    steps = m * peers.v - first;
  }
  for (int64_t k = 0; k < steps; ++k) {
    const size_t a = static_cast<size_t>(first + 2 * k);
    pairs.emplace_back(id(schedule[a]), id(schedule[a + 1]));
  }
  return pairs;
}

void EmitPass(GraphWriter& writer, const Pass& pass, const std::vector<Op>& ops,
              const PipelinePeers& peers, ScheduleState& state) {
  const size_t stream = static_cast<size_t>(pass.micro_batch * peers.v + pass.chunk);
  std::vector<int64_t> deps = {state.previous_pass_end};
  if (!pass.forward) deps.push_back(state.forward_end[stream]);
  const bool receives =
      pass.forward ? HasUpstream(peers, pass.chunk) : HasDownstream(peers, pass.chunk);
  const bool sends =
      pass.forward ? HasDownstream(peers, pass.chunk) : HasUpstream(peers, pass.chunk);
  if (receives) deps.push_back(writer.Add(P2pOp(peers, pass, /*send=*/false), {}));
  int64_t last = *std::max_element(deps.begin(), deps.end());
  for (const Op& layer_op : ops) {
    // TE quantizes a cached FP8 weight on the chunk's first micro-batch only
    // (transformer_engine/pytorch/module/linear.py: quantize_weight(update_workspace=
    // is_first_microbatch is None or is_first_microbatch); Megatron's forward_step sets the flag
    // for the first micro-batch of each model chunk, schedules.py).
    if (layer_op.role.operand == Fp8Operand::kCachedWeight && pass.micro_batch > 0) continue;
    Op op = layer_op;
    op.micro_batch = pass.micro_batch;
    op.model_chunk = pass.chunk;
    last = writer.Add(std::move(op), deps);
    deps = {last};
  }
  if (sends) writer.Add(P2pOp(peers, pass, /*send=*/true), {last});
  state.previous_pass_end = last;
  if (pass.forward) state.forward_end[stream] = last;
}

}  // namespace trainscope::graph::internal
