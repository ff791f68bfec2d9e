#include "runners.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/config/pipeline_layout.h"
#include "trainscope/config/rank_mapping.h"
#include "trainscope/config/validate.h"
#include "trainscope/cost/megatron_memory.h"
#include "trainscope/cost/memory.h"
#include "trainscope/cost/weight_sync.h"
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
#include "trainscope/report/rl_report.h"
#include "trainscope/report/simai_writer.h"
#include "trainscope/report/simulate_report.h"
#include "trainscope/report/validate_report.h"
#include "trainscope/report/weight_sync_report.h"
#include "trainscope/report/workload_report.h"
#include "trainscope/study/rl_step.h"
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

// A command's model and training configuration, checked: the model loaded, the architecture
// flags compared with it, the configuration validated. Notes (ignored flags, warnings, the
// defaulted world size) are collected for stderr.
struct Checked {
  config::ModelConfig model;
  io::CliRequest request;
  config::ValidationResult validation;
  std::vector<std::string> notes;
};

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

// As Check, and an invalid configuration is an error: its first violation and fix, and how many
// more there are (three lines at most).
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
  return Output(request.json ? report::RenderGroupsJson(mapping, request.rank)
                             : report::RenderGroupsText(mapping, request.rank),
                c.notes);
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
        {.path = fmt::format("{}et.{}.et", dir, rank), .render = [et, rank] {
           const graph::StepGraph graph = graph::BuildStepGraph(et->model, et->training, rank);
           return report::RenderChakraEt(graph, et->training, et->mapping,
                                         sim::ComputeWithHostFloor(et->costs), et->peak_tflops);
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
  if (study.cluster.gpu.bf16_flops_per_second <= 0) {
    throw InputError("gpu " + study.cluster.gpu.name +
                     ": bf16_tflops: the preset has no figure (set it in the cluster file)");
  }
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

namespace {

// The weight-sync options from the flags; UsageError naming the flag when one is missing or the
// rollout layout cannot exist.
cost::WeightSyncOptions WeightSyncOptionsOf(const io::CliRequest& request,
                                            const config::ModelConfig& model) {
  const io::WeightSyncFlags& flags = request.weight_sync;
  // Colocated engines default to every training GPU (slime --colocate sets rollout_num_gpus to
  // the actor's GPUs).
  const std::optional<int64_t> rollout_gpus =
      flags.rollout_gpus ? flags.rollout_gpus
      : flags.colocate   ? std::optional<int64_t>(request.training.parallel.world_size)
                         : std::nullopt;
  if (!rollout_gpus) {
    throw UsageError(
        fmt::format("--rollout-gpus: required by `{}` (or --colocate)", request.command));
  }
  if (!flags.rollout_tp) {
    throw UsageError(fmt::format("--rollout-tp: required by `{}`", request.command));
  }
  const cost::WeightSyncOptions options{
      .rollout_gpus = *rollout_gpus,
      .rollout_tp = *flags.rollout_tp,
      .rollout_ep = flags.rollout_ep,
      .colocate = flags.colocate,
      .transport = flags.transport,
      .bucket_bytes = flags.bucket_mib ? *flags.bucket_mib * kBytesPerMiB
                                       : cost::WeightSyncOptions{}.bucket_bytes,
      .dtype = flags.dtype};
  if (options.rollout_gpus % options.rollout_tp != 0) {
    throw UsageError(fmt::format("--rollout-tp: must divide --rollout-gpus {} (got {})",
                                 options.rollout_gpus, options.rollout_tp));
  }
  if (options.rollout_tp % options.rollout_ep != 0) {
    throw UsageError(fmt::format(
        "--rollout-ep: must divide --rollout-tp {}, the engine's expert parallelism runs inside "
        "its TP group (got {})",
        options.rollout_tp, options.rollout_ep));
  }
  if (options.rollout_ep > 1 && !model.HasMoe()) {
    throw UsageError(
        fmt::format("--rollout-ep: {} has no experts (got {})", model.name, options.rollout_ep));
  }
  if (options.transport == cost::SyncTransport::kIpc && !options.colocate) {
    throw UsageError("--transport ipc: needs --colocate (CUDA IPC shares memory on one GPU)");
  }
  if (options.colocate && options.rollout_gpus > request.training.parallel.world_size) {
    throw UsageError(
        fmt::format("--rollout-gpus: colocated engines share the {} training GPUs (got {})",
                    request.training.parallel.world_size, options.rollout_gpus));
  }
  return options;
}

}  // namespace

CommandOutput RunWeightSync(const io::CliRequest& request) {
  const Checked c = CheckValid(request);
  const cost::WeightSyncOptions options = WeightSyncOptionsOf(c.request, c.model);
  const study::Study study = io::LoadStudy(c.request, c.model);
  const cost::WeightSyncEstimate estimate =
      cost::EstimateWeightSync(c.model, c.request.training, study.cluster, options);
  const report::WeightSyncReportInput input{c.model, options, estimate};
  return Output(
      request.json ? report::RenderWeightSyncJson(input) : report::RenderWeightSyncText(input),
      c.notes);
}

namespace {

// The RL-step options from the flags; UsageError naming the flag when one is missing or out of
// range.
study::RlOptions RlOptionsOf(const io::CliRequest& request, const config::ModelConfig& model) {
  const io::RlFlags& flags = request.rl;
  if (!flags.rollout_batch_size) throw UsageError("--rollout-batch-size: required by `rl`");
  if (!flags.max_response_len) throw UsageError("--rollout-max-response-len: required by `rl`");
  const double max_response = static_cast<double>(*flags.max_response_len);
  const double mean_response = flags.mean_response_len.value_or((max_response + 1) / 2);
  if (mean_response > max_response) {
    throw UsageError(
        fmt::format("--rollout-mean-response-len: at most --rollout-max-response-len {} (got {})",
                    *flags.max_response_len, mean_response));
  }
  study::RlOptions options;
  options.sync = WeightSyncOptionsOf(request, model);
  options.rollout = cost::RolloutOptions{
      .num_prompts = *flags.rollout_batch_size,
      .samples_per_prompt = flags.samples_per_prompt,
      .prompt_tokens = flags.prompt_len,
      .max_response_tokens = *flags.max_response_len,
      .mean_response_tokens = mean_response,
      .engine_gpus = options.sync.rollout_gpus,
      .engine_tp = options.sync.rollout_tp,
      .memory_fraction = flags.mem_fraction_static,
      .weight_bytes_per_param = options.sync.dtype == cost::RolloutDtype::kFp8 ? 1 : 2};
  options.ref_log_probs = flags.use_kl_loss || flags.kl_coef != 0;
  options.old_log_probs = !flags.use_rollout_logprobs;
  options.async = flags.async;
  return options;
}

}  // namespace

CommandOutput RunRl(const io::CliRequest& request) {
  const Checked c = CheckValid(request);
  const study::RlOptions options = RlOptionsOf(c.request, c.model);
  const study::Study study = io::LoadStudy(c.request, c.model);
  if (study.cluster.gpu.bf16_flops_per_second <= 0) {
    throw InputError("gpu " + study.cluster.gpu.name +
                     ": bf16_tflops: the preset has no figure (set it in the cluster file)");
  }
  const study::RlStep step = study::RunRlStep(study, options);
  const report::RlReportInput input{study, options, step};
  return Output(request.json ? report::RenderRlJson(input) : report::RenderRlText(input), c.notes);
}

CommandOutput RunPresets(const io::CliRequest& request) {
  if (request.json) return Output(nlohmann::json(io::PresetNames()).dump(2) + "\n", {});
  std::string out;
  for (const std::string& name : io::PresetNames()) out += name + "\n";
  return Output(out, {});
}

}  // namespace trainscope::app
