#include "trainscope/report/simulate_report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "trainscope/units.h"

namespace trainscope::report {
namespace {

using Json = nlohmann::ordered_json;

constexpr double kTera = 1e12;

Json SecondsMap(const std::map<std::string, double>& seconds) {
  Json out = Json::object();
  for (const auto& [name, value] : seconds) out[name] = value;
  return out;
}

Json BreakdownJson(const sim::Breakdown& b) {
  return Json{{"compute_s", SecondsMap(b.compute_seconds)},
              {"exposed_comm_s", SecondsMap(b.exposed_comm_seconds)},
              {"bubble_s", b.bubble_seconds},
              {"optimizer_s", b.optimizer_seconds},
              {"compute_total_s", b.total_compute_seconds},
              {"exposed_comm_total_s", b.total_exposed_comm_seconds},
              {"launch_overhead_s", b.launch_overhead_seconds},
              {"fp8_overhead_s", b.fp8_overhead_seconds},
              {"host_sync_s", b.host_sync_seconds}};
}

bool Fits(const study::Study& study, const study::StudyResult& result) {
  return result.memory.max_peak_bytes <= study.cluster.gpu.memory_bytes;
}

// The pipeline stage with the highest nvidia-smi peak.
const cost::RankMemory& Busiest(const study::StudyResult& result) {
  return result.memory.stages.at(static_cast<size_t>(result.memory.max_peak_pipeline_rank));
}

// The GDN kernel backend's name, or "" for models without Gated DeltaNet layers.
std::string GdnBackend(const study::Study& study) {
  return study.model.HasGdn() ? std::string(cost::GdnBackendName(study.gdn_backend))
                              : std::string();
}

std::string Gib(int64_t bytes) {
  return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / static_cast<double>(kBytesPerGiB));
}

std::string Ms(double seconds) { return fmt::format("{:.3f} ms", seconds * 1e3); }

std::string Percent(double part, double whole) {
  return whole > 0 ? fmt::format("{:5.1f}%", 100 * part / whole) : "    -";
}

Json DynamicBatchingJson(const study::Study& study, const cost::DynamicBatchStep& d) {
  return Json{{"max_tokens_per_gpu", *study.training.batch.max_tokens_per_gpu},
              {"bin_capacity_tokens", d.bin_capacity_tokens},
              {"num_samples", d.num_samples},
              {"num_bins", d.num_bins},
              {"micro_batches_per_rank", d.num_micro_batches_per_rank},
              {"mean_bin_tokens", d.mean_bin_tokens},
              {"max_bin_tokens", d.max_bin_tokens},
              {"fill", d.fill},
              {"busiest_dp_rank", d.busiest_rank},
              {"simulated_bin_tokens", d.simulated_bin_tokens},
              {"memory_bin_tokens", d.memory_bin_tokens},
              {"attention_flops_fraction", d.attention_flops_fraction},
              {"sample_lengths", study.sequence_lengths ? "distribution" : "seq_length"}};
}

std::string DynamicBatchingText(const study::Study& study, const cost::DynamicBatchStep& d) {
  return fmt::format(
      "\nDynamic batching (slime, {} tokens/GPU x CP {} = {} tokens per micro-batch; samples: {})\n"
      "  {} samples, {} real tokens -> {} micro-batches, {} per DP rank\n"
      "  tokens per micro-batch: mean {:.0f}, max {}; fill {:.1f}% of the budget\n"
      "  simulated: {} x {} padded tokens (DP rank {}), attention x {:.3f}; memory: {} tokens\n",
      *study.training.batch.max_tokens_per_gpu, study.training.parallel.context,
      d.bin_capacity_tokens,
      study.sequence_lengths ? "--seq-length-distribution" : "each --seq-length long",
      d.num_samples, d.real_tokens, d.num_bins, d.num_micro_batches_per_rank, d.mean_bin_tokens,
      d.max_bin_tokens, 100 * d.fill, d.num_micro_batches_per_rank, d.simulated_bin_tokens,
      d.busiest_rank, d.attention_flops_fraction, d.memory_bin_tokens);
}

// One line with each stage's FP8 overhead (docs/cost-model.md, "FP8 overhead kernels"), or ""
// when no stage has any (BF16 runs).
std::string Fp8StagesText(const sim::StepSimulation& sim) {
  std::string stages;
  bool any = false;
  for (size_t i = 0; i < sim.lanes.size(); ++i) {
    const double seconds = sim.stage_breakdowns[i].fp8_overhead_seconds;
    any = any || seconds > 0;
    stages += fmt::format("{}pp{} {}", i == 0 ? "" : ", ", sim.lanes[i].pipeline_rank, Ms(seconds));
  }
  if (!any) return "";
  return "  FP8 cast / amax / scales (in compute and launch): " + stages + "\n";
}

}  // namespace

