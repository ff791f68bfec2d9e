// End-to-end tests of `trainscope simulate`: the JSON contract, the Chrome trace, the sanity
// properties issue 4 asks for (DP scaling, NVLink monotonicity, single-GPU steps), the
// sequence-length and routing-skew options, and bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cli_runner.h"

namespace trainscope {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

// H100 dense BF16 peak (NVIDIA-NeMo/Automodel mfu.py uses 989e12).
constexpr double kH100PeakTflops = 989.4;

Json SimulateJson(const std::string& args) {
  const Outcome outcome = RunCli("simulate " + args + " --json");
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  return Json::parse(outcome.out);
}

std::filesystem::path TempPath(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         (name + "_" + std::to_string(::getpid()) + ".json");
}

constexpr const char* kDense8b =
    "--model Qwen/Qwen3-8B --tp 2 --pp 2 --num-gpus 16 --gbs 64 --seq 4096 --sequence-parallel "
    "--use-distributed-optimizer";

TEST(SimulateCliTest, JsonHasTheContractKeysAndConsistentThroughput) {
  const Json json = SimulateJson(kDense8b);
  for (const char* key : {"step_time_s", "tokens_per_s_per_gpu", "model_tflops_per_gpu", "mfu"}) {
    ASSERT_TRUE(json[key].is_number()) << key;
  }
  ASSERT_TRUE(json["breakdown"].is_object());
  for (const char* key : {"compute_s", "exposed_comm_s"}) {
    EXPECT_TRUE(json["breakdown"][key].is_object()) << key;
  }
  for (const char* key : {"bubble_s", "optimizer_s"}) {
    EXPECT_TRUE(json["breakdown"][key].is_number()) << key;
  }
  const double step = json["step_time_s"].get<double>();
  // 64 sequences of 4096 tokens over 16 GPUs.
  EXPECT_NEAR(json["tokens_per_s_per_gpu"].get<double>(), 64.0 * 4096 / step / 16, 1e-6);
  EXPECT_NEAR(json["mfu"].get<double>(),
              json["model_tflops_per_gpu"].get<double>() / kH100PeakTflops, 1e-9);
  // The stage that finishes last partitions the step into compute, exposed comm and idle.
  const Json& b = json["breakdown"];
  EXPECT_NEAR(b["compute_total_s"].get<double>() + b["exposed_comm_total_s"].get<double>() +
                  b["launch_overhead_s"].get<double>() + b["bubble_s"].get<double>(),
              step, 1e-9 * step);
  for (const Json& stage : json["stages"]) {
    EXPECT_TRUE(stage["launch_overhead_s"].is_number());
  }
  EXPECT_EQ(json["stages"].size(), 2u);
  EXPECT_TRUE(json["memory"]["fits"].is_boolean());
  EXPECT_LE(json["memory"]["allocated_bytes"].get<int64_t>(),
            json["memory"]["reserved_bytes"].get<int64_t>());
  EXPECT_EQ(json["memory"]["nvidia_smi_bytes"], json["memory"]["max_peak_bytes"]);
}

// NVFP4 needs Blackwell's FP4 tensor cores (TE _compute_nvfp4_support: compute capability
// >= 10.0); on B200 it is faster than the same run in MXFP8, whose GEMMs run at half the rate.
TEST(SimulateCliTest, Fp4FormatRunsOnBlackwellOnly) {
  constexpr char kLlama[] = "--model Llama-3-8B --num-gpus 8 --gbs 16 --seq 4096 --gpu ";
  const Outcome hopper = RunCli(std::string("simulate ") + kLlama + "H100 --fp4-format e2m1");
  EXPECT_EQ(hopper.exit_code, 2);
  EXPECT_THAT(hopper.err, HasSubstr("--fp4-format: NVFP4 needs an SM100+ (Blackwell) GPU (H100 "
                                    "is SM90)"));
  EXPECT_TRUE(hopper.out.empty());
  const Json fp4 = SimulateJson(std::string(kLlama) + "B200 --fp4-format e2m1");
  const Json mxfp8 =
      SimulateJson(std::string(kLlama) + "B200 --fp8-format e4m3 --fp8-recipe mxfp8");
  EXPECT_LT(fp4["step_time_s"].get<double>(), mxfp8["step_time_s"].get<double>());
}

TEST(SimulateCliTest, UnevenSplitNamesTheBusiestStage) {
  // Qwen3-8B has 36 layers: 12 on stage 0 and 24 (plus the LM head) on stage 1, so stage 1
  // computes about twice as long and is the stage to rebalance.
  const Json json = SimulateJson(
      "--model Qwen/Qwen3-8B --pp 2 --num-gpus 2 --gbs 8 --seq 4096 "
      "--decoder-first-pipeline-num-layers 12");
  EXPECT_EQ(json["busiest_pp_rank"].get<int64_t>(), 1);
  EXPECT_GT(json["stages"][1]["compute_s"].get<double>(),
            1.8 * json["stages"][0]["compute_s"].get<double>());
  // The breakdown describes that stage.
  EXPECT_EQ(json["breakdown"]["compute_total_s"].get<double>(),
            json["stages"][1]["compute_s"].get<double>());
}

TEST(SimulateCliTest, SingleGpuStepIsItsComputeAndLaunchOverhead) {
  // One GPU, no communication: the step is its kernels, device-bound or launch-bound.
  const Json json = SimulateJson("--model Qwen/Qwen3-0.6B --gbs 2 --seq 2048");
  const double step = json["step_time_s"].get<double>();
  EXPECT_NEAR(json["breakdown"]["compute_total_s"].get<double>() +
                  json["breakdown"]["launch_overhead_s"].get<double>(),
              step, 1e-12 * step);
  EXPECT_TRUE(json["breakdown"]["exposed_comm_s"].empty());
}

// Qwen3-0.6B (h = 1024) at 2 x 2048 tokens has short kernels: part of its step waits for the
// host (13.48 µs per launch on the H100 preset's x86 host). CUDA graphs remove that wait for
// the ops they capture: the whole decoder layers (--enable-cuda-graph), or everything but the
// optimizer (--cuda-graph-impl full_iteration).
TEST(SimulateCliTest, CudaGraphsRemoveTheLaunchOverheadOfWhatTheyCapture) {
  const std::string layout = "--model Qwen/Qwen3-0.6B --gbs 2 --seq 2048";
  const Json eager = SimulateJson(layout);
  const Json layers = SimulateJson(layout + " --enable-cuda-graph");
  const Json attn = SimulateJson(layout + " --external-cuda-graph --cuda-graph-scope attn");
  const Json full = SimulateJson(layout + " --cuda-graph-impl full_iteration");
  const auto launch = [](const Json& j) {
    return j["breakdown"]["launch_overhead_s"].get<double>();
  };
  EXPECT_GT(launch(eager), 0);
  EXPECT_LT(launch(attn), launch(eager));
  EXPECT_LT(launch(layers), launch(attn));
  EXPECT_EQ(launch(full), 0);
  EXPECT_LT(full["step_time_s"].get<double>(), eager["step_time_s"].get<double>());
  // Device work is the same: only the host waits go.
  EXPECT_NEAR(full["breakdown"]["compute_total_s"].get<double>(),
              eager["breakdown"]["compute_total_s"].get<double>(), 1e-12);
}

TEST(SimulateCliTest, TextReportsLaunchOverheadPerStage) {
  const Outcome outcome = RunCli(std::string("simulate ") + kDense8b);
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_THAT(outcome.out, HasSubstr("launch / host overhead"));
  EXPECT_THAT(outcome.out, HasSubstr("launch  exposed comm"));
}

// FP8 adds its cast / amax / scale ops (docs/cost-model.md, "FP8 overhead kernels"): reported
// as fp8_overhead_s (0 for BF16), a part of compute plus launch overhead, on every stage. Without
// the FP8 weight cache each micro-batch casts the weights again, so the overhead grows.
TEST(SimulateCliTest, Fp8OverheadIsReportedPerStageAndGrowsWithoutTheWeightCache) {
  const Json bf16 = SimulateJson(kDense8b);
  EXPECT_EQ(bf16["breakdown"]["fp8_overhead_s"].get<double>(), 0);
  const std::string fp8 = std::string(kDense8b) + " --fp8-format hybrid --fp8-recipe tensorwise";
  const Json cached = SimulateJson(fp8);
  const Json& b = cached["breakdown"];
  EXPECT_GT(b["fp8_overhead_s"].get<double>(), 0);
  EXPECT_LT(b["fp8_overhead_s"].get<double>(),
            b["compute_total_s"].get<double>() + b["launch_overhead_s"].get<double>());
  for (const Json& stage : cached["stages"]) EXPECT_GT(stage["fp8_overhead_s"].get<double>(), 0);
  const Json uncached = SimulateJson(fp8 + " --disable-parameter-transpose-cache");
  EXPECT_GT(uncached["breakdown"]["fp8_overhead_s"].get<double>(),
            b["fp8_overhead_s"].get<double>());
  const Outcome text = RunCli("simulate " + fp8);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("FP8 cast / amax / scales"));
}

