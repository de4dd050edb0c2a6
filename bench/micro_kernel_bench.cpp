// 05_packed_avx512's micro-kernel alone, against the FMA loop behind `gemmlab devices`' ceiling.
// Its operands sit where 05's two inner loops put them: one A panel (KC x MR, packed) in L1, a
// thread's packed B block (KC x NC, NC / NR panels) in L2, and each call writes its MR x NR tile of
// C back (beta 1, as every depth block after the first). The loops run as 05 runs them: for each
// of a few A panels, every B panel of the block in turn. Each tile is timed in alternating blocks
// with the FMA loop on the same single core (measure_interleaved), so that the share is taken at
// the same moments on a machine whose speed moves. The share separates the micro-kernel's own
// losses from the rest of a large GEMM (A's panels arriving from L3, passes over C, packing,
// threads): a large square well below the micro-kernel's share loses its time outside it.
//
//   micro_kernel_bench [--precision fp32|fp64] [--tiles MRxNV:KC:NC,...] [--max-seconds S]
//
// Default tiles: 05's starting configurations on this CPU (its default and preferred variants,
// made valid for its caches). Prints one line per tile: GFLOP/s of the micro-kernel and of the FMA
// loop (medians) and the share. AVX-512 micro-kernels where the CPU has AVX-512F, else AVX2's.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "05_micro_kernel.hpp"
#include "cpu_kernel.hpp"
#include "gemmlab/buffer.hpp"
#include "gemmlab/builtin.hpp"
#include "gemmlab/cpu.hpp"
#include "gemmlab/measure.hpp"

namespace {

using namespace gemmlab;

struct Tile {
  int mr = 0, nv = 0;
  std::int64_t kc = 0, nc = 0;
  bool operator==(const Tile&) const = default;
};

struct Options {
  Precision precision = Precision::fp32;
  std::vector<Tile> tiles;  // empty: 05's starting configurations
  double max_seconds = 1.0;
};

constexpr long long max_block = 16384;  // KC and NC: far beyond any cache; B then takes at most 2 GiB

Tile parse_tile(const std::string& text) {
  Tile t;
  char x = 0, colon1 = 0, colon2 = 0;
  long long kc = 0, nc = 0;
  char rest = 0;
  if (std::sscanf(text.c_str(), "%d%c%d%c%lld%c%lld%c", &t.mr, &x, &t.nv, &colon1, &kc, &colon2, &nc,
                  &rest) != 7 ||
      x != 'x' || colon1 != ':' || colon2 != ':' || t.mr < 1 || t.nv < 1 || kc < 1 || nc < 1 ||
      kc > max_block || nc > max_block)
    throw std::invalid_argument("--tiles: '" + text + "' is not MRxNV:KC:NC with KC and NC from 1 to " +
                                std::to_string(max_block));
  t.kc = kc;
  t.nc = nc;
  return t;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
    const std::string value = argv[++i];
    if (arg == "--precision") {
      o.precision = parse_precision(value);
      if (o.precision != Precision::fp32 && o.precision != Precision::fp64)
        throw std::invalid_argument("--precision: fp32 or fp64");
    } else if (arg == "--tiles") {
      for (std::size_t start = 0; start <= value.size();) {
        const std::size_t end = std::min(value.find(',', start), value.size());
        o.tiles.push_back(parse_tile(value.substr(start, end - start)));
        start = end + 1;
      }
    } else if (arg == "--max-seconds") {
      o.max_seconds = std::atof(value.c_str());
      if (!(o.max_seconds > 0)) throw std::invalid_argument("--max-seconds must be positive");
    } else {
      throw std::invalid_argument("unknown option " + arg);
    }
  }
  return o;
}

