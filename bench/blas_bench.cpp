// The BLAS library against its peers, one process per thread count: for each shape of the
// benchmark's set (blas_benchmark_shapes()) in fp32 and fp64, libgemmlab_blas.so's cblas_sgemm /
// cblas_dgemm (as a program calls it: the table for this machine, else the defaults) timed in
// alternating blocks with each peer library on the same buffers (measure_interleaved: each block
// starts with discarded runs, so the other library's spinning threads have settled; at least
// eight blocks a side, result_min_blocks, so that a product of microseconds is not sampled in one
// burst per side). Prints one
// JSON document: per shape and peer, both medians and their ratio. A shape given as MxNxK:TT
// (--shapes) is called with those transposes, each operand stored as they say, and named so. For
// the squares of 1024 and more, gemmlab is also timed in alternating blocks with the FMA loop
// behind `gemmlab devices`' ceiling (cpu::run_fma_loop, on as many cores): "ceilings" gives per
// shape both rates and gemmlab's share of the ceiling taken at the same moments, as its ratios to
// the peers are.
//
//   blas_bench --threads N [--shapes MxNxK[:TT],...] [--precision fp32|fp64] [--max-seconds S]
//              [--blocks B]
//
// --blocks: alternating blocks of each side at least (default result_min_blocks, 8; fewer is
// quicker and, for products of microseconds, noisier).
//
// GEMMLAB_NUM_THREADS is set to N before the library is loaded; each peer gets set_threads(N).
// Peers: openblas, blis, and onednn (fp32 only) where it loads; one that does not is reported
// under "skipped" with the reason.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "gemmlab/blas_table.hpp"
#include "gemmlab/buffer.hpp"
#include "gemmlab/cpu.hpp"
#include "gemmlab/measure.hpp"

namespace {

using namespace gemmlab;

using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                            int);
using CblasDgemm = void (*)(int, int, int, int, int, int, double, const double*, int, const double*, int, double,
                            double*, int);
constexpr int row_major = 101, no_trans = 111, trans = 112;
// The bar's share of the FMA ceiling is for the squares this large and larger.
constexpr std::int64_t large_square = 1024;

