// trainscope command-line entry point: flags -> library calls -> output -> exit code. The only
// place that catches trainscope's errors and prints.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "simulate_command.h"
#include "trainscope/config/hardware.h"
#include "trainscope/config/pipeline_layout.h"
#include "trainscope/config/rank_mapping.h"
#include "trainscope/config/validate.h"
#include "trainscope/cost/megatron_memory.h"
#include "trainscope/cost/memory.h"
#include "trainscope/error.h"
#include "trainscope/graph/param_count.h"
#include "trainscope/graph/step_graph.h"
#include "trainscope/io/atomic_write.h"
#include "trainscope/io/hf_config_loader.h"
#include "trainscope/io/megatron_args.h"
#include "trainscope/io/presets.h"
#include "trainscope/report/aicb_writer.h"
#include "trainscope/report/groups_report.h"
#include "trainscope/report/memory_report.h"
#include "trainscope/report/params_report.h"
#include "trainscope/report/simai_writer.h"
#include "trainscope/report/validate_report.h"
#include "trainscope/report/workload_report.h"
#include "trainscope/sim/op_costs.h"
#include "trainscope/units.h"

namespace trainscope {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitIoError = 1;
constexpr int kExitBadInput = 2;

config::ModelConfig LoadModel(const io::CliRequest& request) {
  if (request.model_name && request.model_config_path) {
    throw UsageError("--model and --model-config are mutually exclusive (got both)");
  }
  if (request.model_config_path) return io::LoadModelConfigFile(*request.model_config_path);
  if (request.model_name) return io::LoadPreset(*request.model_name);
  throw UsageError(
      fmt::format("command {} needs --model NAME or --model-config PATH", request.command));
}

// Writes `text` to the --output file atomically, or to stdout.
void Emit(const io::CliRequest& request, const std::string& text) {
  if (request.output_path) {
    io::WriteFileAtomically(*request.output_path, text);
  } else {
    std::cout << text;
  }
}

void PrintNotes(const io::CliRequest& request, const config::ValidationResult& result) {
  if (!request.ignored_flags.empty()) {
    std::string names;
    for (const std::string& flag : request.ignored_flags) names += " " + flag;
    std::cerr << "note: accepted but ignored (no effect on what trainscope models):" << names
              << "\n";
  }
  for (const config::Violation& warning : result.warnings) {
    std::cerr << "warning: [" << warning.rule << "] " << warning.message << "\n";
  }
}

std::string RenderPresets(bool json) {
  if (json) return nlohmann::json(io::PresetNames()).dump(2) + "\n";
  std::string out;
  for (const std::string& name : io::PresetNames()) out += name + "\n";
  return out;
}

std::string RenderParams(const io::CliRequest& request, const config::ModelConfig& model) {
  const graph::ParamCounts counts = graph::CountParams(model);
  std::vector<graph::StageParams> stages;
  if (request.parallel_flags_given) {
    const config::PipelineLayout layout = config::BuildPipelineLayout(model, request.training);
    stages = graph::CountParamsPerStage(model, request.training, layout);
  }
  const report::ParamsReportInput input{model, counts, stages, request.training};
  return request.json ? report::RenderParamsJson(input) : report::RenderParamsText(input);
}

std::string RenderGroups(const io::CliRequest& request) {
  const config::RankMapping mapping(request.training.parallel);
  if (request.rank && *request.rank >= request.training.parallel.world_size) {
    throw UsageError(fmt::format("--rank: must be below the world size {} (got {})",
                                 request.training.parallel.world_size, *request.rank));
  }
  return request.json ? report::RenderGroupsJson(mapping, request.rank)
                      : report::RenderGroupsText(mapping, request.rank);
}

// The rank a workload command asks for (--rank, default 0), checked against the world size.
int64_t WorkloadRank(const io::CliRequest& request) {
  const int64_t rank = request.rank.value_or(0);
  if (rank >= request.training.parallel.world_size) {
    throw UsageError(fmt::format("--rank: must be below the world size {} (got {})",
                                 request.training.parallel.world_size, rank));
  }
  return rank;
}

// Renders `trainscope workload`; format diagnostics (what SimAI / AICB cannot express) are
// printed as warnings.
std::string RenderWorkload(const io::CliRequest& request, const config::ModelConfig& model) {
  const int64_t rank = WorkloadRank(request);
  const graph::StepGraph graph = graph::BuildStepGraph(model, request.training, rank);
  if (!request.summary && request.format != "json") {
    // SimAI compute columns come from the simulator's cost model (--gpu, --cluster, --calibration).
    const report::ExportResult result =
        request.format == "simai"
            ? report::RenderSimAiWorkload(
                  model, request.training, graph,
                  sim::BindHardwareCosts(request.training,
                                         app::CostOptions(request.simulate, model))
                      .compute_seconds)
            : report::RenderAicbCsv(graph, request.training);
    for (const std::string& diagnostic : result.diagnostics) {
      std::cerr << "warning: " << diagnostic << "\n";
    }
    return result.text;
  }
  const long double flops = graph::MegatronModelFlopsPerStep(model, request.training);
  if (!request.summary) return report::RenderWorkloadJson(graph, flops);
  return request.json ? report::RenderWorkloadSummaryJson(graph, flops)
                      : report::RenderWorkloadSummaryText(graph, flops);
}

config::GpuSpec LoadGpu(const io::CliRequest& request) {
  const std::optional<config::GpuSpec> gpu = config::FindGpu(request.gpu);
  if (!gpu) {
    std::string names;
    for (const std::string& name : config::GpuNames()) names += (names.empty() ? "" : ", ") + name;
    throw UsageError(
        fmt::format("--gpu: unknown GPU \"{}\" (expected one of {})", request.gpu, names));
  }
  return *gpu;
}

std::string RenderMemory(const io::CliRequest& request, const config::ModelConfig& model) {
  const config::GpuSpec gpu = LoadGpu(request);
  const cost::MemoryEstimate estimate =
      cost::EstimateMemory(model, request.training, app::MemoryOverheadsFor(request, model));
  const cost::MegatronMemoryEstimate megatron =
      cost::MegatronTheoreticalMemory(model, request.training);
  const report::MemoryReportInput input{model, estimate, megatron, gpu};
  return request.json ? report::RenderMemoryJson(input) : report::RenderMemoryText(input);
}

// Validation warns, never fails, when the busiest rank will not fit the GPU.
void WarnIfOutOfMemory(const io::CliRequest& request, const config::ModelConfig& model) {
  const config::GpuSpec gpu = LoadGpu(request);
  const cost::MemoryEstimate estimate =
      cost::EstimateMemory(model, request.training, app::MemoryOverheadsFor(request, model));
  if (estimate.max_peak_bytes <= gpu.memory_bytes) return;
  std::cerr << fmt::format(
      "warning: [memory] pipeline stage {} needs {:.1f} GiB, more than the {:.1f} GiB of a {} "
      "(see trainscope memory)\n",
      estimate.max_peak_pipeline_rank,
      static_cast<double>(estimate.max_peak_bytes) / static_cast<double>(kBytesPerGiB),
      static_cast<double>(gpu.memory_bytes) / static_cast<double>(kBytesPerGiB), gpu.name);
}

std::string RenderCommand(const io::CliRequest& request, const config::ModelConfig& model) {
  if (request.command == "params") return RenderParams(request, model);
  if (request.command == "groups") return RenderGroups(request);
  if (request.command == "memory") return RenderMemory(request, model);
  if (request.command == "simulate") return app::RunSimulate(request, model);
  return RenderWorkload(request, model);
}

int Run(const std::vector<std::string>& args) {
  io::CliRequest request = io::ParseCommandLine(args);
  if (request.command == "help") {
    std::cout << io::UsageText();
    return kExitOk;
  }
  if (request.command == "presets") {
    Emit(request, RenderPresets(request.json));
    return kExitOk;
  }
  if (request.command != "params" && request.command != "validate" && request.command != "groups" &&
      request.command != "workload" && request.command != "memory" &&
      request.command != "simulate") {
    throw UsageError(fmt::format("unknown command \"{}\"", request.command));
  }
  const config::ModelConfig model = LoadModel(request);
  io::ApplyModelDependentFlags(model, request);
  const config::ValidationResult result = config::Validate(model, request.training);
  PrintNotes(request, result);
  if (request.command == "validate") {
    if (result.ok()) WarnIfOutOfMemory(request, model);
    Emit(request, request.json ? report::RenderValidationJson(model, request.training, result)
                               : report::RenderValidationText(model, request.training, result));
    return result.ok() ? kExitOk : kExitBadInput;
  }
  if (!result.ok()) {
    std::cerr << report::RenderValidationText(model, request.training, result);
    return kExitBadInput;
  }
  Emit(request, RenderCommand(request, model));
  return kExitOk;
}

}  // namespace
}  // namespace trainscope

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return trainscope::Run(args);
  } catch (const trainscope::UsageError& e) {
    std::cerr << "error: " << e.what() << "\n\n" << trainscope::io::UsageText();
    return trainscope::kExitBadInput;
  } catch (const trainscope::InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return trainscope::kExitBadInput;
  } catch (const trainscope::IoError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return trainscope::kExitIoError;
  }
}
