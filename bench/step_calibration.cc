// trainscope_step_calibration: simulates every row of data/calibration/calibration_runs.csv that
// trainscope can express (model and GPU presets, a layout Megatron accepts) with the
// default efficiencies, or those of a calibration file, and prints predicted against measured
// tokens/s/GPU per row, the TFLOP/s comparison where the source's FLOPs per token match
// Megatron's formula, and the mean absolute percentage error overall, per source and per GPU.
// Then, per group of several layouts of one model on one cluster (same source, software and
// precision), the Spearman rank correlation of simulated against measured tokens/s/GPU and
// whether the measured best is in the simulated top 3 (the planner's accuracy, docs/plan.md).
// Asserts nothing (accuracy is reported, not tested).
//
// --with-tflops-rows adds the rows that publish only TFLOP/s (tokens/s through Megatron's FLOPs
// per token), such as Megatron-LM's MoE recipes with DeepEP / HybridEP and EP overlap.
//
// Usage: trainscope_step_calibration [CSV] [--calibration FILE] [--with-tflops-rows]
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bridge_recipes.h"
#include "step_calibration_lib.h"
#include "trainscope/config/enum_names.h"
#include "trainscope/error.h"
#include "trainscope/io/atomic_write.h"
#include "trainscope/io/calibration_file.h"
#include "trainscope/report/chrome_trace.h"
#include "trainscope/report/simulate_report.h"

namespace trainscope {
namespace {

// "bf16", "fp4 nvfp4" or "fp8 <recipe>" as the row runs (bench/calibration_rows.cc maps the
// labels).
std::string PrecisionOf(const bench::CalibrationCase& c) {
  const config::PrecisionConfig& p = c.training.precision;
  if (p.fp4 != config::Fp4Format::kNone) return "fp4 nvfp4";
  if (p.fp8 == config::Fp8Format::kNone) return "bf16";
  return "fp8 " + config::NameOf(config::kFp8RecipeNames, p.fp8_recipe);
}

std::string Layout(const config::TrainingConfig& t) {
  const config::ParallelSizes& p = t.parallel;
  std::string layout = fmt::format("W{} TP{} PP{}", p.world_size, p.tensor, p.pipeline);
  if (p.virtual_stages > 1) layout += fmt::format(" VP{}", p.virtual_stages);
  if (p.context > 1) layout += fmt::format(" CP{}", p.context);
  if (p.expert > 1) layout += fmt::format(" EP{}", p.expert);
  if (t.data_parallel.megatron_fsdp) layout += " FSDP";
  return layout + fmt::format(" mbs{} gbs{} s{}", t.batch.micro_batch_size,
                              t.batch.global_batch_size.value_or(0), t.batch.seq_length);
}

// Ranks of `values` (1 = smallest), ties sharing their mean rank.
std::vector<double> Ranks(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) ++j;
    for (size_t k = i; k <= j; ++k) ranks[order[k]] = 0.5 * static_cast<double>(i + j) + 1;
    i = j + 1;
  }
  return ranks;
}

// Spearman's rank correlation: Pearson's correlation of the ranks.
double Spearman(const std::vector<double>& x, const std::vector<double>& y) {
  const std::vector<double> rx = Ranks(x), ry = Ranks(y);
  const double n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    mx += rx[i] / n;
    my += ry[i] / n;
  }
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0.0;
}

// The planner's question on published data (docs/plan.md, "Accuracy of the order"): for each
// group of several layouts of one model on one cluster with the same source, software and
// precision, the Spearman correlation of simulated and measured tokens/s/GPU and whether the
// measured best is among the simulated top 3. Nothing is fitted to these rows.
// The rows a newer container superseded: Megatron-Bridge publishes the same configuration (model,
// GPU, layout, batch, precision) once per container, and throughput moves with the software
// (docs/simulate.md, "Accuracy"). Returns the results without the rows of an older container than
// the newest one of their configuration; rows that name no container are kept.
std::vector<bench::RowResult> NewestContainerRows(const std::vector<bench::RowResult>& results) {
  const auto key = [](const bench::CalibrationCase& c) {
    return fmt::format("{}|{}|{}|{}", c.preset, c.gpu, Layout(c.training), PrecisionOf(c));
  };
  std::map<std::string, std::string> newest;
  for (const bench::RowResult& r : results) {
    const std::string container = bench::ContainerOf(r.calibration_case->row);
    std::string& best = newest[key(*r.calibration_case)];
    best = std::max(best, container);
  }
  std::vector<bench::RowResult> kept;
  for (const bench::RowResult& r : results) {
    const std::string container = bench::ContainerOf(r.calibration_case->row);
    if (container.empty() || container == newest[key(*r.calibration_case)]) kept.push_back(r);
  }
  return kept;
}

