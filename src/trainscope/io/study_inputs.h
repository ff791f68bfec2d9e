// Reads and resolves every input a study needs from the command line: the cluster (--gpu,
// --cluster and the cluster flags), the calibration file, the GDN backend, the communication
// memory guard, the memory overheads, the routing skew (Zipf exponent or histogram file) and the
// sequence-length distribution. All file reading happens here, before anything is computed.
#ifndef TRAINSCOPE_IO_STUDY_INPUTS_H_
#define TRAINSCOPE_IO_STUDY_INPUTS_H_

#include "trainscope/config/cluster.h"
#include "trainscope/config/model_config.h"
#include "trainscope/io/megatron_args.h"
#include "trainscope/study/study.h"

namespace trainscope::io {

// The cluster of the request: the GPU preset (--gpu, the cluster file's gpu, else H100), the
// cluster file, the cluster flags and the calibration file's link constants. Throws UsageError
// naming the flag (unknown GPU with a suggestion, bad values) and InputError naming the file.
[[nodiscard]] config::ClusterSpec LoadCluster(const CliRequest& request);

// The whole study of the request for `model` (with ApplyModelDependentFlags already applied to
// request.training). Throws UsageError naming the flag for options the model cannot use
// (--qwen-gdn-backend without Gated DeltaNet layers, --moe-routing-skew without MoE layers,
// --comm-memory-guard-us without a guard) and InputError naming the file for bad files.
[[nodiscard]] study::Study LoadStudy(const CliRequest& request, const config::ModelConfig& model);

}  // namespace trainscope::io

#endif  // TRAINSCOPE_IO_STUDY_INPUTS_H_
