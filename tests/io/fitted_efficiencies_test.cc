// The ComputeEfficiency defaults are the values scripts/fit_calibration fitted to the published
// runs (data/calibration/fitted_efficiencies.json, docs/simulate.md "Accuracy"): applying that
// file to the defaults must change nothing, so a refit that is not copied into the code, or a
// code change that is not refitted, fails here.
#include <gtest/gtest.h>

#include "trainscope/cost/compute_cost.h"
#include "trainscope/io/calibration_file.h"

namespace trainscope::io {
namespace {

TEST(FittedEfficienciesTest, DefaultsAreTheFittedValues) {
  const CalibrationOverrides fitted = LoadCalibrationFile(TRAINSCOPE_FITTED_EFFICIENCIES);
  EXPECT_FALSE(fitted.compute.empty());
  const cost::ComputeEfficiency defaults;
  const cost::ComputeEfficiency applied = ApplyCalibration(fitted, defaults);
  EXPECT_EQ(applied, defaults);
  for (const auto& [field, value] : fitted.compute) {
    EXPECT_GT(value, 0) << field;
    EXPECT_LE(value, 1) << field;
  }
}

}  // namespace
}  // namespace trainscope::io