struct Options {
  int threads = 1;
  std::vector<Problem> shapes = blas_benchmark_shapes();
  std::vector<Precision> precisions = {Precision::fp32, Precision::fp64};
  double max_seconds = 1.0;
  int blocks = result_min_blocks;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (value == nullptr) throw std::invalid_argument(arg + " needs a value");
    ++i;
    if (arg == "--threads") {
      o.threads = std::atoi(value);
      if (o.threads < 1) throw std::invalid_argument("--threads must be at least 1");
    } else if (arg == "--shapes") {
      o.shapes.clear();
      std::stringstream list(value);
      for (std::string item; std::getline(list, item, ',');)
        o.shapes.push_back(parse_shape_and_transposes(item));
    } else if (arg == "--precision") {
      o.precisions = {parse_precision(value)};
    } else if (arg == "--max-seconds") {
      o.max_seconds = std::atof(value);
    } else if (arg == "--blocks") {
      o.blocks = std::atoi(value);
      if (o.blocks < 1) throw std::invalid_argument("--blocks must be at least 1");
    } else {
      throw std::invalid_argument("unknown option " + arg);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    setenv("GEMMLAB_NUM_THREADS", std::to_string(o.threads).c_str(), 1);
    void* ours = dlopen(GEMMLAB_BLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (ours == nullptr) throw std::runtime_error(std::string("cannot load the BLAS library: ") + dlerror());
    const auto our_sgemm = reinterpret_cast<CblasSgemm>(dlsym(ours, "cblas_sgemm"));
    const auto our_dgemm = reinterpret_cast<CblasDgemm>(dlsym(ours, "cblas_dgemm"));

    std::vector<std::unique_ptr<Reference>> peers;
    nlohmann::json skipped = nlohmann::json::object();
    for (const std::string& name : cpu::reference_names()) {
      try {
        peers.push_back(cpu::load_reference(name));
        peers.back()->set_threads(o.threads);
      } catch (const std::exception& e) {
        skipped[name] = e.what();
      }
    }
    MeasureOptions measure = result_measure();
    measure.max_seconds = o.max_seconds;
    measure.min_repetitions = 3;
    measure.target_spread = 0.03;
    measure.min_blocks = o.blocks;

    const DeviceInfo host = cpu::detect();
    nlohmann::json results = nlohmann::json::array(), ceilings = nlohmann::json::array();
    for (Precision precision : o.precisions)
      for (Problem shape : o.shapes) {
        Problem p = shape;
        p.precision = precision;
        const bool single = precision == Precision::fp32;
        const std::size_t elem = element_size(precision);
        HostBuffer<std::byte> a(p.a_elements() * elem), b(p.b_elements() * elem), c(p.c_elements() * elem);
        if (single) {
          fill_uniform(std::span<float>(reinterpret_cast<float*>(a.data()), p.a_elements()), 1);
          fill_uniform(std::span<float>(reinterpret_cast<float*>(b.data()), p.b_elements()), 2);
        } else {
          fill_uniform(std::span<double>(reinterpret_cast<double*>(a.data()), p.a_elements()), 1);
          fill_uniform(std::span<double>(reinterpret_cast<double*>(b.data()), p.b_elements()), 2);
        }
        const int m = static_cast<int>(p.m), n = static_cast<int>(p.n), k = static_cast<int>(p.k),
                  lda = static_cast<int>(p.lda), ldb = static_cast<int>(p.ldb);
        const int trans_a = p.trans_a ? trans : no_trans, trans_b = p.trans_b ? trans : no_trans;
        auto run_ours = [&] {
          return wall_seconds([&] {
            if (single)
              our_sgemm(row_major, trans_a, trans_b, m, n, k, 1.0f, reinterpret_cast<const float*>(a.data()),
                        lda, reinterpret_cast<const float*>(b.data()), ldb, 0.0f,
                        reinterpret_cast<float*>(c.data()), n);
            else
              our_dgemm(row_major, trans_a, trans_b, m, n, k, 1.0, reinterpret_cast<const double*>(a.data()),
                        lda, reinterpret_cast<const double*>(b.data()), ldb, 0.0,
                        reinterpret_cast<double*>(c.data()), n);
          });
        };
        for (const auto& peer : peers) {
          if (!single && peer->name() == "onednn") continue;  // oneDNN has no fp64 GEMM
          auto run_peer = [&] { return wall_seconds([&] { peer->gemm(p, {a.data(), b.data(), c.data()}); }); };
          const auto [mine, theirs] = measure_interleaved(run_ours, run_peer, measure);
          const double gflop = p.flops() * 1e-9;
          results.push_back({{"shape", shape_and_transposes(p)},
                             {"precision", to_string(precision)},
                             {"threads", o.threads},
                             {"peer", peer->name()},
                             {"peer_version", peer->version()},
                             {"gemmlab_gflops", gflop / mine.median_s},
                             {"peer_gflops", gflop / theirs.median_s},
                             {"ratio", theirs.median_s / mine.median_s},
                             {"gemmlab_spread", mine.spread},
                             {"peer_spread", theirs.spread}});
          std::fprintf(stderr, "%s %s %d thread(s) vs %s: %.1f / %.1f GFLOP/s = %.3f\n",
                       shape_and_transposes(p).c_str(), std::string(to_string(precision)).c_str(), o.threads,
                       peer->name().c_str(), gflop / mine.median_s, gflop / theirs.median_s,
                       theirs.median_s / mine.median_s);
        }
        if (p.m == p.n && p.n == p.k && p.m >= large_square) {
          double fma_flops = 0;
          auto run_fma = [&] {
            const cpu::FmaRun run = cpu::run_fma_loop(host, o.threads, precision);
            fma_flops = run.flops;
            return run.seconds;
          };
          const auto [mine, fma] = measure_interleaved(run_ours, run_fma, measure);
          if (fma_flops > 0) {
            const double ours_gflops = p.flops() * 1e-9 / mine.median_s,
                         fma_gflops = fma_flops * 1e-9 / fma.median_s;
            ceilings.push_back({{"shape", shape_and_transposes(p)},
                                {"precision", to_string(precision)},
                                {"threads", o.threads},
                                {"gemmlab_gflops", ours_gflops},
                                {"fma_gflops", fma_gflops},
                                {"share", ours_gflops / fma_gflops},
                                {"gemmlab_spread", mine.spread},
                                {"fma_spread", fma.spread}});
            std::fprintf(stderr, "%s %s %d thread(s) vs the FMA loop: %.1f / %.1f GFLOP/s = %.3f\n",
                         shape_and_transposes(p).c_str(), std::string(to_string(precision)).c_str(),
                         o.threads, ours_gflops, fma_gflops, ours_gflops / fma_gflops);
          }
        }
      }
    std::printf("%s\n", nlohmann::json({{"threads", o.threads},
                                        {"blocks", o.blocks},
                                        {"results", results},
                                        {"ceilings", ceilings},
                                        {"skipped", skipped}})
                            .dump(1)
                            .c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "blas_bench: %s\n", e.what());
    return 2;
  }
}
