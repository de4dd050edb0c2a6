// 05_packed_avx512 — BLIS-style: packed panels, five loops around an AVX-512 micro-kernel.
//
// Idea over 04: 04 reads A and B where they lie, so its loads stride through memory and a strip
// of B is fetched again from far caches for every row block. Here the operands are first copied
// (packed) into exactly the order the micro-kernel reads them, in blocks sized to the caches:
//   loop 5  ic: MC rows of A and C      pack nothing yet
//   loop 4  pc: KC deep                 pack A[ic:, pc:] into MR-tall panels (shared, L3)
//   loop 3  jc: NC columns (per thread) pack B[pc:, jc:] into NR-wide panels (this core's L2)
//   loop 2  ir: one A panel, KC x MR    stays in L1 while ...
//   loop 1  jr: ... the B panels, KC x NR, stream past it from L2 into the micro-kernel,
//           which keeps an MR x NR tile of C in zmm registers for the whole KC depth.
// The broadcast side (A) sits in L1 and the vector side (B) streams: the mirror image of BLIS's
// column-major arrangement, since here C's contiguous dimension is N. Threads split the columns
// evenly and share the packed A block: each packs a part of it and marks every panel ready, and
// each computes with its own panels first. There is no barrier per depth step (a barrier makes
// every step as slow as the slower core): a thread waits only for a panel not yet packed, and
// two A buffers in turn let a thread run up to one block ahead of the others. Where C has too
// few columns for each thread to get several panels (tall-skinny C), each thread would stream all
// of A for a sliver of the work: there the threads split the rows instead, each a group of one
// with its own A blocks, and B (small) is packed by each. Splitting the rows also pays where C is
// taller than wide: each thread then reads the smaller operand, B, whole, and half of A, instead
// of all of A and half of B (fp64 12544 x 64 x 147 on two cores of an AMD EPYC: 66-78 -> 68-89
// GFLOP/s), while near a square the shared A block wins by a few percent: the tuner decides
// (SPLIT_ROWS).
// Packing walks the sources in long contiguous runs; its cost is a few percent of the total.
// Where N is not a multiple of NR, the last panel of B is packed only as wide as the vectors it
// needs and run by the micro-kernel of that many vectors, not by NV vectors of mostly zeros; where
// M is not a multiple of MR, the last panel of A runs a micro-kernel as tall as its rows.
// Packing is also where a transposed A or B (the BLAS interface's TRANSA/TRANSB, and with them
// column-major calls) is read: the panels come out the same, so the micro-kernel never knows.
// A need not be packed at all: the micro-kernel only broadcasts its values, one per row and k-step,
// so MR rows of a row-major A, each a contiguous run along k, serve as well as a packed panel
// (PACK_A=0; on one core of the development machine the copy was 4% of 512^3, and skipping it
// made 512^3 to 2048^3 1-7% faster against oneDNN in the same runs). Packed panels still win
// where A's rows alias in L1 (rows 4 KiB apart, more of them than L1 has ways: 16 x 1 at 1024^3
// ran 8% slower in place), so the tuner decides. A transposed A, and a last panel of fewer than
// MR rows, are packed either way.
// B need not be packed either where few panels of A share each copy: the micro-kernel loads NR
// contiguous values of B per step of k, and a row-major B has them, one row ldb further per step
// (PACK_B=0). With 49 rows of C, a packed B of 4608 x 512 was copied whole (9.4 MB) for nine A
// panels; read in place, with a block shallow enough (KC=256, NC=512) that the strip the panels
// share stays in L2, 49 x 512 x 4608 on one core of an Intel Xeon went from 0.74-0.80 to
// 0.92-1.00 of oneDNN (128^3 0.70 -> 0.89: the copy is much of so short a product). Where many
// panels share the copy, packing can win (512^3 ran 0.95-1.00 packed, 0.83-1.00 in place, four
// runs), so the tuner decides. A transposed B, and a last panel ending inside a vector (its loads
// would run past B's last row), are packed either way.
// Hardware: AVX-512F (32 zmm registers; masked loads/stores for the right edge of C), the cache
// hierarchy (sizes read from the OS), several cores (OpenMP), 2 MiB pages for the packed blocks.
// A CPU without AVX-512 runs the same loops around AVX2 + FMA micro-kernels (16 ymm registers,
// vmaskmov at the right edge): the micro-kernel is written once for either instruction set, in
// 05_micro_kernel.hpp, and compiled once for each.
// Parameters: MR, NV (compile-time variants; NR = NV * lanes), MC, KC, NC (run time), threads,
// PACK_A (1: pack every panel of A; 0: read a row-major A's full panels where they lie),
// PACK_B (1: pack every panel of B; 0: read a row-major B's panels where they lie),
// SPLIT_ROWS (1: the threads split C's rows; 0: its columns, unless too few for each thread).
// Constraints (space(), as expressions): the micro-tile's accumulators, B vectors and A broadcast
// fit the 32 zmm registers (16 ymm with AVX2); the blocks are whole panels (MC of MR rows, NC of NR columns);
// an A panel fits half of L1d, a thread's B block its L2 and the shared A block L3. The tile of C a packed A
// and B block cover is MC x NC (tile_m, tile_n).
#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "05_micro_kernel.hpp"
#include "cpu_kernel.hpp"
#include "cpu_kernels.hpp"
#include "gemmlab/buffer.hpp"