template <class T>
void run(const DeviceInfo& info, const Options& o, const std::vector<Tile>& tiles) {
  const bool avx512 = cpu::uses_avx512(info);
  const int lanes = (avx512 ? 64 : 32) / static_cast<int>(sizeof(T));
  constexpr std::int64_t a_panels = 8;  // a few A panels, as loop 2 walks them
  const auto variant_for = [&](const Tile& t) {
    return avx512 ? cpu::packed::avx512_variant<T>(t.mr, t.nv) : cpu::packed::avx2_variant<T>(t.mr, t.nv);
  };
  for (const Tile& t : tiles)
    if (variant_for(t).micro_kernel == nullptr)
      throw std::invalid_argument(
          "--tiles: 05 has no " + std::to_string(t.mr) + "x" + std::to_string(t.nv) +
          " micro-kernel for this CPU (MR 1-16, NV 1-4, within its vector registers)");
  std::printf("05's micro-kernel on one core of %s, %s\n", info.name.c_str(),
              std::string(to_string(o.precision)).c_str());
  std::printf("%-8s %6s %6s %12s %12s %7s\n", "tile", "KC", "NC", "kernel GF/s", "FMA GF/s", "share");
  for (const Tile& t : tiles) {
    const auto variant = variant_for(t);
    const int nr = t.nv * lanes;
    const std::int64_t b_panels = std::max<std::int64_t>(1, t.nc / nr), ldc = b_panels * nr;
    HostBuffer<T> a(static_cast<std::size_t>(a_panels * t.kc * t.mr)),
        b(static_cast<std::size_t>(b_panels * t.kc * nr)), c(static_cast<std::size_t>(a_panels * t.mr * ldc));
    for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = T(1) / T(1 + i % 7);
    for (std::size_t i = 0; i < b.size(); ++i) b.data()[i] = T(1) / T(1 + i % 5);
    for (std::size_t i = 0; i < c.size(); ++i) c.data()[i] = T(0);
    const auto run_kernel = [&] {
      return wall_seconds([&] {
        for (std::int64_t ip = 0; ip < a_panels; ++ip)
          for (std::int64_t jp = 0; jp < b_panels; ++jp)
            variant.micro_kernel(t.kc, a.data() + ip * t.kc * t.mr, 1, t.mr, b.data() + jp * t.kc * nr, nr,
                                 c.data() + ip * t.mr * ldc + jp * nr, ldc, t.mr, nr, T(1), T(1));
      });
    };
    double fma_flops = 0;
    const auto run_fma = [&] {
      const cpu::FmaRun r = cpu::run_fma_loop(info, 1, o.precision);
      fma_flops = r.flops;
      return r.seconds;
    };
    const auto [kernel, fma] = measure_interleaved(run_kernel, run_fma, {.max_seconds = o.max_seconds});
    const double flops = 2.0 * static_cast<double>(std::int64_t{t.mr} * nr * t.kc * a_panels * b_panels);
    const double kernel_gflops = flops / kernel.median_s * 1e-9;
    const double fma_gflops = fma_flops / fma.median_s * 1e-9;
    std::printf("%3dx%-4d %6lld %6lld %12.1f %12.1f %6.1f%%\n", t.mr, t.nv, static_cast<long long>(t.kc),
                static_cast<long long>(b_panels * nr), kernel_gflops, fma_gflops,
                100 * kernel_gflops / fma_gflops);
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    const DeviceInfo info = cpu::detect();
    const Kernel& packed = registry().kernel("cpu", "05_packed_avx512");
    if (const Support support = packed.supported(info); !support.ok)
      throw std::runtime_error("05 does not run here: " + support.reason);
    std::vector<Tile> tiles = o.tiles;
    if (tiles.empty())
      for (const Config& c : packed.starting_configs(info, o.precision)) {
        const Tile t{static_cast<int>(c.at("MR")), static_cast<int>(c.at("NV")), c.at("KC"), c.at("NC")};
        if (std::find(tiles.begin(), tiles.end(), t) == tiles.end())
          tiles.push_back(t);  // variants differing elsewhere
      }
    if (o.precision == Precision::fp32)
      run<float>(info, o, tiles);
    else
      run<double>(info, o, tiles);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "micro_kernel_bench: %s\n", e.what());
    return 2;
  }
  return 0;
}
