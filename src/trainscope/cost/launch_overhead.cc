#include "trainscope/cost/launch_overhead.h"

#include <algorithm>
#include <vector>

#include "trainscope/error.h"

namespace trainscope::cost {
namespace {

using config::CudaGraphImpl;
using config::CudaGraphModule;
using graph::OpBlock;

bool IsDecoderBlock(OpBlock block) {
  return block == OpBlock::kAttention || block == OpBlock::kGdn || block == OpBlock::kMlp ||
         block == OpBlock::kMoeRouter || block == OpBlock::kMoeRouted ||
         block == OpBlock::kMoeShared;
}

// Whether capture region `module` covers `op` (a compute op of a decoder layer).
bool ModuleCovers(CudaGraphModule module, const graph::Op& op,
                  const config::TrainingConfig& training) {
  const OpBlock block = op.role.block;
  switch (module) {
    case CudaGraphModule::kAttn:
      return block == OpBlock::kAttention || block == OpBlock::kGdn;
    case CudaGraphModule::kMamba:
      return block == OpBlock::kGdn;
    case CudaGraphModule::kMlp:
      return block == OpBlock::kMlp;
    case CudaGraphModule::kMoe:
      return block == OpBlock::kMoeRouter || block == OpBlock::kMoeRouted ||
             block == OpBlock::kMoeShared;
    case CudaGraphModule::kMoeRouter:
      return block == OpBlock::kMoeRouter ||
             (block == OpBlock::kMoeShared && !training.moe.shared_expert_overlap);
    case CudaGraphModule::kMoePreprocess:
      return block == OpBlock::kMoeRouted && op.role.kind == graph::OpKind::kPermute;
  }
  return false;
}

}  // namespace

double LaunchHostSeconds(const config::GpuSpec& gpu, const ComputeEfficiency& eff) {
  return gpu.host_cpu == config::HostCpu::kGrace ? eff.launch_host_seconds_grace
                                                 : eff.launch_host_seconds_x86;
}

bool CapturedByCudaGraph(const graph::Op& op, const config::TrainingConfig& training) {
  if (op.IsComm()) return false;
  const CudaGraphImpl impl = training.cuda_graph.EffectiveImpl();
  switch (impl) {
    case CudaGraphImpl::kNone:
      return false;
    case CudaGraphImpl::kFullIteration:
      return op.phase != graph::Phase::kOptimizer && op.phase != graph::Phase::kGradSync;
    case CudaGraphImpl::kLocal:
    case CudaGraphImpl::kTransformerEngine:
      break;
  }
  if (op.layer < 0 || !IsDecoderBlock(op.role.block)) return false;
  const std::vector<CudaGraphModule> modules = training.cuda_graph.EffectiveModules();
  if (modules.empty()) return true;
  return std::ranges::any_of(modules,
                             [&](CudaGraphModule m) { return ModuleCovers(m, op, training); });
}

double HostFloorSeconds(const graph::Op& op, const config::GpuSpec& gpu,
                        const ComputeEfficiency& eff, bool captured) {
  TRAINSCOPE_CHECK(!op.IsComm(), "HostFloorSeconds called on communication op " + op.name);
  TRAINSCOPE_CHECK(op.num_launches >= 0 && op.num_host_syncs >= 0,
                   "negative launch or host-sync count in op " + op.name);
  if (captured) return 0;
  return static_cast<double>(op.num_launches) * LaunchHostSeconds(gpu, eff) +
         static_cast<double>(op.num_host_syncs) * eff.host_sync_seconds;
}

}  // namespace trainscope::cost