namespace gemmlab::cpu {
namespace {

// Packing reads the source in long contiguous runs: short runs far apart leave the hardware
// prefetcher idle and make the copy wait on memory latency for each line.

// B[0:depth][0:cols] (leading dimension ldb) -> NR-wide panels, k-major, zero-padded columns.
// The last panel, where cols is not a multiple of NR, is only as wide as the vectors it needs
// (edge_width: `cols` rounded up to whole vectors): the micro-kernel for fewer vectors reads it,
// instead of NV vectors of which most would be zeros (N = 900 with NR = 64: 4 columns in the
// last panel, 16 computed instead of 64).
std::int64_t edge_width(std::int64_t cols, int nr, int lanes) {
  return std::min<std::int64_t>(nr, (cols + lanes - 1) / lanes * lanes);
}
// A few rows at a time: the group's rows are read side by side, a few streams the hardware
// prefetcher follows, and dealt out to the panels so that each panel receives one contiguous
// run (b_pack_rows * NR values) instead of NR values a whole panel apart for each row. Measured on the development
// machine: packing a 4096 x 4096 B took 3.9-5.2 ms this way, 4.5-7.6 ms one row at a time.
constexpr std::int64_t b_pack_rows = 8;
template <class T>
void pack_b_block(const T* b, std::int64_t ldb, std::int64_t depth, std::int64_t cols, int nr, int lanes,
                  T* packed) {
  const std::int64_t panels = (cols + nr - 1) / nr;
  for (std::int64_t k0 = 0; k0 < depth; k0 += b_pack_rows) {
    const std::int64_t k_end = std::min(depth, k0 + b_pack_rows);
    for (std::int64_t jp = 0; jp < panels; ++jp) {
      const std::int64_t width = std::min<std::int64_t>(nr, cols - jp * nr),
                         panel_nr = edge_width(width, nr, lanes);
      for (std::int64_t k = k0; k < k_end; ++k) {
        T* out = packed + jp * depth * nr + k * panel_nr;
        std::memcpy(out, b + k * ldb + jp * nr, sizeof(T) * static_cast<std::size_t>(width));
        std::fill(out + width, out + panel_nr, T(0));
      }
    }
  }
}

// The same panels from transposed sources. A stored K x M: the MR values of a panel's k-step lie
// side by side (one contiguous run per k). B stored N x K: each column of a panel is a contiguous
// run along k, dealt out with stride NR.
template <class T>
void pack_a_panel_transposed(const T* a, std::int64_t lda, std::int64_t rows, std::int64_t depth, int mr, T* packed) {
  for (std::int64_t k = 0; k < depth; ++k) {
    std::memcpy(packed + k * mr, a + k * lda, sizeof(T) * static_cast<std::size_t>(rows));
    std::fill(packed + k * mr + rows, packed + (k + 1) * mr, T(0));
  }
}

// A transposed B is dealt out in blocks of b_transposed_block steps of k: the block's rows of the
// panel (b_transposed_block x NR values) stay in L1 while each column's run of k values (one cache
// line) is read and written down them. Column by column over the whole depth, each value went to
// a line of its own, out of L1 by the time the next column came back to it (a panel 256 deep and
// 48 wide is 48 KiB).
constexpr std::int64_t b_transposed_block = 16;
template <class T>
void pack_b_block_transposed(const T* b, std::int64_t ldb, std::int64_t depth, std::int64_t cols, int nr,
                             int lanes, T* packed) {
  const std::int64_t panels = (cols + nr - 1) / nr;
  for (std::int64_t jp = 0; jp < panels; ++jp) {
    T* out = packed + jp * depth * nr;
    const std::int64_t width = std::min<std::int64_t>(nr, cols - jp * nr),
                       panel_nr = edge_width(width, nr, lanes);
    for (std::int64_t k0 = 0; k0 < depth; k0 += b_transposed_block) {
      const std::int64_t k_end = std::min(depth, k0 + b_transposed_block);
      for (std::int64_t j = 0; j < width; ++j) {
        const T* src = b + (jp * nr + j) * ldb;
        for (std::int64_t k = k0; k < k_end; ++k) out[k * panel_nr + j] = src[k];
      }
      for (std::int64_t j = width; j < panel_nr; ++j)
        for (std::int64_t k = k0; k < k_end; ++k) out[k * panel_nr + j] = T(0);
    }
  }
}

// Waits until `ready()` holds: a short spin (the other core is normally microseconds away), then
// yielding the core, so that on a machine with more runnable threads than cores the thread being
// waited for gets to run instead of the waiter burning its time slice.
template <class Ready>
void wait_until(Ready ready) {
  for (int spins = 0; !ready(); ++spins) {
    if (spins < 4096) _mm_pause();
    else std::this_thread::yield();
  }
}

class PackedRoutine {
 public:
  // avx512: the AVX-512 micro-kernels, else the AVX2 ones (the CPU has them: supported()).
  PackedRoutine(const Problem& p, const Config& c, bool avx512)
      : avx512_(avx512),
        vector_bytes_(avx512 ? 64 : 32),
        mr_(int(c.at("MR"))),
        nv_(int(c.at("NV"))),
        mc_(c.at("MC")),
        kc_(c.at("KC")),
        nc_(c.at("NC")),
        threads_(int(c.at("threads"))),
        pack_a_(c.at("PACK_A") != 0),
        pack_b_(c.at("PACK_B") != 0) {
    const std::int64_t elem = static_cast<std::int64_t>(element_size(p.precision));
    const std::int64_t nr = nv_ * (vector_bytes_ / elem);
    // Asked to, or columns too few for every thread to get several panels of them: the threads
    // split the rows.
    split_rows_ = threads_ > 1 &&
                  (c.at("SPLIT_ROWS") != 0 || p.n < std::int64_t{threads_} * min_panels_per_thread * nr);
    // Workspace sized once for this problem: per group of threads sharing an A block (all of
    // them, or each alone when they split the rows), two A blocks; one B block per thread. (A
    // thread's rows fill an A block whenever the runtime grants fewer threads than asked for.)
    const std::int64_t kc = std::min(kc_, p.k), mc = std::min(mc_, round_up(p.m, mr_));
    b_block_elements_ = std::max<std::int64_t>(1, kc * std::min(nc_, round_up(p.n, nr)));
    a_block_elements_ = std::max<std::int64_t>(1, mc * kc);
    a_panels_max_ = (mc + mr_ - 1) / mr_;
    sharing_.resize(static_cast<std::size_t>(split_rows_ ? threads_ : 1));
    for (Sharing& s : sharing_) {
      s.a_pack = huge_page_bytes(static_cast<std::size_t>(2 * a_block_elements_ * elem));
      s.panel_step = std::vector<std::atomic<std::int64_t>>(static_cast<std::size_t>(2 * a_panels_max_));
      s.thread_step = std::vector<Progress>(static_cast<std::size_t>(split_rows_ ? 1 : threads_));
    }
    b_pack_ = huge_page_bytes(static_cast<std::size_t>(b_block_elements_ * threads_ * elem));
  }

