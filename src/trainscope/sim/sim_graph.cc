// Turns the step graphs of all pipeline stages into simulator nodes: stream placement, per-op
// cost, cross-stage pipeline dependencies and the dependency rewrites of Megatron-Core's overlap
// features (docs/simulate.md, "Overlap").
#include "trainscope/sim/sim_graph.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "trainscope/error.h"

namespace trainscope::sim::internal {
namespace {

using config::GroupKind;
using graph::Collective;
using graph::CommPurpose;
using graph::Op;
using graph::OpBlock;
using graph::OpKind;
using graph::Phase;

bool IsPipelineP2p(const Op& op) {
  return op.group == GroupKind::kPp &&
         (op.collective == Collective::kSend || op.collective == Collective::kRecv);
}

Stream StreamOf(const Op& op) {
  if (op.role.kind == graph::OpKind::kActivationOffload) return Stream::kHostCopy;
  if (!op.IsComm()) return Stream::kCompute;
  if (IsPipelineP2p(op)) {
    return op.collective == Collective::kSend ? Stream::kPipelineSend : Stream::kPipelineRecv;
  }
  if (op.phase == Phase::kGradSync || op.phase == Phase::kOptimizer ||
      op.role.block == OpBlock::kFsdp)
    return Stream::kDataParallelComm;
  return Stream::kModelParallelComm;
}

bool IsFlexExchange(const Op& op) {
  return op.role.purpose == CommPurpose::kEpFlexDispatch ||
         op.role.purpose == CommPurpose::kEpFlexCombine;
}

// Routed-MoE ops whose time is set by the busiest expert-parallel rank. The flex dispatcher's
// exchanges are not among them: their cost model takes the routing skew itself (the hottest
// NVLink domain and rank, cost/flex_dispatch.h).
bool IsRoutedMoeOp(const Op& op) {
  return op.role.block == OpBlock::kMoeRouted && !IsFlexExchange(op);
}

// Host time before a collective is issued (CommCost::host_seconds) holds the compute stream: it
// extends the last compute op the collective depends on (the host issues the call after it), or
// the collective itself when it depends on no compute op. Nodes of earlier ops are in `nodes`.
void ChargeHostTime(const Op& op, int32_t offset, double seconds, Node& node,
                    std::vector<Node>& nodes) {
  int32_t producer = -1;
  for (const int64_t dep : op.deps) {
    const int32_t index = static_cast<int32_t>(offset + dep);
    if (nodes[static_cast<size_t>(index)].stream == Stream::kCompute)
      producer = std::max(producer, index);
  }
  if (producer < 0) {
    node.base_seconds += seconds;
    return;
  }
  nodes[static_cast<size_t>(producer)].base_seconds += seconds;
}

bool IsCpRingOp(const Op& op) { return op.role.purpose == CommPurpose::kCpExchange; }

bool IsSharedExpertOp(const Op& op) { return op.role.block == OpBlock::kMoeShared; }

bool IsExpertParallelExchange(const Op& op) {
  return (op.group == GroupKind::kEp || op.group == GroupKind::kTpEp) &&
         (op.collective == Collective::kAllToAll || op.collective == Collective::kAllGather ||
          op.collective == Collective::kReduceScatter);
}

// The forward / backward pass an op belongs to (recompute runs inside the backward pass).
std::tuple<bool, int64_t, int64_t> PassKey(const Op& op) {
  return {op.phase == Phase::kForward, op.micro_batch, op.model_chunk};
}

void ReplaceDep(std::vector<int32_t>& deps, int32_t from, const std::vector<int32_t>& to) {
  const auto it = std::find(deps.begin(), deps.end(), from);
  if (it == deps.end()) return;
  deps.erase(it);
  deps.insert(deps.end(), to.begin(), to.end());
}

// Builds and rewrites the nodes of one lane. `nodes` already holds the lane's nodes at
// [offset, offset + ops.size()).
class LaneBuilder {
 public:
  LaneBuilder(const LaneTimeline& lane, int32_t offset, std::vector<Node>& nodes,
              const config::TrainingConfig& training)
      : ops_(lane.graph.ops),
        combined_passes_(lane.graph.combined_passes),
        offset_(offset),
        nodes_(nodes),
        training_(training) {}

