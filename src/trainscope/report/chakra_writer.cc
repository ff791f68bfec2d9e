// Protobuf wire encoding by hand (varint and length-delimited fields only), following
// chakra schema/protobuf/et_def.proto field numbers as reference/workload-formats.md §3.1 lists
// them.
#include "trainscope/report/chakra_writer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <string_view>
#include <vector>

#include "trainscope/units.h"

namespace trainscope::report {
namespace {

using graph::Collective;
using graph::Op;

constexpr double kNanosecondsPerSecond = 1e9;
constexpr double kOpsPerTflopNanosecond = 1000;  // 1e12 ops/s per TFLOPS × 1e-9 s per ns
constexpr std::string_view kEtVersion = "0.0.4";
constexpr double kSwitchHops = 2;

// NodeType (et_def.proto).
constexpr uint64_t kCompNode = 4, kSendNode = 5, kRecvNode = 6, kCollNode = 7;

void Varint(uint64_t value, std::string& out) {
  while (value >= 0x80) {
    out += static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  out += static_cast<char>(value);
}

void VarintField(int field, uint64_t value, std::string& out) {
  Varint(static_cast<uint64_t>(field) << 3, out);
  Varint(value, out);
}

void BytesField(int field, std::string_view bytes, std::string& out) {
  Varint((static_cast<uint64_t>(field) << 3) | 2, out);
  Varint(bytes.size(), out);
  out += bytes;
}

// AttributeProto {name = 1; oneof value}: the value field is always written, even when zero.
std::string Attribute(std::string_view name, int value_field, uint64_t value) {
  std::string out;
  BytesField(1, name, out);
  VarintField(value_field, value, out);
  return out;
}
std::string StringAttribute(std::string_view name, std::string_view value) {
  std::string out;
  BytesField(1, name, out);
  BytesField(29, value, out);  // string_val
  return out;
}
constexpr int kInt32Val = 7, kInt64Val = 9, kUint64Val = 13, kBoolVal = 27;

// ALL_GATHER's comm_size is the per-rank shard in ASTRA-sim (§3.4); the others the whole buffer.
int64_t CollectiveType(Collective collective) {
  switch (collective) {
    case Collective::kAllGather:
      return kChakraAllGather;
    case Collective::kReduceScatter:
      return kChakraReduceScatter;
    case Collective::kAllToAll:
      return kChakraAllToAll;
    default:
      return kChakraAllReduce;
  }
}

// The tag both ends of a pipeline transfer derive: the edge between virtual stages e and e + 1
// (e = chunk·p + stage of the lower end), the micro-batch and the direction.
int64_t P2pTag(const Op& op, const config::TrainingConfig& training, int64_t pipeline_rank) {
  const int64_t p = training.parallel.pipeline;
  const int64_t virtual_stage = op.model_chunk * p + pipeline_rank;
  const bool forward = op.phase == graph::Phase::kForward;
  const bool send = op.collective == Collective::kSend;
  const int64_t edge = (forward == send) ? virtual_stage : virtual_stage - 1;
  const int64_t edges = p * training.parallel.virtual_stages;
  return (op.micro_batch * edges + edge) * 2 + (forward ? 0 : 1);
}

// The first pg_name of each group kind (groups numbered from 1, kinds in AllGroupKinds() order),
// then one group of every rank for world collectives. ASTRA-sim's implicit world group
// (pg_name "" or "0") tags its messages with a per-rank counter of every collective issued so
// far (astra-sim Sys::generate_collective), so ranks of different pipeline stages, which issue
// different numbers of collectives before it, never match and deadlock; an explicit group has
// its own counter.
using GroupOffsets = std::map<config::GroupKind, int64_t>;

GroupOffsets Offsets(const config::RankMapping& mapping) {
  GroupOffsets offsets;
  int64_t offset = 1;
  for (const config::GroupKind kind : config::AllGroupKinds()) {
    offsets[kind] = offset;
    offset += static_cast<int64_t>(mapping.AllGroups(kind).size());
  }
  offsets[config::GroupKind::kWorld] = offset;
  return offsets;
}

int64_t GroupId(const GroupOffsets& offsets, const config::RankMapping& mapping,
                config::GroupKind kind, int64_t rank) {
  if (kind == config::GroupKind::kWorld) return offsets.at(kind);
  const std::optional<int64_t> index = mapping.GroupIndexOf(kind, rank);
  return index ? offsets.at(kind) + *index : offsets.at(config::GroupKind::kWorld);
}

// The node's type and attributes (every attribute as an encoded AttributeProto).
struct NodeBody {
  uint64_t type = kCompNode;
  std::vector<std::string> attributes;
};

// At least 1 ns: ASTRA-sim schedules a 0 ns root node at tick 0, which fails its event queue's
// "event time > current time" assertion and aborts the run.
NodeBody ComputeBody(double seconds, double peak_tflops) {
  const double time_ns = std::max(1.0, std::round(seconds * kNanosecondsPerSecond));
  const auto num_ops =
      static_cast<uint64_t>(std::llround((time_ns + 0.5) * peak_tflops * kOpsPerTflopNanosecond));
  return NodeBody{kCompNode,
                  {Attribute("is_cpu_op", kBoolVal, 0), Attribute("num_ops", kInt64Val, num_ops),
                   Attribute("tensor_size", kUint64Val, 1)}};
}

NodeBody CommBody(const Op& op, const graph::StepGraph& graph,
                  const config::TrainingConfig& training, const config::RankMapping& mapping,
                  const GroupOffsets& offsets) {
  NodeBody body;
  body.attributes.push_back(Attribute("is_cpu_op", kBoolVal, 0));
  if (op.collective == Collective::kSend || op.collective == Collective::kRecv) {
    const bool send = op.collective == Collective::kSend;
    body.type = send ? kSendNode : kRecvNode;
    body.attributes.push_back(
        Attribute(send ? "comm_dst" : "comm_src", kInt32Val, static_cast<uint64_t>(op.peer)));
    body.attributes.push_back(
        Attribute("comm_size", kInt64Val, static_cast<uint64_t>(op.message_bytes)));
    body.attributes.push_back(Attribute(
        "comm_tag", kInt32Val, static_cast<uint64_t>(P2pTag(op, training, graph.pipeline_rank))));
    return body;
  }
  const int64_t type = CollectiveType(op.collective);
  const int64_t size =
      type == kChakraAllGather ? op.message_bytes / op.group_size : op.message_bytes;
  body.type = kCollNode;
  body.attributes.push_back(Attribute("comm_type", kInt64Val, static_cast<uint64_t>(type)));
  body.attributes.push_back(Attribute("comm_size", kInt64Val, static_cast<uint64_t>(size)));
  body.attributes.push_back(StringAttribute(
      "pg_name", fmt::format("{}", GroupId(offsets, mapping, op.group, graph.rank))));
  return body;
}

std::string Node(const Op& op, const NodeBody& body) {
  std::string out;
  VarintField(1, static_cast<uint64_t>(op.id), out);
  BytesField(2, op.name, out);
  VarintField(3, body.type, out);
  if (!op.deps.empty()) {
    std::string packed;
    for (const int64_t dep : op.deps) Varint(static_cast<uint64_t>(dep), packed);
    BytesField(5, packed, out);  // data_deps
  }
  for (const std::string& attribute : body.attributes) BytesField(10, attribute, out);
  return out;
}

void Delimited(const std::string& message, std::string& out) {
  Varint(message.size(), out);
  out += message;
}

}  // namespace

int64_t ChakraGroupId(const config::RankMapping& mapping, config::GroupKind kind, int64_t rank) {
  return GroupId(Offsets(mapping), mapping, kind, rank);
}

std::string RenderChakraCommGroups(const config::RankMapping& mapping) {
  std::string out = "{";
  int64_t id = 1;
  for (const config::GroupKind kind : config::AllGroupKinds()) {
    for (const std::vector<int64_t>& ranks : mapping.AllGroups(kind)) {
      out += fmt::format("{}\"{}\": [{}]", id == 1 ? "" : ", ", id, fmt::join(ranks, ", "));
      ++id;
    }
  }
  std::vector<int64_t> world(static_cast<size_t>(mapping.sizes().world_size));
  std::iota(world.begin(), world.end(), int64_t{0});
  out += fmt::format("{}\"{}\": [{}]", id == 1 ? "" : ", ", id, fmt::join(world, ", "));
  return out + "}\n";
}

std::string RenderChakraEt(const graph::StepGraph& graph, const config::TrainingConfig& training,
                           const config::RankMapping& mapping, const ComputeTime& compute_seconds,
                           double peak_tflops) {
  const GroupOffsets offsets = Offsets(mapping);
  std::string out;
  std::string metadata;
  BytesField(1, kEtVersion, metadata);
  Delimited(metadata, out);
  for (const Op& op : graph.ops) {
    const bool simulated_comm = op.IsComm() && op.collective != Collective::kBroadcast;
    // ASTRA-sim runs a rank's compute nodes one at a time, so an activation-offload copy (a
    // separate copy stream in Megatron) is written as a zero-time node that keeps the order.
    const bool untimed = op.IsComm() || op.role.kind == graph::OpKind::kActivationOffload;
    const NodeBody body = simulated_comm ? CommBody(op, graph, training, mapping, offsets)
                          : untimed      ? ComputeBody(0, peak_tflops)
                                         : ComputeBody(compute_seconds(op), peak_tflops);
    Delimited(Node(op, body), out);
  }
  return out;
}

AstraInputs RenderAstraInputs(const config::ClusterSpec& cluster,
                              const config::TrainingConfig& training) {
  const int64_t world = training.parallel.world_size;
  const int64_t domain = std::gcd(world, std::max<int64_t>(1, cluster.nvlink_domain_gpus));
  const config::LinkEfficiency& link = cluster.link;
  // The analytical backend reads bandwidth in GiB/s (astra-network-analytical
  // NetworkFunction: bw · 2^30 / 1e9 bytes per ns) and charges a Switch dimension's latency once
  // per hop, two hops per message (Switch::compute_hops_count): write half the per-step latency.
  const double nvlink_gibps = cluster.gpu.nvlink_bytes_per_second * link.nvlink_bus_efficiency /
                              static_cast<double>(kBytesPerGiB);
  const double nic_gibps = cluster.scale_out_bytes_per_second * link.scale_out_bus_efficiency /
                           static_cast<double>(kBytesPerGiB);
  const double nvlink_ns = link.nvlink_latency_seconds * kNanosecondsPerSecond / kSwitchHops;
  const double nic_ns = link.scale_out_latency_seconds * kNanosecondsPerSecond / kSwitchHops;
  const bool two_dims = world > domain;
  AstraInputs inputs;
  inputs.network_yaml =
      two_dims ? fmt::format(
                     "topology: [ Switch, Switch ]\nnpus_count: [ {}, {} ]\nbandwidth: [ {:.3f}, "
                     "{:.3f} ]\nlatency: [ {:.1f}, {:.1f} ]\n",
                     domain, world / domain, nvlink_gibps, nic_gibps, nvlink_ns, nic_ns)
               : fmt::format(
                     "topology: [ Switch ]\nnpus_count: [ {} ]\nbandwidth: [ {:.3f} ]\nlatency: "
                     "[ {:.1f} ]\n",
                     world, nvlink_gibps, nvlink_ns);
  const std::string ring = two_dims ? "[\"ring\", \"ring\"]" : "[\"ring\"]";
  // All-to-all: one "oneDirect1" entry (direct sends, one peer at a time). ASTRA-sim replaces a
  // per-dimension list with a relay ring for any group smaller than the world
  // (CommunicatorGroup::get_collective_plan), n(n-1)/2 steps instead of n-1; a single entry is
  // kept. Window 1, because the congestion-unaware backend does not share a rank's link between
  // concurrent sends. One dataset split: a group's collective runs on one ring, so splitting
  // pipelines nothing and repeats the per-step latency.
  const std::string direct = "[\"oneDirect1\"]";
  inputs.system_json = fmt::format(
      "{{\n  \"scheduling-policy\": \"LIFO\",\n  \"endpoint-delay\": 10,\n"
      "  \"active-chunks-per-dimension\": 1,\n  \"preferred-dataset-splits\": 1,\n"
      "  \"collective-optimization\": \"localBWAware\",\n"
      "  \"all-reduce-implementation\": {0},\n  \"all-gather-implementation\": {0},\n"
      "  \"reduce-scatter-implementation\": {0},\n  \"all-to-all-implementation\": {1},\n"
      "  \"local-mem-bw\": {2:.0f},\n  \"roofline-enabled\": 1,\n  \"peak-perf\": {3:.6f}\n}}\n",
      ring, direct, cluster.gpu.hbm_bytes_per_second / kBytesPerGB,
      cluster.gpu.bf16_flops_per_second / kFlopsPerTeraflop);
  inputs.remote_memory_json = "{\"memory-type\": \"NO_MEMORY_EXPANSION\"}\n";
  return inputs;
}

}  // namespace trainscope::report