  template <class T>
  void operator()(const Problem& p, const T* a, const T* b, T* c) {
    for (Sharing& s : sharing_) {
      for (auto& step : s.panel_step) step.store(0, std::memory_order_relaxed);
      for (auto& t : s.thread_step) t.done.store(0, std::memory_order_relaxed);
    }

#pragma omp parallel num_threads(threads_)
    {
      // The runtime may grant fewer threads than asked for: split the work among those present.
      const int team = omp_get_num_threads(), me = omp_get_thread_num();
      T* b_pack = reinterpret_cast<T*>(b_pack_.get()) + b_block_elements_ * me;
      if (split_rows_) {
        // Each thread alone on its rows of A and C: a group of one, with its own A blocks.
        const std::int64_t share = round_up((p.m + team - 1) / team, mr_);
        const std::int64_t first_row = std::min(p.m, share * me), end_row = std::min(p.m, first_row + share);
        Problem rows = p;
        rows.m = end_row - first_row;
        const T* a_rows = p.trans_a ? a + first_row : a + first_row * p.lda;
        if (rows.m > 0) compute(rows, a_rows, b, c + first_row * p.ldc, 0, p.n, sharing_[me], 1, 0, b_pack);
      } else {
        const int nr = nv_ * vector_bytes_ / int(sizeof(T));
        const std::int64_t share = round_up((p.n + team - 1) / team, nr);
        const std::int64_t first_col = std::min(p.n, share * me), end_col = std::min(p.n, first_col + share);
        compute(p, a, b, c, first_col, end_col, sharing_[0], team, me, b_pack);
      }
    }
  }