std::string RenderSimulateJson(const study::Study& study, const study::StudyResult& result) {
  const sim::StepSimulation& sim = result.simulation;
  const sim::StepMetrics& m = result.metrics;
  const config::ClusterSpec& cluster = study.cluster;
  Json stages = Json::array();
  for (size_t i = 0; i < sim.lanes.size(); ++i) {
    const sim::Breakdown& b = sim.stage_breakdowns[i];
    stages.push_back({{"pp_rank", sim.lanes[i].pipeline_rank},
                      {"rank", sim.lanes[i].rank},
                      {"end_s", sim.lanes[i].end_seconds},
                      {"compute_s", b.total_compute_seconds},
                      {"exposed_comm_s", b.total_exposed_comm_seconds},
                      {"launch_overhead_s", b.launch_overhead_seconds},
                      {"fp8_overhead_s", b.fp8_overhead_seconds},
                      {"host_sync_s", b.host_sync_seconds},
                      {"bubble_s", b.bubble_seconds},
                      {"compute_by_family_s", SecondsMap(b.compute_seconds)},
                      {"exposed_comm_by_group_s", SecondsMap(b.exposed_comm_seconds)}});
  }
  Json critical = Json::array();
  for (const sim::CriticalPathShare& share : sim.critical_path) {
    critical.push_back({{"pp_rank", share.pipeline_rank},
                        {"category", share.category},
                        {"seconds", share.seconds}});
  }
  const config::ParallelSizes& p = study.training.parallel;
  Json out{{"model", study.model.name},
           {"step_time_s", m.step_seconds},
           {"tokens_per_s_per_gpu", m.tokens_per_second_per_gpu},
           {"model_tflops_per_gpu", m.model_flops_per_second_per_gpu / kTera},
           {"mfu", m.mfu},
           {"tflops_per_gpu_6n_active",
            m.six_n_flops_per_step / m.step_seconds /
                static_cast<double>(study.training.parallel.world_size) / kTera},
           {"mfu_6n_active", m.six_n_mfu},
           {"breakdown", BreakdownJson(sim.breakdown)},
           {"critical_pp_rank", sim.critical_pipeline_rank},
           {"busiest_pp_rank", sim.busiest_pipeline_rank},
           {"critical_path", critical},
           {"stages", stages},
           {"tokens_per_step", m.tokens_per_step},
           {"model_flops_per_step", m.model_flops_per_step},
           {"num_micro_batches", sim.num_micro_batches},
           {"simulated_micro_batches", sim.simulated_micro_batches},
           {"parallel",
            {{"world_size", p.world_size},
             {"tp", p.tensor},
             {"pp", p.pipeline},
             {"vpp", p.virtual_stages},
             {"cp", p.context},
             {"ep", p.expert},
             {"etp", p.ExpertTensor()},
             {"dp", p.Data()}}},
           {"cluster",
            {{"gpu", cluster.gpu.name},
             {"peak_tflops", cluster.gpu.bf16_flops_per_second / kTera},
             {"gpus_per_node", cluster.gpus_per_node},
             {"nvlink_domain", cluster.nvlink_domain_gpus},
             {"scale_out_gbps", cluster.scale_out_bytes_per_second * 8 / 1e9}}},
           {"moe_load_factor", result.moe_load_factor},
           {"memory",
            {{"max_peak_bytes", result.memory.max_peak_bytes},
             {"max_peak_pp_rank", result.memory.max_peak_pipeline_rank},
             {"allocated_bytes", Busiest(result).allocated_bytes},
             {"reserved_bytes", Busiest(result).reserved_bytes},
             {"nvidia_smi_bytes", Busiest(result).peak_bytes},
             {"gpu_memory_bytes", cluster.gpu.memory_bytes},
             {"fits", Fits(study, result)}}}};
  if (const std::string backend = GdnBackend(study); !backend.empty()) out["gdn_backend"] = backend;
  if (result.overflow_rerun_seconds) out["overflow_rerun_s"] = *result.overflow_rerun_seconds;
  if (result.dynamic_batching) {
    out["dynamic_batching"] = DynamicBatchingJson(study, *result.dynamic_batching);
  }
  if (result.sequence_packing) {
    const study::SequencePackingResult& s = *result.sequence_packing;
    out["sequence_lengths"] = {
        {"mean_length", s.mean_length},
        {"bshd_useful_token_fraction", s.bshd_useful_token_fraction},
        {"bshd_useful_tokens_per_s_per_gpu", s.bshd_useful_tokens_per_s_per_gpu},
        {"thd_step_time_s", s.thd_step_seconds},
        {"thd_useful_tokens_per_s_per_gpu", s.thd_useful_tokens_per_s_per_gpu}};
  }
  if (result.comm_guard) {
    const study::CommGuardReport& g = *result.comm_guard;
    out["comm_guard"] = {{"mode", sim::ToString(g.mode)},
                         {"guarded_calls", g.guarded_calls},
                         {"free_bytes_at_peak", g.free_bytes_at_peak},
                         {"clear_fraction", g.clear_fraction},
                         {"clears", g.clears},
                         {"check_seconds", g.check_seconds},
                         {"clear_seconds", g.clear_seconds},
                         {"seconds", g.seconds}};
  }
  return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string RenderSimulateText(const study::Study& study, const study::StudyResult& result) {
  const sim::StepSimulation& sim = result.simulation;
  const sim::StepMetrics& m = result.metrics;
  const config::ClusterSpec& cluster = study.cluster;
  const std::string gdn_backend = GdnBackend(study);
  const config::ParallelSizes& p = study.training.parallel;
  const std::optional<cost::DynamicBatchStep>& dynamic = result.dynamic_batching;
  std::string out = fmt::format(
      "{} on {} x {} (TP{} PP{} VPP{} CP{} EP{} ETP{} DP{}), {} micro-batches of {} x {} "
      "tokens{}\n\n",
      study.model.name, p.world_size, study.cluster.gpu.name, p.tensor, p.pipeline,
      p.virtual_stages, p.context, p.expert, p.ExpertTensor(), p.Data(), sim.num_micro_batches,
      dynamic ? 1 : study.training.batch.micro_batch_size,
      dynamic ? dynamic->simulated_bin_tokens : study.training.batch.seq_length,
      dynamic ? " (dynamic batching)" : "");
  out += fmt::format("  step time             {}\n", Ms(m.step_seconds));
  out += fmt::format("  tokens/s/GPU          {:.1f}\n", m.tokens_per_second_per_gpu);
  out += fmt::format("  model TFLOP/s/GPU     {:.1f}  (Megatron FLOPs convention)\n",
                     m.model_flops_per_second_per_gpu / kTera);
  out += fmt::format("  MFU                   {:.1f}%  (of {:.0f} TFLOP/s dense BF16)\n",
                     100 * m.mfu, cluster.gpu.bf16_flops_per_second / kTera);
  out += fmt::format("  MFU (6·N_active·D)    {:.1f}%  (6 x active params x tokens, as slime)\n",
                     100 * m.six_n_mfu);
  if (result.moe_load_factor != 1) {
    out += fmt::format("  MoE load factor       {:.3f}  (busiest expert rank / mean)\n",
                       result.moe_load_factor);
  }
  if (!gdn_backend.empty()) {
    out += fmt::format("  GDN kernel backend    {}\n", gdn_backend);
  }
  const sim::Breakdown& b = sim.breakdown;
  out += fmt::format("\nWhere the time goes (pipeline stage {}, the busiest)\n",
                     sim.busiest_pipeline_rank);
  out += fmt::format("  {:<24}{:>14}{:>8}\n", "compute", Ms(b.total_compute_seconds),
                     Percent(b.total_compute_seconds, m.step_seconds));
  for (const auto& [family, seconds] : b.compute_seconds) {
    out += fmt::format("    {:<22}{:>14}{:>8}\n", family, Ms(seconds),
                       Percent(seconds, m.step_seconds));
  }
  out +=
      fmt::format("  {:<24}{:>14}{:>8}\n", "launch / host overhead", Ms(b.launch_overhead_seconds),
                  Percent(b.launch_overhead_seconds, m.step_seconds));
  if (b.host_sync_seconds > 0) {
    out += fmt::format("    {:<22}{:>14}{:>8}  (of it: GPU values read back)\n", "host syncs",
                       Ms(b.host_sync_seconds), Percent(b.host_sync_seconds, m.step_seconds));
  }
  if (b.fp8_overhead_seconds > 0) {
    out += fmt::format("  {:<24}{:>14}{:>8}  (in compute and launch above)\n",
                       "FP8 cast / amax / scales", Ms(b.fp8_overhead_seconds),
                       Percent(b.fp8_overhead_seconds, m.step_seconds));
  }
  out += fmt::format("  {:<24}{:>14}{:>8}\n", "exposed communication",
                     Ms(b.total_exposed_comm_seconds),
                     Percent(b.total_exposed_comm_seconds, m.step_seconds));
  for (const auto& [group, seconds] : b.exposed_comm_seconds) {
    out += fmt::format("    {:<22}{:>14}{:>8}\n", group, Ms(seconds),
                       Percent(seconds, m.step_seconds));
  }
  out += fmt::format("  {:<24}{:>14}{:>8}\n", "pipeline bubble / idle", Ms(b.bubble_seconds),
                     Percent(b.bubble_seconds, m.step_seconds));
  if (result.overflow_rerun_seconds) {
    out += fmt::format(
        "  {:<24}{:>14}{:>8}  (load {:.3f} over the rank budget {:g}: the step runs again "
        "without it)\n",
        "overflow rerun", Ms(*result.overflow_rerun_seconds),
        Percent(*result.overflow_rerun_seconds, m.step_seconds), result.moe_load_factor,
        *study.training.moe.rank_capacity_factor);
  }
  out += "\nCritical path (largest shares)\n";
  for (size_t i = 0; i < sim.critical_path.size() && i < 8; ++i) {
    const sim::CriticalPathShare& share = sim.critical_path[i];
    out += fmt::format("  pp{:<3} {:<26}{:>14}{:>8}\n", share.pipeline_rank, share.category,
                       Ms(share.seconds), Percent(share.seconds, m.step_seconds));
  }
  out += fmt::format("\nStages (busiest: pp{})\n", sim.busiest_pipeline_rank);
  out += fmt::format("  {:<6}{:>8}{:>14}{:>14}{:>14}{:>14}{:>14}  {}\n", "pp", "rank", "finishes",
                     "compute", "launch", "exposed comm", "idle", "exposed comm by group");
  for (size_t i = 0; i < sim.lanes.size(); ++i) {
    const sim::Breakdown& s = sim.stage_breakdowns[i];
    std::string groups;
    for (const auto& [group, seconds] : s.exposed_comm_seconds) {
      groups.append(groups.empty() ? "" : ", ").append(group).append(" ").append(Ms(seconds));
    }
    out +=
        fmt::format("  {:<6}{:>8}{:>14}{:>14}{:>14}{:>14}{:>14}  {}\n", sim.lanes[i].pipeline_rank,
                    sim.lanes[i].rank, Ms(sim.lanes[i].end_seconds), Ms(s.total_compute_seconds),
                    Ms(s.launch_overhead_seconds), Ms(s.total_exposed_comm_seconds),
                    Ms(s.bubble_seconds), groups.empty() ? "-" : groups);
  }
  out += Fp8StagesText(sim);
  if (dynamic) out += DynamicBatchingText(study, *dynamic);
  if (result.sequence_packing) {
    const study::SequencePackingResult& s = *result.sequence_packing;
    out += fmt::format(
        "\nSequence lengths (mean {:.0f} tokens)\n"
        "  BSHD padded: {:.1f}% of tokens are real, {:.1f} useful tokens/s/GPU\n"
        "  THD packed:  step {}, {:.1f} useful tokens/s/GPU\n",
        s.mean_length, 100 * s.bshd_useful_token_fraction, s.bshd_useful_tokens_per_s_per_gpu,
        Ms(s.thd_step_seconds), s.thd_useful_tokens_per_s_per_gpu);
  }
  if (result.comm_guard) {
    const study::CommGuardReport& g = *result.comm_guard;
    out += fmt::format(
        "\nComm memory guard ({}): {} guarded calls per step on rank 0, {:.2f} GiB free at the "
        "peak;\n  {:.1f}% of calls find < 3 GiB free and clear the allocator ({:.0f} clears x {}), "
        "{} in all\n",
        sim::ToString(g.mode), g.guarded_calls, g.free_bytes_at_peak / kBytesPerGiB,
        100 * g.clear_fraction, g.clears, Ms(g.clear_seconds), Ms(g.seconds));
  }
  out += fmt::format("\nMemory: peak {} on pipeline stage {} of {} usable: {}\n",
                     Gib(result.memory.max_peak_bytes), result.memory.max_peak_pipeline_rank,
                     Gib(cluster.gpu.memory_bytes), Fits(study, result) ? "fits" : "does NOT fit");
  const cost::RankMemory& busiest = Busiest(result);
  out += fmt::format(
      "  allocated {} (torch.cuda.max_memory_allocated), reserved {} "
      "(torch.cuda.max_memory_reserved), nvidia-smi {} (+ CUDA context and NCCL buffers)\n",
      Gib(busiest.allocated_bytes), Gib(busiest.reserved_bytes), Gib(busiest.peak_bytes));
  return out;
}

}  // namespace trainscope::report
