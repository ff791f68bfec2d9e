// SimAI workload text: goldens, a read-back through the parsing rules of
// SimAI's Workload::initialize_workload (Workload.cc), row counts of docs/workload.md, and the
// diagnostics.
#include "trainscope/report/simai_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "simai_test_configs.h"
#include "trainscope/config/validate.h"
#include "trainscope/io/hf_config_loader.h"

namespace trainscope::report {
namespace {

using testing::DenseNoSpCase;
using testing::DenseSpCase;
using testing::ExportCase;
using ::testing::HasSubstr;
using testing::MoeCase;

// A minimal SimAI reader: header tokens by stream extraction, N, then rows of exactly 12
// TAB-separated fields.
struct ParsedWorkload {
  std::string policy;
  std::vector<std::string> keys;
  std::map<std::string, int64_t> values;
  std::vector<std::vector<std::string>> rows;
};

std::vector<std::string> SplitTabs(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream stream(line);
  std::string field;
  while (std::getline(stream, field, '\t')) fields.push_back(field);
  return fields;
}

ParsedWorkload Parse(const std::string& text) {
  ParsedWorkload parsed;
  std::istringstream lines(text);
  std::string header;
  std::getline(lines, header);
  std::istringstream tokens(header);
  tokens >> parsed.policy;
  std::string key;
  while (tokens >> key) {
    int64_t value = 0;
    tokens >> value;
    parsed.keys.push_back(key);
    parsed.values[key] = value;
  }
  std::string count;
  std::getline(lines, count);
  EXPECT_TRUE(std::regex_match(count, std::regex("[0-9]+"))) << count;
  std::string line;
  while (std::getline(lines, line)) parsed.rows.push_back(SplitTabs(line));
  EXPECT_EQ(parsed.rows.size(), std::stoul(count));
  return parsed;
}

ExportResult Render(const ExportCase& c, int64_t rank = 0) {
  EXPECT_TRUE(config::Validate(c.model, c.training).ok());
  return testing::RenderSimAi(c, rank);
}

int64_t CountRows(const ParsedWorkload& parsed, const std::string& name) {
  return std::count_if(parsed.rows.begin(), parsed.rows.end(),
                       [&](const std::vector<std::string>& row) { return row[0] == name; });
}

std::vector<std::string> RowNames(const ParsedWorkload& parsed) {
  std::vector<std::string> names;
  for (const std::vector<std::string>& row : parsed.rows) names.push_back(row[0]);
  return names;
}

void ExpectWellFormed(const std::string& text) {
  const ParsedWorkload parsed = Parse(text);
  EXPECT_EQ(parsed.policy, "HYBRID_TRANSFORMER_FWD_IN_BCKWD");
  EXPECT_THAT(parsed.keys, ::testing::ElementsAre(
                               "model_parallel_NPU_group:", "ep:", "pp:", "vpp:", "ga:",
                               "all_gpus:", "checkpoints:", "checkpoint_initiates:", "pp_comm:"));
  const std::set<std::string> tokens = {
      "NONE",          "ALLREDUCE",       "ALLGATHER",       "REDUCESCATTER",
      "ALLTOALL",      "ALLREDUCE_EP",    "ALLGATHER_EP",    "REDUCESCATTER_EP",
      "ALLTOALL_EP",   "ALLREDUCE_DP_EP", "ALLGATHER_DP_EP", "REDUCESCATTER_DP_EP",
      "ALLTOALL_DP_EP"};
  const std::regex integer("-?[0-9]+");
  for (const std::vector<std::string>& row : parsed.rows) {
    ASSERT_EQ(row.size(), 12u) << row[0];
    EXPECT_TRUE(std::regex_match(row[0], std::regex("[A-Za-z0-9_]+"))) << row[0];
    for (const size_t i : {1, 2, 4, 5, 7, 8, 10, 11}) {
      EXPECT_TRUE(std::regex_match(row[i], integer)) << row[0] << " field " << i + 1;
    }
    for (const size_t i : {3, 6, 9}) EXPECT_TRUE(tokens.contains(row[i])) << row[i];
  }
}

TEST(SimAiWriterTest, MatchesGoldenDenseSequenceParallel) {
  testing::ExpectMatchesGolden("simai_qwen3_0.6b_tp2_sp_dp4_ga2.txt", Render(DenseSpCase()).text);
}

TEST(SimAiWriterTest, MatchesGoldenDenseWithoutSequenceParallel) {
  testing::ExpectMatchesGolden("simai_qwen3_0.6b_tp2_nosp_dp2.txt", Render(DenseNoSpCase()).text);
}

TEST(SimAiWriterTest, MatchesGoldenMoeAllToAll) {
  testing::ExpectMatchesGolden("simai_qwen3_30b_a3b_tp2_sp_ep4.txt", Render(MoeCase()).text);
}

TEST(SimAiWriterTest, ReadsBackWithTwelveIntegerFieldsAndKnownTokens) {
  for (const ExportCase& c : {DenseSpCase(), DenseNoSpCase(), MoeCase()}) {
    ExpectWellFormed(Render(c).text);
  }
}

TEST(SimAiWriterTest, IsByteIdenticalAcrossRuns) {
  EXPECT_EQ(Render(MoeCase()).text, Render(MoeCase()).text);
  EXPECT_EQ(Render(MoeCase()).diagnostics, Render(MoeCase()).diagnostics);
}

TEST(SimAiWriterTest, WritesDpRowsFirstInMegatronReverseOrder) {
  const ParsedWorkload parsed = Parse(Render(DenseSpCase()).text);
  const std::vector<std::string> names = RowNames(parsed);
  ASSERT_GE(names.size(), 5u);
  EXPECT_THAT(std::vector<std::string>(names.begin(), names.begin() + 5),
              ::testing::ElementsAre("param_gather", "optimizer_step", "norm_grad_allreduce",
                                     "grad_reduce_scatter", "embedding"));
  EXPECT_EQ(parsed.rows[0][9], "ALLGATHER");
  EXPECT_EQ(parsed.rows[2][6], "ALLREDUCE");
  EXPECT_EQ(parsed.rows[3][9], "REDUCESCATTER");
  // Gradients reduced in fp32 are twice the bf16 parameter gather.
  EXPECT_EQ(std::stoll(parsed.rows[3][10]), 2 * std::stoll(parsed.rows[0][10]));
}

TEST(SimAiWriterTest, WritesThreeRowsPerBlockWithSequenceParallelAndUnrollsGa) {
  const ExportCase c = DenseSpCase();
  const ParsedWorkload parsed = Parse(Render(c).text);
  const int64_t m = 2, layers = c.model.NumLayers();
  EXPECT_EQ(parsed.values.at("ga:"), m);
  for (const char* name :
       {"attn_in", "attn_regather", "attn_out", "mlp_in", "mlp_regather", "mlp_out"}) {
    EXPECT_EQ(CountRows(parsed, name), m * layers) << name;
  }
  // DP rows + m × (embedding + 6 per layer + LM head in/regather + 3 cross-entropy rows).
  EXPECT_EQ(static_cast<int64_t>(parsed.rows.size()), 4 + m * (1 + 6 * layers + 2 + 3));
  const int64_t a = 4096 * 1 * c.model.hidden_size * 2;  // A = s·b·h·2
  const std::vector<std::string>& attn_in = parsed.rows[5];
  ASSERT_EQ(attn_in[0], "attn_in");
  EXPECT_EQ(attn_in[3], "ALLGATHER");
  EXPECT_EQ(std::stoll(attn_in[4]), a);
  EXPECT_EQ(attn_in[6], "REDUCESCATTER");
  EXPECT_EQ(parsed.rows[6][6], "ALLGATHER");      // attn_regather
  EXPECT_EQ(parsed.rows[7][3], "REDUCESCATTER");  // attn_out
  EXPECT_EQ(parsed.rows[7][6], "ALLGATHER");
  EXPECT_EQ(parsed.rows[4][3], "REDUCESCATTER");  // embedding
  EXPECT_EQ(parsed.rows[4][6], "ALLGATHER");
}

TEST(SimAiWriterTest, WritesOneAllReduceRowPerBlockWithoutSequenceParallel) {
  const ExportCase c = DenseNoSpCase();
  const ParsedWorkload parsed = Parse(Render(c).text);
  const int64_t layers = c.model.NumLayers();
  EXPECT_EQ(CountRows(parsed, "attn"), layers);
  EXPECT_EQ(CountRows(parsed, "mlp"), layers);
  EXPECT_EQ(CountRows(parsed, "attn_in"), 0);
  // No distributed optimizer: gradient all-reduce, no parameter gather.
  const std::vector<std::string> names = RowNames(parsed);
  ASSERT_GE(names.size(), 3u);
  EXPECT_THAT(std::vector<std::string>(names.begin(), names.begin() + 3),
              ::testing::ElementsAre("optimizer_step", "norm_grad_allreduce", "grad_allreduce"));
  for (const std::vector<std::string>& row : parsed.rows) {
    if (row[0] != "attn" && row[0] != "mlp") continue;
    EXPECT_EQ(row[3], "ALLREDUCE");
    EXPECT_EQ(row[6], "ALLREDUCE");
    EXPECT_EQ(std::stoll(row[4]), 2048 * c.model.hidden_size * 2);
  }
}

TEST(SimAiWriterTest, WritesMoeRowsWithMirroredBackwardCollectives) {
  const ExportCase c = MoeCase();
  const ParsedWorkload parsed = Parse(Render(c).text);
  const int64_t layers = c.model.NumLayers();
  for (const char* name :
       {"moe_router", "moe_dispatch", "moe_etp_gather", "moe_experts", "moe_combine"}) {
    EXPECT_EQ(CountRows(parsed, name), layers) << name;
  }
  // MoE row sizes with b = 1, s = 4096, t = 2, k = 8, E = 128, u = 2, e = 4.
  const int64_t h = c.model.hidden_size, k = 8, s = 4096, t = 2;
  std::map<std::string, std::vector<std::string>> first;
  for (const std::vector<std::string>& row : parsed.rows) first.try_emplace(row[0], row);
  EXPECT_EQ(first["moe_router"][3], "ALLGATHER_EP");
  EXPECT_EQ(std::stoll(first["moe_router"][4]), 2 * 4 * 128 * 8);
  EXPECT_EQ(first["moe_dispatch"][3], "ALLTOALL_EP");
  EXPECT_EQ(std::stoll(first["moe_dispatch"][4]), 2 * s * h * k / t);
  EXPECT_EQ(first["moe_dispatch"][6], "ALLTOALL_EP");
  EXPECT_EQ(first["moe_etp_gather"][3], "ALLGATHER");
  EXPECT_EQ(std::stoll(first["moe_etp_gather"][4]), 2 * s * h * k);
  EXPECT_EQ(first["moe_etp_gather"][6], "REDUCESCATTER");
  EXPECT_EQ(first["moe_experts"][3], "REDUCESCATTER");
  EXPECT_EQ(first["moe_experts"][6], "ALLGATHER");
  EXPECT_EQ(first["moe_combine"][3], "ALLTOALL_EP");
  EXPECT_EQ(first["moe_combine"][6], "ALLTOALL_EP");
  EXPECT_EQ(first["expert_grad_reduce_scatter"][9], "REDUCESCATTER_DP_EP");
  EXPECT_EQ(first["expert_param_gather"][9], "ALLGATHER_DP_EP");
}

// The routing probabilities travel with the tokens (EP all-to-all, ETP all-gather, each mirrored
// in backward) and the aux-loss statistics are all-reduced over tp×cp (cp = 1: SimAI's TP group):
// written as rows, not dropped.
TEST(SimAiWriterTest, WritesRouterProbabilityAndAuxLossCollectives) {
  const ExportCase c = MoeCase();
  const ExportResult result = Render(c);
  const ParsedWorkload parsed = Parse(result.text);
  const int64_t layers = c.model.NumLayers();
  for (const char* name : {"moe_aux_loss", "moe_dispatch_probs", "moe_etp_gather_probs"}) {
    EXPECT_EQ(CountRows(parsed, name), layers) << name;
  }
  // b = 1, s = 4096, t = 2, k = 8, E = 128, u = 2: each rank sends R = s·k/t rows.
  const int64_t rows_sent = 4096 * 8 / 2, experts = 128;
  const int64_t prob_bytes = config::BytesOf(c.training.moe.router_dtype);
  std::map<std::string, std::vector<std::string>> first;
  for (const std::vector<std::string>& row : parsed.rows) first.try_emplace(row[0], row);
  EXPECT_EQ(first["moe_aux_loss"][3], "ALLREDUCE");
  EXPECT_EQ(std::stoll(first["moe_aux_loss"][4]), experts * 8);  // int64 counts
  EXPECT_EQ(first["moe_aux_loss"][6], "NONE");
  EXPECT_EQ(first["moe_dispatch_probs"][3], "ALLTOALL_EP");
  EXPECT_EQ(std::stoll(first["moe_dispatch_probs"][4]), rows_sent * prob_bytes);
  EXPECT_EQ(first["moe_dispatch_probs"][6], "ALLTOALL_EP");
  EXPECT_EQ(std::stoll(first["moe_dispatch_probs"][7]), rows_sent * prob_bytes);
  EXPECT_EQ(first["moe_etp_gather_probs"][3], "ALLGATHER");
  EXPECT_EQ(std::stoll(first["moe_etp_gather_probs"][4]), 2 * rows_sent * prob_bytes);
  EXPECT_EQ(first["moe_etp_gather_probs"][6], "REDUCESCATTER");
  for (const std::string& line : result.diagnostics) {
    EXPECT_THAT(line, ::testing::Not(HasSubstr("probs"))) << line;
    EXPECT_THAT(line, ::testing::Not(HasSubstr("aux_loss"))) << line;
  }
}

// The allgather and flex dispatchers run over tp×ep = 8 ranks; SimAI's _EP group has e = 4.
TEST(SimAiWriterTest, DiagnosesTpEpCollectivesWrittenOnTheEpGroup) {
  for (const config::TokenDispatcher dispatcher :
       {config::TokenDispatcher::kAllGather, config::TokenDispatcher::kFlex}) {
    ExportCase c = MoeCase();
    c.training.moe.dispatcher = dispatcher;
    if (!config::Validate(c.model, c.training).ok()) continue;
    const ExportResult result = testing::RenderSimAi(c);
    ExpectWellFormed(result.text);
    EXPECT_THAT(result.diagnostics,
                ::testing::Contains(HasSubstr("over tp x ep = 8 ranks; SimAI's _EP group, where "
                                              "it is written, has 4 ranks")));
  }
  ExportCase c = MoeCase();
  c.training.moe.dispatcher = config::TokenDispatcher::kAllGather;
  const ExportResult result = Render(c);
  EXPECT_THAT(result.diagnostics, ::testing::Contains(HasSubstr("moe.dispatch.ag_tokens")));
  c.training.parallel.expert_tensor = 1;  // tp×ep with u = 1 is the EP group: nothing to say
  const ExportResult exact = Render(c);
  for (const std::string& line : exact.diagnostics) {
    EXPECT_THAT(line, ::testing::Not(HasSubstr("where it is written"))) << line;
  }
}

TEST(SimAiWriterTest, HeaderHoldsRealPipelineValuesAndDiagnosesPipeline) {
  ExportCase c = DenseSpCase();
  c.training.parallel.pipeline = 2;
  c.training.parallel.virtual_stages = 2;
  c.training.batch.global_batch_size = 8;  // d = 2, m = 4
  const ExportResult result = Render(c, /*rank=*/7);
  const ParsedWorkload parsed = Parse(result.text);
  EXPECT_EQ(parsed.values.at("pp:"), 2);
  EXPECT_EQ(parsed.values.at("vpp:"), 2);
  EXPECT_EQ(parsed.values.at("ga:"), 4);
  EXPECT_EQ(parsed.values.at("pp_comm:"), 4096 * c.model.hidden_size * 2 / 2);  // A/t under SP
  EXPECT_EQ(CountRows(parsed, "embedding"), 0);  // the last stage has no embedding
  EXPECT_EQ(CountRows(parsed, "attn_in"), 4 * c.model.NumLayers() / 2);
  EXPECT_THAT(result.diagnostics, ::testing::Contains(HasSubstr("pipeline stage 1 of 2")));
}

TEST(SimAiWriterTest, DiagnosesEtpDifferentFromTpAndDroppedCollectives) {
  ExportCase c = MoeCase();
  c.training.parallel.expert_tensor = 1;
  const ExportResult result = Render(c);
  const ParsedWorkload parsed = Parse(result.text);
  EXPECT_EQ(CountRows(parsed, "moe_etp_gather"), 0);
  EXPECT_THAT(result.diagnostics,
              ::testing::Contains(HasSubstr("Megatron's expert-DP group has 4 ranks")));
  EXPECT_THAT(result.diagnostics, ::testing::Contains(HasSubstr("input.broadcast_tokens")));
}

TEST(SimAiWriterTest, DiagnosesEtpGroupAndContextParallelTraffic) {
  ExportCase c = MoeCase();
  c.training.parallel.tensor = 1;
  c.training.parallel.expert_tensor = 2;
  c.training.parallel.context = 2;
  c.training.sequence_parallel = false;
  ASSERT_TRUE(config::Validate(c.model, c.training).ok());
  const ExportResult result = testing::RenderSimAi(c);
  ExpectWellFormed(result.text);
  EXPECT_THAT(result.diagnostics, ::testing::Contains(HasSubstr("differs from TP 1")));
  EXPECT_THAT(result.diagnostics, ::testing::Contains(HasSubstr("context parallelism (cp = 2)")));
  EXPECT_THAT(result.diagnostics, ::testing::Contains(HasSubstr("attention.cp.")));
}

TEST(SimAiWriterTest, FoldsGatedDeltaNetIntoTpBlocksAndSaysSo) {
  ExportCase c{io::LoadPreset("Qwen3.5-2B"), {}};
  c.training.parallel.world_size = 2;
  c.training.parallel.tensor = 2;
  c.training.sequence_parallel = true;
  c.training.batch.seq_length = 4096;
  ASSERT_TRUE(config::Validate(c.model, c.training).ok());
  const ExportResult result = testing::RenderSimAi(c);
  ExpectWellFormed(result.text);
  const ParsedWorkload parsed = Parse(result.text);
  const int64_t gdn_layers = c.model.CountLayers(config::MixerKind::kGatedDeltaNet);
  EXPECT_EQ(CountRows(parsed, "gdn_in"), gdn_layers);
  EXPECT_EQ(CountRows(parsed, "gdn_out"), gdn_layers);
  EXPECT_THAT(result.diagnostics, ::testing::Contains(HasSubstr("Gated DeltaNet")));
}

// Sum of the compute fields (3, 6, 9) of every row.
double TotalComputeTicks(const ParsedWorkload& parsed) {
  double total = 0;
  for (const std::vector<std::string>& row : parsed.rows) {
    for (const size_t field : {2u, 5u, 8u}) total += std::stod(row[field]);
  }
  return total;
}

// Compute columns come from the simulator's cost model for the chosen GPU: B200 has the higher
// BF16 peak (2250 vs 312 TFLOP/s) and HBM bandwidth (8 vs 2.039 TB/s), so every compute cell is
// shorter and the total at least 8/2.039 times shorter; rows, collectives and sizes do not
// depend on the GPU. The passes run in one CUDA graph (--cuda-graph-impl full_iteration), so no
// op waits for its host launches, which take as long on either GPU.
TEST(SimAiWriterTest, ComputeColumnsFollowTheGpuAndCommColumnsDoNot) {
  for (ExportCase c : {DenseSpCase(), MoeCase()}) {
    c.training.cuda_graph.impl = config::CudaGraphImpl::kFullIteration;
    const ParsedWorkload a100 = Parse(testing::RenderSimAi(c, 0, "A100").text);
    const ParsedWorkload b200 = Parse(testing::RenderSimAi(c, 0, "B200").text);
    ASSERT_EQ(a100.rows.size(), b200.rows.size());
    EXPECT_EQ(a100.values, b200.values);
    for (size_t i = 0; i < a100.rows.size(); ++i) {
      const std::vector<std::string>& slow = a100.rows[i];
      const std::vector<std::string>& fast = b200.rows[i];
      ASSERT_EQ(slow.size(), 12u);
      ASSERT_EQ(fast.size(), 12u);
      for (size_t field = 0; field < 12; ++field) {
        if (field == 2 || field == 5 || field == 8) {
          if (std::stoll(slow[field]) > 0) {
            EXPECT_LT(std::stoll(fast[field]), std::stoll(slow[field])) << slow[0];
          }
        } else {
          EXPECT_EQ(fast[field], slow[field]) << slow[0] << " field " << field + 1;
        }
      }
    }
    EXPECT_GT(TotalComputeTicks(a100), 0);
    EXPECT_GE(TotalComputeTicks(a100) / TotalComputeTicks(b200), 8.0 / 2.039);
  }
}

}  // namespace
}  // namespace trainscope::report
