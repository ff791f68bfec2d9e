// slime's communication memory guard, as a per-call host overhead on communication ops.
//
// What slime does (read at THUDM/slime 624b824, slime/utils/reloadable_process_group.py, and
// slime/utils/memory_utils.py): monkey_patch_torch_dist() replaces the torch.distributed
// functions with wrappers. Before the wrapped call, _wrap_low_level_call() calls
// available_memory(), which queries the device's free and total memory (torch.cuda.mem_get_info,
// i.e. cudaMemGetInfo), the caching allocator's allocated and reserved bytes and the host's
// memory (psutil.virtual_memory); when less than 3 GB of device memory is free it also empties
// the caching allocator (synchronize, gc.collect, empty_cache). Since slime PR #1947 (commit
// b5994e6, "add FlashQLA backend for Qwen GDN and skip selected comm memory checks") the check
// is skipped for the names in _COMM_MEMORY_CHECK_SKIP_OPS: all_gather_into_tensor,
// allgather_into_tensor_coalesced, barrier, broadcast_object_list, reduce_scatter_tensor,
// all_to_all_single, isend and irecv. Still checked: all_reduce, all_gather (list form),
// all_gather_object, all_to_all (list form), broadcast, reduce, reduce_scatter (list form),
// scatter, gather and their object variants, blocking send / recv, and _coalescing_manager.
//
// Mapped onto the ops Megatron-Core issues (read at NVIDIA/Megatron-LM d98e8a6):
//   all-reduce: torch.distributed.all_reduce (TP reductions in tensor_parallel/mappings.py,
//     gradient all-reduce in distributed/param_and_grad_buffer.py, finalize_model_grads) -> checked
//   broadcast: torch.distributed.broadcast (input batch to TP ranks)                   -> checked
//   all-gather / reduce-scatter: all_gather_into_tensor / reduce_scatter_tensor (sequence
//     parallel, distributed optimizer, MoE all-gather dispatcher)                      -> skipped
//   all-to-all: all_to_all_single (Megatron _AllToAll for MoE and GDN CP; Transformer Engine
//     flash_attn_a2a_communicate for attention CP)                                     -> skipped
//   send / recv: isend / irecv, alone or in batch_isend_irecv (pipeline, CP ring)      -> skipped
//   DeepEP / HybridEP dispatch and combine (purposes kEpFlexDispatch / kEpFlexCombine) are custom
//     kernels, not torch.distributed calls, so no mode guards them.
// Calls bound before the patch is applied (Megatron binds all_gather_into_tensor and
// _coalescing_manager at import) bypass the wrapper in practice; the skip list makes that moot
// for the kSelected mapping above.
#ifndef TRAINSCOPE_SIM_COMM_GUARD_H_
#define TRAINSCOPE_SIM_COMM_GUARD_H_

#include <string>

#include "trainscope/graph/op.h"

namespace trainscope::sim {

enum class CommGuardMode {
  kAll,       // every torch.distributed collective and point-to-point call (slime before #1947)
  kSelected,  // slime's current skip list (above): all-reduce and broadcast only
  kOff,       // no guard (plain Megatron)
};

// "all" | "selected" | "off". Throws UsageError naming --comm-memory-guard for anything else.
[[nodiscard]] CommGuardMode ParseCommGuardMode(const std::string& value);

// "all" | "selected" | "off".
[[nodiscard]] std::string ToString(CommGuardMode mode);

// Whether slime's guard runs before `op` under `mode`. False for compute ops.
[[nodiscard]] bool GuardApplies(const graph::Op& op, CommGuardMode mode);

// Host time of one available_memory() check, added before each guarded call. Basis:
// torch.cuda.mem_get_info is 4.85 µs per call on a warm context (pytorch/pytorch#174625,
// ngimel's timing) and 7.5-12.5 µs on B300 / SM100 / SM103, 9 µs on H20
// (sgl-project/sglang#25225); psutil.virtual_memory parses /proc/meminfo, about 39 µs per call
// for an equivalent Python parse on an AMD EPYC host (measured for this constant); the two
// allocator queries and the dict cost about 1-2 µs. Total about 50 µs. The emptying of the
// allocator below 3 GB free (tens of milliseconds) and pathological drivers where
// cudaMemGetInfo takes milliseconds (same sglang issue) are left out.
inline constexpr double kDefaultCommGuardSeconds = 50e-6;

// What one guarded call costs when the device has less than the threshold free, so the guard
// runs clear_memory(): accelerator.synchronize() (the GPU queue drains, so the host work that
// follows is exposed), gc.collect() (a full collection: its time grows with the live Python
// objects) and accelerator.empty_cache() (slime/utils/memory_utils.py).
struct CommGuardClearCost {
  // slime's threshold: free_GB < 3 with free_GB = bytes / 1024^3 (memory_utils.py
  // _byte_to_gb), i.e. 3 GiB.
  double threshold_bytes = 3.0 * 1024 * 1024 * 1024;
  // gc.collect(): 66 ms with 179k live objects (torch + CUDA only), 135 ms at 342k and 372 ms at
  // 851k, measured on an RTX PRO 6000 host with torch 2.11 (ultralytics/ultralytics PR #25610,
  // maintainer's timing): about 0.37-0.44 µs per object. The default is the torch-only process,
  // a lower bound for a Megatron trainer, which imports far more.
  double gc_seconds = 66e-3;
  // empty_cache(): 4 ms mean (10 ms max) in the same measurement; re-allocating the released
  // blocks afterwards is left out.
  double empty_cache_seconds = 4e-3;
  friend bool operator==(const CommGuardClearCost&, const CommGuardClearCost&) = default;
};

// Share of guarded calls that find less than `threshold_bytes` free on a GPU of
// `capacity_bytes`, when the device footprint at a call lies uniformly between `floor_bytes`
// (weights, gradients, optimizer state, context and NCCL buffers: what stays allocated) and
// `peak_bytes` (the pass's peak): saved activations grow through a forward and shrink through a
// backward, and after a clear the caching allocator holds about what is allocated. 0 when the
// peak leaves the threshold free, 1 when even the floor does not. Preconditions (checked):
// 0 <= floor <= peak.
[[nodiscard]] double ClearFraction(double floor_bytes, double peak_bytes, double capacity_bytes,
                                   double threshold_bytes);

}  // namespace trainscope::sim

#endif  // TRAINSCOPE_SIM_COMM_GUARD_H_
