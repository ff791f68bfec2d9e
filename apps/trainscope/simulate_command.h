// The `simulate` command: resolves the cluster, calibration and model options from the command
// line, runs the step simulation (with a second, THD-packed run when a sequence-length
// distribution is given), writes the optional Chrome trace and renders the report.
#ifndef TRAINSCOPE_APPS_SIMULATE_COMMAND_H_
#define TRAINSCOPE_APPS_SIMULATE_COMMAND_H_

#include <string>

#include "trainscope/config/model_config.h"
#include "trainscope/cost/memory.h"
#include "trainscope/io/megatron_args.h"
#include "trainscope/sim/op_costs.h"

namespace trainscope::app {

// The memory overheads the command line sets: --memory-cuda-context-gib,
// --memory-nccl-mib-per-communicator, --memory-fragmentation and the busiest expert rank's load
// factor from --moe-routing-skew (1 without it).
[[nodiscard]] cost::MemoryOverheads MemoryOverheadsFor(const io::CliRequest& request,
                                                       const config::ModelConfig& model);

// The simulator's hardware cost options from the command line: the cluster (--gpu, --cluster,
// topology flags), --calibration, --qwen-gdn-backend and the communication memory guard. Throws
// UsageError / InputError for bad values. Also used by `workload` for its compute columns.
[[nodiscard]] sim::HardwareCostOptions CostOptions(const io::SimulateFlags& flags,
                                                   const config::ModelConfig& model);

// Precondition: Validate() accepted request.training for `model`. Throws UsageError / InputError
// for bad simulate options and IoError when the trace cannot be written.
[[nodiscard]] std::string RunSimulate(const io::CliRequest& request,
                                      const config::ModelConfig& model);

}  // namespace trainscope::app

#endif  // TRAINSCOPE_APPS_SIMULATE_COMMAND_H_