 private:
  // Per-thread progress, each on its own cache line so that polling it does not disturb writers.
  struct alignas(64) Progress {
    std::atomic<std::int64_t> done{0};  // last depth block this thread finished computing
  };
  // What the threads that share A blocks share.
  struct Sharing {
    std::unique_ptr<std::byte, AlignedFree> a_pack;      // two A blocks
    std::vector<std::atomic<std::int64_t>> panel_step;  // per A panel of each block: the depth block it holds
    std::vector<Progress> thread_step;                  // per sharing thread
  };

  static std::int64_t round_up(std::int64_t x, std::int64_t to) { return (x + to - 1) / to * to; }

  // Columns [first_col, end_col) of C for this thread, `me` of the `team` threads that share
  // `sharing`'s A blocks.
  template <class T>
  void compute(const Problem& p, const T* a, const T* b, T* c, std::int64_t first_col, std::int64_t end_col,
               Sharing& sharing, int team, int me, T* b_pack) {
    const auto variant_for = avx512_ ? packed::avx512_variant<T> : packed::avx2_variant<T>;
    const packed::Variant<T> variant = variant_for(mr_, nv_);
    const int lanes = vector_bytes_ / int(sizeof(T));
    const int nr = nv_ * lanes;
    // The micro-kernel for a panel of v vectors (the last, narrower panel: pack_b_block), and for
    // the last panel of A where it has fewer than MR rows (only the last block of rows has one:
    // MC is whole panels) one as tall as those rows, reading them from the MR-tall packed panel.
    // The full-height kernel computes every padded row (on an AMD EPYC 49 rows with MR = 4 took as
    // long as 52).
    std::array<packed::MicroKernelFn<T>, 5> kernel_for{}, short_panel_kernel_for{};
    const int short_panel_rows = static_cast<int>(p.m % mr_);
    for (int v = 1; v <= nv_; ++v) {
      kernel_for[v] = variant_for(mr_, v).micro_kernel;
      if (short_panel_rows > 0) short_panel_kernel_for[v] = variant_for(short_panel_rows, v).micro_kernel;
    }
    const T alpha = static_cast<T>(p.alpha);
    // PACK_A=0: the full panels of a row-major A are read where they lie (MR rows lda apart);
    // a transposed A and a last panel of fewer than MR rows are packed all the same.
    const bool in_place = !pack_a_ && !p.trans_a;
    const auto read_in_place = [&](std::int64_t mc, std::int64_t ip) {
      return in_place && (ip + 1) * mr_ <= mc;
    };
    const bool b_in_place = !pack_b_ && !p.trans_b;
    std::int64_t step = 0;  // counts depth blocks, 1, 2, ...; selects one of the two A buffers
    for (std::int64_t ic = 0; ic < p.m; ic += mc_) {                       // loop 5
      const std::int64_t mc = std::min(mc_, p.m - ic);
      const std::int64_t a_panels = (mc + mr_ - 1) / mr_;
      // This thread packs A panels [own_first, own_end) and computes with them first.
      const std::int64_t own_first = a_panels * me / team, own_end = a_panels * (me + 1) / team;
      for (std::int64_t pc = 0; pc < p.k; pc += kc_) {                     // loop 4
        const std::int64_t kc = std::min(kc_, p.k - pc);
        // Only the first depth block scales C by beta; later ones accumulate into it.
        const T beta = pc == 0 ? static_cast<T>(p.beta) : T(1);
        ++step;
        const std::int64_t buffer = step % 2;
        T* a_pack = reinterpret_cast<T*>(sharing.a_pack.get()) + a_block_elements_ * buffer;
        std::atomic<std::int64_t>* ready = sharing.panel_step.data() + buffer * a_panels_max_;
        // Two A buffers, used in turn. Block `step` goes where block step-2 was: wait until
        // every thread is done computing with that one (rarely a wait: it is two blocks back).
        for (int t = 0; t < team; ++t)
          wait_until([&] { return sharing.thread_step[t].done.load(std::memory_order_acquire) >= step - 2; });
        for (std::int64_t ip = own_first; ip < own_end; ++ip) {
          if (read_in_place(mc, ip)) continue;  // nothing to pack, nothing to wait for
          const std::int64_t rows = std::min<std::int64_t>(mr_, mc - ip * mr_);
          if (p.trans_a)
            pack_a_panel_transposed(a + pc * p.lda + ic + ip * mr_, p.lda, rows, kc, mr_, a_pack + ip * kc * mr_);
          else
            variant.pack_a(a + (ic + ip * mr_) * p.lda + pc, p.lda, rows, kc, a_pack + ip * kc * mr_);
          ready[ip].store(step, std::memory_order_release);  // panel ip holds block `step`
        }
        for (std::int64_t jc = first_col; jc < end_col; jc += nc_) {       // loop 3
          const std::int64_t nc = std::min(nc_, end_col - jc);
          // PACK_B=0: the panels of a row-major B are read where they lie, all but a last one
          // that ends inside a vector (its loads would run past the end of B's last row): that
          // one is packed alone, at the start of b_pack.
          const std::int64_t last_panel = (nc - 1) / nr * nr;
          const std::int64_t packed_from = !b_in_place ? 0 : (nc - last_panel) % lanes != 0 ? last_panel : nc;
          if (p.trans_b)
            pack_b_block_transposed(b + jc * p.ldb + pc, p.ldb, kc, nc, nr, lanes, b_pack);
          else if (packed_from < nc)
            pack_b_block(b + pc * p.ldb + jc + packed_from, p.ldb, kc, nc - packed_from, nr, lanes, b_pack);
          for (std::int64_t i = 0; i < a_panels; ++i) {                    // loop 2
            // Own panels first; by the time the others' are needed they are long packed.
            // No barrier: a thread waits only for a panel it needs that is not ready yet.
            const std::int64_t ip = (own_first + i) % a_panels;
            const std::int64_t ir = ip * mr_;
            const int rows = static_cast<int>(std::min<std::int64_t>(mr_, mc - ir));
            // The panel's A[r][p] is a_panel[r * row_step + p * k_step].
            const T* a_panel = a + (ic + ir) * p.lda + pc;
            std::int64_t row_step = p.lda, k_step = 1;
            if (!read_in_place(mc, ip)) {
              wait_until([&] { return ready[ip].load(std::memory_order_acquire) == step; });
              a_panel = a_pack + ip * kc * mr_;
              row_step = 1;
              k_step = mr_;
            }
            const auto& kernels = rows < mr_ ? short_panel_kernel_for : kernel_for;
            for (std::int64_t jr = 0; jr < nc; jr += nr) {                 // loop 1
              const int cols = static_cast<int>(std::min<std::int64_t>(nr, nc - jr));
              const int vectors = (cols + lanes - 1) / lanes;
              // A packed panel's rows are as wide as its vectors (pack_b_block); B's are ldb apart.
              const bool packed_panel = jr >= packed_from;
              const T* b_panel =
                  packed_panel ? b_pack + ((jr - packed_from) / nr) * kc * nr : b + pc * p.ldb + jc + jr;
              const std::int64_t b_k_step = packed_panel ? std::int64_t{vectors} * lanes : p.ldb;
              kernels[vectors](kc, a_panel, row_step, k_step, b_panel, b_k_step,
                               c + (ic + ir) * p.ldc + jc + jr, p.ldc, rows, cols, alpha, beta);
            }
          }
        }
        sharing.thread_step[me].done.store(step, std::memory_order_release);
      }
    }
  }

