// GPU preset table. Sources: glennklockwood.com H100/B200 tables, NVIDIA-NeMo/Automodel
// nemo_automodel/_transformers/mfu.py peak values, stas00/ml-engineering network/README.md,
// pytorch/torchtitan benchmarks/, public H200/H20/B200 spec summaries. Figures no primary source
// confirms are marked "unconfirmed" here.
//
// memory_bytes is the usable HBM where a published run measured it; otherwise it is the
// published capacity read in decimal GB (the vendors' unit convention), which is an upper
// bound on what a job can allocate.
#include "trainscope/config/hardware.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include "trainscope/units.h"

namespace trainscope::config {
namespace {

double Teraflops(double teraflops_per_second) { return teraflops_per_second * kFlopsPerTeraflop; }
double GigabytesPerSecond(double gb_per_second) { return gb_per_second * kBytesPerGB; }
double TerabytesPerSecond(double tb_per_second) { return tb_per_second * kBytesPerTB; }
double GigabitsPerSecond(double gbit_per_second) {
  return gbit_per_second * kBitsPerGigabit / kBitsPerByte;
}
int64_t DecimalGigabytes(int64_t gb) { return gb * static_cast<int64_t>(kBytesPerGB); }
ComputeCapability Sm(int major, int minor) { return {.major = major, .minor = minor}; }

// Built on each call: a function-local table, no mutable global state. Compute capabilities:
// NVIDIA's "CUDA GPUs" compute-capability table (developer.nvidia.com/cuda-gpus): Hopper (H100,
// H200, and the export parts H800 and H20) 9.0, Ampere A100/A800 8.0, Ada L20 8.9, Blackwell
// B200/GB200 10.0 and B300/GB300 10.3.
std::array<GpuSpec, 12> GpuTable() {
  return {{
      // H100 SXM5 700 W. Usable memory: a calibration job reached 80,999 MiB (79.1 GiB) at its
      // limit (Megatron-Bridge examples/model_verification_cards/glm5-2/card.yaml).
      // NIC: 1x 400 Gb/s CX-7 per GPU.
      {"H100", Teraflops(989.4), Teraflops(1978.9), 80'999 * kBytesPerMiB, TerabytesPerSecond(3.35),
       GigabytesPerSecond(450), GigabitsPerSecond(400), Sm(9, 0)},
      // H100 96 GB HBM2e, 500 W (Meta Grand Teton, torchtitan benchmarks). Its peak is not
      // published: torchtitan's benchmark page (benchmarks/llama3_h100_202412_torchtitan.md,
      // footnote 2) puts it "between SXM and NVL"; the midpoints of the dense datasheet figures
      // are used (estimate): BF16 (835.5 NVL + 989.4 SXM) / 2 = 912.45, FP8 (1670.5 + 1978.9) / 2
      // = 1824.7 TFLOP/s. Memory: published 96 GB, no usable figure.
      {"H100-96GB", Teraflops(912.45), Teraflops(1824.7), DecimalGigabytes(96),
       TerabytesPerSecond(2.4), GigabytesPerSecond(450), GigabitsPerSecond(400), Sm(9, 0)},
      // H200 SXM: 141 GB HBM3e, "≈139-140 GiB usable, approximate"; the lower end is used.
      {"H200", Teraflops(989.4), Teraflops(1978.9), 139 * kBytesPerGiB, TerabytesPerSecond(4.8),
       GigabytesPerSecond(450), GigabitsPerSecond(400), Sm(9, 0)},
      // H800 SXM: NVIDIA's H800 datasheet gives NVLink 400 GB/s, the bidirectional total in the
      // convention of H100 SXM's 900 GB/s, so 200 GB/s per direction (8 NVLink4 links of 25 GB/s
      // each way). Consistent with 215 GB/s NVLS all-reduce busbw on 8 x H800 (NVIDIA/nccl
      // #1374). Memory: published 80 GB.
      {"H800", Teraflops(989.4), Teraflops(1978.9), DecimalGigabytes(80), TerabytesPerSecond(3.35),
       GigabytesPerSecond(200), GigabitsPerSecond(400), Sm(9, 0)},
      // H20: 148 / 296 TFLOP/s (Automodel mfu.py: 148e12). Scale-out is deployment-specific.
      {"H20", Teraflops(148), Teraflops(296), DecimalGigabytes(96), TerabytesPerSecond(4.0),
       GigabytesPerSecond(450), 0, Sm(9, 0)},
      // A100 SXM 80 GB: no FP8; NVLink3 300 GB/s; 200 Gb/s HDR NIC = 25 GB/s.
      {"A100", Teraflops(312), 0, DecimalGigabytes(80), TerabytesPerSecond(2.039),
       GigabytesPerSecond(300), GigabitsPerSecond(200), Sm(8, 0)},
      // A800 SXM 80 GB: NVLink 200 GB/s (unconfirmed); no NIC figure.
      {"A800", Teraflops(312), 0, DecimalGigabytes(80), TerabytesPerSecond(2.039),
       GigabytesPerSecond(200), 0, Sm(8, 0)},
      // L20 PCIe: 119.5 BF16 (Automodel mfu.py); FP8 ≈239 and HBM ≈864 GB/s (both unconfirmed);
      // 48 GB GDDR6; no NVLink, the scale-up link is PCIe Gen4 x16 ≈ 32 GB/s per direction.
      {"L20", Teraflops(119.5), Teraflops(239), DecimalGigabytes(48), GigabytesPerSecond(864),
       GigabytesPerSecond(32), 0, Sm(8, 9)},
      // Dense FP4 (NVFP4) peaks, the sparse datasheet figures halved: HGX B200 72 PFLOP/s per 8
      // GPUs = 9000, GB200 NVL72 720 PFLOP/s per 72 = 10000, HGX B300 108 / 8 = 13500, GB300 NVL72
      // 1080 / 72 = 15000 (NVIDIA HGX and GB200 / GB300 NVL72 product pages); Hopper and older
      // have no FP4 tensor cores (0).
      // B200 HGX 1000 W: 192 GB raw, ≈180 GB usable; NVLink5 900 GB/s; 400 Gb/s NIC.
      {"B200", Teraflops(2250), Teraflops(4500), DecimalGigabytes(180), TerabytesPerSecond(8),
       GigabytesPerSecond(900), GigabitsPerSecond(400), Sm(10, 0), HostCpu::kX86, Teraflops(9000)},
      // GB200 NVL72 1200 W: "plan for ≈184 GiB usable" (unconfirmed; a job reserved 173.9 GiB
      // without failing); 72-GPU NVLink domain at 900 GB/s; 1x 400 Gb/s CX-7.
      {"GB200", Teraflops(2500), Teraflops(5000), 184 * kBytesPerGiB, TerabytesPerSecond(8),
       GigabytesPerSecond(900), GigabitsPerSecond(400), Sm(10, 0), HostCpu::kGrace,
       Teraflops(10000)},
      // B300 (HGX / DGX B300): dense BF16 2250 and FP8 4500 TFLOP/s, the HGX B200 figures (the
      // air/liquid-cooled HGX part, not the NVL72 one): the peaks stas00/ml-engineering's MAMF
      // table divides by for B300 SXM, whose measured maxima (BF16 1769, FP8 3353 TFLOP/s,
      // torch 2.9.1) sit within 2 % of B200 SXM's (1745, 3433). Blackwell Ultra raised the FP4
      // rate, not BF16/FP8. 288 GB HBM3e published, no usable figure; 8 TB/s; NVLink5 900 GB/s;
      // 800 Gb/s CX-8 per GPU (DGX B300: 8 per node).
      {"B300", Teraflops(2250), Teraflops(4500), DecimalGigabytes(288), TerabytesPerSecond(8),
       GigabytesPerSecond(900), GigabitsPerSecond(800), Sm(10, 3), HostCpu::kX86, Teraflops(13500)},
      // GB300 NVL72: BF16 2500 / FP8 5000 TFLOP/s dense as GB200 (the NVL72 parts run at the
      // higher power; peaks unconfirmed for Blackwell Ultra) in a 72-GPU NVLink domain; 800 Gb/s
      // CX-8 per GPU. Both NVL72 systems have Grace hosts.
      {"GB300", Teraflops(2500), Teraflops(5000), DecimalGigabytes(288), TerabytesPerSecond(8),
       GigabytesPerSecond(900), GigabitsPerSecond(800), Sm(10, 3), HostCpu::kGrace,
       Teraflops(15000)},
  }};
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

}  // namespace

std::string ToString(ComputeCapability capability) {
  return std::to_string(capability.major) + "." + std::to_string(capability.minor);
}

std::optional<GpuSpec> FindGpu(std::string_view name) {
  for (GpuSpec& gpu : GpuTable()) {
    if (EqualsIgnoringCase(gpu.name, name)) return std::move(gpu);
  }
  return std::nullopt;
}

std::vector<std::string> GpuNames() {
  std::vector<std::string> names;
  for (const GpuSpec& gpu : GpuTable()) names.push_back(gpu.name);
  return names;
}

}  // namespace trainscope::config
