#include "trainscope/io/study_inputs.h"

#include <fmt/format.h>

#include <optional>

#include "trainscope/config/hardware.h"
#include "trainscope/error.h"
#include "trainscope/io/calibration_file.h"
#include "trainscope/io/cluster_file.h"
#include "trainscope/io/histogram_file.h"
#include "trainscope/io/suggest.h"
#include "trainscope/study/dynamic_batches.h"
#include "trainscope/units.h"

namespace trainscope::io {
namespace {

std::optional<CalibrationOverrides> LoadCalibration(const CliRequest& request) {
  if (!request.cost.calibration_path) return std::nullopt;
  return LoadCalibrationFile(*request.cost.calibration_path);
}

config::ClusterSpec ClusterWith(const CliRequest& request,
                                const std::optional<CalibrationOverrides>& calibration) {
  const HardwareFlags& h = request.hardware;
  if (h.gpu && !config::FindGpu(*h.gpu)) {
    std::string names;
    for (const std::string& name : config::GpuNames()) names += (names.empty() ? "" : ", ") + name;
    throw UsageError(fmt::format("--gpu: unknown GPU \"{}\"{}; expected one of {}",
                                 Abbreviated(*h.gpu), DidYouMean(*h.gpu, config::GpuNames()),
                                 names));
  }
  config::ClusterSpec cluster =
      ResolveCluster(ClusterInputs{.gpu = h.gpu,
                                   .cluster_path = h.cluster_path,
                                   .gpus_per_node = h.gpus_per_node,
                                   .nvlink_domain = h.nvlink_domain,
                                   .scale_out_gbps = h.scale_out_gbps,
                                   .scale_out_latency_us = h.scale_out_latency_us,
                                   .scale_out_fabric = h.scale_out_fabric});
  if (calibration) cluster.link = ApplyCalibration(*calibration, cluster.link);
  return cluster;
}

// FlashQLA needs an SM90+ GPU: slime_plugins/models/qwen_gdn_backend.py,
// _validate_flashqla_runtime, raises unless torch.cuda.get_device_capability() >= (9, 0) (and
// CUDA >= 12.8, PyTorch >= 2.8, which trainscope does not model). `source` names where the
// backend was chosen.
void CheckFlashQlaRuns(cost::GdnBackend backend, const config::GpuSpec& gpu,
                       std::string_view source) {
  constexpr config::ComputeCapability kSm90{.major = 9, .minor = 0};
  if (backend != cost::GdnBackend::kFlashQla || gpu.compute_capability >= kSm90) return;
  const config::ComputeCapability cc = gpu.compute_capability;
  throw InputError(
      cc == config::ComputeCapability{}
          ? fmt::format("{}: needs an SM90+ GPU ({} has no compute_capability; set it in the "
                        "cluster file)",
                        source, gpu.name)
          : fmt::format("{}: needs an SM90+ GPU ({} is SM{}{})", source, gpu.name, cc.major,
                        cc.minor));
}

// NVFP4 GEMMs need Blackwell's FP4 tensor cores: Transformer Engine's NVFP4 recipe requires
// compute capability 10.0 or newer (transformer_engine/pytorch/quantization.py,
// _compute_nvfp4_support). A cluster file can give another GPU an fp4_tflops figure; the check is
// on the SM version the preset or the file names.
void CheckFp4Runs(const config::TrainingConfig& training, const config::GpuSpec& gpu) {
  constexpr config::ComputeCapability kSm100{.major = 10, .minor = 0};
  if (training.precision.fp4 == config::Fp4Format::kNone || gpu.compute_capability >= kSm100) {
    return;
  }
  const config::ComputeCapability cc = gpu.compute_capability;
  throw InputError(
      cc == config::ComputeCapability{}
          ? fmt::format("--fp4-format: needs an SM100+ GPU ({} has no compute_capability; set "
                        "it in the cluster file)",
                        gpu.name)
          : fmt::format("--fp4-format: NVFP4 needs an SM100+ (Blackwell) GPU ({} is SM{}{})",
                        gpu.name, cc.major, cc.minor));
}

cost::GdnBackend GdnBackendOf(const CliRequest& request, const config::ModelConfig& model,
                              const std::optional<CalibrationOverrides>& calibration,
                              const config::GpuSpec& gpu) {
  cost::GdnBackend backend = cost::GdnBackend::kFla;
  if (calibration && calibration->gdn_backend) backend = *calibration->gdn_backend;
  const std::optional<std::string>& flag = request.cost.gdn_backend;
  if (!flag) {
    if (model.HasGdn() && request.cost.calibration_path) {
      CheckFlashQlaRuns(backend, gpu, *request.cost.calibration_path + ": gdn_backend flashqla");
    }
    return backend;
  }
  const std::optional<cost::GdnBackend> named = cost::GdnBackendFromName(*flag);
  if (!named) {
    throw UsageError(fmt::format("--qwen-gdn-backend: unknown value \"{}\" (expected fla|flashqla)",
                                 Abbreviated(*flag)));
  }
  if (!model.HasGdn()) {
    throw UsageError(
        fmt::format("--qwen-gdn-backend: model {} has no Gated DeltaNet layers", model.name));
  }
  CheckFlashQlaRuns(*named, gpu, "--qwen-gdn-backend flashqla");
  return *named;
}

study::CommGuardSetting CommGuardOf(const CliRequest& request) {
  study::CommGuardSetting guard;
  guard.mode = sim::ParseCommGuardMode(request.cost.comm_memory_guard.value_or("off"));
  if (request.cost.comm_memory_guard_us) {
    if (guard.mode == sim::CommGuardMode::kOff) {
      throw UsageError("--comm-memory-guard-us: needs --comm-memory-guard all|selected");
    }
    guard.seconds_per_call = *request.cost.comm_memory_guard_us * 1e-6;
  }
  return guard;
}

cost::MemoryOverheads OverheadsOf(const MemoryFlags& flags) {
  cost::MemoryOverheads overheads;
  if (flags.cuda_context_gib) {
    overheads.cuda_context_bytes =
        static_cast<int64_t>(*flags.cuda_context_gib * static_cast<double>(kBytesPerGiB));
  }
  if (flags.nccl_mib_per_communicator) {
    overheads.nccl_bytes_per_communicator =
        static_cast<int64_t>(*flags.nccl_mib_per_communicator * static_cast<double>(kBytesPerMiB));
  }
  if (flags.fragmentation_fraction)
    overheads.fragmentation_fraction = *flags.fragmentation_fraction;
  return overheads;
}

std::optional<cost::RoutingSkew> RoutingSkewOf(const CliRequest& request,
                                               const config::ModelConfig& model) {
  if (!request.memory.routing_skew) return std::nullopt;
  if (!model.HasMoe()) {
    throw UsageError(fmt::format("--moe-routing-skew: model {} has no MoE layers", model.name));
  }
  return ParseRoutingSkew(*request.memory.routing_skew);
}

}  // namespace

config::ClusterSpec LoadCluster(const CliRequest& request) {
  return ClusterWith(request, LoadCalibration(request));
}

study::Study LoadStudy(const CliRequest& request, const config::ModelConfig& model) {
  const std::optional<CalibrationOverrides> calibration = LoadCalibration(request);
  study::Study study{.model = model, .training = request.training};
  study.cluster = ClusterWith(request, calibration);
  if (calibration) study.compute = ApplyCalibration(*calibration, study.compute);
  study.gdn_backend = GdnBackendOf(request, model, calibration, study.cluster.gpu);
  CheckFp4Runs(study.training, study.cluster.gpu);
  study.comm_guard = CommGuardOf(request);
  if (request.cost.interference) study.interference_fraction = *request.cost.interference;
  study.memory_overheads = OverheadsOf(request.memory);
  study.routing_skew = RoutingSkewOf(request, model);
  if (request.simulate.seq_length_distribution_path) {
    study.sequence_lengths =
        LoadSequenceLengthHistogramFile(*request.simulate.seq_length_distribution_path);
  }
  (void)study::MoeLoadFactor(study);  // a histogram of the wrong size fails here, before any work
  (void)study::PlanDynamicBatches(study);  // so does a step dynamic batching cannot deal
  return study;
}

}  // namespace trainscope::io
