// Chakra ET: the written stream decoded with a minimal protobuf reader matches the step graph
// (one node per op, dependencies, types, ASTRA-sim comm sizes), compute nodes time exactly the
// simulator's nanoseconds, pipeline sends match the peer's receives, and pg_names name groups
// holding the rank.
#include "trainscope/report/chakra_writer.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "simai_test_configs.h"

namespace trainscope::report {
namespace {

using graph::Collective;

uint64_t ReadVarint(std::string_view& in) {
  uint64_t value = 0;
  for (int shift = 0; !in.empty(); shift += 7) {
    const auto byte = static_cast<uint8_t>(in.front());
    in.remove_prefix(1);
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return value;
  }
  ADD_FAILURE() << "truncated varint";
  return value;
}

struct Field {
  uint64_t number = 0;
  uint64_t varint = 0;
  std::string bytes;  // length-delimited fields
};

std::vector<Field> ReadFields(std::string_view message) {
  std::vector<Field> fields;
  while (!message.empty()) {
    const uint64_t key = ReadVarint(message);
    Field field{.number = key >> 3};
    if ((key & 7) == 0) {
      field.varint = ReadVarint(message);
    } else {
      EXPECT_EQ(key & 7, 2u);
      const uint64_t size = ReadVarint(message);
      field.bytes = std::string(message.substr(0, size));
      message.remove_prefix(size);
    }
    fields.push_back(field);
  }
  return fields;
}

struct DecodedNode {
  uint64_t id = 0;
  std::string name;
  uint64_t type = 0;
  std::vector<int64_t> data_deps;
  std::map<std::string, std::pair<uint64_t, uint64_t>> ints;  // name -> (value field, value)
  std::map<std::string, std::string> strings;
};

struct DecodedEt {
  std::string version;
  std::vector<DecodedNode> nodes;
};

DecodedNode DecodeNode(std::string_view message) {
  DecodedNode node;
  for (const Field& field : ReadFields(message)) {
    if (field.number == 1) node.id = field.varint;
    if (field.number == 2) node.name = field.bytes;
    if (field.number == 3) node.type = field.varint;
    if (field.number == 5) {
      std::string_view packed = field.bytes;
      while (!packed.empty()) node.data_deps.push_back(static_cast<int64_t>(ReadVarint(packed)));
    }
    if (field.number != 10) continue;
    const std::vector<Field> attribute = ReadFields(field.bytes);
    EXPECT_EQ(attribute.size(), 2u);
    EXPECT_EQ(attribute[0].number, 1u);
    if (attribute[1].number == 29) {
      node.strings[attribute[0].bytes] = attribute[1].bytes;
    } else {
      node.ints[attribute[0].bytes] = {attribute[1].number, attribute[1].varint};
    }
  }
  return node;
}

DecodedEt Decode(const std::string& file) {
  DecodedEt et;
  std::string_view in = file;
  bool first = true;
  while (!in.empty()) {
    const uint64_t size = ReadVarint(in);
    const std::string_view message = in.substr(0, size);
    in.remove_prefix(size);
    if (first) {
      const std::vector<Field> metadata = ReadFields(message);
      if (!metadata.empty()) et.version = metadata[0].bytes;
      first = false;
      continue;
    }
    et.nodes.push_back(DecodeNode(message));
  }
  return et;
}

struct Written {
  graph::StepGraph graph;
  DecodedEt et;
  sim::OpCostModel costs;
};

constexpr double kPeakTflops = 989;

Written Write(const testing::ExportCase& c, int64_t rank) {
  EXPECT_TRUE(config::Validate(c.model, c.training).ok());
  Written w{graph::BuildStepGraph(c.model, c.training, rank), {}, {}};
  sim::HardwareCostOptions options;
  options.cluster = io::ResolveCluster(io::ClusterInputs{});
  w.costs = sim::BindHardwareCosts(c.model, c.training, options);
  const config::RankMapping mapping(c.training.parallel);
  w.et = Decode(RenderChakraEt(w.graph, c.training, mapping, w.costs.compute_seconds, kPeakTflops));
  return w;
}

testing::ExportCase PipelineCase(int64_t virtual_stages) {
  testing::ExportCase c = testing::DenseSpCase();
  c.training.parallel.pipeline = 2;
  c.training.parallel.virtual_stages = virtual_stages;
  return c;
}

TEST(ChakraWriterTest, DecodesOneNodePerOpWithTheGraphsDependenciesAndSizes) {
  for (const testing::ExportCase& c : {PipelineCase(1), testing::MoeCase()}) {
    const Written w = Write(c, 0);
    EXPECT_EQ(w.et.version, "0.0.4");
    ASSERT_EQ(w.et.nodes.size(), w.graph.ops.size());
    for (size_t i = 0; i < w.graph.ops.size(); ++i) {
      const graph::Op& op = w.graph.ops[i];
      const DecodedNode& node = w.et.nodes[i];
      EXPECT_EQ(node.id, static_cast<uint64_t>(op.id));
      EXPECT_EQ(node.name, op.name);
      EXPECT_EQ(node.data_deps, op.deps);
      ASSERT_TRUE(node.ints.contains("is_cpu_op")) << op.name;  // written although false
      EXPECT_EQ(node.ints.at("is_cpu_op"), std::make_pair(uint64_t{27}, uint64_t{0}));
      if (!op.IsComm() || op.collective == Collective::kBroadcast) {
        EXPECT_EQ(node.type, 4u) << op.name;
        continue;
      }
      if (op.collective == Collective::kSend || op.collective == Collective::kRecv) {
        EXPECT_EQ(node.type, op.collective == Collective::kSend ? 5u : 6u);
        continue;
      }
      EXPECT_EQ(node.type, 7u) << op.name;
      const int64_t type = static_cast<int64_t>(node.ints.at("comm_type").second);
      EXPECT_EQ(node.ints.at("comm_type").first, 9u);  // int64_val
      // ASTRA-sim's ALL_GATHER comm_size is the per-rank shard; the others the whole buffer.
      const int64_t expected = op.collective == Collective::kAllGather
                                   ? op.message_bytes / op.group_size
                                   : op.message_bytes;
      EXPECT_EQ(node.ints.at("comm_size"), std::make_pair(uint64_t{9}, uint64_t(expected)));
      EXPECT_EQ(type, op.collective == Collective::kAllGather       ? kChakraAllGather
                      : op.collective == Collective::kReduceScatter ? kChakraReduceScatter
                      : op.collective == Collective::kAllToAll      ? kChakraAllToAll
                                                                    : kChakraAllReduce);
    }
  }
}

// ASTRA-sim times a roofline node at trunc(num_ops / (P·10^12) · 10^9) ns.
TEST(ChakraWriterTest, ComputeNodesTimeExactlyTheSimulatorsNanoseconds) {
  const Written w = Write(testing::MoeCase(), 0);
  int64_t checked = 0;
  for (size_t i = 0; i < w.graph.ops.size(); ++i) {
    const graph::Op& op = w.graph.ops[i];
    if (op.IsComm()) continue;
    const DecodedNode& node = w.et.nodes[i];
    EXPECT_EQ(node.ints.at("tensor_size"), std::make_pair(uint64_t{13}, uint64_t{1}));
    const double num_ops = static_cast<double>(node.ints.at("num_ops").second);
    const auto astra_ns = static_cast<int64_t>(num_ops / (kPeakTflops * 1e12) * 1e9);
    // At least 1 ns: a 0 ns root node aborts ASTRA-sim at tick 0.
    EXPECT_EQ(astra_ns, std::max<int64_t>(1, std::llround(w.costs.compute_seconds(op) * 1e9)))
        << op.name;
    ++checked;
  }
  EXPECT_GT(checked, 100);
}

// (peer, tag, size) of every send (or receive) of a rank's file.
std::multiset<std::tuple<uint64_t, uint64_t, uint64_t>> Transfers(const DecodedEt& et,
                                                                  uint64_t type) {
  std::multiset<std::tuple<uint64_t, uint64_t, uint64_t>> out;
  const char* peer = type == 5 ? "comm_dst" : "comm_src";
  for (const DecodedNode& node : et.nodes) {
    if (node.type != type) continue;
    out.insert({node.ints.at(peer).second, node.ints.at("comm_tag").second,
                node.ints.at("comm_size").second});
  }
  return out;
}

TEST(ChakraWriterTest, PipelineSendsMatchThePeersReceives) {
  for (const int64_t virtual_stages : {1, 2}) {
    const testing::ExportCase c = PipelineCase(virtual_stages);
    const Written first = Write(c, 0);
    const int64_t peer = first.graph
                             .ops[std::find_if(first.graph.ops.begin(), first.graph.ops.end(),
                                               [](const graph::Op& op) {
                                                 return op.collective == Collective::kSend;
                                               }) -
                                  first.graph.ops.begin()]
                             .peer;
    const Written second = Write(c, peer);
    auto sends = Transfers(first.et, 5);
    auto receives = Transfers(second.et, 6);
    ASSERT_FALSE(sends.empty());
    // Rank 0's sends to `peer` are `peer`'s receives from rank 0, tag for tag.
    std::multiset<std::tuple<uint64_t, uint64_t, uint64_t>> sent, received;
    for (const auto& [to, tag, size] : sends) {
      if (to == static_cast<uint64_t>(peer)) sent.insert({0, tag, size});
    }
    for (const auto& [from, tag, size] : receives) {
      if (from == 0) received.insert({0, tag, size});
    }
    EXPECT_EQ(sent, received) << "v = " << virtual_stages;
    EXPECT_EQ(Transfers(first.et, 6).size(), Transfers(second.et, 5).size());
  }
}

TEST(ChakraWriterTest, GroupNamesHoldTheRankAndTheGroupSize) {
  const testing::ExportCase c = testing::MoeCase();
  const config::RankMapping mapping(c.training.parallel);
  const nlohmann::json groups = nlohmann::json::parse(RenderChakraCommGroups(mapping));
  for (const int64_t rank : {0, 5}) {
    const Written w = Write(c, rank);
    for (size_t i = 0; i < w.graph.ops.size(); ++i) {
      const DecodedNode& node = w.et.nodes[i];
      if (node.type != 7) continue;
      // Never ASTRA-sim's implicit world group "0" (it deadlocks across pipeline stages).
      EXPECT_NE(node.strings.at("pg_name"), "0");
      const std::vector<int64_t> ranks = groups.at(node.strings.at("pg_name"));
      EXPECT_EQ(static_cast<int64_t>(ranks.size()), w.graph.ops[i].group_size)
          << w.graph.ops[i].name;
      EXPECT_NE(std::find(ranks.begin(), ranks.end(), rank), ranks.end());
    }
  }
}

// World collectives (the distributed optimizer's grad-norm all-reduce) name an explicit group
// of every rank, listed last in comm_groups.json.
TEST(ChakraWriterTest, WorldCollectivesUseAnExplicitGroupOfEveryRank) {
  const testing::ExportCase c = PipelineCase(1);
  const config::RankMapping mapping(c.training.parallel);
  const nlohmann::json groups = nlohmann::json::parse(RenderChakraCommGroups(mapping));
  const std::string last = std::to_string(groups.size());
  std::vector<int64_t> every(static_cast<size_t>(c.training.parallel.world_size));
  std::iota(every.begin(), every.end(), int64_t{0});
  EXPECT_EQ(groups.at(last).get<std::vector<int64_t>>(), every);
  const Written w = Write(c, 0);
  int64_t world_ops = 0;
  for (size_t i = 0; i < w.graph.ops.size(); ++i) {
    if (w.graph.ops[i].group != config::GroupKind::kWorld) continue;
    EXPECT_EQ(w.et.nodes[i].strings.at("pg_name"), last);
    ++world_ops;
  }
  EXPECT_GT(world_ops, 0);
}

// ASTRA-sim's analytical inputs, H100 (8-GPU NVLink domain) on 16 GPUs: two Switch dimensions,
// bandwidth in GiB/s (astra-network-analytical NetworkFunction reads bw·2^30/1e9 bytes per ns),
// half the per-step latency (Switch counts two hops per message), one dataset split and a single
// "oneDirect1" all-to-all entry (a per-dimension list becomes a relay ring on sub-world groups).
TEST(ChakraWriterTest, AstraInputsUseTheAnalyticalBackendsUnits) {
  testing::ExportCase c = testing::MoeCase();
  const config::ClusterSpec cluster = io::ResolveCluster({.gpu = std::string("H100")});
  const AstraInputs inputs = RenderAstraInputs(cluster, c.training);
  const double nvlink_gibps = cluster.gpu.nvlink_bytes_per_second *
                              cluster.link.nvlink_bus_efficiency / (1024.0 * 1024.0 * 1024.0);
  EXPECT_NE(inputs.network_yaml.find(fmt::format("npus_count: [ 8, 2 ]")), std::string::npos);
  EXPECT_NE(inputs.network_yaml.find(fmt::format("bandwidth: [ {:.3f},", nvlink_gibps)),
            std::string::npos)
      << inputs.network_yaml;
  EXPECT_NE(inputs.network_yaml.find(
                fmt::format("latency: [ {:.1f},", cluster.link.nvlink_latency_seconds * 1e9 / 2)),
            std::string::npos)
      << inputs.network_yaml;
  const nlohmann::json system = nlohmann::json::parse(inputs.system_json);
  EXPECT_EQ(system.at("preferred-dataset-splits"), 1);
  EXPECT_EQ(system.at("all-to-all-implementation"), nlohmann::json::array({"oneDirect1"}));
  EXPECT_EQ(system.at("roofline-enabled"), 1);
}

TEST(ChakraWriterTest, IsByteIdenticalAcrossRuns) {
  const testing::ExportCase c = testing::MoeCase();
  const graph::StepGraph graph = graph::BuildStepGraph(c.model, c.training, 0);
  const config::RankMapping mapping(c.training.parallel);
  sim::HardwareCostOptions options;
  options.cluster = io::ResolveCluster(io::ClusterInputs{});
  const sim::OpCostModel costs = sim::BindHardwareCosts(c.model, c.training, options);
  EXPECT_EQ(RenderChakraEt(graph, c.training, mapping, costs.compute_seconds, kPeakTflops),
            RenderChakraEt(graph, c.training, mapping, costs.compute_seconds, kPeakTflops));
}

}  // namespace
}  // namespace trainscope::report