  Node& At(int64_t op) { return nodes_[static_cast<size_t>(offset_ + op)]; }
  int32_t Id(int64_t op) const { return static_cast<int32_t>(offset_ + op); }
  int64_t Size() const { return static_cast<int64_t>(ops_.size()); }

  // Megatron's non-interleaved 1F1B (and interleaved without --overlap-p2p-communication)
  // waits for each send before the next pass's compute (p2p_communication.py, blocking wait).
  void BlockOnSends() {
    const bool overlapped =
        training_.parallel.virtual_stages > 1 && training_.overlap.overlap_p2p_comm;
    if (overlapped) return;
    int32_t last_send = -1;
    std::tuple<bool, int64_t, int64_t> pass{false, -2, -2};
    for (int64_t i = 0; i < Size(); ++i) {
      const Op& op = ops_[static_cast<size_t>(i)];
      if (IsPipelineP2p(op)) {
        if (op.collective == Collective::kSend) last_send = Id(i);
        continue;
      }
      if (op.micro_batch < 0) continue;
      const auto key = PassKey(op);
      if (key != pass) {
        pass = key;
        if (last_send >= 0) At(i).deps.push_back(last_send);
      }
    }
  }

  // --tp-comm-overlap: TE splits each SP all-gather / reduce-scatter into t chunks pipelined
  // with the GEMM it feeds or follows.
  void OverlapTensorParallelComm() {
    if (!training_.overlap.tp_comm_overlap) return;
    const double chunks = static_cast<double>(training_.parallel.tensor);
    for (int64_t i = 0; i < Size(); ++i) {
      const Op& op = ops_[static_cast<size_t>(i)];
      if (!op.IsComm() || op.group != GroupKind::kTp || op.micro_batch < 0) continue;
      if (op.collective == Collective::kAllGather && i + 1 < Size()) {
        // The GEMM the gather feeds, past the FP8 casts of its other operands (graph/fp8_ops.h)
        // that the graph issues between them.
        int64_t g = i + 1;
        while (g + 1 < Size() && ops_[static_cast<size_t>(g)].role.kind == OpKind::kFp8Quantize) {
          ++g;
        }
        const Op& gemm = ops_[static_cast<size_t>(g)];
        if (gemm.IsComm() || gemm.gemm.m == 0) continue;
        for (int64_t k = i + 1; k <= g; ++k) ReplaceDep(At(k).deps, Id(i), At(i).deps);
        Pipeline(At(g), Id(i), chunks);
      } else if (op.collective == Collective::kReduceScatter && op.deps.size() == 1) {
        const int64_t producer = op.deps.front();
        const Op& gemm = ops_[static_cast<size_t>(producer)];
        if (gemm.IsComm() || gemm.gemm.m == 0) continue;
        Node& rs = At(i);
        rs.deps = At(producer).deps;
        Pipeline(rs, Id(producer), chunks);
      }
    }
  }

  // TE ring attention (p2p CP): each ring step's KV exchange overlaps the previous step's
  // attention block, so the ring runs as one transfer pipelined with the core kernel in c steps.
  void OverlapCpRing() {
    const double steps = static_cast<double>(training_.parallel.context);
    for (int64_t i = 0; i < Size(); ++i) {
      if (!IsCpRingOp(ops_[static_cast<size_t>(i)])) continue;
      int64_t end = i;
      double total = 0;
      while (end < Size() && IsCpRingOp(ops_[static_cast<size_t>(end)])) {
        total += At(end).base_seconds;
        if (end > i) At(end).base_seconds = 0;
        ++end;
      }
      At(i).base_seconds = total;
      if (end < Size() &&
          ops_[static_cast<size_t>(end)].role.kind == graph::OpKind::kAttentionCore) {
        Node& core = At(end);
        ReplaceDep(core.deps, Id(end - 1), At(i).deps);
        Pipeline(core, Id(i), steps);
        core.lag_fraction = 0;
      }
      i = end - 1;
    }
  }

