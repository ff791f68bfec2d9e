#include "trainscope/report/chrome_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <tuple>
#include <vector>

#include "trainscope/config/rank_mapping.h"
#include "trainscope/report/format.h"

namespace trainscope::report {
namespace {

using graph::Collective;
using graph::Op;

constexpr std::array<const char*, 8> kThreadNames = {"compute", "tp comm", "cp comm", "ep comm",
                                                     "dp comm", "pp send", "pp recv", "host copy"};

// Thread id (1-based) of an op's slice.
int ThreadOf(const Op& op, sim::Stream stream) {
  switch (stream) {
    case sim::Stream::kCompute:
      return 1;
    case sim::Stream::kDataParallelComm:
      return 5;
    case sim::Stream::kPipelineSend:
      return 6;
    case sim::Stream::kPipelineRecv:
      return 7;
    case sim::Stream::kHostCopy:
      return 8;
    case sim::Stream::kModelParallelComm:
      break;
  }
  const std::string cls = sim::CommClass(op);
  if (cls == "cp") return 3;
  if (cls == "ep") return 4;
  return 2;
}

struct Slice {
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  int tid = 0;
  const Op* op = nullptr;
};

std::string SliceArgs(const Op& op) {
  std::string args =
      fmt::format(R"("phase":"{}","microbatch":{},"chunk":{},"layer":{})",
                  graph::ToString(op.phase), op.micro_batch, op.model_chunk, op.layer);
  if (op.IsComm()) {
    args += fmt::format(R"(,"bytes":{},"group":"{}","group_size":{},"collective":"{}")",
                        op.message_bytes, config::ToString(op.group), op.group_size,
                        graph::ToString(op.collective));
    if (op.peer >= 0) args += fmt::format(R"(,"peer":{})", op.peer);
  } else {
    args += fmt::format(R"(,"flops":{},"bytes":{})", op.flops, op.bytes);
  }
  return args;
}

}  // namespace

std::string SliceName(const Op& op, bool show_chunk) {
  std::string name;
  if (op.micro_batch >= 0) name += fmt::format("mb{} ", op.micro_batch);
  if (show_chunk && op.micro_batch >= 0) name += fmt::format("c{} ", op.model_chunk);
  if (op.layer >= 0) name += fmt::format("L{} ", op.layer);
  return name + op.name;
}

std::string RenderChromeTrace(const sim::StepSimulation& simulation) {
  // otherData says how many micro-batches the timeline shows; when the step was extended
  // periodically (sim/periodic_extension.h) the rest are not drawn.
  std::string out =
      fmt::format(R"({{"displayTimeUnit":"ns","otherData":{{"tool":"trainscope simulate",)"
                  R"("num_micro_batches":{},"simulated_micro_batches":{},"step_time_us":{}}},)",
                  simulation.num_micro_batches, simulation.simulated_micro_batches,
                  Micros(Nanoseconds(simulation.step_seconds)));
  out += "\"traceEvents\":[\n";
  bool first = true;
  auto emit = [&](const std::string& event) {
    if (!first) out += ",\n";
    first = false;
    out += event;
  };
  // Flow ids: one per pipeline send, keyed by (sender stage, phase, micro-batch, chunk).
  std::map<std::tuple<int64_t, bool, int64_t, int64_t>, int64_t> flow_ids;
  for (const sim::LaneTimeline& lane : simulation.lanes) {
    const bool show_chunk = lane.graph.num_micro_batches > 0 &&
                            std::any_of(lane.graph.ops.begin(), lane.graph.ops.end(),
                                        [](const Op& op) { return op.model_chunk > 0; });
    emit(fmt::format(
        R"j({{"ph":"M","name":"process_name","pid":{},"args":{{"name":"rank {} (pp{})"}}}})j",
        lane.rank, lane.rank, lane.pipeline_rank));
    // The copy stream of --cpu-offloading is named only where it carries copies.
    const bool host_copies =
        std::any_of(lane.graph.ops.begin(), lane.graph.ops.end(),
                    [](const Op& op) { return op.role.kind == graph::OpKind::kActivationOffload; });
    for (size_t t = 0; t < kThreadNames.size() - (host_copies ? 0 : 1); ++t) {
      emit(fmt::format(
          R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"{}"}}}})",
          lane.rank, t + 1, kThreadNames[t]));
    }
    std::vector<Slice> slices;
    for (const Op& op : lane.graph.ops) {
      const sim::OpTiming& timing = lane.timings[static_cast<size_t>(op.id)];
      const int64_t start = Nanoseconds(timing.start_seconds);
      const int64_t duration = Nanoseconds(timing.end_seconds) - start;
      if (duration <= 0) continue;
      slices.push_back({start, duration, ThreadOf(op, timing.stream), &op});
    }
    std::stable_sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
      return std::tie(a.tid, a.start_ns) < std::tie(b.tid, b.start_ns);
    });
    for (const Slice& slice : slices) {
      const Op& op = *slice.op;
      const std::string cat = op.IsComm() ? sim::CommClass(op) : "compute";
      emit(fmt::format(
          R"({{"ph":"X","name":"{}","cat":"{}","pid":{},"tid":{},"ts":{},"dur":{},"args":{{{}}}}})",
          SliceName(op, show_chunk), cat, lane.rank, slice.tid, Micros(slice.start_ns),
          Micros(slice.duration_ns), SliceArgs(op)));
      if (op.collective == Collective::kSend && op.group == config::GroupKind::kPp) {
        const int64_t id = static_cast<int64_t>(flow_ids.size()) + 1;
        flow_ids[{lane.rank, op.phase == graph::Phase::kForward, op.micro_batch, op.model_chunk}] =
            id;
        emit(
            fmt::format(R"({{"ph":"s","name":"p2p","cat":"pp","id":{},"pid":{},"tid":{},"ts":{}}})",
                        id, lane.rank, slice.tid, Micros(slice.start_ns + slice.duration_ns / 2)));
      }
    }
  }
  // Flow ends: on the receiving rank's compute thread at the moment the receive completes,
  // without a binding point, so the arrow lands on the first compute slice it unblocks.
  const auto stages = static_cast<int64_t>(simulation.lanes.size());
  for (const sim::LaneTimeline& lane : simulation.lanes) {
    for (const Op& op : lane.graph.ops) {
      if (op.collective != Collective::kRecv || op.group != config::GroupKind::kPp) continue;
      const bool forward = op.phase == graph::Phase::kForward;
      int64_t chunk = op.model_chunk;
      if (forward && lane.pipeline_rank == 0) --chunk;
      if (!forward && lane.pipeline_rank == stages - 1) ++chunk;
      const auto it = flow_ids.find({op.peer, forward, op.micro_batch, chunk});
      if (it == flow_ids.end()) continue;
      const sim::OpTiming& timing = lane.timings[static_cast<size_t>(op.id)];
      emit(fmt::format(R"({{"ph":"f","name":"p2p","cat":"pp","id":{},"pid":{},"tid":1,"ts":{}}})",
                       it->second, lane.rank, Micros(Nanoseconds(timing.end_seconds))));
    }
  }
  out += "\n]}\n";
  return out;
}

}  // namespace trainscope::report
