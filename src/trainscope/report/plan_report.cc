#include "trainscope/report/plan_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "trainscope/units.h"

namespace trainscope::report {
namespace {

using Json = nlohmann::ordered_json;

double GibOf(int64_t bytes) {
  return static_cast<double>(bytes) / static_cast<double>(kBytesPerGiB);
}

// The flags of a layout split into single flags with their values ("--tp 2").
std::vector<std::string> FlagItems(const std::string& flags) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start < flags.size()) {
    size_t next = flags.find(" --", start);
    if (next == std::string::npos) next = flags.size();
    items.push_back(flags.substr(start, next - start));
    start = next + 1;
  }
  return items;
}

std::string FlagDifference(const std::string& a, const std::string& b) {
  const std::vector<std::string> xs = FlagItems(a), ys = FlagItems(b);
  std::string out;
  for (const std::string& x : xs) {
    if (std::find(ys.begin(), ys.end(), x) == ys.end()) out += " " + x;
  }
  return out.empty() ? " (none)" : out;
}

// One compared quantity of two layouts.
struct Row {
  std::string term;
  double first = 0, second = 0;
  std::string unit;  // "s" or "GiB"
};

// The terms explain and compare put side by side: step, bubble, exposed communication per
// group class, compute (recompute included), optimizer, peak memory; largest difference first.
std::vector<Row> TermRows(const plan::Candidate& a, const plan::Candidate& b) {
  std::vector<Row> rows;
  rows.push_back({"bubble / idle", a.breakdown.bubble_seconds, b.breakdown.bubble_seconds, "s"});
  std::set<std::string> classes;
  for (const auto& [name, s] : a.breakdown.exposed_comm_seconds) classes.insert(name);
  for (const auto& [name, s] : b.breakdown.exposed_comm_seconds) classes.insert(name);
  for (const std::string& name : classes) {
    const auto value = [&](const plan::Candidate& c) {
      const auto it = c.breakdown.exposed_comm_seconds.find(name);
      return it == c.breakdown.exposed_comm_seconds.end() ? 0.0 : it->second;
    };
    rows.push_back({"exposed " + name + " comm", value(a), value(b), "s"});
  }
  rows.push_back({"compute (with recompute)", a.breakdown.total_compute_seconds,
                  b.breakdown.total_compute_seconds, "s"});
  std::stable_sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) {
    return std::abs(x.second - x.first) > std::abs(y.second - y.first);
  });
  rows.insert(rows.begin(), {"step time", a.step_seconds, b.step_seconds, "s"});
  rows.push_back({"peak memory", GibOf(a.peak_bytes), GibOf(b.peak_bytes), "GiB"});
  return rows;
}

std::string TermTable(const std::string& first, const std::string& second, const plan::Candidate& a,
                      const plan::Candidate& b) {
  std::string out =
      fmt::format("  {:<26} {:>14} {:>14} {:>13}\n", "term", first, second, second + " - " + first);
  for (const Row& r : TermRows(a, b)) {
    const int digits = r.unit == "s" ? 4 : 2;
    out +=
        fmt::format("  {:<26} {:>10.{}f} {:<3} {:>10.{}f} {:<3} {:>+9.{}f} {}\n", r.term, r.first,
                    digits, r.unit, r.second, digits, r.unit, r.second - r.first, digits, r.unit);
  }
  out += fmt::format("  flags only in {}:{}\n", first, FlagDifference(a.flags, b.flags));
  out += fmt::format("  flags only in {}:{}\n", second, FlagDifference(b.flags, a.flags));
  return out;
}

std::string TermsText(const sim::Breakdown& breakdown) {
  std::string out;
  for (const Term& t : LargestTerms(breakdown, 3)) {
    out += fmt::format("{}{} {:.3f}s", out.empty() ? "" : ", ", t.name, t.seconds);
  }
  return out;
}

Json TermsJson(const sim::Breakdown& breakdown) {
  Json out = Json::array();
  for (const Term& t : LargestTerms(breakdown, 4)) {
    out.push_back({{"term", t.name}, {"seconds", t.seconds}});
  }
  return out;
}

