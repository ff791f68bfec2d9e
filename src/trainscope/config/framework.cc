#include "trainscope/config/framework.h"

#include "trainscope/config/enum_names.h"

namespace trainscope::config {

std::string ToString(Framework framework) { return NameOf(kFrameworkNames, framework); }
std::string ToString(BridgeVersion version) { return NameOf(kBridgeVersionNames, version); }

}  // namespace trainscope::config
