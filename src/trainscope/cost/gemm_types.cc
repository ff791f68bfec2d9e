#include "trainscope/cost/gemm_types.h"

#include <array>
#include <utility>

#include "trainscope/error.h"

namespace trainscope::cost {
namespace {

constexpr std::array<std::pair<std::string_view, MathPrecision>, 3> kPrecisionNames = {{
    {"bf16", MathPrecision::kBf16},
    {"fp8", MathPrecision::kFp8},
    {"fp4", MathPrecision::kFp4},
}};

constexpr std::array<std::pair<std::string_view, GpuFamily>, 3> kFamilyNames = {{
    {"hopper", GpuFamily::kHopper},
    {"blackwell", GpuFamily::kBlackwell},
    {"other", GpuFamily::kOther},
}};

constexpr std::array<std::pair<std::string_view, GemmPass>, 3> kPassNames = {{
    {"forward", GemmPass::kForward},
    {"dgrad", GemmPass::kDgrad},
    {"wgrad", GemmPass::kWgrad},
}};

template <typename Enum, size_t N>
std::string_view NameOf(const std::array<std::pair<std::string_view, Enum>, N>& names, Enum value) {
  for (const auto& [name, known] : names) {
    if (known == value) return name;
  }
  TRAINSCOPE_CHECK(false, "enum value without a name");
  return {};
}

template <typename Enum, size_t N>
std::optional<Enum> FromName(const std::array<std::pair<std::string_view, Enum>, N>& names,
                             std::string_view name) {
  for (const auto& [known, value] : names) {
    if (known == name) return value;
  }
  return std::nullopt;
}

}  // namespace

std::string_view MathPrecisionName(MathPrecision precision) {
  return NameOf(kPrecisionNames, precision);
}
std::optional<MathPrecision> MathPrecisionFromName(std::string_view name) {
  return FromName(kPrecisionNames, name);
}
std::string_view GpuFamilyName(GpuFamily family) { return NameOf(kFamilyNames, family); }
std::optional<GpuFamily> GpuFamilyFromName(std::string_view name) {
  return FromName(kFamilyNames, name);
}
std::string_view GemmPassName(GemmPass pass) { return NameOf(kPassNames, pass); }
std::optional<GemmPass> GemmPassFromName(std::string_view name) {
  return FromName(kPassNames, name);
}

}  // namespace trainscope::cost