Json CandidateJson(const plan::Candidate& c) {
  return Json{{"rank", c.rank},
              {"flags", c.flags},
              {"tokens_per_s_per_gpu", c.tokens_per_second_per_gpu},
              {"step_time_s", c.step_seconds},
              {"mfu", c.mfu},
              {"peak_bytes", c.peak_bytes},
              {"fits", c.fits},
              {"breakdown", TermsJson(c.breakdown)}};
}

std::string Header(const PlanReportInput& in) {
  const config::TrainingConfig& t = in.base.training;
  return fmt::format(
      "plan: {} on {} x {} ({:.0f} GiB), global batch {} x sequence {}, objective {}\n"
      "searched {} layouts in {:.2f} s: {} simulated, {} pruned by the lower bound, {} rejected\n",
      in.base.model.name, t.parallel.world_size, in.base.cluster.gpu.name,
      GibOf(in.base.cluster.gpu.memory_bytes), t.GlobalBatchSize(), t.batch.seq_length,
      config::NameOf(plan::kObjectiveNames, in.objective), in.result.num_enumerated,
      in.search_seconds, in.result.num_evaluated, in.result.num_pruned,
      in.result.num_enumerated - in.result.num_evaluated - in.result.num_pruned);
}

std::string TopTable(const PlanReportInput& in) {
  std::string out =
      fmt::format("\n{:>4} {:>10} {:>9} {:>6} {:>9} {:>9}  {}\n", "rank", "tok/s/GPU", "step s",
                  "MFU", "peak GiB", "headroom", "largest terms (busiest stage)");
  const size_t count = std::min<size_t>(in.result.ranking.size(), in.top_k);
  for (size_t i = 0; i < count; ++i) {
    const plan::Candidate& c = in.result.ranking[i];
    out +=
        fmt::format("{:>4} {:>10.1f} {:>9.3f} {:>5.1f}% {:>9.1f} {:>9.1f}  {}\n       {}\n", c.rank,
                    c.tokens_per_second_per_gpu, c.step_seconds, 100 * c.mfu, GibOf(c.peak_bytes),
                    GibOf(c.headroom_bytes), TermsText(c.breakdown), c.flags);
  }
  if (count == 0) out += "  no layout is valid and fits; see the rejections below\n";
  return out;
}

std::string ParetoText(const plan::PlanResult& result) {
  std::string out = "\nPareto front (throughput vs memory headroom):\n";
  for (const plan::Candidate& c : result.pareto) {
    out += fmt::format("  #{:<4} {:>10.1f} tok/s/GPU {:>7.1f} GiB headroom  {}\n", c.rank,
                       c.tokens_per_second_per_gpu, GibOf(c.headroom_bytes), c.flags);
  }
  return out;
}

std::string RejectedText(const plan::PlanResult& result) {
  std::string out = "\nrejected:";
  for (const auto& [reason, count] : result.rejected) out += fmt::format(" {} {},", reason, count);
  if (result.rejected.empty()) return out + " none\n";
  out.back() = '\n';
  return out +
         "  (rule ids: docs/validation.md; oom: does not fit the GPU; bound: cannot enter the "
         "top K)\n";
}

}  // namespace

std::vector<Term> LargestTerms(const sim::Breakdown& breakdown, size_t count) {
  std::vector<Term> terms;
  for (const auto& [name, s] : breakdown.compute_seconds) terms.push_back({"compute:" + name, s});
  for (const auto& [name, s] : breakdown.exposed_comm_seconds) terms.push_back({"comm:" + name, s});
  terms.push_back({"bubble", breakdown.bubble_seconds});
  std::sort(terms.begin(), terms.end(), [](const Term& a, const Term& b) {
    return a.seconds != b.seconds ? a.seconds > b.seconds : a.name < b.name;
  });
  if (terms.size() > count) terms.resize(count);
  return terms;
}

std::string RenderExplainText(const plan::PlanResult& result, int64_t rank) {
  const plan::Candidate& a = result.ranking.at(rank - 1);
  const plan::Candidate& b = result.ranking.at(rank);
  std::string out =
      fmt::format("\nexplain: why #{} beats #{} ({:.1f} vs {:.1f} tok/s/GPU, {:+.1f}%)\n", rank,
                  rank + 1, a.tokens_per_second_per_gpu, b.tokens_per_second_per_gpu,
                  100 * (a.tokens_per_second_per_gpu / b.tokens_per_second_per_gpu - 1));
  return out + TermTable(fmt::format("#{}", rank), fmt::format("#{}", rank + 1), a, b);
}

