#include "runners.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "runner_support.h"
#include "trainscope/config/pipeline_layout.h"
#include "trainscope/config/rank_mapping.h"
#include "trainscope/config/validate.h"
#include "trainscope/cost/megatron_memory.h"
#include "trainscope/cost/memory.h"
#include "trainscope/error.h"
#include "trainscope/graph/param_count.h"
#include "trainscope/graph/step_graph.h"
#include "trainscope/io/hf_config_loader.h"
#include "trainscope/io/presets.h"
#include "trainscope/io/study_inputs.h"
#include "trainscope/io/suggest.h"
#include "trainscope/report/aicb_writer.h"
#include "trainscope/report/chakra_writer.h"
#include "trainscope/report/chrome_trace.h"
#include "trainscope/report/groups_report.h"
#include "trainscope/report/html_report.h"
#include "trainscope/report/memory_report.h"
#include "trainscope/report/params_report.h"
#include "trainscope/report/simai_writer.h"
#include "trainscope/report/simulate_report.h"
#include "trainscope/report/validate_report.h"
#include "trainscope/report/workload_report.h"
#include "trainscope/study/study.h"
#include "trainscope/units.h"

namespace trainscope::app {
namespace {

constexpr int kExitBadInput = 2;

}  // namespace

config::ModelConfig LoadModel(const io::CliRequest& request) {
  if (request.model_name && request.model_config_path) {
    throw UsageError("--model and --model-config are mutually exclusive (got both)");
  }
  if (request.model_config_path) return io::LoadModelConfigFile(*request.model_config_path);
  if (!request.model_name) {
    throw UsageError(
        fmt::format("command {} needs --model NAME or --model-config PATH", request.command));
  }
  if (!io::FindPreset(*request.model_name)) {
    throw UsageError(fmt::format("--model: unknown model \"{}\"{}",
                                 io::Abbreviated(*request.model_name),
                                 io::DidYouMean(*request.model_name, io::PresetNames())));
  }
  return io::LoadPreset(*request.model_name);
}

namespace {

std::vector<std::string> NotesFor(const io::CliRequest& request,
                                  const config::ValidationResult& result) {
  std::vector<std::string> notes;
  if (!request.ignored_flags.empty()) {
    std::string names;
    for (const std::string& flag : request.ignored_flags) names += " " + flag;
    notes.push_back("note: accepted but ignored (no effect on what trainscope models):" + names);
  }
  if (!request.world_size_given && (request.parallel_flags_given || request.command != "params")) {
    notes.push_back(fmt::format(
        "note: --num-gpus not given; using {}, the smallest world the parallel sizes fit",
        request.training.parallel.world_size));
  }
  for (const config::Violation& warning : result.warnings) {
    notes.push_back(
        fmt::format("warning: [{}] {} ({})", warning.rule, warning.message, warning.profile));
  }
  return notes;
}

Checked Check(const io::CliRequest& request) {
  Checked checked{.model = LoadModel(request), .request = request};
  io::ApplyModelDependentFlags(checked.model, checked.request);
  checked.validation = config::Validate(checked.model, checked.request.training);
  checked.notes = NotesFor(checked.request, checked.validation);
  return checked;
}

}  // namespace

Checked CheckValid(const io::CliRequest& request) {
  Checked checked = Check(request);
  if (checked.validation.ok()) return checked;
  const std::vector<config::Violation>& errors = checked.validation.errors;
  const config::Violation& first = errors.front();
  std::string more;
  if (errors.size() > 1) {
    more = fmt::format("\n{} more violation(s): run trainscope validate with the same flags",
                       errors.size() - 1);
  }
  // Name the rule's flags unless the message already does.
  std::string flags;
  const bool named = std::any_of(first.flags.begin(), first.flags.end(), [&](const std::string& f) {
    return first.message.find(f) != std::string::npos;
  });
  for (const std::string& flag : first.flags) flags += (flags.empty() ? " (" : ", ") + flag;
  if (named || flags.empty())
    flags.clear();
  else
    flags += ")";
  const std::string profile =
      first.profile.empty() ? std::string() : fmt::format(" (rule of {})", first.profile);
  throw InvalidConfigurationError(
      fmt::format("invalid configuration: [{}] {}{}\nfix: {}{}{}", first.rule, first.message, flags,
                  first.fix, profile, more),
      first.rule);
}

CommandOutput Output(std::string text, std::vector<std::string> notes) {
  return CommandOutput{.text = std::move(text), .notes = std::move(notes)};
}

void RequireBf16Peak(const study::Study& study) {
  if (study.cluster.gpu.bf16_flops_per_second <= 0) {
    throw InputError("gpu " + study.cluster.gpu.name +
                     ": bf16_tflops: the preset has no figure (set it in the cluster file)");
  }
}

namespace {

int64_t CheckedRank(const io::CliRequest& request, int64_t rank) {
  if (rank >= request.training.parallel.world_size) {
    throw UsageError(fmt::format("--rank: must be below the world size {} (got {})",
                                 request.training.parallel.world_size, rank));
  }
  return rank;
}

std::string Gib(int64_t bytes) {
  return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / static_cast<double>(kBytesPerGiB));
}

}  // namespace