TEST(SimulateCliTest, ConflictingCudaGraphFlagsAreRejected) {
  const Outcome both = RunCli(std::string("simulate ") + kDense8b +
                              " --enable-cuda-graph --cuda-graph-impl transformer_engine");
  EXPECT_EQ(both.exit_code, 2);  // a rule violation names its flags: usage error
  EXPECT_THAT(both.err, HasSubstr("C49"));
  const Outcome unknown = RunCli(std::string("simulate ") + kDense8b + " --cuda-graph-scope mlp2");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("--cuda-graph-scope"));
  const Outcome preprocess = RunCli(
      "simulate --model Qwen/Qwen3-30B-A3B --ep 8 --num-gpus 8 --gbs 16 --seq 4096 "
      "--moe-token-dispatcher-type alltoall --cuda-graph-impl transformer_engine "
      "--cuda-graph-modules moe_preprocess");
  EXPECT_EQ(preprocess.exit_code, 2);
  EXPECT_THAT(preprocess.err, HasSubstr("moe_router"));
  const Outcome dense_moe_scope =
      RunCli(std::string("simulate ") + kDense8b +
             " --cuda-graph-impl local --cuda-graph-modules moe_router");
  EXPECT_EQ(dense_moe_scope.exit_code, 2);
  EXPECT_THAT(dense_moe_scope.err, HasSubstr("only supported for MoE"));
}

