#include "trainscope/report/weight_sync_report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "trainscope/config/rank_mapping.h"
#include "trainscope/units.h"

namespace trainscope::report {
namespace {

using Json = nlohmann::ordered_json;

std::string Gb(int64_t bytes) {
  return fmt::format("{:.2f} GB", static_cast<double>(bytes) / kBytesPerGB);
}

}  // namespace

std::string RenderWeightSyncText(const WeightSyncReportInput& input) {
  const cost::WeightSyncOptions& o = input.options;
  const cost::WeightSyncEstimate& e = input.estimate;
  std::string out = fmt::format(
      "{}: weight sync to {} rollout GPUs (TP{} EP{}{}) over {}, {} weights\n\n", input.model.name,
      o.rollout_gpus, o.rollout_tp, o.rollout_ep, o.colocate ? ", colocated" : "",
      cost::ToString(o.transport), cost::ToString(o.dtype));
  out +=
      fmt::format("  bytes                 {} ({} bytes, full HF tensors)\n", Gb(e.bytes), e.bytes);
  out += fmt::format("  buckets               {} of {} MiB\n", e.num_buckets,
                     o.bucket_bytes / kBytesPerMiB);
  out += "\ngathers that rebuild full tensors (bucket-sized calls)\n";
  if (e.gathers.empty()) out += "  none (no TP, EP or PP split to undo)\n";
  for (const cost::SyncGather& g : e.gathers) {
    out +=
        fmt::format("  {:<5} size {:<4} {:>12}  {:>5} calls  {:9.3f} s\n",
                    config::ToString(g.group), g.group_size, Gb(g.bytes), g.num_calls, g.seconds);
  }
  out += fmt::format("\n  gather                {:9.3f} s\n", e.gather_seconds);
  out += fmt::format("  transfer              {:9.3f} s\n", e.transfer_seconds);
  out += fmt::format("  per-bucket overhead   {:9.3f} s\n", e.overhead_seconds);
  out += fmt::format("  total                 {:9.3f} s\n", e.total_seconds);
  return out;
}

std::string RenderWeightSyncJson(const WeightSyncReportInput& input) {
  const cost::WeightSyncOptions& o = input.options;
  const cost::WeightSyncEstimate& e = input.estimate;
  Json gathers = Json::array();
  for (const cost::SyncGather& g : e.gathers) {
    gathers.push_back(Json{{"group", config::ToString(g.group)},
                           {"group_size", g.group_size},
                           {"bytes", g.bytes},
                           {"num_calls", g.num_calls},
                           {"seconds", g.seconds}});
  }
  const Json out{{"model", input.model.name},
                 {"bytes", e.bytes},
                 {"num_buckets", e.num_buckets},
                 {"bucket_bytes", o.bucket_bytes},
                 {"transport", cost::ToString(o.transport)},
                 {"rollout_dtype", cost::ToString(o.dtype)},
                 {"rollout",
                  {{"gpus", o.rollout_gpus},
                   {"tp", o.rollout_tp},
                   {"ep", o.rollout_ep},
                   {"colocate", o.colocate}}},
                 {"gathers", gathers},
                 {"gather_seconds", e.gather_seconds},
                 {"transfer_seconds", e.transfer_seconds},
                 {"overhead_seconds", e.overhead_seconds},
                 {"total_seconds", e.total_seconds}};
  return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace trainscope::report