void PrintRankAccuracy(const std::vector<bench::RowResult>& results) {
  std::map<std::string, std::vector<const bench::RowResult*>> groups;
  for (const bench::RowResult& r : results) {
    const bench::CalibrationCase& c = *r.calibration_case;
    const std::string key =
        fmt::format("{} | {} | {} GPUs | {} | {}", c.preset, c.gpu, c.training.parallel.world_size,
                    c.row.precision, c.row.source);
    groups[key].push_back(&r);
  }
  fmt::print(
      "\nRank accuracy (groups of >= 2 layouts: model | GPU | world | precision | source)\n");
  fmt::print("{:>4} {:>9} {:>10}  {}\n", "rows", "spearman", "best@top3", "group");
  int64_t num_groups = 0, in_top3 = 0;
  double rho_sum = 0;
  for (const auto& [key, rows] : groups) {
    // A sweep needs two layouts: rows of one layout that differ in measured speed ran different
    // software (torchtitan's compile / AsyncTP variants) and have no order to predict.
    std::set<std::string> layouts;
    for (const bench::RowResult* r : rows) {
      const config::TrainingConfig& t = r->calibration_case->training;
      std::string key = Layout(t) + fmt::format(" rc{}", static_cast<int>(t.recompute.granularity));
      for (const std::string& module : t.recompute.modules) key += " " + module;
      layouts.insert(std::move(key));
    }
    if (layouts.size() < 2) continue;
    std::vector<double> measured, simulated;
    for (const bench::RowResult* r : rows) {
      measured.push_back(*r->calibration_case->row.tokens_per_second_per_gpu);
      simulated.push_back(r->predicted_tokens_per_second_per_gpu);
    }
    const size_t best =
        static_cast<size_t>(std::max_element(measured.begin(), measured.end()) - measured.begin());
    int64_t faster = 0;  // simulated strictly faster than the measured best's simulation
    for (const double s : simulated) faster += s > simulated[best];
    const double rho = Spearman(measured, simulated);
    fmt::print("{:>4} {:>+9.2f} {:>10}  {}\n", rows.size(), rho, faster < 3 ? "yes" : "no", key);
    ++num_groups;
    in_top3 += faster < 3;
    rho_sum += rho;
  }
  if (num_groups > 0) {
    fmt::print(
        "mean Spearman {:+.2f} over {} groups; measured best in the simulated top 3 in {} "
        "of {}\n",
        rho_sum / static_cast<double>(num_groups), num_groups, in_top3, num_groups);
  }
}