// --deterministic-mode switches Megatron-Core's Gated DeltaNet to its torch-native chunked delta
// rule (fp32, a Python loop over chunks): a GDN model gets slower and holds more memory; a model
// without GDN layers is unchanged.
TEST(SimulateCliTest, DeterministicModeSlowsAndGrowsOnlyGdnModels) {
  const std::string gdn =
      "--model Qwen/Qwen3.5-27B --tp 4 --num-gpus 8 --gbs 8 --seq 4096 "
      "--sequence-parallel --micro-batch-size 1";
  const Json fla = SimulateJson(gdn);
  const Json torch = SimulateJson(gdn + " --deterministic-mode");
  EXPECT_GT(torch["step_time_s"].get<double>(), fla["step_time_s"].get<double>());
  EXPECT_GT(torch["memory"]["max_peak_bytes"].get<int64_t>(),
            fla["memory"]["max_peak_bytes"].get<int64_t>());
  const Json dense = SimulateJson(kDense8b);
  const Json dense_deterministic = SimulateJson(std::string(kDense8b) + " --deterministic-mode");
  EXPECT_EQ(dense_deterministic["step_time_s"], dense["step_time_s"]);
  EXPECT_EQ(dense_deterministic["memory"]["max_peak_bytes"], dense["memory"]["max_peak_bytes"]);
  const auto memory = [](const std::string& args) {
    const Outcome outcome = RunCli("memory " + args + " --json");
    EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
    return Json::parse(outcome.out)["max_peak_bytes"].get<int64_t>();
  };
  EXPECT_GT(memory(gdn + " --deterministic-mode"), memory(gdn));
  EXPECT_EQ(memory(std::string(kDense8b) + " --deterministic-mode"), memory(kDense8b));
}

// --cross-entropy-loss-fusion and --cross-entropy-fusion-impl reach the loss kernels: Megatron's
// default unfused path moves 38 + 14 B per logit, the native fused one 22 + 6, TE's 8 + 14
// (graph/layer_ops.cc), so the step gets shorter in that order; a value outside native|te is
// rejected with the flag's name.
TEST(SimulateCliTest, CrossEntropyFusionFlagsOrderTheLossCost) {
  const double unfused = SimulateJson(kDense8b)["step_time_s"].get<double>();
  const double native =
      SimulateJson(std::string(kDense8b) + " --cross-entropy-loss-fusion")["step_time_s"]
          .get<double>();
  const double te =
      SimulateJson(std::string(kDense8b) +
                   " --cross-entropy-loss-fusion --cross-entropy-fusion-impl te")["step_time_s"]
          .get<double>();
  EXPECT_GT(unfused, native);
  EXPECT_GT(native, te);
  const Outcome bad =
      RunCli(std::string("simulate ") + kDense8b + " --cross-entropy-fusion-impl triton");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("--cross-entropy-fusion-impl"));
}

