// Renders a simulated step: throughput (step time, tokens/s/GPU, model TFLOP/s/GPU, MFU), where
// the time went (compute by op family, exposed communication by group, pipeline bubble,
// optimizer), the critical path, per-stage figures, the memory summary and the cluster it ran
// on. A readable table, or JSON with the contract keys step_time_s, tokens_per_s_per_gpu,
// model_tflops_per_gpu, mfu and breakdown (docs/cli.md). Pure: returns strings.
#ifndef TRAINSCOPE_REPORT_SIMULATE_REPORT_H_
#define TRAINSCOPE_REPORT_SIMULATE_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/config/model_config.h"
#include "trainscope/config/training_config.h"
#include "trainscope/cost/memory.h"
#include "trainscope/sim/step_metrics.h"
#include "trainscope/sim/step_simulator.h"
#include "trainscope/study/study.h"

namespace trainscope::report {

// Precondition: `result` is study::RunStudy(study).
[[nodiscard]] std::string RenderSimulateText(const study::Study& study,
                                             const study::StudyResult& result);
[[nodiscard]] std::string RenderSimulateJson(const study::Study& study,
                                             const study::StudyResult& result);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_SIMULATE_REPORT_H_
