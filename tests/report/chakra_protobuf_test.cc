// Chakra ET read back with libprotobuf and a schema compiled by protoc
// (tests/report/proto/chakra_et.proto: ASTRA-sim's package, message names and field numbers):
// every file parses as GlobalMetadata then Nodes with no unknown fields, every attribute has the
// value type ASTRA-sim's feeders require (reference: Chakra et_def.proto; ASTRA-sim
// workload/Workload.cc reads comm_size with int64, comm_src/dst/tag with int32), the node
// stream matches the step graph op for op, and the decoded text of two tiny layouts is golden.
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "simai_test_configs.h"
#include "tests/report/proto/chakra_et.pb.h"
#include "trainscope/report/chakra_writer.h"

namespace trainscope::report {
namespace {

using graph::Collective;
using Attr = ChakraProtoMsg::AttributeProto;

struct ReadBack {
  ChakraProtoMsg::GlobalMetadata metadata;
  std::vector<ChakraProtoMsg::Node> nodes;
};

// Parses a whole ET file as ASTRA-sim's feeder does: length-delimited messages to the end.
ReadBack Parse(const std::string& bytes) {
  ReadBack out;
  google::protobuf::io::ArrayInputStream stream(bytes.data(), static_cast<int>(bytes.size()));
  bool clean_eof = false;
  EXPECT_TRUE(
      google::protobuf::util::ParseDelimitedFromZeroCopyStream(&out.metadata, &stream, &clean_eof));
  while (true) {
    ChakraProtoMsg::Node node;
    if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&node, &stream, &clean_eof)) {
      EXPECT_TRUE(clean_eof) << "a message after node " << out.nodes.size() << " does not parse";
      break;
    }
    out.nodes.push_back(std::move(node));
  }
  return out;
}

std::map<std::string, const Attr*> Attributes(const ChakraProtoMsg::Node& node) {
  std::map<std::string, const Attr*> out;
  for (const Attr& attr : node.attr()) out[attr.name()] = &attr;
  return out;
}

constexpr double kPeakTflops = 989;

std::string Render(const testing::ExportCase& c, int64_t rank) {
  EXPECT_TRUE(config::Validate(c.model, c.training).ok());
  sim::HardwareCostOptions options;
  options.cluster = io::ResolveCluster(io::ClusterInputs{});
  const sim::OpCostModel costs = sim::BindHardwareCosts(c.model, c.training, options);
  return RenderChakraEt(graph::BuildStepGraph(c.model, c.training, rank), c.training,
                        config::RankMapping(c.training.parallel), costs.compute_seconds,
                        kPeakTflops);
}

// Tiny dense model (h = 64, 4 layers), t = 2 with SP, p = 2, d = 2, m = 2.
testing::ExportCase TinyDense() {
  testing::ExportCase c{
      io::LoadModelConfigFile(std::string(TRAINSCOPE_TEST_DATA_DIR) + "/qwen3_tiny.json"), {}};
  c.training.parallel.world_size = 8;
  c.training.parallel.tensor = 2;
  c.training.parallel.pipeline = 2;
  c.training.sequence_parallel = true;
  c.training.batch.seq_length = 256;
  c.training.batch.global_batch_size = 4;  // b·d·m = 1·2·2
  c.training.data_parallel.distributed_optimizer = true;
  return c;
}

// Tiny MoE model (h = 64, 2 layers, 8 experts, top-2), e = 4, alltoall, d = 4, m = 1.
testing::ExportCase TinyMoe() {
  testing::ExportCase c{
      io::LoadModelConfigFile(std::string(TRAINSCOPE_TEST_DATA_DIR) + "/qwen3_moe_tiny.json"), {}};
  c.training.parallel.world_size = 4;
  c.training.parallel.expert = 4;
  c.training.batch.seq_length = 256;
  c.training.batch.global_batch_size = 4;
  c.training.moe.dispatcher = config::TokenDispatcher::kAllToAll;
  c.training.data_parallel.distributed_optimizer = true;
  return c;
}

TEST(ChakraProtobufTest, EveryFieldIsInTheSchemaWithTheValueTypesAstraSimReads) {
  for (const testing::ExportCase& c : {TinyDense(), TinyMoe(), testing::MoeCase()}) {
    for (const int64_t rank : {int64_t{0}, c.training.parallel.world_size - 1}) {
      const ReadBack et = Parse(Render(c, rank));
      EXPECT_EQ(et.metadata.version(), "0.0.4");
      EXPECT_TRUE(et.metadata.GetReflection()->GetUnknownFields(et.metadata).empty());
      ASSERT_FALSE(et.nodes.empty());
      std::set<uint64_t> seen;
      for (const ChakraProtoMsg::Node& node : et.nodes) {
        EXPECT_TRUE(node.GetReflection()->GetUnknownFields(node).empty()) << node.name();
        for (const uint64_t dep : node.data_deps()) {
          EXPECT_TRUE(seen.contains(dep)) << node.name() << ": not in topological order";
        }
        EXPECT_TRUE(seen.insert(node.id()).second) << "duplicate id " << node.id();
        const auto attrs = Attributes(node);
        ASSERT_TRUE(attrs.contains("is_cpu_op"));
        EXPECT_EQ(attrs.at("is_cpu_op")->value_case(), Attr::kBoolVal);
        EXPECT_FALSE(attrs.at("is_cpu_op")->bool_val());
        switch (node.type()) {
          case ChakraProtoMsg::COMP_NODE:
            EXPECT_EQ(attrs.at("num_ops")->value_case(), Attr::kInt64Val);
            EXPECT_EQ(attrs.at("tensor_size")->value_case(), Attr::kUint64Val);
            EXPECT_EQ(attrs.at("tensor_size")->uint64_val(), 1u);
            break;
          case ChakraProtoMsg::COMM_COLL_NODE:
            EXPECT_EQ(attrs.at("comm_type")->value_case(), Attr::kInt64Val);
            EXPECT_EQ(attrs.at("comm_size")->value_case(), Attr::kInt64Val);
            EXPECT_GT(attrs.at("comm_size")->int64_val(), 0) << node.name();
            EXPECT_EQ(attrs.at("pg_name")->value_case(), Attr::kStringVal);
            break;
          case ChakraProtoMsg::COMM_SEND_NODE:
          case ChakraProtoMsg::COMM_RECV_NODE:
            EXPECT_EQ(
                attrs.at(node.type() == ChakraProtoMsg::COMM_SEND_NODE ? "comm_dst" : "comm_src")
                    ->value_case(),
                Attr::kInt32Val);
            EXPECT_EQ(attrs.at("comm_tag")->value_case(), Attr::kInt32Val);
            EXPECT_EQ(attrs.at("comm_size")->value_case(), Attr::kInt64Val);
            break;
          default:
            ADD_FAILURE() << node.name() << ": node type " << node.type();
        }
      }
    }
  }
}

