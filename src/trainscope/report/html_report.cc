// The data of the HTML report and the page around it (html_report_page.h holds the static
// CSS and JavaScript).
#include "trainscope/report/html_report.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "trainscope/graph/op.h"
#include "trainscope/report/html_report_page.h"
#include "trainscope/report/simulate_report.h"

namespace trainscope::report {
namespace {

using Json = nlohmann::ordered_json;

struct Segment {
  double start_seconds = 0;
  double end_seconds = 0;
  std::string_view kind;
};

std::string_view ComputeKind(graph::Phase phase) {
  switch (phase) {
    case graph::Phase::kForward:
      return "forward";
    case graph::Phase::kBackward:
      return "backward";
    case graph::Phase::kRecompute:
      return "recompute";
    case graph::Phase::kGradSync:
    case graph::Phase::kOptimizer:
      return "optimizer";
  }
  return "optimizer";
}

// Sorts `segments` by start and merges those of one kind that touch or overlap.
std::vector<Segment> Merge(std::vector<Segment> segments) {
  std::stable_sort(segments.begin(), segments.end(), [](const Segment& a, const Segment& b) {
    return std::tie(a.start_seconds, a.end_seconds) < std::tie(b.start_seconds, b.end_seconds);
  });
  std::vector<Segment> merged;
  for (const Segment& segment : segments) {
    if (!merged.empty() && merged.back().kind == segment.kind &&
        segment.start_seconds <= merged.back().end_seconds) {
      merged.back().end_seconds = std::max(merged.back().end_seconds, segment.end_seconds);
      continue;
    }
    merged.push_back(segment);
  }
  return merged;
}

Json SegmentsJson(const std::vector<Segment>& segments) {
  Json out = Json::array();
  for (const Segment& s : segments) out.push_back({s.start_seconds, s.end_seconds, s.kind});
  return out;
}

// One stage's compute segments (by phase) and communication intervals, merged.
Json LaneJson(const sim::LaneTimeline& lane) {
  std::vector<Segment> compute;
  std::vector<Segment> comm;
  for (const graph::Op& op : lane.graph.ops) {
    const sim::OpTiming& timing = lane.timings[static_cast<size_t>(op.id)];
    if (timing.end_seconds <= timing.start_seconds) continue;
    if (op.IsComm()) {
      comm.push_back({timing.start_seconds, timing.end_seconds, "comm"});
    } else {
      compute.push_back({timing.start_seconds, timing.end_seconds, ComputeKind(op.phase)});
    }
  }
  return Json{{"pp_rank", lane.pipeline_rank},
              {"rank", lane.rank},
              {"end_s", lane.end_seconds},
              {"compute", SegmentsJson(Merge(std::move(compute)))},
              {"comm", SegmentsJson(Merge(std::move(comm)))}};
}

Json MemoryJson(const study::Study& study, const cost::MemoryEstimate& memory) {
  Json stages = Json::array();
  for (const cost::RankMemory& stage : memory.stages) {
    stages.push_back({{"pp_rank", stage.pipeline_rank},
                      {"weights_bytes", stage.weights_bytes},
                      {"grads_bytes", stage.grads_bytes},
                      {"optimizer_bytes", stage.optimizer_bytes},
                      {"activations_bytes", stage.activations_bytes},
                      {"buffers_bytes", stage.buffers_bytes},
                      {"peak_bytes", stage.peak_bytes}});
  }
  return Json{{"gpu_memory_bytes", study.cluster.gpu.memory_bytes}, {"stages", stages}};
}

// Bytes and counts per (group, collective) over every simulated stage's graph.
Json CommJson(const sim::StepSimulation& simulation) {
  std::map<std::pair<std::string, std::string>, std::pair<int64_t, int64_t>> totals;
  for (const sim::LaneTimeline& lane : simulation.lanes) {
    for (const graph::Op& op : lane.graph.ops) {
      if (!op.IsComm()) continue;
      auto& [bytes, count] = totals[{config::ToString(op.group), graph::ToString(op.collective)}];
      bytes += op.message_bytes;
      ++count;
    }
  }
  Json out = Json::array();
  for (const auto& [key, value] : totals) {
    out.push_back({{"group", key.first},
                   {"collective", key.second},
                   {"bytes", value.first},
                   {"count", value.second}});
  }
  return out;
}

Json ViolationsJson(const std::vector<config::Violation>& violations) {
  Json out = Json::array();
  for (const config::Violation& v : violations) {
    out.push_back({{"rule", v.rule}, {"message", v.message}, {"fix", v.fix}});
  }
  return out;
}

// JSON text safe inside a <script> element: every '<' becomes the JSON escape \u003c.
std::string ScriptSafe(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (const char c : json) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string RenderHtmlReportData(const study::Study& study, const study::StudyResult& result,
                                 const config::ValidationResult& validation) {
  Json lanes = Json::array();
  for (const sim::LaneTimeline& lane : result.simulation.lanes) lanes.push_back(LaneJson(lane));
  const Json data{{"timeline",
                   {{"step_s", result.metrics.step_seconds},
                    {"simulated_micro_batches", result.simulation.simulated_micro_batches},
                    {"lanes", lanes}}},
                  {"memory", MemoryJson(study, result.memory)},
                  {"comm", CommJson(result.simulation)},
                  {"validation",
                   {{"ok", validation.ok()},
                    {"errors", ViolationsJson(validation.errors)},
                    {"warnings", ViolationsJson(validation.warnings)}}}};
  return data.dump();
}

std::string RenderHtmlReport(const study::Study& study, const study::StudyResult& result,
                             const config::ValidationResult& validation) {
  std::string page(kHtmlReportHead);
  page += "<script type=\"application/json\" id=\"simulate-json\">";
  page += ScriptSafe(RenderSimulateJson(study, result));
  page += "</script>\n<script type=\"application/json\" id=\"report-json\">";
  page += ScriptSafe(RenderHtmlReportData(study, result, validation));
  page += "</script>\n";
  page += kHtmlReportTail;
  return page;
}

}  // namespace trainscope::report