  // --moe-shared-expert-overlap: the shared expert runs on the compute stream while the first
  // expert-parallel exchange of its layer is in flight (moe_layer.py shared-expert stream).
  void OverlapSharedExperts() {
    if (!training_.moe.shared_expert_overlap) return;
    for (int64_t i = 0; i < Size(); ++i) {
      if (!IsSharedExpertOp(ops_[static_cast<size_t>(i)])) continue;
      int64_t last = i;
      while (last + 1 < Size() && IsSharedExpertOp(ops_[static_cast<size_t>(last + 1)])) {
        ++last;
      }
      DetachSharedRun(i, last);
      i = last;
    }
  }

  // --overlap-moe-expert-parallel-comm (Megatron-Core combined 1F1B,
  // models/common/model_chunk_schedule_plan.py TransformerModelChunkSchedulePlan.run and
  // TransformerLayerSchedulePlan.run): the forward of one micro-batch and the backward of another
  // run as one step, layer by layer: forward layer k with the backward's k-th layer (the model's
  // layer n-1-k). Per layer pair the compute stream runs the forward's pre-dispatch part
  // (attention, router, permutation), the backward's expert part, the forward's expert part and
  // the backward's pre-dispatch part, while the communication stream runs the backward's combine,
  // the forward's dispatch, the backward's dispatch and the forward's combine; every data
  // dependency stays, so an exchange longer than the compute it is paired with is exposed. With
  // --delay-wgrad-compute the weight gradients run after the data-gradient chain (backward_dw),
  // so the backward's dispatch no longer waits for the expert weight gradients.
  // The pairs are the graph's (StepGraph::combined_passes); unpaired passes (warm-up and
  // cool-down) run alone.
  void OverlapExpertParallelComm() {
    if (combined_passes_.empty()) return;
    std::map<std::tuple<bool, int64_t, int64_t>, std::vector<int64_t>> passes;
    for (int64_t i = 0; i < Size(); ++i) {
      const Op& op = ops_[static_cast<size_t>(i)];
      if (op.micro_batch < 0 || IsPipelineP2p(op)) continue;
      passes[PassKey(op)].push_back(i);
    }
    const auto ops_of = [&](const graph::PassId& id) -> const std::vector<int64_t>& {
      static const std::vector<int64_t> kNone;
      const auto it = passes.find({id.forward, id.micro_batch, id.model_chunk});
      return it == passes.end() ? kNone : it->second;
    };
    for (const auto& [first_id, second_id] : combined_passes_) {
      const std::vector<int64_t>& first = ops_of(first_id);
      const std::vector<int64_t>& second = ops_of(second_id);
      if (first.empty() || second.empty()) continue;
      InterleavePair(first_id.forward ? first : second, first_id.forward ? second : first, first,
                     second);
    }
  }

  // --cpu-offloading (Transformer Engine's AsyncDoubleBufferGroupOffloadHandler around each
  // decoder layer of Megatron's TransformerBlock): an offloaded layer's D2H copy runs on the copy
  // stream beside the next layer's forward, which commits only once the copy is done, so the
  // layer after it waits for the copy. Before the backward, offloaded layer i's reload starts
  // with the backward of layer i+1, and layer i's backward waits for it.
  void OverlapActivationOffload() {
    for (int64_t i = 0; i + 1 < Size(); ++i) {
      const Op& op = ops_[static_cast<size_t>(i)];
      if (op.role.kind != graph::OpKind::kActivationOffload) continue;
      const std::vector<int32_t> chain = At(i).deps;
      if (op.phase == Phase::kForward) {
        ReplaceDep(At(i + 1).deps, Id(i), chain);
        const int64_t next_layer = NextLayerStart(i);
        const int64_t after_next = next_layer < 0 ? -1 : NextLayerStart(next_layer);
        if (after_next >= 0) At(after_next).deps.push_back(Id(i));
        continue;
      }
      // The first op of layer i+1's backward: the lowest index of that layer in this pass.
      int64_t start = -1;
      for (int64_t j = i - 1; j >= 0; --j) {
        const Op& before = ops_[static_cast<size_t>(j)];
        if (IsPipelineP2p(before)) continue;
        if (PassKey(before) != PassKey(op) || before.layer > op.layer + 1) break;
        if (before.layer == op.layer + 1) start = j;
      }
      At(i + 1).deps.insert(At(i + 1).deps.end(), chain.begin(), chain.end());
      At(i).deps.clear();
      if (start >= 0) At(i).deps.push_back(Id(start));
    }
  }

