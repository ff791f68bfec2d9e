#include "trainscope/config/training_config.h"

#include "trainscope/config/enum_names.h"

namespace trainscope::config {

std::string ToString(CoreVersion version) { return NameOf(kCoreVersionNames, version); }
std::string ToString(TokenDispatcher dispatcher) { return NameOf(kDispatcherNames, dispatcher); }
std::string ToString(RecomputeGranularity granularity) {
  return NameOf(kRecomputeGranularityNames, granularity);
}
std::string ToString(RecomputeMethod method) { return NameOf(kRecomputeMethodNames, method); }
std::string ToString(CpCommType type) { return NameOf(kCpCommTypeNames, type); }
std::string ToString(SequenceLayout layout) { return NameOf(kSequenceLayoutNames, layout); }
std::string ToString(RankOrder order) { return NameOf(kRankOrderNames, order); }

}  // namespace trainscope::config