std::string RenderCompareText(const plan::PlanResult& result, const ComparedLayout& compare) {
  std::string out = "\ncompare: your layout\n  " + compare.flags + "\n";
  if (!compare.candidate) return out + "  is invalid: " + compare.invalid_reason + "\n";
  const plan::Candidate& mine = *compare.candidate;
  out += fmt::format("  ranks #{} of {} simulated layouts: {:.1f} tok/s/GPU, peak {:.1f} GiB{}\n",
                     compare.rank, result.ranking.size() + 1, mine.tokens_per_second_per_gpu,
                     GibOf(mine.peak_bytes), mine.fits ? "" : " (does not fit the GPU)");
  if (result.ranking.empty()) return out;
  const plan::Candidate& best = result.ranking.front();
  out += fmt::format(
      "  switching to #1 gains {:+.1f}% tokens/s/GPU ({:.1f} -> {:.1f}); where it "
      "comes from:\n",
      100 * (best.tokens_per_second_per_gpu / mine.tokens_per_second_per_gpu - 1),
      mine.tokens_per_second_per_gpu, best.tokens_per_second_per_gpu);
  return out + TermTable("#1", "yours", best, mine);
}

std::string RenderPlanText(const PlanReportInput& in) {
  std::string out = Header(in) + TopTable(in) + ParetoText(in.result) + RejectedText(in.result);
  if (in.explain_rank) out += RenderExplainText(in.result, *in.explain_rank);
  if (in.compare) out += RenderCompareText(in.result, *in.compare);
  return out;
}

std::string RenderPlanJson(const PlanReportInput& in) {
  Json candidates = Json::array();
  const size_t count = std::min<size_t>(in.result.ranking.size(), in.top_k);
  for (size_t i = 0; i < count; ++i) candidates.push_back(CandidateJson(in.result.ranking[i]));
  Json pareto = Json::array();
  for (const plan::Candidate& c : in.result.pareto) {
    pareto.push_back({{"rank", c.rank},
                      {"flags", c.flags},
                      {"tokens_per_s_per_gpu", c.tokens_per_second_per_gpu},
                      {"headroom_bytes", c.headroom_bytes}});
  }
  Json rejected = Json::object();
  for (const auto& [reason, n] : in.result.rejected) rejected[reason] = n;
  Json out = {{"candidates", candidates},
              {"pareto", pareto},
              {"rejected", rejected},
              {"evaluated", in.result.num_evaluated},
              {"search_seconds", std::round(in.search_seconds * 1000) / 1000}};
  if (in.explain_rank) out["explain"] = RenderExplainText(in.result, *in.explain_rank);
  if (in.compare) {
    Json compare = {{"flags", in.compare->flags}, {"rank", in.compare->rank}};
    if (in.compare->candidate) compare["candidate"] = CandidateJson(*in.compare->candidate);
    compare["text"] = RenderCompareText(in.result, *in.compare);
    out["compare"] = compare;
  }
  return out.dump(2) + "\n";
}

std::string RenderPlanCsv(const plan::PlanResult& result) {
  std::map<std::string, const plan::Candidate*> simulated;
  for (const plan::Candidate& c : result.ranking) simulated[c.flags] = &c;
  std::string out = "flags,status,rank,tokens_per_s_per_gpu,step_time_s,mfu,peak_bytes\n";
  for (const plan::LayoutOutcome& o : result.outcomes) {
    const auto it = simulated.find(o.flags);
    if (it == simulated.end()) {
      out += fmt::format("\"{}\",{},,,,,{}\n", o.flags, o.status,
                         o.peak_bytes > 0 ? std::to_string(o.peak_bytes) : "");
      continue;
    }
    const plan::Candidate& c = *it->second;
    out += fmt::format("\"{}\",{},{},{:.3f},{:.6f},{:.4f},{}\n", o.flags, o.status, c.rank,
                       c.tokens_per_second_per_gpu, c.step_seconds, c.mfu, c.peak_bytes);
  }
  return out;
}

}  // namespace trainscope::report