  // Megatron-FSDP prefetches each unit's parameter all-gather while the previous unit computes
  // and reduce-scatters each unit's gradients while the next unit's backward runs
  // (megatron_fsdp overlap_param_gather / overlap_grad_reduce, on by default). A gather waits
  // only for the start of the previous unit's compute (one unit of prefetch); a reduction
  // holds up nothing but the step's final gradient synchronisation.
  void OverlapFsdp() {
    if (!training_.data_parallel.megatron_fsdp) return;
    int64_t previous_unit_start = -1;
    std::vector<int32_t> reductions;
    for (int64_t i = 0; i < Size(); ++i) {
      const Op& op = ops_[static_cast<size_t>(i)];
      if (!op.IsComm() || op.role.block != OpBlock::kFsdp || op.micro_batch < 0) continue;
      if (i + 1 >= Size()) break;
      Node& next = At(i + 1);
      if (op.collective == Collective::kAllGather) {
        const std::vector<int32_t> chain = At(i).deps;
        At(i).deps.clear();
        if (previous_unit_start >= 0) {
          // Issued when the previous unit starts: ahead of that unit's gradient reduction on
          // the data-parallel stream.
          At(i).deps.push_back(Id(previous_unit_start));
          At(i).queue_key = static_cast<double>(previous_unit_start) + 0.5;
        }
        // The unit's first op still follows the op before the gather.
        next.deps.insert(next.deps.end(), chain.begin(), chain.end());
        if (!ops_[static_cast<size_t>(i + 1)].IsComm()) previous_unit_start = i + 1;
      } else if (op.collective == Collective::kReduceScatter) {
        ReplaceDep(next.deps, Id(i), At(i).deps);
        reductions.push_back(Id(i));
      }
    }
    for (int64_t i = 0; i < Size() && !reductions.empty(); ++i) {
      const Phase phase = ops_[static_cast<size_t>(i)].phase;
      if (phase == Phase::kGradSync || phase == Phase::kOptimizer) {
        At(i).deps.insert(At(i).deps.end(), reductions.begin(), reductions.end());
        break;
      }
    }
  }

  // --overlap-grad-reduce: each bucket's reduction starts once the last micro-batch's backward
  // of its chunk has produced its gradients; bucket 0 holds the last layers, so bucket i of n is
  // ready after the first (i+1)/n of that backward pass.
  void OverlapGradReduce(int64_t num_micro_batches) {
    if (!training_.data_parallel.overlap_grad_reduce || training_.data_parallel.megatron_fsdp)
      return;
    ForEachBucketRun(Phase::kGradSync, [&](const std::vector<int64_t>& run, int64_t chunk) {
      const std::vector<int64_t> pass = PassComputeOps(false, num_micro_batches - 1, chunk);
      if (pass.empty()) return;
      const auto n = static_cast<double>(run.size());
      for (size_t b = 0; b < run.size(); ++b) {
        const auto index = static_cast<size_t>(
            std::ceil(static_cast<double>(b + 1) / n * static_cast<double>(pass.size())) - 1);
        At(run[b]).deps = {Id(pass[std::min(index, pass.size() - 1)])};
      }
    });
  }

  // --overlap-param-gather: the distributed optimizer's parameter all-gathers run during the
  // next step's forward, last bucket (first layers) first; simulated at the start of this step
  // with micro-batch 0's forward of each chunk waiting for the bucket of the layers it reaches.
  void OverlapParamGather() {
    const config::DataParallelConfig& dp = training_.data_parallel;
    if (!dp.overlap_param_gather || !dp.distributed_optimizer || dp.megatron_fsdp) return;
    ForEachBucketRun(Phase::kOptimizer, [&](const std::vector<int64_t>& run, int64_t chunk) {
      const std::vector<int64_t> pass = PassComputeOps(true, 0, chunk);
      const auto n = static_cast<double>(run.size());
      for (size_t b = 0; b < run.size(); ++b) {
        Node& gather = At(run[b]);
        gather.deps.clear();
        gather.queue_key =
            -1e12 + static_cast<double>(chunk) * 1e6 + static_cast<double>(run.size() - 1 - b);
        if (pass.empty()) continue;
        const auto index = static_cast<size_t>(
            std::floor((1.0 - static_cast<double>(b + 1) / n) * static_cast<double>(pass.size())));
        At(pass[std::min(index, pass.size() - 1)]).deps.push_back(Id(run[b]));
      }
    });
  }

