#include "simulate_command.h"

#include <fmt/format.h>

#include <optional>

#include "trainscope/cost/memory.h"
#include "trainscope/cost/moe_routing.h"
#include "trainscope/cost/sequence_packing.h"
#include "trainscope/error.h"
#include "trainscope/io/atomic_write.h"
#include "trainscope/io/calibration_file.h"
#include "trainscope/io/cluster_file.h"
#include "trainscope/io/histogram_file.h"
#include "trainscope/report/chrome_trace.h"
#include "trainscope/report/simulate_report.h"
#include "trainscope/sim/comm_guard.h"
#include "trainscope/sim/op_costs.h"
#include "trainscope/sim/step_metrics.h"
#include "trainscope/sim/step_simulator.h"
#include "trainscope/units.h"

namespace trainscope::app {
namespace {

config::ClusterSpec Cluster(const io::SimulateFlags& flags) {
  return io::ResolveCluster(io::ClusterInputs{.gpu = flags.gpu,
                                              .cluster_path = flags.cluster_path,
                                              .gpus_per_node = flags.gpus_per_node,
                                              .nvlink_domain = flags.nvlink_domain,
                                              .scale_out_gbps = flags.scale_out_gbps,
                                              .scale_out_latency_us = flags.scale_out_latency_us});
}

double MoeLoadFactor(const io::SimulateFlags& flags, const config::ModelConfig& model,
                     const config::TrainingConfig& training) {
  if (!flags.routing_skew) return 1;
  if (!model.HasMoe()) {
    throw UsageError(fmt::format("--moe-routing-skew: model {} has no MoE layers", model.name));
  }
  const cost::RoutingSkew skew = io::ParseRoutingSkew(*flags.routing_skew);
  return cost::BusiestRankLoadFactor(skew, model.moe.num_experts, model.moe.top_k,
                                     training.parallel.expert);
}

}  // namespace

sim::HardwareCostOptions CostOptions(const io::SimulateFlags& flags,
                                     const config::ModelConfig& model) {
  sim::HardwareCostOptions options;
  options.cluster = Cluster(flags);
  if (flags.calibration_path) {
    const io::CalibrationOverrides overrides = io::LoadCalibrationFile(*flags.calibration_path);
    options.compute = io::ApplyCalibration(overrides, options.compute);
    options.cluster.link = io::ApplyCalibration(overrides, options.cluster.link);
    if (overrides.gdn_backend) options.gdn_backend = *overrides.gdn_backend;
  }
  if (flags.gdn_backend) {
    const std::optional<cost::GdnBackend> backend = cost::GdnBackendFromName(*flags.gdn_backend);
    if (!backend) {
      throw UsageError(fmt::format(
          "--qwen-gdn-backend: unknown value \"{}\" (expected fla|flashqla)", *flags.gdn_backend));
    }
    if (!model.HasGdn()) {
      throw UsageError(
          fmt::format("--qwen-gdn-backend: model {} has no Gated DeltaNet layers", model.name));
    }
    options.gdn_backend = *backend;
  }
  const sim::CommGuardMode guard = sim::ParseCommGuardMode(flags.comm_memory_guard);
  if (guard != sim::CommGuardMode::kOff) {
    options.guard_applies = [guard](const graph::Op& op) { return sim::GuardApplies(op, guard); };
    options.guard_seconds = flags.comm_memory_guard_us ? *flags.comm_memory_guard_us * 1e-6
                                                       : sim::kDefaultCommGuardSeconds;
  } else if (flags.comm_memory_guard_us) {
    throw UsageError("--comm-memory-guard-us: needs --comm-memory-guard all|selected");
  }
  return options;
}

cost::MemoryOverheads MemoryOverheadsFor(const io::CliRequest& request,
                                         const config::ModelConfig& model) {
  cost::MemoryOverheads overheads;
  if (request.cuda_context_gib) {
    overheads.cuda_context_bytes =
        static_cast<int64_t>(*request.cuda_context_gib * static_cast<double>(kBytesPerGiB));
  }
  if (request.nccl_mib_per_communicator) {
    overheads.nccl_bytes_per_communicator = static_cast<int64_t>(
        *request.nccl_mib_per_communicator * static_cast<double>(kBytesPerMiB));
  }
  if (request.fragmentation_fraction) {
    overheads.fragmentation_fraction = *request.fragmentation_fraction;
  }
  overheads.moe_load_factor = MoeLoadFactor(request.simulate, model, request.training);
  return overheads;
}

std::string RunSimulate(const io::CliRequest& request, const config::ModelConfig& model) {
  const io::SimulateFlags& flags = request.simulate;
  const config::TrainingConfig& training = request.training;
  sim::HardwareCostOptions cost_options = CostOptions(flags, model);
  sim::SimulationOptions options;
  const cost::MemoryOverheads overheads = MemoryOverheadsFor(request, model);
  options.moe_load_factor = overheads.moe_load_factor;
  if (flags.interference) options.interference_fraction = *flags.interference;
  const double peak = cost_options.cluster.gpu.bf16_flops_per_second;
  if (peak <= 0) {
    throw InputError("gpu " + cost_options.cluster.gpu.name +
                     ": bf16_tflops: the preset has no figure (set it in the cluster file)");
  }

  const sim::StepSimulation simulation =
      sim::SimulateStep(model, training, sim::BindHardwareCosts(training, cost_options), options);
  const sim::StepMetrics metrics =
      sim::ComputeStepMetrics(model, training, simulation.step_seconds, peak);
  const cost::MemoryEstimate memory = cost::EstimateMemory(model, training, overheads);

  std::optional<report::SequenceLengthSummary> sequences;
  if (flags.seq_length_distribution_path) {
    const cost::SequencePacking packing = cost::PackSequences(
        io::LoadSequenceLengthHistogramFile(*flags.seq_length_distribution_path),
        training.batch.seq_length, training.batch.micro_batch_size);
    sim::HardwareCostOptions packed = cost_options;
    packed.attention_scale = packing.thd_attention_flops_fraction;
    const double thd_seconds =
        sim::SimulateStep(model, training, sim::BindHardwareCosts(training, packed), options)
            .step_seconds;
    const double gpus = static_cast<double>(training.parallel.world_size);
    sequences = report::SequenceLengthSummary{
        .mean_length = packing.mean_length,
        .bshd_useful_token_fraction = packing.bshd_useful_token_fraction,
        .bshd_useful_tokens_per_s_per_gpu =
            metrics.tokens_per_second_per_gpu * packing.bshd_useful_token_fraction,
        .thd_step_seconds = thd_seconds,
        .thd_useful_tokens_per_s_per_gpu =
            metrics.tokens_per_step * packing.thd_packed_micro_batch_fill / thd_seconds / gpus};
  }

  if (flags.trace_path) {
    io::WriteFileAtomically(*flags.trace_path, report::RenderChromeTrace(simulation));
  }
  const config::ClusterSpec& cluster = cost_options.cluster;
  const report::SimulateReportInput input{
      .model = model,
      .training = training,
      .simulation = simulation,
      .metrics = metrics,
      .memory = memory,
      .cluster = {.gpu = cluster.gpu.name,
                  .peak_flops_per_second = peak,
                  .gpus_per_node = cluster.gpus_per_node,
                  .nvlink_domain_gpus = cluster.nvlink_domain_gpus,
                  .scale_out_bytes_per_second = cluster.scale_out_bytes_per_second,
                  .gpu_memory_bytes = cluster.gpu.memory_bytes},
      .moe_load_factor = options.moe_load_factor,
      .gdn_backend = model.HasGdn() ? std::string(cost::GdnBackendName(cost_options.gdn_backend))
                                    : std::string(),
      .sequence_lengths = sequences};
  return request.json ? report::RenderSimulateJson(input) : report::RenderSimulateText(input);
}

}  // namespace trainscope::app