// Node for op, against the step graph: counts per node type, dependencies and sizes. The
// expected counts are taken from the graph's op records, not from the writer.
TEST(ChakraProtobufTest, NodesMatchTheStepGraph) {
  for (const testing::ExportCase& c : {TinyDense(), TinyMoe(), testing::DenseSpCase()}) {
    const graph::StepGraph graph = graph::BuildStepGraph(c.model, c.training, 0);
    const ReadBack et = Parse(Render(c, 0));
    ASSERT_EQ(et.nodes.size(), graph.ops.size());
    std::map<int, int64_t> expected_per_type, written_per_type;
    for (size_t i = 0; i < graph.ops.size(); ++i) {
      const graph::Op& op = graph.ops[i];
      const ChakraProtoMsg::Node& node = et.nodes[i];
      const int type = !op.IsComm() || op.collective == Collective::kBroadcast
                           ? ChakraProtoMsg::COMP_NODE
                       : op.collective == Collective::kSend ? ChakraProtoMsg::COMM_SEND_NODE
                       : op.collective == Collective::kRecv ? ChakraProtoMsg::COMM_RECV_NODE
                                                            : ChakraProtoMsg::COMM_COLL_NODE;
      ++expected_per_type[type];
      ++written_per_type[node.type()];
      EXPECT_EQ(node.id(), static_cast<uint64_t>(op.id));
      ASSERT_EQ(node.data_deps_size(), static_cast<int>(op.deps.size()));
      for (size_t d = 0; d < op.deps.size(); ++d) {
        EXPECT_EQ(node.data_deps(static_cast<int>(d)), static_cast<uint64_t>(op.deps[d]));
      }
      if (type == ChakraProtoMsg::COMM_COLL_NODE) {
        // ALL_GATHER: ASTRA-sim's comm_size is the per-rank input shard (its all-gather ends
        // with comm_size·N bytes); the others the whole buffer, as the graph records it.
        const int64_t expected = op.collective == Collective::kAllGather
                                     ? op.message_bytes / op.group_size
                                     : op.message_bytes;
        EXPECT_EQ(Attributes(node).at("comm_size")->int64_val(), expected) << op.name;
      }
      if (type == ChakraProtoMsg::COMM_SEND_NODE || type == ChakraProtoMsg::COMM_RECV_NODE) {
        EXPECT_EQ(Attributes(node).at("comm_size")->int64_val(), op.message_bytes);
      }
    }
    EXPECT_EQ(written_per_type, expected_per_type);
  }
}

// The libprotobuf text form of the whole file, for a reviewable golden.
std::string TextOf(const std::string& bytes) {
  const ReadBack et = Parse(bytes);
  std::string text, piece;
  google::protobuf::TextFormat::PrintToString(et.metadata, &piece);
  text += "# GlobalMetadata\n" + piece;
  for (const ChakraProtoMsg::Node& node : et.nodes) {
    google::protobuf::TextFormat::PrintToString(node, &piece);
    text.append("# Node\n").append(piece);
  }
  return text;
}

// The goldens pin the format, not the cost model: compute nodes get a closed-form time
// ((1 + id mod 7) µs), so a recalibration does not churn them. With P = 1000 TFLOPS,
// num_ops = round((t_ns + 0.5) · P · 1000), e.g. 1 µs -> 1,000,500,000.
std::string RenderForGolden(const testing::ExportCase& c, int64_t rank) {
  const auto closed_form = [](const graph::Op& op) { return 1e-6 * double(1 + op.id % 7); };
  return RenderChakraEt(graph::BuildStepGraph(c.model, c.training, rank), c.training,
                        config::RankMapping(c.training.parallel), closed_form, 1000);
}

TEST(ChakraProtobufTest, MatchesGoldenTinyDensePipelineFirstAndLastStage) {
  testing::ExpectMatchesGolden("chakra_qwen3_tiny_tp2_sp_pp2_dp2_rank0.txt",
                               TextOf(RenderForGolden(TinyDense(), 0)));
  testing::ExpectMatchesGolden("chakra_qwen3_tiny_tp2_sp_pp2_dp2_rank7.txt",
                               TextOf(RenderForGolden(TinyDense(), 7)));
}

TEST(ChakraProtobufTest, MatchesGoldenTinyMoeExpertParallel) {
  testing::ExpectMatchesGolden("chakra_qwen3_moe_tiny_ep4_rank1.txt",
                               TextOf(RenderForGolden(TinyMoe(), 1)));
}

}  // namespace
}  // namespace trainscope::report