CommandOutput RunParams(const io::CliRequest& request) {
  const Checked c = CheckValid(request);
  const graph::ParamCounts counts = graph::CountParams(c.model);
  std::vector<graph::StageParams> stages;
  if (c.request.parallel_flags_given) {
    const config::PipelineLayout layout = config::BuildPipelineLayout(c.model, c.request.training);
    stages = graph::CountParamsPerStage(c.model, c.request.training, layout);
  }
  const report::ParamsReportInput input{c.model, counts, stages, c.request.training};
  return Output(request.json ? report::RenderParamsJson(input) : report::RenderParamsText(input),
                c.notes);
}

CommandOutput RunValidate(const io::CliRequest& request) {
  Checked c = Check(request);
  if (c.validation.ok()) {
    // Validation warns, never fails, when the busiest rank will not fit the GPU.
    const study::Study study = io::LoadStudy(c.request, c.model);
    const cost::MemoryEstimate estimate = study::EstimateStudyMemory(study);
    const config::GpuSpec& gpu = study.cluster.gpu;
    if (estimate.max_peak_bytes > gpu.memory_bytes) {
      c.notes.push_back(
          fmt::format("warning: [memory] pipeline stage {} needs {}, more than the {} of a {} (see "
                      "trainscope memory)",
                      estimate.max_peak_pipeline_rank, Gib(estimate.max_peak_bytes),
                      Gib(gpu.memory_bytes), gpu.name));
    }
  }
  const config::TrainingConfig& training = c.request.training;
  CommandOutput out =
      Output(request.json ? report::RenderValidationJson(c.model, training, c.validation)
                          : report::RenderValidationText(c.model, training, c.validation),
             c.notes);
  out.exit_code = c.validation.ok() ? 0 : kExitBadInput;
  return out;
}

CommandOutput RunGroups(const io::CliRequest& request) {
  const Checked c = CheckValid(request);
  const config::RankMapping mapping(c.request.training.parallel);
  if (request.rank) (void)CheckedRank(c.request, *request.rank);
  // Streamed to -o or stdout as it is rendered: 10^7 GPUs list gigabytes of groups.
  CommandOutput out = Output("", c.notes);
  out.render_text = [mapping, rank = request.rank, json = request.json](const io::ByteSink& sink) {
    if (json) {
      report::StreamGroupsJson(mapping, rank, sink);
    } else {
      report::StreamGroupsText(mapping, rank, sink);
    }
  };
  return out;
}

// `workload --format chakra -o DIR`: every rank's ET file, the communicator groups and the
// ASTRA-sim network, system and remote-memory inputs, all in DIR.
CommandOutput ChakraOutput(const Checked& c, const study::Study& study) {
  if (!c.request.output_path) {
    throw UsageError("--format chakra: needs -o DIR, the existing directory the files go into");
  }
  if (c.request.training.parallel.world_size < 2) {
    throw InputError(
        "--format chakra: needs at least 2 GPUs (ASTRA-sim's analytical network rejects a "
        "1-NPU topology)");
  }
  if (study.cluster.gpu.bf16_flops_per_second <= 0) {
    throw InputError("gpu " + study.cluster.gpu.name +
                     ": bf16_tflops: the preset has no figure (set it in the cluster file)");
  }
  // Everything a rank's file needs, shared by the renderers: each file is built and encoded
  // only when it is written, so a 4,096-rank export holds one rank's graph and bytes at a time.
  struct EtInputs {
    config::ModelConfig model;
    config::TrainingConfig training;
    config::RankMapping mapping;
    sim::OpCostModel costs;
    double peak_tflops = 0;
  };
  const config::TrainingConfig& training = c.request.training;
  const auto et = std::make_shared<const EtInputs>(
      EtInputs{.model = c.model,
               .training = training,
               .mapping = config::RankMapping(training.parallel),
               .costs = sim::BindHardwareCosts(study.model, training, study::CostOptions(study)),
               .peak_tflops = study.cluster.gpu.bf16_flops_per_second / kFlopsPerTeraflop});
  const std::string dir = *c.request.output_path + "/";
  CommandOutput out = Output("", c.notes);
  out.output_is_directory = true;
  for (int64_t rank = 0; rank < training.parallel.world_size; ++rank) {
    out.files.push_back(
        {.path = fmt::format("{}et.{}.et", dir, rank),
         .render = [et, rank](const io::ByteSink& sink) {
           const graph::StepGraph graph = graph::BuildStepGraph(et->model, et->training, rank);
           sink(report::RenderChakraEt(graph, et->training, et->mapping,
                                       sim::ComputeWithHostFloor(et->costs), et->peak_tflops));
         }});
  }
  const report::AstraInputs inputs = report::RenderAstraInputs(study.cluster, training);
  out.files.push_back({dir + "comm_groups.json", report::RenderChakraCommGroups(et->mapping)});
  out.files.push_back({dir + "network.yml", inputs.network_yaml});
  out.files.push_back({dir + "system.json", inputs.system_json});
  out.files.push_back({dir + "remote_memory.json", inputs.remote_memory_json});
  out.text = fmt::format("wrote {} files to {} (ASTRA-sim: --workload-configuration={}et)\n",
                         out.files.size(), *c.request.output_path, dir);
  return out;
}