  // Each thread should get at least this many NR-wide panels of columns, or the threads split the rows.
  static constexpr std::int64_t min_panels_per_thread = 4;

  bool avx512_;
  int vector_bytes_;
  int mr_, nv_;
  std::int64_t mc_, kc_, nc_;
  int threads_;
  bool pack_a_, pack_b_;
  bool split_rows_ = false;
  std::int64_t a_block_elements_ = 0, b_block_elements_ = 0, a_panels_max_ = 0;
  std::vector<Sharing> sharing_;  // one, or one per thread when the threads split the rows
  std::unique_ptr<std::byte, AlignedFree> b_pack_;
};

class PackedAvx512 final : public CpuKernel {
 public:
  PackedAvx512()
      : CpuKernel("05_packed_avx512",
                  "BLIS-style packing, five loops around an AVX-512 micro-kernel (AVX2 where the CPU has no "
                  "AVX-512), OpenMP threads",
                  {}) {}

  Support supported(const DeviceInfo& d) const override { return avx512_or_avx2(d); }

  SearchSpace space(const DeviceInfo& d, Precision precision) const override {
    const auto elem = static_cast<ParamValue>(element_size(precision));
    SearchSpace s;
    s.add("MR", {4, 6, 8, 12, 14, 16}, "rows of the micro-tile")
        .add("NV", {1, 2, 3, 4}, "vectors per row of the micro-tile (NR = NV * lanes)")
        .add("MC", {48, 96, 112, 168, 192, 336, 384, 672, 768, 1008, 1344, 2016, 2688},
             "rows of the packed A block, shared by the threads")
        .add("KC", {32, 64, 128, 192, 256, 320, 384, 448, 512, 768, 1024}, "depth of the packed blocks")
        .add("NC", {64, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096},
             "columns of each thread's packed B block")
        .add("threads", int_range(1, std::max(1, d.cores)), "OpenMP threads")
        .add("PACK_A", {0, 1}, "1: pack every A panel; 0: read a row-major A's full panels where they lie")
        .add("PACK_B", {0, 1}, "1: pack every B panel; 0: read a row-major B's panels where they lie")
        .add("SPLIT_ROWS", {0, 1},
             "1: the threads split C's rows, each packing its own A blocks and all of B; 0: they split the "
             "columns and share the packed A blocks (the rows where each would get fewer than 4 panels)")
        .added_later("PACK_A", 1)      // BLAS tables written before it: they packed every panel
        .added_later("SPLIT_ROWS", 0)  // and split the columns unless too few
        .added_later("PACK_B", 1);     // and packed every panel of B
    s.let("elem", elem, "bytes per element")
        .let("lanes", (uses_avx512(d) ? 64 : 32) / elem,
             uses_avx512(d) ? "elements per zmm register" : "elements per ymm register");
    const std::string registers = let_vector_registers(s, d);
    let_cache(s, d, "L1d", 1, 32 << 10);
    const std::int64_t l2 = let_cache(s, d, "L2", 2, 1 << 20);
    let_cache(s, d, "L3", 3, l2);
    s.derive("NR", "NV*lanes", "columns of the micro-tile")
        .derive("tile_m", "MC", "rows of C a packed A block covers")
        .derive("tile_n", "NC", "columns of C a thread's packed B block covers");
    s.require("MR*NV + NV + 1 <= " + registers, "MR*NV accumulators, NV vectors of B and a broadcast of A")
        .require("MC % MR == 0", "the A block is whole MR-tall panels")
        .require("NC % NR == 0", "the B block is whole NR-wide panels")
        .require("MR*KC*elem <= L1d/2", "an A panel stays in L1 while the B panels stream past")
        .require("KC*NC*elem <= L2", "a thread's B block stays in its L2")
        .require("MC*KC*elem <= L3", "the shared A block stays in L3");
    return s;
  }

