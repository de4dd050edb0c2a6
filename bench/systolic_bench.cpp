// The systolic simulator's own speed: simulated cell updates per second of the cycle-level engine
// (one core), and the analytic engine's time per answer. Each cycle-engine run computes a real C;
// the first run of each case is checked against the fp64 reference, and a wrong C is an error.
//
//   systolic_bench [--benchmark_format=json] [...]
#include <benchmark/benchmark.h>

#include <cstring>

#include "gemmlab/systolic.hpp"
#include "gemmlab/validate.hpp"

namespace {

using namespace gemmlab;
using namespace gemmlab::systolic;

// A 512^3 GEMM on a 128x128 array, whole GEMM on chip, one dataflow and precision.
void cycle_engine(benchmark::State& state, Dataflow dataflow, Precision precision) {
  const std::int64_t size = state.range(0), side = state.range(1);
  const ArraySpec array = parse_array(std::to_string(side) + "x" + std::to_string(side));
  const Mapping mapping{.dataflow = dataflow};
  const Problem p = Problem::packed(size, size, size, precision);
  HostCase host(p, 1);
  HostBuffer<std::byte> c(host.c_bytes_with_guard());
  const GemmData data{.a = host.a().data(), .b = host.b().data(), .c = c.data(), .lda = p.lda, .ldb = p.ldb,
                      .ldc = p.ldc};
  std::memcpy(c.data(), host.c_initial().data(), c.size());
  Counts counts = simulate_cycles(array, mapping, size, size, size, precision, data);
  host.compute_expected(nullptr);
  if (const ValidationResult v = host.check(c.data()); !v.valid) {
    state.SkipWithError(("wrong C: " + v.reason).c_str());
    return;
  }
  for (auto _ : state) counts = simulate_cycles(array, mapping, size, size, size, precision, data);
  state.counters["cell_updates_per_s"] =
      benchmark::Counter(static_cast<double>(counts.cell_updates), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["simulated_cycles"] = static_cast<double>(counts.total_cycles);
}

void analytic_engine(benchmark::State& state) {
  const std::int64_t size = state.range(0);
  const ArraySpec array = preset("tpu-v5e");
  const Mapping mapping = heuristic_mapping(array, Precision::bf16);
  for (auto _ : state) benchmark::DoNotOptimize(simulate_analytic(array, mapping, size, size, size, Precision::bf16));
}

}  // namespace

BENCHMARK_CAPTURE(cycle_engine, ws_fp32, Dataflow::ws, Precision::fp32)->Args({512, 128})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(cycle_engine, ws_bf16, Dataflow::ws, Precision::bf16)->Args({512, 128})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(cycle_engine, ws_int8, Dataflow::ws, Precision::int8)->Args({512, 128})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(cycle_engine, os_fp32, Dataflow::os, Precision::fp32)->Args({512, 128})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(cycle_engine, is_fp32, Dataflow::is, Precision::fp32)->Args({512, 128})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(cycle_engine, ws_fp32_small_array, Dataflow::ws, Precision::fp32)->Args({256, 16})->Unit(benchmark::kMillisecond);
BENCHMARK(analytic_engine)->Arg(1024)->Arg(65536)->Arg(1 << 20)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