 private:
  void Pipeline(Node& node, int32_t with, double chunks) {
    node.pipelined_with = with;
    node.lag_fraction = 1.0 / chunks;
    node.tail_fraction = 1.0 / chunks;
  }

  // Segments of one layer of a pass in the combined 1F1B schedule.
  enum Segment { kHead, kPre, kDispatch, kExperts, kCombine, kPost, kTail, kNumSegments };

  static bool IsDispatchExchange(const Op& op) {
    return op.role.purpose == CommPurpose::kEpDispatch ||
           op.role.purpose == CommPurpose::kEpDispatchProbs ||
           op.role.purpose == CommPurpose::kEpFlexDispatch;
  }
  static bool IsCombineExchange(const Op& op) {
    return op.role.purpose == CommPurpose::kEpCombine ||
           op.role.purpose == CommPurpose::kEpFlexCombine;
  }

  // The ops of `pass` by layer (in pass order) and segment. A forward layer is pre-dispatch ops,
  // dispatch exchanges, expert ops up to the combine, the combine, and what follows; a backward
  // layer meets the combine's gradient first and the dispatch's last, so its segments are
  // (post) ops before the combine gradient, the combine gradient, expert ops, the dispatch
  // gradients, and the pre-dispatch ops after them. Ops outside layers go to the head (before
  // the first layer) or the tail.
  std::vector<std::array<std::vector<int64_t>, kNumSegments>> LayerSegments(
      const std::vector<int64_t>& pass, bool forward) const {
    std::vector<std::array<std::vector<int64_t>, kNumSegments>> layers(1);  // [0] head and tail
    int64_t current_layer = -1;
    Segment segment = kHead;
    for (const int64_t i : pass) {
      const Op& op = ops_[static_cast<size_t>(i)];
      if (op.layer < 0) {
        layers.front()[layers.size() == 1 ? kHead : kTail].push_back(i);
        continue;
      }
      if (op.layer != current_layer) {
        current_layer = op.layer;
        layers.emplace_back();
        segment = forward ? kPre : kPost;
      }
      const bool dispatch = op.IsComm() && IsDispatchExchange(op);
      const bool combine = op.IsComm() && IsCombineExchange(op);
      if (forward) {
        if (dispatch && (segment == kPre || segment == kDispatch)) {
          segment = kDispatch;
        } else if (combine) {
          segment = kCombine;
        } else if (segment == kDispatch) {
          segment = kExperts;
        } else if (segment == kCombine) {
          segment = kPost;
        }
      } else {
        if (combine && segment == kPost) {
          segment = kCombine;
        } else if (dispatch &&
                   (segment == kExperts || segment == kCombine || segment == kDispatch)) {
          segment = kDispatch;
        } else if (segment == kCombine) {
          segment = kExperts;
        } else if (segment == kDispatch) {
          segment = kPre;
        }
      }
      layers.back()[segment].push_back(i);
    }
    return layers;
  }

  // Moves the weight-gradient GEMMs of `ops` behind the rest and lets nothing of `pass_ops` but
  // other weight gradients wait for them (their successors wait for what they waited for).
  void DelayWeightGradients(std::vector<int64_t>& ops, const std::vector<int64_t>& pass_ops) {
    std::vector<int64_t> wgrads;
    std::erase_if(ops, [&](int64_t i) {
      const bool wgrad = ops_[static_cast<size_t>(i)].role.pass == graph::OpPass::kWgrad;
      if (wgrad) wgrads.push_back(i);
      return wgrad;
    });
    for (const int64_t w : wgrads) {
      for (const int64_t o : pass_ops) {
        if (ops_[static_cast<size_t>(o)].role.pass == graph::OpPass::kWgrad) continue;
        ReplaceDep(At(o).deps, Id(w), At(w).deps);
      }
    }
    ops.insert(ops.end(), wgrads.begin(), wgrads.end());
  }

