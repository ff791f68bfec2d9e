#include <benchmark/benchmark.h>

#include "trainscope/io/hf_config_loader.h"

static void BM_LoadPreset(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(trainscope::io::LoadPreset("Qwen3.5-397B-A17B"));
  }
}
BENCHMARK(BM_LoadPreset);

BENCHMARK_MAIN();
