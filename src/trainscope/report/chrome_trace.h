// Chrome trace event JSON of a simulated step (opens in Perfetto and chrome://tracing), laid out
// as the Trace Event Format allows: one process per simulated rank (one per
// pipeline stage), one thread per stream (1 compute, 2 TP, 3 CP, 4 EP, 5 DP comm, 6 PP send,
// 7 PP recv), an X slice per op named with its micro-batch and layer, and flow arrows from each
// pipeline send to the receive it satisfies. Times are integer nanoseconds printed as
// microseconds with three decimals, so the same simulation gives the same bytes.
#ifndef TRAINSCOPE_REPORT_CHROME_TRACE_H_
#define TRAINSCOPE_REPORT_CHROME_TRACE_H_

#include <string>

#include "trainscope/sim/step_simulator.h"

namespace trainscope::report {

[[nodiscard]] std::string RenderChromeTrace(const sim::StepSimulation& simulation);

// The slice name of an op: "mb<m> c<chunk> L<layer> <name>" with the parts that apply
// (e.g. "mb3 L12 attention.linear_qkv", "mb0 c1 pp.send_forward", "optimizer.step").
[[nodiscard]] std::string SliceName(const graph::Op& op, bool show_chunk);

}  // namespace trainscope::report

#endif  // TRAINSCOPE_REPORT_CHROME_TRACE_H_