  // Issues the forward pass `f` and the backward pass `b` as Megatron's combined 1F1B does, on
  // the queue positions the two passes held (`first` then `second` in issue order).
  void InterleavePair(const std::vector<int64_t>& f, const std::vector<int64_t>& b,
                      const std::vector<int64_t>& first, const std::vector<int64_t>& second) {
    auto fl = LayerSegments(f, /*forward=*/true);
    auto bl = LayerSegments(b, /*forward=*/false);
    const bool delay = training_.moe.delay_wgrad_compute;
    // The pipeline transfers issued among the pair's ops: the step receives its inputs before
    // and sends its outputs after (combined_1f1b's p2p around the combined step).
    std::vector<int64_t> receives, sends;
    for (int64_t i = first.front(); i < second.back(); ++i) {
      const Op& op = ops_[static_cast<size_t>(i)];
      if (!IsPipelineP2p(op)) continue;
      (op.collective == Collective::kSend ? sends : receives).push_back(i);
    }
    // The later pass and the receives no longer wait for the earlier pass or its sends (the pair
    // is one step).
    // `first` is in issue (index) order: membership by binary search, no per-pair lane-sized
    // allocation.
    const int64_t first_begin = first.front(), second_begin = second.front();
    std::vector<int64_t> later = second;
    later.insert(later.end(), receives.begin(), receives.end());
    for (const int64_t i : later) {
      std::erase_if(At(i).deps, [&](int32_t dep) {
        const int64_t d = dep - offset_;
        if (d < 0 || d >= Size()) return false;
        if (std::binary_search(first.begin(), first.end(), d)) return true;
        const Op& op = ops_[static_cast<size_t>(d)];
        return d > first_begin && d < second_begin && IsPipelineP2p(op) &&
               op.collective == Collective::kSend;
      });
    }
    std::vector<int64_t> order;
    const auto append = [&](const std::vector<int64_t>& ops) {
      order.insert(order.end(), ops.begin(), ops.end());
    };
    append(receives);
    append(bl.front()[kHead]);
    append(fl.front()[kHead]);
    const size_t units = std::max(fl.size(), bl.size());
    for (size_t u = 1; u < units; ++u) {
      std::array<std::vector<int64_t>, kNumSegments> none;
      auto& fs = u < fl.size() ? fl[u] : none;
      auto& bs = u < bl.size() ? bl[u] : none;
      if (delay) {
        DelayWeightGradients(bs[kExperts], b);
        DelayWeightGradients(bs[kPre], b);
      }
      std::vector<int64_t> pre_wgrads;  // the backward's attention weight gradients, run last
      if (delay) {
        while (!bs[kPre].empty() &&
               ops_[static_cast<size_t>(bs[kPre].back())].role.pass == graph::OpPass::kWgrad) {
          pre_wgrads.insert(pre_wgrads.begin(), bs[kPre].back());
          bs[kPre].pop_back();
        }
      }
      for (const auto* ops :
           {&bs[kPost], &bs[kCombine], &fs[kPre], &fs[kDispatch], &bs[kExperts], &bs[kDispatch],
            &fs[kExperts], &fs[kCombine], &bs[kPre], &fs[kPost], &pre_wgrads}) {
        append(*ops);
      }
    }
    append(fl.front()[kTail]);
    append(bl.front()[kTail]);
    append(sends);
    TRAINSCOPE_CHECK(order.size() == f.size() + b.size() + receives.size() + sends.size(),
                     "combined 1F1B lost an op");
    std::vector<double> slots;
    slots.reserve(order.size());
    for (const int64_t i : order) slots.push_back(At(i).queue_key);
    std::sort(slots.begin(), slots.end());
    for (size_t k = 0; k < order.size(); ++k) At(order[k]).queue_key = slots[k];
  }

  // First op after `i` in a later layer of the same pass, or -1.
  int64_t NextLayerStart(int64_t i) const {
    const Op& op = ops_[static_cast<size_t>(i)];
    for (int64_t j = i + 1; j < Size(); ++j) {
      const Op& next = ops_[static_cast<size_t>(j)];
      if (IsPipelineP2p(next)) continue;
      if (PassKey(next) != PassKey(op)) return -1;
      if (next.layer != op.layer) return j;
    }
    return -1;
  }

