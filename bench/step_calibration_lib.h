// Shared by trainscope_step_calibration (prints the error of every expressible row of
// calibration_runs.csv) and trainscope_fit_calibration (fits the efficiency defaults): simulate
// the published runs under a given set of efficiencies and compare tokens/s/GPU.
#ifndef TRAINSCOPE_BENCH_STEP_CALIBRATION_LIB_H_
#define TRAINSCOPE_BENCH_STEP_CALIBRATION_LIB_H_

#include <map>
#include <string>
#include <vector>

#include "calibration_rows.h"
#include "trainscope/config/cluster.h"
#include "trainscope/cost/compute_cost.h"
#include "trainscope/study/study.h"

namespace trainscope::bench {

// Everything the fit may change: hardware-efficiency parameters only (never per-model constants).
struct Efficiencies {
  cost::ComputeEfficiency compute;
  // LinkEfficiency fields a calibration file sets (io::CalibrationOverrides::links), applied on
  // top of each row's cluster, whose scale-out constants are those of its fabric.
  std::map<std::string, double> link_overrides;
  double interference_fraction = 0.1;
};

struct RowResult {
  const CalibrationCase* calibration_case = nullptr;
  double predicted_tokens_per_second_per_gpu = 0;
  double predicted_tflops_per_gpu = 0;  // Megatron's FLOPs convention
  double error_fraction = 0;            // predicted / measured − 1 (tokens/s/GPU)
};

// Every row of the CSV that trainscope can express, de-duplicated configurations shared, and the
// skipped rows with their reasons ("line N: reason"). Rows that publish only TFLOP/s are included
// with `with_tflops_rows`, their tokens/s derived through Megatron's FLOPs per token (reported,
// never fitted).
struct CaseSet {
  std::vector<CalibrationCase> cases;
  std::vector<std::string> skipped;
};
[[nodiscard]] CaseSet LoadCases(const std::string& csv_path, bool with_tflops_rows = false);

// The study of a calibration case: its GPU's default cluster (or the row's fabric) under the
// given efficiencies.
[[nodiscard]] study::Study StudyOf(const CalibrationCase& c, const Efficiencies& efficiencies);

// Simulates every case (identical configurations once) on its GPU's default cluster. With
// `extrapolate`, steps with more than 4p micro-batches are simulated at 2p and 4p micro-batches
// and extended linearly (a pipeline's steady state adds the same time per micro-batch); the fit
// uses this to stay fast, the report simulates every micro-batch.
[[nodiscard]] std::vector<RowResult> Evaluate(const std::vector<CalibrationCase>& cases,
                                              const Efficiencies& efficiencies,
                                              bool extrapolate = false);

// "dense" for a model without MoE layers, else the token dispatcher ("alltoall", "flex", ...).
[[nodiscard]] std::string DispatcherOf(const CalibrationCase& c);

// Mean absolute error fraction of the results whose source family is in `families` (all when
// empty).
[[nodiscard]] double MeanAbsoluteError(const std::vector<RowResult>& results,
                                       const std::vector<std::string>& families = {});

}  // namespace trainscope::bench

#endif  // TRAINSCOPE_BENCH_STEP_CALIBRATION_LIB_H_
