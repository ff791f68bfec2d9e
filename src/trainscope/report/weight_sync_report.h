// Renders a weight-sync estimate (cost/weight_sync.h) as text or as the `weight-sync --json`
// contract. Pure: returns the bytes to print.
#ifndef TRAINSCOPE_REPORT_WEIGHT_SYNC_REPORT_H_
#define TRAINSCOPE_REPORT_WEIGHT_SYNC_REPORT_H_

#include <string>

#include "trainscope/config/model_config.h"
#include "trainscope/cost/weight_sync.h"

namespace trainscope::report {

struct WeightSyncReportInput {
  const config::ModelConfig& model;
  const cost::WeightSyncOptions& options;
  const cost::WeightSyncEstimate& estimate;
};

[[nodiscard]] std::string RenderWeightSyncText(const WeightSyncReportInput& input);
// Keys: model, bytes, num_buckets, bucket_bytes, transport, rollout_dtype,
// rollout{gpus, tp, ep, colocate}, gathers[{group, group_size, bytes, num_calls, seconds}],
// gather_seconds, transfer_seconds, overhead_seconds, total_seconds.
[[nodiscard]] std::string RenderWeightSyncJson(const WeightSyncReportInput& input);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_WEIGHT_SYNC_REPORT_H_