  // Shared-expert run [first, last]: it starts beside the layer's first expert-parallel
  // exchange instead of in series with the routed path.
  void DetachSharedRun(int64_t first, int64_t last) {
    const Op& head = ops_[static_cast<size_t>(first)];
    // The layer's ops of this pass are contiguous: look outward from the run.
    auto same_block = [&](int64_t j) {
      const Op& op = ops_[static_cast<size_t>(j)];
      return IsPipelineP2p(op) || (op.layer == head.layer && PassKey(op) == PassKey(head));
    };
    int64_t exchange = -1;
    for (int64_t j = first - 1; j >= 0 && same_block(j); --j) {
      if (IsExpertParallelExchange(ops_[static_cast<size_t>(j)])) exchange = j;
    }
    for (int64_t j = last + 1; exchange < 0 && j < Size() && same_block(j); ++j) {
      if (IsExpertParallelExchange(ops_[static_cast<size_t>(j)])) exchange = j;
    }
    if (exchange < 0 || last + 1 >= Size()) return;
    const std::vector<int32_t> head_deps = At(first).deps;
    if (exchange < first) {
      // Forward: shared expert after the routed path; start it beside the dispatch.
      At(first).deps = At(exchange).deps;
      At(last + 1).deps.insert(At(last + 1).deps.end(), head_deps.begin(), head_deps.end());
    } else {
      // Backward: shared expert before the routed path; the routed path no longer waits for
      // it, the next layer does.
      const int64_t join = NextLayerStart(exchange);
      if (join < 0) return;
      ReplaceDep(At(last + 1).deps, Id(last), head_deps);
      At(join).deps.push_back(Id(last));
    }
    for (int64_t j = first; j <= last; ++j) {
      At(j).queue_key = static_cast<double>(exchange) + 0.5 +
                        static_cast<double>(j - first) / static_cast<double>(last - first + 2);
    }
  }

  // Compute ops (in order) of one pass of this lane.
  std::vector<int64_t> PassComputeOps(bool forward, int64_t micro_batch, int64_t chunk) const {
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < Size(); ++i) {
      const Op& op = ops_[static_cast<size_t>(i)];
      if (op.IsComm() || op.micro_batch != micro_batch || op.model_chunk != chunk) continue;
      if ((op.phase == Phase::kForward) == forward) ids.push_back(i);
    }
    return ids;
  }

  // Calls fn(run, chunk) for each run of bucket ops (purpose kGradBucket / kParamBucket) of one
  // buffer (block and collective) and chunk in `phase`.
  template <typename Fn>
  void ForEachBucketRun(Phase phase, Fn fn) const {
    using BufferKey = std::tuple<OpBlock, Collective, int64_t>;
    std::map<BufferKey, std::vector<int64_t>> runs;
    std::vector<BufferKey> order;
    for (int64_t i = 0; i < Size(); ++i) {
      const Op& op = ops_[static_cast<size_t>(i)];
      const bool bucket = op.role.purpose == CommPurpose::kGradBucket ||
                          op.role.purpose == CommPurpose::kParamBucket;
      if (op.phase != phase || !op.IsComm() || !bucket) continue;
      const BufferKey key{op.role.block, op.collective, op.model_chunk};
      if (!runs.contains(key)) order.push_back(key);
      runs[key].push_back(i);
    }
    for (const auto& key : order) fn(runs.at(key), std::get<2>(key));
  }

  const std::vector<Op>& ops_;
  const std::vector<std::pair<graph::PassId, graph::PassId>>& combined_passes_;
  int32_t offset_;
  std::vector<Node>& nodes_;
  const config::TrainingConfig& training_;
};

// The send matching a pipeline receive: forward data comes from PP rank r−1 (chunk c−1 of the
// last rank when r = 0), gradients from r+1 (chunk c+1 of rank 0 when r = p−1).
std::tuple<int64_t, bool, int64_t, int64_t> SenderKey(const Op& recv, int64_t pipeline_rank,
                                                      int64_t p) {
  const bool forward = recv.phase == Phase::kForward;
  int64_t rank = pipeline_rank + (forward ? -1 : 1);
  int64_t chunk = recv.model_chunk;
  if (rank < 0) {
    rank = p - 1;
    --chunk;
  } else if (rank >= p) {
    rank = 0;
    ++chunk;
  }
  return {rank, forward, recv.micro_batch, chunk};
}

}  // namespace

