// Internal to sim/: the simulator's node graph. One node per op of every lane's step graph, with
// its stream, cost, dependencies and the overlap relations that Megatron-Core's overlap
// features create (built in sim_graph.cc), and the event engine that times it
// (event_engine.cc).
#ifndef TRAINSCOPE_SIM_SIM_GRAPH_H_
#define TRAINSCOPE_SIM_SIM_GRAPH_H_

#include <cstdint>
#include <vector>

#include "trainscope/config/training_config.h"
#include "trainscope/sim/step_simulator.h"

namespace trainscope::sim::internal {

struct Node {
  int32_t lane = 0;
  int64_t op = 0;  // op id in the lane's graph
  Stream stream = Stream::kCompute;
  bool comm = false;
  LinkClass link = LinkClass::kNvlink;
  double base_seconds = 0;
  // Compute nodes: host seconds to issue the op's launches; the node takes at least this long.
  double host_seconds = 0;
  // Communication nodes: fractional slowdown of a compute node that starts while this one runs
  // (SMs the communication kernels hold); negative = SimulationOptions::interference_fraction.
  double interference_fraction = -1;
  std::vector<int32_t> deps;  // finish-to-start
  // Chunk-pipelined overlap with node `pipelined_with` (TP comm overlap, CP ring attention):
  // this node starts no earlier than that node's start + lag_fraction · its duration and ends no
  // earlier than its end + tail_fraction · this node's duration.
  int32_t pipelined_with = -1;
  double lag_fraction = 0;
  double tail_fraction = 0;
  double queue_key = 0;  // issue order on the node's stream
};

struct SimGraph {
  std::vector<Node> nodes;
  std::vector<int32_t> lane_offset;  // first node of each lane; nodes of lane l are contiguous
};

// Builds the nodes of all lanes from their step graphs (lane order = pipeline rank order).
[[nodiscard]] SimGraph BuildSimGraph(const std::vector<LaneTimeline>& lanes,
                                     const config::TrainingConfig& training,
                                     const OpCostModel& costs, const SimulationOptions& options);

struct EngineResult {
  std::vector<double> start_seconds;
  std::vector<double> end_seconds;
  std::vector<int32_t> trigger;  // the node whose completion (or start) let this node start
  std::vector<double> host_overhead_seconds;  // host seconds beyond the device time
};

// Runs the discrete-event simulation. Streams execute their nodes one at a time in queue_key
// order; a node starts when its stream is free and its dependencies are met.
[[nodiscard]] EngineResult RunEngine(const SimGraph& graph, const SimulationOptions& options);

}  // namespace trainscope::sim::internal

#endif  // TRAINSCOPE_SIM_SIM_GRAPH_H_
