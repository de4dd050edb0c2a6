// The SIMT steps of the CUDA curriculum, 01_naive ... 08_cp_async_pipeline: for each one its
// parameters, constraints, default configuration and launch shape. The device code is
// kernels/cuda/<name>.cu; each file opens with the idea it adds and the constraints below.
#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>

#include "cuda_kernel.hpp"
#include "cuda_kernels.hpp"

namespace gemmlab::cuda {
namespace {

using std::to_string;

// Grid of x by y blocks; gridDim.y is at most 65535, so y (tiles down M, or down N in 01) limits
// the problems a kernel can take.
Dim3 grid_2d(unsigned x, unsigned y) {
  if (y > 65535)
    throw std::invalid_argument("the grid needs " + to_string(y) +
                                " blocks in y, more than CUDA's 65535; use larger tiles");
  return {x, y, 1};
}
// The usual grid: one block per BM x BN tile of C, x across N, y down M.
Dim3 tile_grid(const Problem& p, std::int64_t bm, std::int64_t bn) {
  return grid_2d(ceil_div(p.n, bn), ceil_div(p.m, bm));
}

// 32-bit registers per element: 1 (fp32), 2 (fp64).
std::int64_t words(Precision p) { return static_cast<std::int64_t>(element_bytes(p)) / 4; }
std::string times_words(Precision p) { return words(p) == 1 ? "" : " * " + to_string(words(p)); }

// The register constraints of the register-tiled kernels. V is what a thread keeps in 32-bit
// registers: its accumulators, the operands of one step and its share of a tile copy (the
// copy's loads are all issued before its stores). From ptxas's reports on sm_80 and sm_90 a
// thread needs about 3*V/2 + 16 registers (ptxas loads the next step's operands while the
// current ones are in use; 16 for indices and addresses), and it spills beyond V = 128 (measured
// at V = 152 on sm_80). A block whose threads need more than the register file holds would be
// capped by __launch_bounds__ and spill as well.
std::int64_t estimated_registers(std::int64_t values) { return values * 3 / 2 + 16; }

void constrain_registers(SearchSpace& s, const GpuLimits& gpu, const std::string& values_text,
                         const std::string& threads_text, const std::vector<std::string>& uses,
                         std::function<std::int64_t(const Config&)> values,
                         std::function<std::int64_t(const Config&)> threads) {
  s.constrain(
      "V = " + values_text +
          " <= 128 (32-bit registers a thread keeps: accumulators, operands, its share of a tile copy)",
      uses, [=](const Config& c) { return threads(c) > 0 && values(c) <= 128; });
  // A target whose compiler gives a thread fewer registers than this bound implies (AMD RDNA3
  // with hipcc 5.2: 128) needs its own per-thread limit.
  if (gpu.max_registers_per_thread < estimated_registers(128))
    s.constrain("3*V/2 + 16 <= " + to_string(gpu.max_registers_per_thread) + " (registers per thread, estimated)",
                uses, [=](const Config& c) { return estimated_registers(values(c)) <= gpu.max_registers_per_thread; });
  s.constrain(threads_text + " * (3*V/2 + 16) <= " + to_string(gpu.registers_per_block) +
                  " (registers per block, estimated)",
              uses, [=](const Config& c) {
                return threads(c) > 0 &&
                       threads(c) * estimated_registers(values(c)) <= gpu.registers_per_block;
              });
}
// How many elements of the BM x BK and BK x BN tiles each of `threads` threads copies per tile.
std::int64_t copy_share(const Config& c, std::int64_t threads) {
  return threads > 0 ? (c.at("BM") * c.at("BK") + c.at("BK") * c.at("BN")) / threads : 0;
}

// ---- 01_naive and 02_coalesced: one thread per element of C --------------------------------

SearchSpace one_thread_per_element_space(const GpuLimits& gpu) {
  SearchSpace s;
  s.add("BLOCK", pow2_range(8, 32), "the block is BLOCK x BLOCK threads, one per element of C");
  s.constrain("BLOCK*BLOCK <= " + to_string(gpu.max_threads_per_block) + " (threads per block)", {"BLOCK"},
              [=](const Config& c) { return c.at("BLOCK") * c.at("BLOCK") <= gpu.max_threads_per_block; });
  return s;
}

CudaKernelSpec naive() {
  return {
      .name = "01_naive",
      .summary = "one thread per element of C, threads of a warp along M (uncoalesced)",
      .precisions = {Precision::fp32, Precision::fp64},
      .min_compute_capability = 70,
      .space = [](const GpuLimits& gpu, Precision) { return one_thread_per_element_space(gpu); },
      .default_config =
          [](const GpuLimits&, Precision) { return Config{{"BLOCK", 32}}; },
      // Rows of C across x: blockIdx.x walks M, blockIdx.y walks N.
      .launch =
          [](const Config& c, const Problem& p, const GpuLimits&) {
            const auto b = c.at("BLOCK");
            return Launch{.grid = grid_2d(ceil_div(p.m, b), ceil_div(p.n, b)),
                          .block = {unsigned(b), unsigned(b), 1}};
          },
  };
}

CudaKernelSpec coalesced() {
  return {
      .name = "02_coalesced",
      .summary = "01 with the threads of a warp along N: loads of B and stores of C coalesce",
      .precisions = {Precision::fp32, Precision::fp64},
      .min_compute_capability = 70,
      .space = [](const GpuLimits& gpu, Precision) { return one_thread_per_element_space(gpu); },
      .default_config =
          [](const GpuLimits&, Precision) { return Config{{"BLOCK", 32}}; },
      .launch =
          [](const Config& c, const Problem& p, const GpuLimits&) {
            const auto b = c.at("BLOCK");
            return Launch{.grid = tile_grid(p, b, b), .block = {unsigned(b), unsigned(b), 1}};
          },
  };
}

// ---- 03_smem_tiled ---------------------------------------------------------------------------

SearchSpace smem_tiled_space(const GpuLimits& gpu, Precision precision) {
  const auto elem = static_cast<std::int64_t>(element_bytes(precision));
  SearchSpace s;
  s.add("TILE", pow2_range(8, 32), "the block is TILE x TILE threads; tiles of A, B and C are TILE x TILE");
  s.constrain("TILE*TILE <= " + to_string(gpu.max_threads_per_block) + " (threads per block)", {"TILE"},
              [=](const Config& c) { return c.at("TILE") * c.at("TILE") <= gpu.max_threads_per_block; });
  s.constrain("2*TILE*TILE*" + to_string(elem) + " <= " + to_string(gpu.shared_bytes_per_block) +
                  " (shared memory per block)",
              {"TILE"}, [=](const Config& c) {
                return 2 * c.at("TILE") * c.at("TILE") * elem <= gpu.shared_bytes_per_block;
              });
  return s;
}

CudaKernelSpec smem_tiled() {
  return {
      .name = "03_smem_tiled",
      .summary = "TILE x TILE tiles of A and B in shared memory, each element fetched once per block",
      .precisions = {Precision::fp32, Precision::fp64},
      .min_compute_capability = 70,
      .space = smem_tiled_space,
      .default_config =
          [](const GpuLimits&, Precision) { return Config{{"TILE", 32}}; },
      .launch =
          [](const Config& c, const Problem& p, const GpuLimits&) {
            const auto t = c.at("TILE");
            return Launch{.grid = tile_grid(p, t, t), .block = {unsigned(t), unsigned(t), 1}};
          },
  };
}

// ---- 04_1d_register_tiled --------------------------------------------------------------------

std::int64_t threads_04(const Config& c) { return c.at("BM") / c.at("TM") * c.at("BN"); }

SearchSpace register_tiled_1d_space(const GpuLimits& gpu, Precision precision) {
  const auto elem = static_cast<std::int64_t>(element_bytes(precision));
  const std::int64_t w = words(precision);
  SearchSpace s;
  s.add("BM", pow2_range(16, 256), "rows of C per block")
      .add("BN", pow2_range(16, 256), "columns of C per block")
      .add("BK", pow2_range(4, 64), "depth of the shared tiles of A and B")
      .add("TM", pow2_range(1, 32), "rows of C per thread (one column)");
  s.constrain("BM % TM == 0", {"BM", "TM"}, [](const Config& c) { return c.at("BM") % c.at("TM") == 0; });
  s.constrain("threads = BM/TM*BN, a multiple of 32 (whole warps)", {"BM", "BN", "TM"},
              [](const Config& c) { return threads_04(c) % 32 == 0; });
  s.constrain("threads <= " + to_string(gpu.max_threads_per_block) + " (threads per block)",
              {"BM", "BN", "TM"},
              [=](const Config& c) { return threads_04(c) <= gpu.max_threads_per_block; });
  s.constrain("BM*BK % threads == 0 && BK*BN % threads == 0 (each thread copies whole elements of each tile)",
              {"BM", "BN", "BK", "TM"}, [](const Config& c) {
                const auto t = threads_04(c);
                return t > 0 && c.at("BM") * c.at("BK") % t == 0 && c.at("BK") * c.at("BN") % t == 0;
              });
  s.constrain("(BM*BK + BK*BN)*" + to_string(elem) + " <= " + to_string(gpu.shared_bytes_per_block) +
                  " (shared memory per block)",
              {"BM", "BN", "BK"}, [=](const Config& c) {
                return (c.at("BM") * c.at("BK") + c.at("BK") * c.at("BN")) * elem <=
                       gpu.shared_bytes_per_block;
              });
  // TM accumulators, TM values of A and one of B per step.
  constrain_registers(
      s, gpu, "(2*TM + 1 + (BM*BK + BK*BN)/threads)" + times_words(precision), "threads",
      {"BM", "BN", "BK", "TM"},
      [=](const Config& c) { return (2 * c.at("TM") + 1 + copy_share(c, threads_04(c))) * w; }, threads_04);
  return s;
}

CudaKernelSpec register_tiled_1d() {
  return {
      .name = "04_1d_register_tiled",
      .summary = "each thread computes TM elements of a column of C in registers",
      .precisions = {Precision::fp32, Precision::fp64},
      .min_compute_capability = 70,
      .space = register_tiled_1d_space,
      .default_config =
          [](const GpuLimits&, Precision) { return Config{{"BM", 64}, {"BN", 64}, {"BK", 8}, {"TM", 8}}; },
      .launch =
          [](const Config& c, const Problem& p, const GpuLimits&) {
            return Launch{.grid = tile_grid(p, c.at("BM"), c.at("BN")),
                          .block = {unsigned(threads_04(c)), 1, 1}};
          },
  };
}

// ---- 05_2d_register_tiled and 06_vectorized: a TM x TN tile of C per thread -----------------

std::int64_t threads_05(const Config& c) { return (c.at("BM") / c.at("TM")) * (c.at("BN") / c.at("TN")); }

// vector = 4 for 06, whose tiles are copied in float4 (1 for 05).
SearchSpace register_tiled_2d_space(const GpuLimits& gpu, Precision precision,
                                    std::vector<ParamValue> thread_tile, std::int64_t vector) {
  const auto elem = static_cast<std::int64_t>(element_bytes(precision));
  const std::int64_t w = words(precision);
  const std::string v = vector == 1 ? "" : "/" + to_string(vector);
  SearchSpace s;
  s.add("BM", pow2_range(32, 256), "rows of C per block")
      .add("BN", pow2_range(32, 256), "columns of C per block")
      .add("BK", pow2_range(4, 64), "depth of the shared tiles of A and B")
      .add("TM", thread_tile, "rows of C per thread")
      .add("TN", thread_tile, "columns of C per thread");
  s.constrain("threads = (BM/TM)*(BN/TN), a multiple of 32 (whole warps)", {"BM", "BN", "TM", "TN"},
              [](const Config& c) { return threads_05(c) % 32 == 0; });
  s.constrain("threads <= " + to_string(gpu.max_threads_per_block) + " (threads per block)",
              {"BM", "BN", "TM", "TN"},
              [=](const Config& c) { return threads_05(c) <= gpu.max_threads_per_block; });
  s.constrain("(BM*BK" + v + ") % threads == 0 && (BK*BN" + v +
                  ") % threads == 0 (each thread copies whole " + (vector == 1 ? "elements" : "float4s") +
                  " of each tile)",
              {"BM", "BN", "BK", "TM", "TN"}, [=](const Config& c) {
                const auto t = threads_05(c);
                return t > 0 && c.at("BM") * c.at("BK") / vector % t == 0 &&
                       c.at("BK") * c.at("BN") / vector % t == 0;
              });
  s.constrain("(BM*BK + BK*BN)*" + to_string(elem) + " <= " + to_string(gpu.shared_bytes_per_block) +
                  " (shared memory per block)",
              {"BM", "BN", "BK"}, [=](const Config& c) {
                return (c.at("BM") * c.at("BK") + c.at("BK") * c.at("BN")) * elem <=
                       gpu.shared_bytes_per_block;
              });
  constrain_registers(
      s, gpu, "(TM*TN + TM + TN + (BM*BK + BK*BN)/threads)" + times_words(precision), "threads",
      {"BM", "BN", "BK", "TM", "TN"},
      [=](const Config& c) {
        return (c.at("TM") * c.at("TN") + c.at("TM") + c.at("TN") + copy_share(c, threads_05(c))) * w;
      },
      threads_05);
  return s;
}

SearchSpace register_tiled_2d_space_05(const GpuLimits& gpu, Precision precision) {
  return register_tiled_2d_space(gpu, precision, pow2_range(2, 16), 1);
}
// 06 reads a thread's TM (TN) values from shared memory as float4s: multiples of 4.
SearchSpace vectorized_space_06(const GpuLimits& gpu, Precision precision) {
  return register_tiled_2d_space(gpu, precision, pow2_range(4, 16), 4);
}

CudaKernelSpec register_tiled_2d() {
  return {
      .name = "05_2d_register_tiled",
      .summary = "each thread computes a TM x TN tile of C as outer products from registers",
      .precisions = {Precision::fp32, Precision::fp64},
      .min_compute_capability = 70,
      .space = register_tiled_2d_space_05,
      // fp64: an 8 x 4 thread tile, since 8 x 8 doubles take 160 registers before any operand.
      .default_config =
          [](const GpuLimits&, Precision precision) {
            const Config fp32{{"BM", 128}, {"BN", 128}, {"BK", 8}, {"TM", 8}, {"TN", 8}};
            const Config fp64{{"BM", 128}, {"BN", 64}, {"BK", 8}, {"TM", 8}, {"TN", 4}};
            return precision == Precision::fp64 ? fp64 : fp32;
          },
      .launch =
          [](const Config& c, const Problem& p, const GpuLimits&) {
            return Launch{.grid = tile_grid(p, c.at("BM"), c.at("BN")),
                          .block = {unsigned(threads_05(c)), 1, 1}};
          },
  };
}

CudaKernelSpec vectorized() {
  return {
      .name = "06_vectorized",
      .summary = "05 with float4 loads from global and shared memory, A transposed in shared memory",
      .precisions = {Precision::fp32},
      .min_compute_capability = 70,
      .space = vectorized_space_06,
      .default_config =
          [](const GpuLimits&, Precision) {
            return Config{{"BM", 128}, {"BN", 128}, {"BK", 8}, {"TM", 8}, {"TN", 8}};
          },
      .launch =
          [](const Config& c, const Problem& p, const GpuLimits&) {
            return Launch{.grid = tile_grid(p, c.at("BM"), c.at("BN")),
                          .block = {unsigned(threads_05(c)), 1, 1}};
          },
  };
}

// ---- 07_warp_tiled and 08_cp_async_pipeline: block, warp and thread tiles -------------------

std::int64_t threads_07(const Config& c) {
  return (c.at("BM") / c.at("WM")) * (c.at("BN") / c.at("WN")) * 32;
}
// Sub-tiles down a warp tile: each of the WMITER x WNITER sub-tiles gives every lane a TM x TN piece.
std::int64_t wmiter(const Config& c) {
  return c.at("WM") * c.at("WN") / (32 * c.at("TM") * c.at("TN") * c.at("WNITER"));
}
// Accumulators and operands of a thread (fp32: one register each).
std::int64_t register_values_07(const Config& c) {
  const auto m = wmiter(c) * c.at("TM"), n = c.at("WNITER") * c.at("TN");
  return m * n + m + n;
}

// The space of 07; 08 adds STAGES and changes the tile copies (`pipelined`).
SearchSpace warp_tiled_space(const GpuLimits& gpu, bool pipelined) {
  SearchSpace s;
  s.add("BM", pow2_range(32, 256), "rows of C per block")
      .add("BN", pow2_range(32, 256), "columns of C per block")
      .add("BK", pipelined ? pow2_range(8, 32) : pow2_range(4, 32), "depth of the shared tiles of A and B")
      .add("WM", pow2_range(16, 128), "rows of C per warp")
      .add("WN", pow2_range(16, 128), "columns of C per warp")
      .add("WNITER", pow2_range(1, 8),
           "sub-tiles across a warp tile (WMITER = WM*WN / (32*TM*TN*WNITER) down)")
      .add("TM", pow2_range(4, 16), "rows of C per thread and sub-tile")
      .add("TN", pow2_range(4, 16), "columns of C per thread and sub-tile");
  if (pipelined)
    s.add("STAGES", int_range(2, 4),
          "shared-memory stages of A and B tiles: STAGES - 1 in flight while one is computed");

  s.constrain("BM % WM == 0 && BN % WN == 0 (whole warp tiles)", {"BM", "BN", "WM", "WN"},
              [](const Config& c) { return c.at("BM") % c.at("WM") == 0 && c.at("BN") % c.at("WN") == 0; });
  s.constrain(
      "threads = (BM/WM)*(BN/WN)*32 <= " + to_string(gpu.max_threads_per_block) + " (threads per block)",
      {"BM", "BN", "WM", "WN"}, [=](const Config& c) { return threads_07(c) <= gpu.max_threads_per_block; });
  s.constrain(
      "WM*WN % (32*TM*TN*WNITER) == 0 (WMITER, the sub-tiles down a warp tile, is a whole number >= 1)",
      {"WM", "WN", "WNITER", "TM", "TN"}, [](const Config& c) {
        return wmiter(c) >= 1 &&
               c.at("WM") * c.at("WN") % (32 * c.at("TM") * c.at("TN") * c.at("WNITER")) == 0;
      });
  s.constrain("(WN/WNITER) % TN == 0 && (WM/WMITER) % TM == 0 (the lanes' pieces tile a sub-tile exactly)",
              {"WM", "WN", "WNITER", "TM", "TN"}, [](const Config& c) {
                const auto m_iter = wmiter(c);
                return m_iter >= 1 && c.at("WN") % c.at("WNITER") == 0 &&
                       c.at("WN") / c.at("WNITER") % c.at("TN") == 0 && c.at("WM") % m_iter == 0 &&
                       c.at("WM") / m_iter % c.at("TM") == 0;
              });
  if (pipelined) {
    s.constrain("BM*BK % threads == 0 && (BK*BN/4) % threads == 0 (A copied in 4-byte, B in 16-byte pieces)",
                {"BM", "BN", "BK", "WM", "WN"}, [](const Config& c) {
                  const auto t = threads_07(c);
                  return t > 0 && c.at("BM") * c.at("BK") % t == 0 && c.at("BK") * c.at("BN") / 4 % t == 0;
                });
    const std::int64_t limit = std::max(gpu.shared_bytes_per_block, gpu.shared_bytes_per_block_optin);
    s.constrain(
        "STAGES*(BK*(BM+4) + BK*BN)*4 <= " + to_string(limit) + " (shared memory per block, opted in)",
        {"BM", "BN", "BK", "STAGES"}, [=](const Config& c) {
          return c.at("STAGES") * (c.at("BK") * (c.at("BM") + 4) + c.at("BK") * c.at("BN")) * 4 <= limit;
        });
  } else {
    s.constrain(
        "(BM*BK/4) % threads == 0 && (BK*BN/4) % threads == 0 (each thread copies whole float4s of each "
        "tile)",
        {"BM", "BN", "BK", "WM", "WN"}, [](const Config& c) {
          const auto t = threads_07(c);
          return t > 0 && c.at("BM") * c.at("BK") / 4 % t == 0 && c.at("BK") * c.at("BN") / 4 % t == 0;
        });
    s.constrain(
        "(BM*BK + BK*BN)*4 <= " + to_string(gpu.shared_bytes_per_block) + " (shared memory per block)",
        {"BM", "BN", "BK"}, [=](const Config& c) {
          return (c.at("BM") * c.at("BK") + c.at("BK") * c.at("BN")) * 4 <= gpu.shared_bytes_per_block;
        });
  }
  constrain_registers(
      s, gpu, "WMITER*TM*WNITER*TN + WMITER*TM + WNITER*TN + (BM*BK + BK*BN)/threads", "threads",
      {"BM", "BN", "BK", "WM", "WN", "WNITER", "TM", "TN"},
      [](const Config& c) { return register_values_07(c) + copy_share(c, threads_07(c)); }, threads_07);
  return s;
}

// 256 threads: 2 x 4 warps with 64 x 32 warp tiles, each cut into WNITER = 2 sub-tiles of 64 x 16
// in which a lane holds 8 x 4 results: 64 accumulators per thread. (siboehm's 64 x 64 warp tiles
// with 128 accumulators per thread exceed the register constraint and spill on sm_80.)
const Config warp_tiled_default{{"BM", 128}, {"BN", 128},   {"BK", 16}, {"WM", 64},
                                {"WN", 32},  {"WNITER", 2}, {"TM", 8},  {"TN", 4}};

CudaKernelSpec warp_tiled() {
  return {
      .name = "07_warp_tiled",
      .summary = "06 with warp tiles: each warp owns a WM x WN tile of C, its lanes interleaved in it",
      .precisions = {Precision::fp32},
      .min_compute_capability = 70,
      .space = [](const GpuLimits& gpu, Precision) { return warp_tiled_space(gpu, false); },
      .default_config =
          [](const GpuLimits&, Precision) { return warp_tiled_default; },
      .launch =
          [](const Config& c, const Problem& p, const GpuLimits&) {
            return Launch{.grid = tile_grid(p, c.at("BM"), c.at("BN")),
                          .block = {unsigned(threads_07(c)), 1, 1}};
          },
  };
}

std::size_t pipeline_shared_bytes(const Config& c) {
  return static_cast<std::size_t>(c.at("STAGES") * (c.at("BK") * (c.at("BM") + 4) + c.at("BK") * c.at("BN")) *
                                  4);
}

CudaKernelSpec cp_async_pipeline() {
  return {
      .name = "08_cp_async_pipeline",
      .summary = "07 fed by a STAGES-deep pipeline of asynchronous copies (cp.async) into shared memory",
      .precisions = {Precision::fp32},
      .min_compute_capability = 80,
      .space = [](const GpuLimits& gpu, Precision) { return warp_tiled_space(gpu, true); },
      // 07's default with three stages in flight: 3 x 16.25 KiB of shared memory.
      .default_config =
          [](const GpuLimits&, Precision) {
            Config c = warp_tiled_default;
            c["STAGES"] = 3;
            return c;
          },
      .launch =
          [](const Config& c, const Problem& p, const GpuLimits&) {
            return Launch{.grid = tile_grid(p, c.at("BM"), c.at("BN")),
                          .block = {unsigned(threads_07(c)), 1, 1},
                          .shared_bytes = pipeline_shared_bytes(c)};
          },
  };
}

}  // namespace

std::vector<CudaKernelSpec> simt_kernel_specs() {
  return {naive(),         coalesced(), smem_tiled(), register_tiled_1d(), register_tiled_2d(),
          vectorized(),    warp_tiled(), cp_async_pipeline()};
}

}  // namespace gemmlab::cuda
