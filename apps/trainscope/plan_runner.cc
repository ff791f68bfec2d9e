// The runner of `trainscope plan`: resolves the study inputs, maps the flags given on the
// command line to pinned dimensions, runs the planner (timing it: the library stays free of
// clocks), simulates the --compare layout with the same inputs and renders the report. The
// progress line is the CLI's only live output: stderr, and only when stderr is a terminal.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <string_view>
#include <thread>
#include <utility>

#include "runners.h"
#include "trainscope/config/validate.h"
#include "trainscope/error.h"
#include "trainscope/io/argument_files.h"
#include "trainscope/io/input_text.h"
#include "trainscope/io/study_inputs.h"
#include "trainscope/plan/planner.h"
#include "trainscope/report/plan_report.h"

namespace trainscope::app {
namespace {

// The Megatron flags that pin a dimension of the search when given (directly or by --fix).
constexpr std::pair<std::string_view, bool plan::Pins::*> kPinFlags[] = {
    {"--tensor-model-parallel-size", &plan::Pins::tensor},
    {"--sequence-parallel", &plan::Pins::sequence_parallel},
    {"--pipeline-model-parallel-size", &plan::Pins::pipeline},
    {"--decoder-first-pipeline-num-layers", &plan::Pins::split},
    {"--decoder-last-pipeline-num-layers", &plan::Pins::split},
    {"--account-for-embedding-in-pipeline-split", &plan::Pins::split},
    {"--account-for-loss-in-pipeline-split", &plan::Pins::split},
    {"--num-virtual-stages-per-pipeline-rank", &plan::Pins::virtual_stages},
    {"--num-layers-per-virtual-pipeline-stage", &plan::Pins::virtual_stages},
    {"--context-parallel-size", &plan::Pins::context},
    {"--expert-model-parallel-size", &plan::Pins::expert},
    {"--expert-tensor-parallel-size", &plan::Pins::expert_tensor},
    {"--micro-batch-size", &plan::Pins::micro_batch},
    {"--recompute-granularity", &plan::Pins::recompute},
    {"--recompute-method", &plan::Pins::recompute},
    {"--recompute-num-layers", &plan::Pins::recompute},
    {"--recompute-modules", &plan::Pins::recompute},
    {"--recompute-activations", &plan::Pins::recompute},
    {"--moe-token-dispatcher-type", &plan::Pins::dispatcher},
    {"--moe-grouped-gemm", &plan::Pins::grouped_gemm},
    {"--use-distributed-optimizer", &plan::Pins::data_parallel},
    {"--use-megatron-fsdp", &plan::Pins::data_parallel},
    {"--use-torch-fsdp2", &plan::Pins::data_parallel},
    {"--overlap-grad-reduce", &plan::Pins::dp_overlap},
    {"--overlap-param-gather", &plan::Pins::dp_overlap},
    {"--tp-comm-overlap", &plan::Pins::tp_comm_overlap},
};

plan::PlanOptions OptionsOf(const io::CliRequest& request) {
  plan::PlanOptions options;
  for (const std::string& flag : request.given_flags) {
    for (const auto& [name, pin] : kPinFlags) {
      if (flag == name) options.space.pins.*pin = true;
    }
  }
  const io::PlanFlags& p = request.plan;
  if (p.max_tp) options.space.max_tensor = *p.max_tp;
  if (p.allow_recompute) options.space.recompute = *p.allow_recompute;
  if (p.dispatchers) options.space.dispatchers = *p.dispatchers;
  options.objective = p.objective;
  options.top_k = p.top;
  const unsigned cores = std::thread::hardware_concurrency();
  options.num_threads = static_cast<int>(p.threads.value_or(cores > 0 ? cores : 1));
  return options;
}

// "plan: 1200/5400 layouts" rewritten in place on a terminal; nothing otherwise.
plan::ProgressCallback ProgressLine() {
  if (isatty(STDERR_FILENO) == 0) return nullptr;
  return [](int64_t done, int64_t total) {
    std::cerr << fmt::format("\rplan: {}/{} layouts", done, total) << (done == total ? "\n" : "")
              << std::flush;
  };
}

// The planner searches static micro-batch sizes; slime's dynamic batching is not one of them.
void RejectDynamicBatching(const io::CliRequest& request) {
  if (request.training.batch.max_tokens_per_gpu) {
    throw UsageError(
        "--use-dynamic-batch-size: not searched by `plan` (simulate models it for one layout)");
  }
}

// The user's layout of --compare: the plan's base configuration with the given flags over it.
report::ComparedLayout Compare(const io::CliRequest& request, const config::ModelConfig& model,
                               const study::Study& base, const plan::PlanResult& result,
                               plan::Objective objective) {
  const std::string& text = *request.plan.compare;
  const std::vector<std::string> tokens =
      text.starts_with("@")
          ? io::SplitArgumentText(io::ReadInputFile(text.substr(1), "--compare file"),
                                  text.substr(1))
          : io::SplitArgumentText(text, "--compare");
  io::CliRequest mine = request;
  io::ApplyTrainingFlags(tokens, mine);
  RejectDynamicBatching(mine);
  io::ApplyModelDependentFlags(model, mine);
  report::ComparedLayout out;
  out.flags = plan::LayoutFlags(model, mine.training);
  const config::ValidationResult validation = config::Validate(model, mine.training);
  if (!validation.ok()) {
    const config::Violation& v = validation.errors.front();
    out.invalid_reason = fmt::format("[{}] {}", v.rule, v.message);
    return out;
  }
  study::Study study = base;
  study.training = mine.training;
  out.candidate = plan::EvaluateLayout(study);
  out.rank = plan::RankAmong(result, *out.candidate, objective);
  return out;
}

void CheckRequest(const io::CliRequest& request) {
  RejectDynamicBatching(request);
  if (!request.world_size_given) throw UsageError("plan needs --num-gpus N");
  if (!request.training.split.layout.empty()) {
    throw UsageError(
        "plan: --pipeline-model-parallel-layout fixes one pipeline split, and the planner "
        "searches the splits itself (drop the flag)");
  }
  if (!request.training.batch.global_batch_size) {
    throw UsageError("plan needs --global-batch-size (--gbs)");
  }
}

}  // namespace

CommandOutput RunPlan(const io::CliRequest& request) {
  CheckRequest(request);
  const auto start = std::chrono::steady_clock::now();
  const config::ModelConfig model = LoadModel(request);
  io::CliRequest req = request;
  io::ApplyModelDependentFlags(model, req);
  const study::Study base = io::LoadStudy(req, model);
  if (base.cluster.gpu.bf16_flops_per_second <= 0 || base.cluster.gpu.memory_bytes <= 0) {
    throw InputError(
        "gpu " + base.cluster.gpu.name +
        ": bf16_tflops / memory: the preset has no figure (set it in the cluster file)");
  }
  const plan::PlanOptions options = OptionsOf(req);
  const plan::PlanResult result = plan::Plan(base, options, ProgressLine());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::optional<int64_t> explain = req.plan.explain_rank;
  if (explain && *explain + 1 > static_cast<int64_t>(result.ranking.size())) {
    throw UsageError(fmt::format("--explain: needs candidates {} and {} (got {} simulated)",
                                 *explain, *explain + 1, result.ranking.size()));
  }
  report::PlanReportInput input{.base = base,
                                .result = result,
                                .objective = options.objective,
                                .top_k = options.top_k,
                                .search_seconds = seconds,
                                .explain_rank = explain};
  if (req.plan.compare) input.compare = Compare(req, model, base, result, options.objective);
  CommandOutput out;
  out.text = req.json ? report::RenderPlanJson(input) : report::RenderPlanText(input);
  if (req.plan.csv_path) out.files.push_back({*req.plan.csv_path, report::RenderPlanCsv(result)});
  for (const std::string& flag : req.ignored_flags) out.notes.push_back("note: ignored " + flag);
  return out;
}

}  // namespace trainscope::app
