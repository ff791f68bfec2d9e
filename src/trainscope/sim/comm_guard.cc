#include "trainscope/sim/comm_guard.h"

#include <array>
#include <string_view>
#include <utility>

#include "trainscope/error.h"

namespace trainscope::sim {
namespace {

constexpr std::array<std::pair<std::string_view, CommGuardMode>, 3> kModeNames = {{
    {"all", CommGuardMode::kAll},
    {"selected", CommGuardMode::kSelected},
    {"off", CommGuardMode::kOff},
}};

// DeepEP / HybridEP token exchange (graph/moe_ops.cc FlexComm): custom kernels that never go
// through torch.distributed.
bool IsFlexDispatcherOp(const graph::Op& op) {
  return op.role.purpose == graph::CommPurpose::kEpFlexDispatch ||
         op.role.purpose == graph::CommPurpose::kEpFlexCombine;
}

}  // namespace

CommGuardMode ParseCommGuardMode(const std::string& value) {
  for (const auto& [name, mode] : kModeNames) {
    if (name == value) return mode;
  }
  throw UsageError("--comm-memory-guard: unknown mode \"" + value +
                   "\" (expected all, selected or off)");
}

std::string ToString(CommGuardMode mode) {
  for (const auto& [name, value] : kModeNames) {
    if (value == mode) return std::string(name);
  }
  return "";
}

bool GuardApplies(const graph::Op& op, CommGuardMode mode) {
  if (!op.IsComm() || mode == CommGuardMode::kOff || IsFlexDispatcherOp(op)) return false;
  if (mode == CommGuardMode::kAll) return true;
  // kSelected: only the torch.distributed functions slime still checks (see the header).
  return op.collective == graph::Collective::kAllReduce ||
         op.collective == graph::Collective::kBroadcast;
}

double ClearFraction(double floor_bytes, double peak_bytes, double capacity_bytes,
                     double threshold_bytes) {
  TRAINSCOPE_CHECK(floor_bytes >= 0 && floor_bytes <= peak_bytes, "guard footprint out of order");
  const double line = capacity_bytes - threshold_bytes;  // a call clears above this footprint
  if (peak_bytes <= line) return 0;
  if (floor_bytes >= line) return 1;
  return (peak_bytes - line) / (peak_bytes - floor_bytes);
}

}  // namespace trainscope::sim
