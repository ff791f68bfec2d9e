// Which figure a calibration row's peak memory is (bench/calibration_rows.h), from notes worded
// as the rows of data/calibration/calibration_runs.csv word them.
#include "calibration_rows.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace trainscope::bench {
namespace {

io::CalibrationRow Row(std::string source, std::string notes) {
  io::CalibrationRow row;
  row.source = std::move(source);
  row.notes = std::move(notes);
  return row;
}

TEST(CalibrationRowsTest, NotesNamingAllocatedAndReservedGiveTheAllocatedFigure) {
  // Line 233: "peak 59.0 GiB allocated / 69.344 GiB reserved", peak_mem_gib 59.0.
  EXPECT_EQ(MemoryFigureOf(Row("NVIDIA-NeMo/Megatron-Bridge examples/model_verification",
                               "step 27588.58 ms; peak 59.0 GiB allocated / 69.344 GiB reserved")),
            MemoryFigure::kAllocated);
}

TEST(CalibrationRowsTest, ObservedGpuMemoryIsTheNvidiaSmiFigure) {
  // Line 242: "peak observed GPU memory 80,999 MiB".
  EXPECT_EQ(MemoryFigureOf(Row("NVIDIA-NeMo/Megatron-Bridge examples/model_verification",
                               "peak observed GPU memory 80,999 MiB (=79.1 GiB)")),
            MemoryFigure::kNvidiaSmi);
  EXPECT_EQ(MemoryFigureOf(Row("some run", "nvidia-smi reading at step 100")),
            MemoryFigure::kNvidiaSmi);
}

TEST(CalibrationRowsTest, WithoutANoteTheFrameworkDecides) {
  EXPECT_EQ(MemoryFigureOf(Row("pytorch/torchtitan benchmarks/llama3_h100", "FSDP8; selective AC")),
            MemoryFigure::kReserved);
  EXPECT_EQ(MemoryFigureOf(Row("NVIDIA-NeMo/Megatron-Bridge skills/nemo-mbridge-perf", "DP1")),
            MemoryFigure::kAllocated);
  EXPECT_EQ(MemoryFigureOf(Row("some Megatron run", "peak 70 GiB reserved")),
            MemoryFigure::kReserved);
}

TEST(CalibrationRowsTest, FigureNames) {
  EXPECT_EQ(ToString(MemoryFigure::kAllocated), "allocated");
  EXPECT_EQ(ToString(MemoryFigure::kReserved), "reserved");
  EXPECT_EQ(ToString(MemoryFigure::kNvidiaSmi), "nvidia-smi");
}

}  // namespace
}  // namespace trainscope::bench
