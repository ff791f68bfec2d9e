// The discrete-event engine: a time-ordered event queue over node completions and pipelined
// releases; each (lane, stream) runs one node at a time in queue_key order. Contention is decided
// when a node starts: a compute node that starts while a communication node of its lane is in
// flight is slowed by the interference fraction, and a communication node that shares its link
// class with one in flight on another stream of its lane shares the bandwidth for the overlap.
// A compute node lasts at least its host seconds (the launches must be issued first).
#include <algorithm>
#include <array>
#include <numeric>
#include <queue>
#include <string>
#include <vector>

#include "trainscope/error.h"
#include "trainscope/sim/sim_graph.h"

namespace trainscope::sim::internal {
namespace {

enum class EventKind { kFinish, kRelease };

struct Event {
  double time_seconds = 0;
  int64_t sequence = 0;  // ties resolve in creation order: deterministic
  EventKind kind = EventKind::kFinish;
  int32_t node = 0;
  bool operator>(const Event& other) const {
    if (time_seconds != other.time_seconds) return time_seconds > other.time_seconds;
    return sequence > other.sequence;
  }
};

struct StreamState {
  std::vector<int32_t> queue;
  size_t head = 0;
  int32_t running = -1;
};

class Engine {
 public:
  Engine(const SimGraph& graph, const SimulationOptions& options)
      : graph_(graph), options_(options), size_(graph.nodes.size()) {
    result_.start_seconds.assign(size_, -1);
    result_.end_seconds.assign(size_, -1);
    result_.trigger.assign(size_, -1);
    result_.host_overhead_seconds.assign(size_, 0);
    remaining_.assign(size_, 0);
    dependents_.resize(size_);
    pipelined_dependents_.resize(size_);
    streams_.resize(graph.lane_offset.size() * kNumStreams);
    for (size_t n = 0; n < size_; ++n) {
      const Node& node = graph.nodes[n];
      for (const int32_t dep : node.deps) {
        dependents_[static_cast<size_t>(dep)].push_back(static_cast<int32_t>(n));
      }
      remaining_[n] = static_cast<int32_t>(node.deps.size());
      if (node.pipelined_with >= 0) {
        pipelined_dependents_[static_cast<size_t>(node.pipelined_with)].push_back(
            static_cast<int32_t>(n));
        ++remaining_[n];
      }
      StreamOf(static_cast<int32_t>(n)).queue.push_back(static_cast<int32_t>(n));
    }
    for (StreamState& stream : streams_) {
      std::stable_sort(stream.queue.begin(), stream.queue.end(), [&](int32_t a, int32_t b) {
        return graph.nodes[static_cast<size_t>(a)].queue_key <
               graph.nodes[static_cast<size_t>(b)].queue_key;
      });
    }
  }

  EngineResult Run() {
    for (StreamState& stream : streams_) TryStart(stream, -1);
    while (!events_.empty()) {
      const Event event = events_.top();
      events_.pop();
      now_ = event.time_seconds;
      if (event.kind == EventKind::kRelease) {
        Satisfy(event.node, graph_.nodes[static_cast<size_t>(event.node)].pipelined_with);
        continue;
      }
      StreamState& stream = StreamOf(event.node);
      stream.running = -1;
      for (const int32_t dependent : dependents_[static_cast<size_t>(event.node)]) {
        Satisfy(dependent, event.node);
      }
      TryStart(stream, event.node);
    }
    for (size_t n = 0; n < size_; ++n) {
      TRAINSCOPE_CHECK(result_.end_seconds[n] >= 0,
                       "the simulated schedule deadlocked at node " + std::to_string(n));
    }
    return std::move(result_);
  }

 private:
  StreamState& StreamOf(int32_t node) {
    const Node& n = graph_.nodes[static_cast<size_t>(node)];
    return streams_[static_cast<size_t>(n.lane) * kNumStreams + static_cast<size_t>(n.stream)];
  }

  void Satisfy(int32_t node, int32_t by) {
    if (--remaining_[static_cast<size_t>(node)] == 0) TryStart(StreamOf(node), by);
  }

  void TryStart(StreamState& stream, int32_t trigger) {
    if (stream.running >= 0 || stream.head >= stream.queue.size()) return;
    const int32_t node = stream.queue[stream.head];
    if (remaining_[static_cast<size_t>(node)] > 0) return;
    ++stream.head;
    stream.running = node;
    Start(node, trigger);
  }

  void Start(int32_t node_id, int32_t trigger) {
    const auto n = static_cast<size_t>(node_id);
    const Node& node = graph_.nodes[n];
    double seconds = node.base_seconds;
    if (seconds > 0) seconds = Contended(node, seconds);
    // The kernels cannot run before the host has issued them: a host-bound op waits.
    if (node.host_seconds > seconds) {
      result_.host_overhead_seconds[n] = node.host_seconds - seconds;
      seconds = node.host_seconds;
    }
    double end = now_ + seconds;
    if (node.pipelined_with >= 0) {
      const auto with = static_cast<size_t>(node.pipelined_with);
      end = std::max(end, result_.end_seconds[with] + node.tail_fraction * seconds);
    }
    result_.start_seconds[n] = now_;
    result_.end_seconds[n] = end;
    result_.trigger[n] = trigger;
    Push(end, EventKind::kFinish, node_id);
    for (const int32_t dependent : pipelined_dependents_[n]) {
      const Node& d = graph_.nodes[static_cast<size_t>(dependent)];
      Push(now_ + d.lag_fraction * (end - now_), EventKind::kRelease, dependent);
    }
  }

  // The node's duration given what else its lane is running right now.
  double Contended(const Node& node, double seconds) const {
    const size_t base = static_cast<size_t>(node.lane) * kNumStreams;
    double slowed = seconds;
    for (int s = 0; s < kNumStreams; ++s) {
      const int32_t other = streams_[base + static_cast<size_t>(s)].running;
      if (other < 0 || s == static_cast<int>(node.stream)) continue;
      const Node& running = graph_.nodes[static_cast<size_t>(other)];
      const double remaining = result_.end_seconds[static_cast<size_t>(other)] - now_;
      if (remaining <= 0) continue;
      if (!node.comm && running.comm && running.base_seconds > 0) {
        const double fraction = running.interference_fraction >= 0 ? running.interference_fraction
                                                                   : options_.interference_fraction;
        slowed = std::max(slowed, seconds * (1 + fraction));
      } else if (node.comm && running.comm && running.link == node.link) {
        // Both share the link for min(seconds, remaining): that part takes twice as long.
        slowed += std::min(seconds, remaining);
      }
    }
    return slowed;
  }

  void Push(double time, EventKind kind, int32_t node) {
    events_.push(Event{time, sequence_++, kind, node});
  }

  const SimGraph& graph_;
  const SimulationOptions& options_;
  size_t size_;
  EngineResult result_;
  std::vector<int32_t> remaining_;
  std::vector<std::vector<int32_t>> dependents_;
  std::vector<std::vector<int32_t>> pipelined_dependents_;
  std::vector<StreamState> streams_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  double now_ = 0;
  int64_t sequence_ = 0;
};

}  // namespace

EngineResult RunEngine(const SimGraph& graph, const SimulationOptions& options) {
  return Engine(graph, options).Run();
}

}  // namespace trainscope::sim::internal
