// Host (CPU) launch overhead of compute ops: the seconds the host needs to issue an op's kernels,
// and which ops a captured CUDA graph replays without per-kernel host work. Pure functions over
// plain values; the mechanism, constants and sources are in docs/cost-model.md ("Launch and host
// overhead").
#ifndef TRAINSCOPE_COST_LAUNCH_OVERHEAD_H_
#define TRAINSCOPE_COST_LAUNCH_OVERHEAD_H_

#include "trainscope/config/hardware.h"
#include "trainscope/config/training_config.h"
#include "trainscope/cost/compute_cost.h"
#include "trainscope/graph/op.h"

namespace trainscope::cost {

// Host seconds of one eager kernel launch on `gpu`'s host CPU: launch_host_seconds_x86 or
// launch_host_seconds_grace of `eff`.
[[nodiscard]] double LaunchHostSeconds(const config::GpuSpec& gpu, const ComputeEfficiency& eff);

// True when Megatron-Core's CUDA graphs of `training` (cuda_graph.EffectiveImpl / Modules)
// capture compute op `op`, forward or backward:
// - full_iteration: every op of the forward-backward passes (not the optimizer step);
// - local / transformer_engine: ops of decoder layers (op.layer >= 0) in the captured regions:
//   the whole layer when no module is named; attn -> attention and GDN blocks (the layer's
//   _forward_attention, GDN being its self_attention); mamba -> GDN blocks (hybrid stacks);
//   mlp -> dense MLP; moe -> the router, routed and shared-expert blocks; moe_router -> the
//   router block, and the shared expert unless --moe-shared-expert-overlap; moe_preprocess ->
//   the token permutation (MoELayer.preprocess -> dispatch_preprocess);
// - none: nothing.
// Communication ops are never "captured" here: their host cost is inside their latency.
[[nodiscard]] bool CapturedByCudaGraph(const graph::Op& op, const config::TrainingConfig& training);

// The host floor of compute op `op`: 0 when captured (a capture holds no host syncs: the
// graphed paths are sync-free), else op.num_launches · LaunchHostSeconds + op.num_host_syncs ·
// eff.host_sync_seconds. The op cannot finish before its last launch is issued, so it takes
// max(device seconds, this) (sim/: the part beyond the device time is reported as launch
// overhead). Precondition (checked): !op.IsComm(), num_launches >= 0, num_host_syncs >= 0.
[[nodiscard]] double HostFloorSeconds(const graph::Op& op, const config::GpuSpec& gpu,
                                      const ComputeEfficiency& eff, bool captured);

}  // namespace trainscope::cost

#endif  // TRAINSCOPE_COST_LAUNCH_OVERHEAD_H_