CommandOutput RunWorkload(const io::CliRequest& request) {
  if (request.json && !request.summary && request.format != "json") {
    throw UsageError(fmt::format(
        "--json: not used with --format {} (its output is the {} file; --json goes with --summary)",
        request.format, request.format == "simai" ? "SimAI text" : "AICB CSV"));
  }
  Checked c = CheckValid(request);
  const int64_t rank = CheckedRank(c.request, request.rank.value_or(0));
  const config::TrainingConfig& training = c.request.training;
  if (training.batch.max_tokens_per_gpu) {
    throw UsageError(
        "--use-dynamic-batch-size: not exported by `workload` (its micro-batches differ in "
        "length; simulate and memory model it)");
  }
  // The workload lists every op of every micro-batch, so its size is linear in their count.
  constexpr int64_t kMaxWorkloadMicroBatches = 100'000;
  if (training.NumMicroBatches() > kMaxWorkloadMicroBatches) {
    throw UsageError(fmt::format(
        "--global-batch-size: {} micro-batches per rank; workload lists every op of each and "
        "takes at most {} (simulate and plan take any number)",
        training.NumMicroBatches(), kMaxWorkloadMicroBatches));
  }
  // Every input is read (an unknown --gpu or a missing file is an error) before any work.
  const study::Study study = io::LoadStudy(c.request, c.model);
  if (!request.summary && request.format == "chakra") return ChakraOutput(c, study);
  const graph::StepGraph graph = graph::BuildStepGraph(c.model, training, rank);
  if (!request.summary && request.format != "json") {
    // Compute columns come from the same cost model as `simulate` (--gpu, --cluster,
    // --calibration, --qwen-gdn-backend, CUDA graphs), launch floor included.
    const sim::OpCostModel costs =
        sim::BindHardwareCosts(study.model, training, study::CostOptions(study));
    const report::ExportResult result =
        request.format == "simai" ? report::RenderSimAiWorkload(c.model, training, graph,
                                                                sim::ComputeWithHostFloor(costs))
                                  : report::RenderAicbCsv(graph, training);
    for (const std::string& diagnostic : result.diagnostics) {
      c.notes.push_back("warning: " + diagnostic);
    }
    return Output(result.text, c.notes);
  }
  const long double flops = graph::MegatronModelFlopsPerStep(c.model, training);
  if (!request.summary) return Output(report::RenderWorkloadJson(graph, flops), c.notes);
  return Output(request.json ? report::RenderWorkloadSummaryJson(graph, flops)
                             : report::RenderWorkloadSummaryText(graph, flops),
                c.notes);
}

CommandOutput RunMemory(const io::CliRequest& request) {
  const Checked c = CheckValid(request);
  const study::Study study = io::LoadStudy(c.request, c.model);
  const cost::MemoryEstimate estimate = study::EstimateStudyMemory(study);
  const cost::MegatronMemoryEstimate megatron =
      cost::MegatronTheoreticalMemory(c.model, c.request.training);
  const report::MemoryReportInput input{c.model, estimate, megatron, study.cluster.gpu};
  return Output(request.json ? report::RenderMemoryJson(input) : report::RenderMemoryText(input),
                c.notes);
}

namespace {

// The study of a simulate-like command and its result; the GPU must have a BF16 peak.
struct Simulated {
  Checked checked;
  study::Study study;
  study::StudyResult result;
};

Simulated SimulateFor(const io::CliRequest& request) {
  Checked c = CheckValid(request);
  study::Study study = io::LoadStudy(c.request, c.model);
  RequireBf16Peak(study);
  study::StudyResult result = study::RunStudy(study);
  return Simulated{std::move(c), std::move(study), std::move(result)};
}

// `text` plus the --trace file when one is asked for.
CommandOutput WithTrace(const io::CliRequest& request, const Simulated& s, std::string text) {
  CommandOutput out = Output(std::move(text), s.checked.notes);
  if (request.simulate.trace_path) {
    out.files.push_back(
        {*request.simulate.trace_path, report::RenderChromeTrace(s.result.simulation)});
  }
  return out;
}

}  // namespace

CommandOutput RunSimulate(const io::CliRequest& request) {
  const Simulated s = SimulateFor(request);
  return WithTrace(request, s,
                   request.json ? report::RenderSimulateJson(s.study, s.result)
                                : report::RenderSimulateText(s.study, s.result));
}

CommandOutput RunReport(const io::CliRequest& request) {
  const Simulated s = SimulateFor(request);
  return WithTrace(request, s, report::RenderHtmlReport(s.study, s.result, s.checked.validation));
}

CommandOutput RunPresets(const io::CliRequest& request) {
  if (request.json) return Output(nlohmann::json(io::PresetNames()).dump(2) + "\n", {});
  std::string out;
  for (const std::string& name : io::PresetNames()) out += name + "\n";
  return Output(out, {});
}

}  // namespace trainscope::app