  bool reads_transposed() const override { return true; }

  // The blocks this step was tuned to; where the caches are too small for them, default_config
  // takes the nearest valid configuration. A 6 x 4 tile with the deepest KC its A panel allows
  // (half of L1d) and a B block of about half of L2: each depth block reads and writes all of C
  // once more, so a deep KC saves passes over C. On the Intel Xeon development machine, one
  // process timing each configuration beside oneDNN, it ran 0.91-1.05 of oneDNN where 14 x 2 with
  // KC=384 and NC=1024 (the previous default) ran 0.85-0.97: 256^3 to 4096^3, one and two threads;
  // fp64 1.11-1.23 of OpenBLAS against 0.97-1.09.
  // With AVX2 only, 6 x 2 (the 16 ymm registers: 12 accumulators, 2 vectors of B, a broadcast),
  // as deep as half of L1d allows with a B block of a 512 KiB L2.
  Config preferred_config(const DeviceInfo& d, Precision precision) const override {
    const bool fp32 = precision == Precision::fp32;
    Config c = uses_avx512(d)
                   ? Config{{"MR", 6}, {"NV", 4}, {"MC", 2688}, {"KC", fp32 ? 1024 : 512}, {"NC", 256}}
                   : Config{{"MR", 6}, {"NV", 2}, {"MC", 2688}, {"KC", fp32 ? 512 : 256}, {"NC", 256}};
    c["PACK_A"] = 0;
    c["PACK_B"] = 1;
    c["SPLIT_ROWS"] = 0;
    c["threads"] = std::max(1, d.cores);
    return c;
  }
  // The other tiles that fill the registers, each as deep as its A panel allows in half of L1d
  // (AVX2: 4 x 3).
  // Which is fastest differs between shapes and cores (on the development machine 8 x 3 with
  // KC=768 ran BERT's 512 x 768 x 3072 and 256^3 on one thread 2-3% faster than 6 x 4, and
  // 4096^3 on two threads 5% slower).
  std::vector<Config> preferred_variants(const DeviceInfo& d, Precision precision) const override {
    const ParamValue depth_scale = precision == Precision::fp32 ? 2 : 1;  // fp32 elements are half as wide
    std::vector<Config> variants;
    const std::vector<std::array<ParamValue, 4>> tiles =
        uses_avx512(d)
            ? std::vector<std::array<ParamValue, 4>>{{8, 3, 384, 384}, {12, 2, 256, 512}, {14, 2, 192, 1024}}
            : std::vector<std::array<ParamValue, 4>>{{4, 3, 256, 192}};
    for (auto [mr, nv, kc, nc] : tiles) {
      Config c = preferred_config(d, precision);
      c["MR"] = mr;
      c["NV"] = nv;
      c["KC"] = kc * depth_scale;
      c["NC"] = nc;
      variants.push_back(std::move(c));
    }
    // B read where it lies, in a block a quarter as deep and twice as wide as the default's, so
    // that the strip of B the A panels share is contiguous runs of B's rows that stay in L2. From
    // the default, a search reaches it only in three one-parameter moves, the first of which
    // (PACK_B=0 alone, a 1024-deep strip of rows 2 KiB or more apart) is slower.
    {
      Config in_place = preferred_config(d, precision);
      in_place["PACK_B"] = 0;
      in_place["KC"] = in_place["KC"] / 4;
      in_place["NC"] = 512;
      variants.push_back(std::move(in_place));
    }
    // With several cores, the threads splitting the rows: a search that starts from the column
    // split alone reaches it only as one of many one-parameter moves.
    if (d.cores > 1) {
      Config rows = preferred_config(d, precision);
      rows["SPLIT_ROWS"] = 1;
      variants.push_back(std::move(rows));
    }
    return variants;
  }

 protected:
  std::unique_ptr<Executable> build(Device& d, const Problem& p, const Config& c) const override {
    return make_executable(p, PackedRoutine(p, c, uses_avx512(d.info())));
  }
};
}  // namespace

std::unique_ptr<Kernel> make_packed_avx512() { return std::make_unique<PackedAvx512>(); }

}  // namespace gemmlab::cpu