int Run(int argc, char** argv) {
  std::string csv = TRAINSCOPE_CALIBRATION_CSV;
  bench::Efficiencies efficiencies;
  bool with_tflops_rows = false;
  std::optional<int64_t> explain_line;
  std::string trace_path;  // with --explain: the row's Chrome trace
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--with-tflops-rows") {
      with_tflops_rows = true;
    } else if (arg == "--explain" && i + 1 < argc) {
      explain_line = std::stoll(argv[++i]);
    } else if (arg == "--trace" && i + 1 < argc) {
      trace_path = argv[++i];
    } else if (arg == "--calibration" && i + 1 < argc) {
      const io::CalibrationOverrides overrides = io::LoadCalibrationFile(argv[++i]);
      efficiencies.compute = io::ApplyCalibration(overrides, efficiencies.compute);
      efficiencies.link_overrides = overrides.links;
    } else {
      csv = arg;
    }
  }
  const bench::CaseSet set = bench::LoadCases(csv, with_tflops_rows);
  if (explain_line) {
    // One row's `simulate` report, with the assumptions its case was built on.
    for (const bench::CalibrationCase& c : set.cases) {
      if (c.row.line != *explain_line) continue;
      const study::Study study = bench::StudyOf(c, efficiencies);
      fmt::print("line {}: {} on {} GPUs ({}), measured {:.0f} tok/s/GPU\n", c.row.line, c.preset,
                 c.training.parallel.world_size, c.gpu, *c.row.tokens_per_second_per_gpu);
      for (const std::string& assumption : c.assumptions) fmt::print("  assumed: {}\n", assumption);
      const study::StudyResult result = study::RunStudy(study);
      fmt::print("{}", report::RenderSimulateText(study, result));
      if (!trace_path.empty()) {
        io::WriteFileAtomically(trace_path, report::RenderChromeTrace(result.simulation));
      }
      return 0;
    }
    throw InputError(fmt::format("--explain {}: no modelled row on that line", *explain_line));
  }
  const std::vector<bench::RowResult> results = bench::Evaluate(set.cases, efficiencies);
  fmt::print("{:>5} {:<18} {:<10} {:<42} {:<10} {:>9} {:>9} {:>7}  {:>7} {:>7} {:>7}\n", "line",
             "model", "gpu", "layout", "precision", "tok/s", "pred", "err", "TFLOP/s", "pred",
             "err");
  std::map<std::string, std::vector<bench::RowResult>> by_gpu;
  double flops_error_sum = 0;
  int64_t flops_rows = 0;
  for (const bench::RowResult& r : results) {
    const bench::CalibrationCase& c = *r.calibration_case;
    by_gpu[c.gpu].push_back(r);
    std::string flops = "      -       -       -";
    if (c.row.flops_per_second_per_gpu) {
      const double measured_tflops = *c.row.flops_per_second_per_gpu / 1e12;
      // Compare TFLOP/s only where the source credits the same FLOPs per token as Megatron's
      // formula (within 3%; sources differ on the attention term, causal halving, LM head and MTP).
      const double source_per_token = measured_tflops / *c.row.tokens_per_second_per_gpu;
      const double ours_per_token =
          r.predicted_tflops_per_gpu / r.predicted_tokens_per_second_per_gpu;
      if (std::abs(source_per_token / ours_per_token - 1) < 0.03) {
        const double err = r.predicted_tflops_per_gpu / measured_tflops - 1;
        flops = fmt::format("{:7.0f} {:7.0f} {:+6.1f}%", measured_tflops,
                            r.predicted_tflops_per_gpu, 100 * err);
        flops_error_sum += std::abs(err);
        ++flops_rows;
      }
    }
    fmt::print("{:>5} {:<18} {:<10} {:<42} {:<10} {:9.0f} {:9.0f} {:+6.1f}%  {}\n", c.row.line,
               c.preset.substr(0, 18), c.gpu, Layout(c.training), c.row.precision.substr(0, 10),
               *c.row.tokens_per_second_per_gpu, r.predicted_tokens_per_second_per_gpu,
               100 * r.error_fraction, flops);
  }
  fmt::print("\nMAPE tokens/s/GPU: {:.1f}% over {} rows\n", 100 * bench::MeanAbsoluteError(results),
             results.size());
  for (const char* family : {"megatron-bridge", "nemo", "torchtitan", "automodel", "other"}) {
    int64_t n = 0;
    for (const bench::RowResult& r : results) n += r.calibration_case->source_family == family;
    if (n > 0) {
      fmt::print("  {:<16} {:5.1f}% over {} rows\n", family,
                 100 * bench::MeanAbsoluteError(results, {family}), n);
    }
  }
  for (const auto& [gpu, rows] : by_gpu) {
    fmt::print("  {:<16} {:5.1f}% over {} rows\n", gpu, 100 * bench::MeanAbsoluteError(rows),
               rows.size());
  }
  std::map<std::string, std::vector<bench::RowResult>> by_dispatcher;
  for (const bench::RowResult& r : results) {
    by_dispatcher[bench::DispatcherOf(*r.calibration_case)].push_back(r);
  }
  for (const auto& [dispatcher, rows] : by_dispatcher) {
    fmt::print("  {:<16} {:5.1f}% over {} rows\n", "dispatcher " + dispatcher,
               100 * bench::MeanAbsoluteError(rows), rows.size());
  }
  std::map<std::string, std::vector<bench::RowResult>> by_precision;
  for (const bench::RowResult& r : results)
    by_precision[PrecisionOf(*r.calibration_case)].push_back(r);
  for (const auto& [precision, rows] : by_precision) {
    fmt::print("  {:<16} {:5.1f}% over {} rows\n", "precision " + precision,
               100 * bench::MeanAbsoluteError(rows), rows.size());
  }
  const std::vector<bench::RowResult> newest = NewestContainerRows(results);
  fmt::print("MAPE tokens/s/GPU, newest container per configuration: {:.1f}% over {} rows\n",
             100 * bench::MeanAbsoluteError(newest), newest.size());
  if (flops_rows > 0) {
    fmt::print("MAPE TFLOP/s/GPU (rows with matching FLOPs convention): {:.1f}% over {} rows\n",
               100 * flops_error_sum / static_cast<double>(flops_rows), flops_rows);
  }
  PrintRankAccuracy(results);
  fmt::print("\nSkipped rows of expressible models:\n");
  for (const std::string& line : set.skipped) fmt::print("  {}\n", line);
  return 0;
}

}  // namespace
}  // namespace trainscope

int main(int argc, char** argv) {
  try {
    return trainscope::Run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
