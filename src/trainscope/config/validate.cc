// The validator's entry point: Validate() runs the rule groups of validate_rules.h in order;
// also the helpers the rule files share.
#include "trainscope/config/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainscope/config/validate_rules.h"

namespace trainscope::config {
namespace internal {

void AddError(ValidationResult& result, std::string rule, std::vector<std::string> flags,
              std::string message, std::string fix) {
  result.errors.push_back(
      Violation{std::move(rule), std::move(flags), std::move(message), std::move(fix)});
}

void AddWarning(ValidationResult& result, std::string rule, std::vector<std::string> flags,
                std::string message, std::string fix) {
  result.warnings.push_back(
      Violation{std::move(rule), std::move(flags), std::move(message), std::move(fix)});
}

// Divisors of `n` (n >= 1) in increasing order.
std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> small;
  std::vector<int64_t> large;
  for (int64_t k = 1; k * k <= n; ++k) {
    if (n % k != 0) continue;
    small.push_back(k);
    if (k != n / k) large.push_back(n / k);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

bool Contains(const std::vector<std::string>& modules, std::string_view name) {
  return std::find(modules.begin(), modules.end(), name) != modules.end();
}

// "1, 2, 4 or 8".
std::string JoinChoices(const std::vector<int64_t>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += i + 1 == values.size() ? " or " : ", ";
    out += std::to_string(values[i]);
  }
  return out;
}

// The multiples of `step` nearest to `value`: "96 or 104" (only the upper one below `step`).
std::string NearestMultiples(int64_t value, int64_t step) {
  const int64_t lower = value / step * step;
  const int64_t upper = lower + step;
  return lower > 0 ? fmt::format("{} or {}", lower, upper) : std::to_string(upper);
}

bool IsCore017OrOlder(const TrainingConfig& training) {
  return training.core_version <= CoreVersion::kV0_17;
}

bool GridDivides(const ParallelSizes& parallel) {
  return parallel.world_size % (parallel.tensor * parallel.pipeline * parallel.context) == 0;
}

}  // namespace internal

ValidationResult Validate(const ModelConfig& model, const TrainingConfig& training) {
  ValidationResult result;
  // Every later rule divides by these sizes, so nothing else is checked until they are positive.
  if (!internal::CheckSizes(training, result)) return result;
  internal::CheckWorldDivisibility(model, training, result);
  internal::CheckDataParallelSizes(training, result);
  internal::CheckVirtualStages(training, result);
  internal::CheckAttentionHeads(model, training, result);
  internal::CheckLinearSplits(model, training, result);
  internal::CheckExpertSplits(model, training, result);
  internal::CheckDispatcher(model, training, result);
  internal::CheckEpOverlap(training, result);
  internal::CheckHybridEpOptions(training, result);
  internal::CheckPipelineSplit(model, training, result);
  internal::CheckBatch(model, training, result);
  internal::CheckContextParallel(model, training, result);
  internal::CheckGdn(model, training, result);
  internal::CheckVision(model, training, result);
  internal::CheckCudaGraph(model, training, result);
  internal::CheckFp4(training, result);
  internal::CheckSequenceParallel(training, result);
  internal::CheckDataParallel(model, training, result);
  internal::CheckRecomputeOptions(training, result);
  internal::CheckRecomputeModules(model, training, result);
  internal::CheckCpuOffloading(model, training, result);
  internal::CheckOptimizerOffload(training, result);
  // The rules so far are Megatron-Core's; the framework's own rules name their profile.
  std::string core = "megatron-core ";
  core.append(ToString(training.core_version));
  if (training.framework.framework != Framework::kMegatronCore) {
    core.append(" (").append(ToString(training.framework.framework)).append(")");
  }
  for (std::vector<Violation>* list : {&result.errors, &result.warnings}) {
    for (Violation& violation : *list) violation.profile = core;
  }
  internal::CheckFrameworkRules(model, training, result);
  return result;
}

}  // namespace trainscope::config
