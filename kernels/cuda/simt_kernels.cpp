// The SIMT steps of the CUDA curriculum, 01_naive ... 08_cp_async_pipeline: for each one its
// parameters, constraints, default configuration and, where it is not the usual one
// (tiled_launch), launch shape. The device code is
// kernels/cuda/<name>.cu; each file opens with the idea it adds and names these constraints.
//
// Every space declares its threads per block as the derived value `threads` (the HIP backend
// requires whole waves of them), and the kernels that stage tiles of A and B in shared memory
// declare `tile_m` and `tile_n`, the rows and columns of C one block covers.
#include <stdexcept>
#include <string>

#include "cuda_kernel.hpp"
#include "cuda_kernels.hpp"

namespace gemmlab::cuda {

// The launch helpers of cuda_kernel.hpp live here, with the SIMT specifications, because the HIP
// backend compiles this file without the rest of the CUDA backend.
Dim3 grid_2d(unsigned x, unsigned y) {
  if (y > 65535)
    throw std::invalid_argument("the grid needs " + std::to_string(y) +
                                " blocks in y, more than CUDA's 65535; use larger tiles");
  return {x, y, 1};
}

Launch tiled_launch(const SearchSpace& s, const Config& c, const Problem& p, bool dynamic_shared_memory) {
  Launch l{.grid = grid_2d(ceil_div(p.n, derived(s, "tile_n", c)), ceil_div(p.m, derived(s, "tile_m", c))),
           .block = {static_cast<unsigned>(derived(s, "threads", c)), 1, 1}};
  if (dynamic_shared_memory) l.shared_bytes = static_cast<std::size_t>(derived(s, "shared_bytes", c));
  return l;
}

Launch launch_of(const CudaKernelSpec& spec, const Config& config, const Problem& problem, const GpuLimits& gpu) {
  if (spec.launch) return spec.launch(config, problem, gpu);
  return tiled_launch(spec.space(gpu, problem.precision), config, problem, spec.dynamic_shared_memory);
}

namespace {

// One block per TILE x TILE (BLOCK x BLOCK) tile of C, x across N, y down M.
Dim3 tile_grid(const Problem& p, std::int64_t tile) { return grid_2d(ceil_div(p.n, tile), ceil_div(p.m, tile)); }

// The element size and, for the register-tiled kernels, the 32-bit registers an element takes:
// 1 (fp32), 2 (fp64).
void let_element(SearchSpace& s, Precision p, bool registers) {
  const auto bytes = static_cast<ParamValue>(element_bytes(p));
  s.let("element_bytes", bytes, "bytes per element of A, B and C");
  if (registers) s.let("element_registers", bytes / 4, "32-bit registers per element");
}

// The register constraints of the register-tiled kernels. V is what a thread keeps in 32-bit
// registers: its accumulators, the operands of one step and its share of a tile copy (the
// copy's loads are all issued before its stores). From ptxas's reports on sm_80 and sm_90 a
// thread needs about 3*V/2 + 16 registers (ptxas loads the next step's operands while the
// current ones are in use; 16 for indices and addresses), and it spills beyond V = 128 (measured
// at V = 152 on sm_80). A block whose threads need more than the register file holds would be
// capped by __launch_bounds__ and spill as well. A target whose compiler gives a thread fewer
// registers than V = 128 implies (AMD RDNA3 with hipcc 5.2: 128) is held by its per-thread limit.
void require_registers(SearchSpace& s, const GpuLimits& gpu, const std::string& values) {
  let_limits(s, gpu, {Limit::registers_per_block, Limit::max_registers_per_thread});
  s.derive("V", values, "32-bit registers a thread keeps: accumulators, operands, its share of a tile copy")
      .derive("registers", "3*V/2 + 16", "registers a thread needs, estimated from ptxas's reports");
  s.require("V <= 128", "ptxas spills beyond it")
      .require("registers <= max_registers_per_thread", "registers per thread, estimated")
      .require("threads*registers <= registers_per_block", "registers per block, estimated");
}

// ---- 01_naive and 02_coalesced: one thread per element of C --------------------------------

SearchSpace one_thread_per_element_space(const GpuLimits& gpu, Precision) {
  SearchSpace s;
  s.add("BLOCK", pow2_range(8, 32), "the block is BLOCK x BLOCK threads, one per element of C");
  let_limits(s, gpu, {Limit::max_threads_per_block});
  s.derive("threads", "BLOCK*BLOCK", "threads per block");
  s.require("threads <= max_threads_per_block", "threads per block");
  return s;
}

CudaKernelSpec naive() {
  return {
      .name = "01_naive",
      .summary = "one thread per element of C, threads of a warp along M (uncoalesced)",
      .precisions = {Precision::fp32, Precision::fp64},
      .min_compute_capability = 70,
      .space = one_thread_per_element_space,
      .preferred_config = fixed_config({{"BLOCK", 32}}),
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
      .space = one_thread_per_element_space,
      .preferred_config = fixed_config({{"BLOCK", 32}}),
      .launch =
          [](const Config& c, const Problem& p, const GpuLimits&) {
            const auto b = c.at("BLOCK");
            return Launch{.grid = tile_grid(p, b), .block = {unsigned(b), unsigned(b), 1}};
          },
  };
}

// ---- 03_smem_tiled ---------------------------------------------------------------------------

SearchSpace smem_tiled_space(const GpuLimits& gpu, Precision precision) {
  SearchSpace s;
  s.add("TILE", pow2_range(8, 32), "the block is TILE x TILE threads; tiles of A, B and C are TILE x TILE");
  let_limits(s, gpu, {Limit::max_threads_per_block, Limit::shared_bytes_per_block});
  let_element(s, precision, false);
  s.derive("threads", "TILE*TILE", "threads per block")
      .derive("tile_m", "TILE", "rows of C per block")
      .derive("tile_n", "TILE", "columns of C per block")
      .derive("shared_bytes", "2*TILE*TILE*element_bytes", "the shared tiles of A and B");
  s.require("threads <= max_threads_per_block", "threads per block")
      .require("shared_bytes <= shared_bytes_per_block", "shared memory per block");
  return s;
}

CudaKernelSpec smem_tiled() {
  return {
      .name = "03_smem_tiled",
      .summary = "TILE x TILE tiles of A and B in shared memory, each element fetched once per block",
      .precisions = {Precision::fp32, Precision::fp64},
      .min_compute_capability = 70,
      .space = smem_tiled_space,
      .preferred_config = fixed_config({{"TILE", 32}}),
      .launch =
          [](const Config& c, const Problem& p, const GpuLimits&) {
            const auto t = c.at("TILE");
            return Launch{.grid = tile_grid(p, t), .block = {unsigned(t), unsigned(t), 1}};
          },
  };
}

// ---- 04_1d_register_tiled --------------------------------------------------------------------

// The tiles of 04 ... 08: a block computes a BM x BN tile of C from BM x BK and BK x BN tiles of
// A and B staged in shared memory; each of its threads copies copy_share elements of them.
void derive_block_tile(SearchSpace& s) {
  s.derive("tile_m", "BM", "rows of C per block")
      .derive("tile_n", "BN", "columns of C per block")
      .derive("copy_share", "(BM*BK + BK*BN)/threads", "elements of the A and B tiles each thread copies");
}

SearchSpace register_tiled_1d_space(const GpuLimits& gpu, Precision precision) {
  SearchSpace s;
  s.add("BM", pow2_range(16, 256), "rows of C per block")
      .add("BN", pow2_range(16, 256), "columns of C per block")
      .add("BK", pow2_range(4, 64), "depth of the shared tiles of A and B")
      .add("TM", pow2_range(1, 32), "rows of C per thread (one column)");
  let_limits(s, gpu, {Limit::max_threads_per_block, Limit::warp_size, Limit::shared_bytes_per_block});
  let_element(s, precision, true);
  s.derive("threads", "BM/TM*BN", "threads per block");
  derive_block_tile(s);
  s.derive("shared_bytes", "(BM*BK + BK*BN)*element_bytes", "the shared tiles of A and B");
  s.require("BM % TM == 0", "whole thread tiles down the block tile")
      .require("threads % warp_size == 0", "whole warps")
      .require("threads <= max_threads_per_block", "threads per block")
      .require("BM*BK % threads == 0 && BK*BN % threads == 0", "each thread copies whole elements of each tile")
      .require("shared_bytes <= shared_bytes_per_block", "shared memory per block");
  // TM accumulators, TM values of A and one of B per step.
  require_registers(s, gpu, "(2*TM + 1 + copy_share)*element_registers");
  return s;
}

CudaKernelSpec register_tiled_1d() {
  return {
      .name = "04_1d_register_tiled",
      .summary = "each thread computes TM elements of a column of C in registers",
      .precisions = {Precision::fp32, Precision::fp64},
      .min_compute_capability = 70,
      .space = register_tiled_1d_space,
      .preferred_config = fixed_config({{"BM", 64}, {"BN", 64}, {"BK", 8}, {"TM", 8}}),
  };
}

// ---- 05_2d_register_tiled and 06_vectorized: a TM x TN tile of C per thread -----------------

// 06 copies its tiles in float4s (`vectorized`); 05 element by element.
SearchSpace register_tiled_2d_space(const GpuLimits& gpu, Precision precision, std::vector<ParamValue> thread_tile,
                                    bool vectorized) {
  SearchSpace s;
  s.add("BM", pow2_range(32, 256), "rows of C per block")
      .add("BN", pow2_range(32, 256), "columns of C per block")
      .add("BK", pow2_range(4, 64), "depth of the shared tiles of A and B")
      .add("TM", thread_tile, "rows of C per thread")
      .add("TN", thread_tile, "columns of C per thread");
  let_limits(s, gpu, {Limit::max_threads_per_block, Limit::warp_size, Limit::shared_bytes_per_block});
  let_element(s, precision, true);
  s.derive("threads", "(BM/TM)*(BN/TN)", "threads per block");
  derive_block_tile(s);
  s.derive("shared_bytes", "(BM*BK + BK*BN)*element_bytes", "the shared tiles of A and B");
  s.require("threads % warp_size == 0", "whole warps").require("threads <= max_threads_per_block", "threads per block");
  if (vectorized)
    s.require("(BM*BK/4) % threads == 0 && (BK*BN/4) % threads == 0", "each thread copies whole float4s of each tile");
  else
    s.require("BM*BK % threads == 0 && BK*BN % threads == 0", "each thread copies whole elements of each tile");
  s.require("shared_bytes <= shared_bytes_per_block", "shared memory per block");
  require_registers(s, gpu, "(TM*TN + TM + TN + copy_share)*element_registers");
  return s;
}

SearchSpace register_tiled_2d_space_05(const GpuLimits& gpu, Precision precision) {
  return register_tiled_2d_space(gpu, precision, pow2_range(2, 16), false);
}
// 06 reads a thread's TM (TN) values from shared memory as float4s: multiples of 4.
SearchSpace vectorized_space_06(const GpuLimits& gpu, Precision precision) {
  return register_tiled_2d_space(gpu, precision, pow2_range(4, 16), true);
}

CudaKernelSpec register_tiled_2d() {
  return {
      .name = "05_2d_register_tiled",
      .summary = "each thread computes a TM x TN tile of C as outer products from registers",
      .precisions = {Precision::fp32, Precision::fp64},
      .min_compute_capability = 70,
      .space = register_tiled_2d_space_05,
      // fp64: an 8 x 4 thread tile, since 8 x 8 doubles take 160 registers before any operand.
      .preferred_config =
          [](const GpuLimits&, Precision precision) {
            const Config fp32{{"BM", 128}, {"BN", 128}, {"BK", 8}, {"TM", 8}, {"TN", 8}};
            const Config fp64{{"BM", 128}, {"BN", 64}, {"BK", 8}, {"TM", 8}, {"TN", 4}};
            return precision == Precision::fp64 ? fp64 : fp32;
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
      .preferred_config = fixed_config({{"BM", 128}, {"BN", 128}, {"BK", 8}, {"TM", 8}, {"TN", 8}}),
  };
}

// ---- 07_warp_tiled and 08_cp_async_pipeline: block, warp and thread tiles -------------------

// The space of 07; 08 adds STAGES and changes the tile copies (`pipelined`). Both are fp32 only.
// A warp tile is 32 threads on every target: the kernels' lanes, whatever the hardware's warp.
SearchSpace warp_tiled_space(const GpuLimits& gpu, bool pipelined) {
  SearchSpace s;
  s.add("BM", pow2_range(32, 256), "rows of C per block")
      .add("BN", pow2_range(32, 256), "columns of C per block")
      .add("BK", pipelined ? pow2_range(8, 32) : pow2_range(4, 32), "depth of the shared tiles of A and B")
      .add("WM", pow2_range(16, 128), "rows of C per warp")
      .add("WN", pow2_range(16, 128), "columns of C per warp")
      .add("WNITER", pow2_range(1, 8), "sub-tiles across a warp tile (WMITER follows)")
      .add("TM", pow2_range(4, 16), "rows of C per thread and sub-tile")
      .add("TN", pow2_range(4, 16), "columns of C per thread and sub-tile");
  if (pipelined)
    s.add("STAGES", int_range(2, 4),
          "shared-memory stages of A and B tiles: STAGES - 1 in flight while one is computed");
  let_limits(s, gpu,
             {Limit::max_threads_per_block, pipelined ? Limit::shared_bytes_optin : Limit::shared_bytes_per_block});
  s.derive("threads", "(BM/WM)*(BN/WN)*32", "threads per block: 32 per warp tile")
      .derive("WMITER", "WM*WN / (32*TM*TN*WNITER)", "sub-tiles down a warp tile");
  derive_block_tile(s);
  s.derive("shared_bytes", pipelined ? "STAGES*(BK*(BM+4) + BK*BN)*4" : "(BM*BK + BK*BN)*4",
           pipelined ? "STAGES stages of the A tile (transposed, rows padded to BM+4) and the B tile"
                     : "the shared tiles of A and B");
  s.require("BM % WM == 0 && BN % WN == 0", "whole warp tiles")
      .require("threads <= max_threads_per_block", "threads per block")
      .require("WMITER >= 1 && WM*WN % (32*TM*TN*WNITER) == 0", "whole sub-tiles down a warp tile")
      .require("WN % WNITER == 0 && (WN/WNITER) % TN == 0 && WM % WMITER == 0 && (WM/WMITER) % TM == 0",
               "the lanes' pieces tile a sub-tile exactly");
  if (pipelined)
    s.require("BM*BK % threads == 0 && (BK*BN/4) % threads == 0", "A copied in 4-byte, B in 16-byte pieces")
        .require("shared_bytes <= shared_bytes_optin", "shared memory per block, opted in");
  else
    s.require("(BM*BK/4) % threads == 0 && (BK*BN/4) % threads == 0", "each thread copies whole float4s of each tile")
        .require("shared_bytes <= shared_bytes_per_block", "shared memory per block");
  require_registers(s, gpu, "WMITER*TM*WNITER*TN + WMITER*TM + WNITER*TN + copy_share");
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
      .preferred_config = fixed_config(warp_tiled_default),
  };
}

CudaKernelSpec cp_async_pipeline() {
  return {
      .name = "08_cp_async_pipeline",
      .summary = "07 fed by a STAGES-deep pipeline of asynchronous copies (cp.async) into shared memory",
      .precisions = {Precision::fp32},
      .min_compute_capability = 80,
      .space = [](const GpuLimits& gpu, Precision) { return warp_tiled_space(gpu, true); },
      // 07's default with three stages in flight: 3 x 16.25 KiB of shared memory.
      .preferred_config =
          [](const GpuLimits&, Precision) {
            Config c = warp_tiled_default;
            c["STAGES"] = 3;
            return c;
          },
      .dynamic_shared_memory = true,
  };
}

}  // namespace

std::vector<CudaKernelSpec> simt_kernel_specs() {
  return {naive(),         coalesced(), smem_tiled(), register_tiled_1d(), register_tiled_2d(),
          vectorized(),    warp_tiled(), cp_async_pipeline()};
}

}  // namespace gemmlab::cuda