SimGraph BuildSimGraph(const std::vector<LaneTimeline>& lanes,
                       const config::TrainingConfig& training, const OpCostModel& costs,
                       const SimulationOptions& options) {
  SimGraph sim;
  std::map<std::tuple<int64_t, bool, int64_t, int64_t>, int32_t> sends;
  for (size_t l = 0; l < lanes.size(); ++l) {
    const LaneTimeline& lane = lanes[l];
    const auto offset = static_cast<int32_t>(sim.nodes.size());
    sim.lane_offset.push_back(offset);
    for (const Op& op : lane.graph.ops) {
      Node node{.lane = static_cast<int32_t>(l),
                .op = op.id,
                .stream = StreamOf(op),
                .comm = op.IsComm(),
                .queue_key = static_cast<double>(op.id)};
      double host_seconds = 0;
      if (op.IsComm()) {
        // A receive waits for its matching send, which carries the transfer; the second half
        // of a CP ring exchange moves in the other direction at the same time.
        const bool passive = op.collective == Collective::kRecv;
        if (!passive) {
          const CommCost cost = costs.comm_cost(op, lane.rank);
          node.base_seconds = cost.seconds;
          node.link = cost.link;
          host_seconds = cost.host_seconds;
        }
      } else {
        node.base_seconds = costs.compute_seconds(op);
        if (costs.host_seconds) node.host_seconds = costs.host_seconds(op);
      }
      if (IsRoutedMoeOp(op)) node.base_seconds *= options.moe_load_factor;
      if (host_seconds > 0) ChargeHostTime(op, offset, host_seconds, node, sim.nodes);
      // DeepEP's kernels hold their SMs while they run: compute beside them slows accordingly.
      if (IsFlexExchange(op)) node.interference_fraction = options.flex_interference_fraction;
      TRAINSCOPE_CHECK(node.base_seconds >= 0 && std::isfinite(node.base_seconds),
                       "op cost must be finite and >= 0: " + op.name);
      TRAINSCOPE_CHECK(node.host_seconds >= 0 && std::isfinite(node.host_seconds),
                       "host seconds must be finite and >= 0: " + op.name);
      for (const int64_t dep : op.deps) node.deps.push_back(static_cast<int32_t>(offset + dep));
      if (IsPipelineP2p(op) && op.collective == Collective::kSend) {
        sends[{lane.pipeline_rank, op.phase == Phase::kForward, op.micro_batch, op.model_chunk}] =
            static_cast<int32_t>(sim.nodes.size());
      }
      sim.nodes.push_back(std::move(node));
    }
  }
  const int64_t p = static_cast<int64_t>(lanes.size());
  for (size_t l = 0; l < lanes.size(); ++l) {
    const LaneTimeline& lane = lanes[l];
    for (const Op& op : lane.graph.ops) {
      if (!IsPipelineP2p(op) || op.collective != Collective::kRecv) continue;
      const auto it = sends.find(SenderKey(op, lane.pipeline_rank, p));
      TRAINSCOPE_CHECK(it != sends.end(), "pipeline receive without a matching send");
      sim.nodes[static_cast<size_t>(sim.lane_offset[l] + op.id)].deps.push_back(it->second);
    }
    LaneBuilder builder(lane, sim.lane_offset[l], sim.nodes, training);
    builder.BlockOnSends();
    builder.OverlapActivationOffload();
    builder.OverlapTensorParallelComm();
    builder.OverlapCpRing();
    builder.OverlapSharedExperts();
    builder.OverlapExpertParallelComm();
    builder.OverlapFsdp();
    builder.OverlapGradReduce(lane.graph.num_micro_batches);
    builder.OverlapParamGather();
  }
  return sim;
}

}  // namespace trainscope::sim::internal
