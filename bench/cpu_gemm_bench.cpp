// Every CPU kernel next to OpenBLAS and BLIS, square sizes 256..4096, fp32 (and fp64 with
// --precision=fp64), with a GFLOP/s counter. Each kernel is validated once per size before it is
// timed; a wrong kernel is reported as an error, never as a time.
//
//   cpu_gemm_bench [--threads=N] [--precision=fp32|fp64] [--benchmark_format=json] [...]
//
// The slow teaching steps stop at the size where one run takes seconds (01/02 at 1024, 03 at
// 2048); the others and the references run every size.
#include <benchmark/benchmark.h>

#include <cstring>
#include <map>
#include <string>
#include <thread>

#include "gemmlab/builtin.hpp"
#include "gemmlab/cpu.hpp"
#include "gemmlab/evaluate.hpp"
#include "gemmlab/measure.hpp"
#include "gemmlab/setup.hpp"

namespace {

using namespace gemmlab;

int g_threads = 1;
Precision g_precision = Precision::fp32;

// The CPU and the fp64 truth the pre-check validates against (no timed reference: the benchmark
// times the references as benchmarks of their own).
EvaluationSetup& cpu_setup() {
  static EvaluationSetup setup = open_evaluation(registry().backend("cpu"), {.timed_reference = false});
  return setup;
}
Device& cpu_device() { return *cpu_setup().device; }

// Operands of one size, allocated once and shared by every benchmark of that size.
struct Operands64 {
  std::unique_ptr<DeviceBuffer> a, b, c;
  Operands view() { return {a->data(), b->data(), c->data()}; }
};
Operands64& operands_for(const Problem& p) {
  static std::map<std::int64_t, Operands64> cache;
  auto& o = cache[p.m];
  if (!o.a) {
    HostCase host(p, 42);
    Device& d = cpu_device();
    o.a = d.allocate(host.a().size());
    o.b = d.allocate(host.b().size());
    o.c = d.allocate(host.c_initial().size());
    d.upload(*o.a, host.a().data(), host.a().size());
    d.upload(*o.b, host.b().data(), host.b().size());
  }
  return o;
}

// Runs the benchmark loop and sets the GFLOP/s counter from the loop's own wall time.
template <class Run>
void timed_loop(benchmark::State& state, const Problem& p, Run run) {
  const double seconds = wall_seconds([&] {
    for (auto _ : state) run();
  });
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["GFLOP/s"] = seconds > 0 ? p.flops() * iterations / seconds * 1e-9 : 0.0;
  state.counters["threads"] = g_threads;
}

// The pre-check's Evaluator for a size: operands and fp64 truth made once, shared by all kernels.
Evaluator& checker_for(const Problem& p) {
  static std::map<std::int64_t, std::unique_ptr<Evaluator>> checkers;
  auto& e = checkers[p.m];
  if (!e) e = std::make_unique<Evaluator>(cpu_device(), p, cpu_setup().truth.get(), 42);
  return *e;
}

void bench_kernel(benchmark::State& state, const Kernel* kernel) {
  const Problem p = Problem::packed(state.range(0), state.range(0), state.range(0), g_precision);
  Device& device = cpu_device();
  Config config = kernel->default_config(device.info(), p.precision);
  if (config.count("threads")) config["threads"] = g_threads;
  EvaluationOptions check;
  check.time = false;
  const Evaluation e = checker_for(p).run(*kernel, config, nullptr, check);
  if (!e.validation.valid) {
    state.SkipWithError(("wrong result: " + e.validation.reason).c_str());
    return;
  }
  auto executable = kernel->prepare(device, p, config);
  Operands64& o = operands_for(p);
  timed_loop(state, p, [&] { executable->run(o.view()); });
  state.SetLabel(to_string(config));
}

void bench_reference(benchmark::State& state, const std::string& name) {
  const Problem p = Problem::packed(state.range(0), state.range(0), state.range(0), g_precision);
  auto reference = cpu::load_cblas(name);
  reference->set_threads(g_threads);
  Operands64& o = operands_for(p);
  timed_loop(state, p, [&] { reference->gemm(p, o.view()); });
  state.SetLabel(reference->version());
}

// Largest size at which a kernel still finishes one run in about a second on a current core.
std::int64_t largest_size(std::string_view kernel) {
  if (kernel == "01_naive" || kernel == "02_loop_order") return 1024;
  if (kernel == "03_cache_blocked") return 2048;
  return 4096;
}

void register_all() {
  const DeviceInfo& info = cpu_device().info();
  for (const Kernel* k : registry().kernels("cpu")) {
    if (!k->supported(info).ok) continue;
    auto* b = benchmark::RegisterBenchmark(("cpu/" + std::string(k->name())).c_str(), bench_kernel, k);
    for (std::int64_t n = 256; n <= largest_size(k->name()); n *= 2) b->Arg(n);
    b->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.5);
  }
  for (const auto& name : cpu::cblas_names()) {
    auto* b = benchmark::RegisterBenchmark(("reference/" + name).c_str(), bench_reference, name);
    b->RangeMultiplier(2)->Range(256, 4096)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.5);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Our own flags first; Google Benchmark then parses and rejects what remains unknown.
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) g_threads = std::max(1, std::atoi(argv[i] + 10));
    else if (std::strncmp(argv[i], "--precision=", 12) == 0) g_precision = gemmlab::parse_precision(argv[i] + 12);
    else argv[kept++] = argv[i];
  }
  argc = kept;
  benchmark::AddCustomContext("gemmlab_threads", std::to_string(g_threads));
  benchmark::AddCustomContext("gemmlab_precision", std::string(gemmlab::to_string(g_precision)));
  benchmark::AddCustomContext("gemmlab_device", cpu_device().info().name);
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