TEST(SimulateCliTest, DoublingDataParallelGpusHalvesPerGpuWork) {
  // Same global batch on 8 and 16 GPUs (DP 8 -> 16): each GPU runs half the micro-batches, so
  // its forward / backward compute halves exactly (the optimizer step, over the full replica
  // without the distributed optimizer, does not) and the step takes about half as long.
  const Json eight = SimulateJson("--model Qwen/Qwen3-0.6B --num-gpus 8 --gbs 64 --seq 2048");
  const Json sixteen = SimulateJson("--model Qwen/Qwen3-0.6B --num-gpus 16 --gbs 64 --seq 2048");
  auto pass_compute = [](const Json& json) {
    return json["breakdown"]["compute_total_s"].get<double>() -
           json["breakdown"]["optimizer_s"].get<double>();
  };
  EXPECT_NEAR(pass_compute(eight) / pass_compute(sixteen), 2.0, 1e-9);
  EXPECT_NEAR(eight["breakdown"]["optimizer_s"].get<double>(),
              sixteen["breakdown"]["optimizer_s"].get<double>(), 1e-12);
  const double step_ratio =
      eight["step_time_s"].get<double>() / sixteen["step_time_s"].get<double>();
  EXPECT_GT(step_ratio, 1.6);
  EXPECT_LE(step_ratio, 2.0 + 1e-9);
}

TEST(SimulateCliTest, DoublingNvlinkBandwidthNeverSlowsTheStep) {
  const std::filesystem::path slow = TempPath("nvlink_450");
  const std::filesystem::path fast = TempPath("nvlink_900");
  std::ofstream(slow) << R"({"gpu": "H100", "nvlink_gbps": 450})";
  std::ofstream(fast) << R"({"gpu": "H100", "nvlink_gbps": 900})";
  for (const char* layout :
       {"--model Qwen/Qwen3-8B --tp 8 --num-gpus 16 --gbs 32 --seq 4096 --sequence-parallel",
        "--model Qwen/Qwen3-30B-A3B --ep 8 --num-gpus 16 --gbs 32 --seq 4096 "
        "--moe-token-dispatcher-type alltoall --moe-grouped-gemm --use-distributed-optimizer"}) {
    const double t_slow =
        SimulateJson(std::string(layout) + " --cluster " + slow.string())["step_time_s"];
    const double t_fast =
        SimulateJson(std::string(layout) + " --cluster " + fast.string())["step_time_s"];
    EXPECT_LE(t_fast, t_slow) << layout;
    EXPECT_LT(t_fast, t_slow) << layout;  // these layouts do expose NVLink traffic
  }
  std::filesystem::remove(slow);
  std::filesystem::remove(fast);
}

TEST(SimulateCliTest, TraceHasOneProcessPerStageAndNamedSlices) {
  const std::filesystem::path trace = TempPath("trace");
  const Outcome outcome =
      RunCli(std::string("simulate ") + kDense8b + " --trace " + trace.string());
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  std::ifstream in(trace);
  const Json json = Json::parse(in);
  std::set<int64_t> pids;
  int64_t slices = 0;
  for (const Json& event : json["traceEvents"]) {
    if (event["ph"] == "M" && event["name"] == "process_name")
      pids.insert(event["pid"].get<int64_t>());
    if (event["ph"] != "X") continue;
    ++slices;
    const std::string name = event["name"];
    if (event["args"]["microbatch"].get<int64_t>() >= 0) {
      EXPECT_THAT(name, HasSubstr("mb"));
    }
    if (event["args"]["layer"].get<int64_t>() >= 0) {
      EXPECT_THAT(name, HasSubstr("L"));
    }
    EXPECT_GE(event["dur"].get<double>(), 0);
  }
  EXPECT_EQ(pids, (std::set<int64_t>{0, 8}));  // the PP group of rank 0: ranks 0 and 8
  EXPECT_GT(slices, 100);
  std::filesystem::remove(trace);
}

TEST(SimulateCliTest, SequenceLengthDistributionReportsPaddingAndPacking) {
  // Half the samples have 1024 tokens and half 4096, s = 4096: BSHD computes 4096 per sample,
  // of which E[min(l, s)] = 2560 are real: 2560 / 4096 = 0.625.
  const std::filesystem::path histogram = TempPath("lengths");
  std::ofstream(histogram) << "length,count\n1024,1\n4096,1\n";
  const Json json =
      SimulateJson(std::string(kDense8b) + " --seq-length-distribution " + histogram.string());
  const Json& s = json["sequence_lengths"];
  EXPECT_NEAR(s["mean_length"].get<double>(), 2560, 1e-9);
  EXPECT_NEAR(s["bshd_useful_token_fraction"].get<double>(), 0.625, 1e-12);
  EXPECT_NEAR(s["bshd_useful_tokens_per_s_per_gpu"].get<double>(),
              0.625 * json["tokens_per_s_per_gpu"].get<double>(), 1e-6);
  // Packing does less attention work than dense causal attention over 4096 tokens.
  EXPECT_LT(s["thd_step_time_s"].get<double>(), json["step_time_s"].get<double>());
  std::filesystem::remove(histogram);
}

TEST(SimulateCliTest, RoutingSkewSlowsTheMoeStep) {
  const std::string layout =
      "--model Qwen/Qwen3-30B-A3B --ep 8 --num-gpus 8 --gbs 16 --seq 4096 "
      "--moe-token-dispatcher-type alltoall --moe-grouped-gemm --use-distributed-optimizer";
  const Json balanced = SimulateJson(layout);
  const Json skewed = SimulateJson(layout + " --moe-routing-skew 1.0");
  EXPECT_EQ(balanced["moe_load_factor"].get<double>(), 1.0);
  EXPECT_GT(skewed["moe_load_factor"].get<double>(), 1.0);
  EXPECT_GT(skewed["step_time_s"].get<double>(), balanced["step_time_s"].get<double>());
}

TEST(SimulateCliTest, RoutingSkewRaisesTheMemoryPeak) {
  // The busiest expert rank holds more permuted tokens (docs/memory.md, routing skew).
  const std::string layout =
      "memory --model Qwen/Qwen3-30B-A3B --ep 8 --num-gpus 8 --gbs 16 --seq 4096 "
      "--moe-token-dispatcher-type alltoall --moe-grouped-gemm --json";
  const Outcome balanced = RunCli(layout);
  const Outcome skewed = RunCli(layout + " --moe-routing-skew 1.0");
  ASSERT_EQ(balanced.exit_code, 0) << balanced.err;
  ASSERT_EQ(skewed.exit_code, 0) << skewed.err;
  EXPECT_GT(Json::parse(skewed.out)["max_peak_bytes"].get<int64_t>(),
            Json::parse(balanced.out)["max_peak_bytes"].get<int64_t>());
}

TEST(SimulateCliTest, BadOptionsExitTwoWithOneMessage) {
  const struct {
    const char* args;
    const char* message;
  } cases[] = {
      {"--comm-memory-guard sometimes", "--comm-memory-guard"},
      {"--qwen-gdn-backend flashqla", "--qwen-gdn-backend"},  // Qwen3-8B has no GDN layers
      {"--moe-routing-skew 1.2", "--moe-routing-skew"},       // nor MoE layers
      {"--gpu H900", "--gpu"},
      {"--gpus-per-node 0", "--gpus-per-node"},
  };
  for (const auto& c : cases) {
    const Outcome outcome = RunCli(std::string("simulate ") + kDense8b + " " + c.args);
    EXPECT_EQ(outcome.exit_code, 2) << c.args;
    EXPECT_THAT(outcome.err, HasSubstr(c.message)) << c.args;
    EXPECT_TRUE(outcome.out.empty()) << c.args;
  }
}

TEST(SimulateCliTest, UnwritableTraceFailsWithoutPartialOutput) {
  const Outcome outcome =
      RunCli(std::string("simulate ") + kDense8b + " --trace /nonexistent-dir/trace.json");
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_THAT(outcome.err, HasSubstr("/nonexistent-dir/trace.json"));
  EXPECT_FALSE(std::filesystem::exists("/nonexistent-dir/trace.json"));
}

TEST(SimulateCliTest, GdnModelReportsItsKernelBackend) {
  const std::string layout =
      "--model Qwen/Qwen3.5-27B --tp 4 --num-gpus 8 --gbs 8 --seq 4096 --sequence-parallel";
  const Json fla = SimulateJson(layout);
  const Json flashqla = SimulateJson(layout + " --qwen-gdn-backend flashqla");
  EXPECT_EQ(fla["gdn_backend"], "fla");
  EXPECT_EQ(flashqla["gdn_backend"], "flashqla");
  EXPECT_LT(flashqla["breakdown"]["compute_s"]["gdn"].get<double>(),
            fla["breakdown"]["compute_s"]["gdn"].get<double>());
}

}  // namespace
}  // namespace trainscope
