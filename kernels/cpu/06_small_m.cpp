// 06_small_m — few rows of C: no packing; B streams from memory once, in the order it is stored.
//
// Idea over 05: 05 packs B so that each packed element serves a whole block of A's rows from
// cache. When M is small (a language model decoding: M = 1..16 rows against a 4096 x 4096
// weight), each element of B is used only M times: packing copies as many bytes as the multiply
// reads, and the product is bound by how fast B arrives from memory. Here B is read exactly once,
// where it lies, and A (M x K: small) is read in place from L1/L2.
//  - B stored K x N (not transposed): the "axpy" form. A tile of C, up to MR rows by NR = NV
//    vectors, stays in registers over KB steps of k; each step loads NV vectors of one row of B
//    and broadcasts MR elements of A. k is blocked by KB so that the KB x NR strip of B a tile
//    reads is still in cache for the next pass over M's rows, and the strip of the next column
//    tile is prefetched while this one is computed (its rows lie ldb apart: the hardware
//    prefetcher follows only a few such streams). Where several passes of rows read the same
//    strip, the next strip goes into L2 only (into L1 it would push out the strip still in use)
//    and every pass asks for its own strip's rows a few steps ahead into L1, since the later
//    passes read it from L2 (measured at 49 x 512 x 4608, one thread: 0.86-0.88 -> 0.91-0.93 of
//    oneDNN). Where ldb is a multiple of 4 KiB the strip's rows fall into one set of L1 and a few
//    of L2 and push each other out before the next pass: there the first pass also stores what it
//    loads into a contiguous copy of the strip, which the later passes read instead.
//  - The axpy form's other order, the "row" form (STREAM = 1): for one or a few rows of C, the
//    tile's strided strip (KB runs of NR values, each ldb apart) is the wrong shape for memory:
//    too many streams for the prefetcher, a page each. Instead C's rows (a block of columns at a
//    time) stay in cache while B goes past in groups of 16 / NV rows, each row one long
//    contiguous run; every vector of B loaded serves all of the pass's rows of C. C is read and
//    written once per group. Measured on the development machine at 1 x 4096 x 4096, one
//    thread: 20 GFLOP/s (40 GB/s of B) against 9.1-12.8 for the tile order over its NV and KB.
//    The block of C is as wide as half of L2 holds, not the part of L1 it could keep: every
//    block starts each row of B's stream anew, and a longer run keeps the prefetcher ahead for
//    longer; the loads and stores of C from L2 stay well within its bandwidth (a block of 16 KiB
//    -> 1 MiB, one thread, beside oneDNN: 1 x 11008 x 4096 0.99-1.01 -> 1.01-1.07, 16 x 11008 x
//    4096 with MR=8 0.90-0.96 -> 1.31-1.40). Its sums live for one step, so a pass is not bound
//    by the registers: up to 16 rows. Where two of C's rows would share a set of L1 (lying a
//    multiple of 4 KiB apart) the pass sums them in a copy laid out so that they do not.
//  - Where B comes from memory, KB is the number of B's rows read side by side (one stream each
//    across the columns): 24 ran 16 x 11008 x 4096 8-13% faster than 32 in fp32, 5-8% in fp64
//    (preferred_variants).
//  - B stored N x K (transposed, as a layer's weight W in x * W^T): the "dot" form. Each element
//    of C is a dot product of a row of A with a row of B, both contiguous along k. MR x NV of them
//    are accumulated as vectors over KB steps of k, each step loading one vector of every row;
//    each accumulator's lanes are added at the end of the block.
// The axpy form broadcasts single elements of A, so a transposed A is read in place; the dot form
// needs A's rows contiguous along k, so it first copies a transposed A into M x K order (M*K
// elements: small next to the M*N*K multiply).
// Threads split the columns of C, so each streams its own part of B. Or (SPLIT_K = 1) they split
// the depth: each thread reads its own rows of B, one contiguous part of it, whole, and computes
// a partial product of all of C, which the threads then add up. Split by columns, each row of B
// is read by every thread, a part each, and the parts interleave in memory; split by depth, each
// thread streams a region of its own (on the development machine, 49 x 512 x 4608 on two threads:
// 0.90-0.93 of oneDNN split by columns, 1.03-1.07 split by depth). The partial products cost M x N
// elements of memory per extra thread and one pass over them at the end.
// The same loops serve a C with few columns and many rows (a convolution's im2col GEMM with 64
// output channels, a tall-skinny product): B is then the small operand, one or two column tiles
// cover C, the KB x NR strip of B stays in cache while every row of A streams past it once, read
// where it lies: packing A would copy every element of A to use it for only NR columns. The
// threads then split the rows, and no tile asks for B ahead: the few strips stay in cache from
// the first pass on, and the requests only took load slots (measured, one thread: 128^3 0.88-0.91
// -> 0.94 of oneDNN, 784 x 128 x 1152 0.90-0.95 -> 0.96-1.00).
// Hardware: AVX-512F (32 zmm registers; masked loads at the right edge and the k tail instead of
// padded copies), memory bandwidth, several cores (OpenMP). A CPU without AVX-512 runs the same
// loops with AVX2 + FMA tiles (16 ymm registers; vmaskmov at the edges): the tiles are written
// once for either instruction set, in 06_tiles.hpp, and compiled once for each.
// Parameters (MR and NV pick compiled variants): MR (most rows of C per pass), NV (axpy form: NR
// = NV * lanes columns; dot form: NV columns; row form: vectors per run), KB (depth of a block of
// k; the row form takes the whole depth at once), STREAM (the axpy form's order), threads,
// SPLIT_K (what the threads split: 0 columns, or rows where C has few columns; 1 the depth).
// Constraints (space(), as expressions): a tile's accumulators, NV vectors of B and one of A fit
// the 32 zmm registers (16 ymm with AVX2), except in the row form, whose sums live for one step
// (with a transposed B, which takes the dot form's tiles, a pass then takes as many rows as its
// tiles fit); a pass's block of A (MR x KB) stays in L1; the strip of B a tile
// reads (KB rows of NV vectors) stays in L2 for the next pass over M's rows; SPLIT_K needs two threads or
// more. Split by rows, each pass reads the whole KB x N block of B: N is the problem's, so the
// block is made shallower at run time where it would not fit half of L2.
#include <omp.h>

#include <algorithm>
#include <array>
#include <utility>

#include "06_tiles.hpp"
#include "cpu_kernel.hpp"
#include "cpu_kernels.hpp"
#include "gemmlab/buffer.hpp"

namespace gemmlab::cpu {
namespace {

using small_m::Form;
using small_m::max_mr;
using small_m::Tiles;

class SmallMRoutine {
 public:
  // avx512: the AVX-512 tiles, else the AVX2 ones (the CPU has them: supported()).
  SmallMRoutine(const Problem& p, const Config& c, std::int64_t l2_bytes, bool avx512)
      : avx512_(avx512),
        vector_bytes_(avx512 ? 64 : 32),
        mr_(int(c.at("MR"))),
        nv_(int(c.at("NV"))),
        kb_(c.at("KB")),
        threads_(int(c.at("threads"))),
        stream_(c.at("STREAM") != 0),
        split_k_(c.at("SPLIT_K") != 0 && threads_ > 1),
        l2_bytes_(l2_bytes) {
    // A transposed B takes the dot form whatever STREAM says, and its tiles hold MR x NV sums in
    // registers: where MR is a row form's count beyond them, its passes take as many rows as fit.
    const int registers = avx512 ? simd::Avx512<float>::registers : simd::Avx2<float>::registers;
    if (p.trans_b) mr_ = std::min(mr_, small_m::max_tile_rows(registers, nv_));
    if (p.trans_a && p.trans_b)
      a_copy_ = aligned_bytes(static_cast<std::size_t>(p.m * p.k) * element_size(p.precision));
    // The axpy form's strips of B are copied where B's rows alias (operator() says why): one
    // buffer of KB rows of NV vectors per thread.
    const bool rows_alias = p.ldb * element_size(p.precision) % 4096 == 0;
    if (!p.trans_b && !stream_ && rows_alias && p.m > mr_)
      strips_ = aligned_bytes(static_cast<std::size_t>(threads_ * kb_ * nv_ * vector_bytes_));
    // The row form's sums of C: a block of at most half of L2 per thread, its rows spaced apart
    // by up to 4 KiB and a line more (stream_rows says why).
    if (stream_ && !p.trans_b) {
      sums_bytes_ = l2_bytes_ / 2 + mr_ * (4096 + 64);
      sums_ = aligned_bytes(static_cast<std::size_t>(threads_ * sums_bytes_));
    }
    if (split_k_)
      partials_ =
          aligned_bytes(static_cast<std::size_t>((threads_ - 1) * p.m * p.n) * element_size(p.precision));
  }

  template <class T>
  void operator()(const Problem& p, const T* a, const T* b, T* c) {
    const bool dot = p.trans_b;
    // The dot form reads B's rows whole already; the row form is the axpy form's other order.
    const Form form = dot ? Form::dot : stream_ ? Form::rows : Form::axpy;
    const auto tiles = avx512_ ? small_m::avx512_tiles<T> : small_m::avx2_tiles<T>;
    const Tiles<T> tile = tiles(nv_, form);
    const int lanes = vector_bytes_ / int(sizeof(T));
    std::int64_t a_row = p.trans_a ? 1 : p.lda, a_col = p.trans_a ? p.lda : 1;
    if (dot && p.trans_a) {  // the dot form reads A's rows along k: copy a transposed A into that order
      T* copy = reinterpret_cast<T*>(a_copy_.get());
      for (std::int64_t k = 0; k < p.k; ++k)
        for (std::int64_t i = 0; i < p.m; ++i) copy[i * p.k + k] = a[k * p.lda + i];
      a = copy;
      a_row = p.k;
      a_col = 1;
    }
    const std::int64_t width = dot ? nv_ : nv_ * lanes;  // columns of C per tile
    const std::int64_t column_tiles = (p.n + width - 1) / width, row_passes = (p.m + mr_ - 1) / mr_;
    // The last tile of columns, where N is not a multiple of the width, computes only the vectors
    // (dot form: the columns) it stores: a tile of NV vectors for 16 columns would do NV times the
    // work (one core, NV = 4: 96 x 80 x 72 ran at 0.48-0.80 of OpenBLAS, 0.94-0.96 with the
    // narrower last tile; 100^3 at 0.78-0.79, 0.87).
    const std::int64_t edge_cols = p.n - (column_tiles - 1) * width;
    const int edge_nv = static_cast<int>(dot ? edge_cols : (edge_cols + lanes - 1) / lanes);
    const Tiles<T> edge_tile = form == Form::rows || edge_nv == nv_ ? tile : tiles(edge_nv, form);
    // Threads split the columns, each streaming its own part of B. A C with more passes of rows
    // than tiles of columns (few columns: then B is the small operand) is split by rows instead.
    const bool split_rows = !split_k_ && form != Form::rows && row_passes > column_tiles;
    // Split by rows, every pass of rows reads the whole KB x N block of B, which has to stay in L2
    // for the next pass. The space can only bound one strip of it (N is the problem's): where N
    // makes the block larger than half of L2, the block is made shallower to fit. (On the Intel
    // machine the two-thread entry tuned for 512^3, KB=1024, served 512 x 768 x 768 in the same
    // class at 0.43-0.46 of oneDNN, re-reading a 2.4 MB block of B from L3 on every pass; 0.83-0.84
    // with the block fitted.)
    std::int64_t kb = kb_;
    if (split_rows) kb = std::clamp(l2_bytes_ / 2 / (p.n * std::int64_t{sizeof(T)}), std::int64_t{16}, kb_);

    // Split by depth: thread `me` of `team` takes steps [k_first, k_end) of k, the first thread the
    // last steps (so that it has some whenever K > 0: it is the one that scales C by beta).
    const auto depth_share = [&](int team, int me, std::int64_t& k_first, std::int64_t& k_end) {
      k_first = p.k * (team - 1 - me) / team;
      k_end = p.k * (team - me) / team;
    };
    // Thread me > 0's partial product, M x N.
    const auto partial = [&](int me) { return reinterpret_cast<T*>(partials_.get()) + (me - 1) * p.m * p.n; };
    // Thread `me` of `team`'s share of C.
    const auto work = [&](int team, int me) {
      std::int64_t first_row = 0, end_row = p.m, first_col = 0, end_col = p.n, k_first = 0, k_end = p.k;
      T* c_out = c;  // where this thread's product goes: C, or split by depth its partial product
      std::int64_t ldc_out = p.ldc;
      T beta = static_cast<T>(p.beta);
      if (split_k_) {
        depth_share(team, me, k_first, k_end);
        if (me > 0) c_out = partial(me), ldc_out = p.n, beta = T(0);
      } else if (split_rows) {
        first_row = row_passes * me / team * mr_;
        end_row = std::min(p.m, row_passes * (me + 1) / team * mr_);
      } else {
        first_col = column_tiles * me / team * width;
        end_col = std::min(p.n, column_tiles * (me + 1) / team * width);
      }
      small_m::Tile<T> t{};
      t.a_row = a_row;
      t.a_col = a_col;
      t.ldb = p.ldb;
      t.ldc = ldc_out;
      t.alpha = static_cast<T>(p.alpha);
      const bool several_passes = end_row - first_row > mr_;
      t.prefetch = split_rows       ? small_m::no_prefetch
                   : several_passes ? small_m::own_rows
                                    : small_m::next_strip;
      // The strip's rows lie ldb apart. Where that is a multiple of 4 KiB they all fall into one set
      // of L1 (and a few of L2) and evict each other before the next pass of rows comes: then the
      // first pass keeps a contiguous copy of the strip, which the later passes read. (AMD EPYC,
      // AVX2, one thread, 16 x 4096 x 4096 MR=6 NV=2 KB=256: 40 GFLOP/s read from B, 58 from the
      // copy; with ldb 4104 or 4352 instead, the copy won 0.93-1.11 for MR=6 NV=2 and lost
      // 0.79-0.82 for MR=4 NV=3, so strips that do not alias are read from B as they are.)
      const bool copy_strips = strips_ != nullptr && !split_rows && several_passes;
      t.strip = copy_strips ? reinterpret_cast<T*>(strips_.get()) + me * kb_ * width : nullptr;
      // One tile of C (rows [i, i + MR) by columns [j, j + width)) over the block of k at k0; its
      // strip of B read from B, or (from_copy) from t.strip, the strip's KB rows contiguous.
      const auto run_tile = [&](std::int64_t k0, std::int64_t i, std::int64_t j, bool from_copy = false) {
        t.cols = static_cast<int>(std::min(width, end_col - j));
        t.b = from_copy ? t.strip : dot ? b + j * p.ldb + k0 : b + k0 * p.ldb + j;
        const std::int64_t tile_width = t.cols < width ? edge_nv * lanes : width;  // the copy's rows
        t.ldb = from_copy ? tile_width : p.ldb;
        t.a = a + i * a_row + k0 * a_col;
        t.c = c_out + i * ldc_out + j;
        (t.cols < width ? edge_tile : tile)[std::min<std::int64_t>(mr_, end_row - i)](t);
      };
      if (form == Form::rows) {
        // MR rows of C at a time, in blocks of columns small enough to stay in L2 while every row
        // of B streams past once.
        t.kb = k_end - k_first;
        t.beta = beta;
        for (std::int64_t i = first_row; i < end_row && t.kb > 0; i += mr_) {
          const std::int64_t rows = std::min<std::int64_t>(mr_, end_row - i);
          const std::int64_t block =
              std::max(width, l2_bytes_ / 2 / std::int64_t{sizeof(T)} / rows / width * width);
          // Every step reads and writes the pass's rows of C at the same column. Where two of
          // them lie a multiple of 4 KiB apart (ldc 11008 doubles: rows two apart) they fall into
          // one set of L1, with B's rows (as many again), and push each other out on every step:
          // then the rows are summed in a copy whose rows lie a multiple of 4 KiB and a line apart
          // (16 x 11008 x 4096 fp64 MR=16, one thread: 80 -> 47 ms; two: 42 -> 24 ms).
          bool rows_alias = false;
          for (std::int64_t apart = 1; apart < rows; ++apart)
            rows_alias = rows_alias || apart * ldc_out * std::int64_t{sizeof(T)} % 4096 < 64;
          t.sums = rows_alias ? reinterpret_cast<T*>(sums_.get() + me * sums_bytes_) : nullptr;
          t.sums_ld = (block * std::int64_t{sizeof(T)} + 4095) / 4096 * 4096 / std::int64_t{sizeof(T)} +
                      64 / std::int64_t{sizeof(T)};
          for (std::int64_t j = first_col; j < end_col; j += block) {
            t.cols = static_cast<int>(std::min(block, end_col - j));
            t.b = b + k_first * p.ldb + j;
            t.a = a + i * a_row + k_first * a_col;
            t.c = c_out + i * ldc_out + j;
            if (!rows_alias) t.sums = t.c, t.sums_ld = ldc_out;
            tile[rows](t);
          }
        }
      } else {
        for (std::int64_t k0 = k_first; k0 < k_end; k0 += kb) {
          t.kb = std::min(kb, k_end - k0);
          t.beta = k0 == k_first ? beta : T(1);  // later blocks add to C
          if (split_rows) {
            // Few columns: each block of A's rows, read from memory once, serves every column
            // tile from L1 while the whole KB-deep block of B stays in cache.
            for (std::int64_t i = first_row; i < end_row; i += mr_)
              for (std::int64_t j = first_col; j < end_col; j += width) run_tile(k0, i, j);
          } else {
            // Few rows: each strip of B, read from memory once, serves every row of A.
            for (std::int64_t j = first_col; j < end_col; j += width) {
              if (!copy_strips) {
                for (std::int64_t i = first_row; i < end_row; i += mr_) run_tile(k0, i, j);
                continue;
              }
              t.prefetch = small_m::copy_strip;
              run_tile(k0, first_row, j);
              t.prefetch = small_m::no_prefetch;
              for (std::int64_t i = first_row + mr_; i < end_row; i += mr_) run_tile(k0, i, j, true);
            }
          }
        }
      }
      if (!split_k_) return;
#pragma omp barrier
      // Split by depth: every thread's product is done; each adds the partial products of its
      // share of C's rows into C.
      const std::int64_t row_first = p.m * me / team, row_end = p.m * (me + 1) / team;
      for (int other = 1; other < team; ++other) {
        std::int64_t other_first = 0, other_end = 0;
        depth_share(team, other, other_first, other_end);
        if (other_first == other_end) continue;  // no steps of k: its partial product was never written
        const T* part = partial(other);
        for (std::int64_t i = row_first; i < row_end; ++i)
          for (std::int64_t j = 0; j < p.n; ++j) c[i * p.ldc + j] += part[i * p.n + j];
      }
    };
    // One thread works without an OpenMP region: entering one took 1.7 us on the development
    // machine, two fifths of a 64^3 product (4.3 -> 2.5 us).
    if (threads_ == 1) {
      work(1, 0);
      return;
    }
#pragma omp parallel num_threads(threads_)
    // The runtime may grant fewer threads than asked for: split the work among those present.
    work(omp_get_num_threads(), omp_get_thread_num());
  }

 private:
  bool avx512_;
  int vector_bytes_;
  int mr_, nv_;
  std::int64_t kb_;
  int threads_;
  bool stream_;  // the axpy form in its row order
  bool split_k_;           // the threads split the depth
  std::int64_t l2_bytes_;  // one core's L2
  std::unique_ptr<std::byte, AlignedFree> a_copy_;  // dot form with a transposed A: A in M x K order
  std::unique_ptr<std::byte, AlignedFree> strips_;  // axpy form: each thread's copy of a strip of B
  std::unique_ptr<std::byte, AlignedFree> partials_;  // split by depth: threads 1.. 's partial products
  std::unique_ptr<std::byte, AlignedFree> sums_;      // row form: each thread's sums of a block of C
  std::int64_t sums_bytes_ = 0;                       // each thread's part of it
};

class SmallM final : public CpuKernel {
 public:
  SmallM()
      : CpuKernel("06_small_m",
                  "few rows of C: no packing, B streamed once in its stored order, OpenMP threads", {}) {}

  Support supported(const DeviceInfo& d) const override { return avx512_or_avx2(d); }

  SearchSpace space(const DeviceInfo& d, Precision precision) const override {
    const auto elem = static_cast<ParamValue>(element_size(precision));
    SearchSpace s;
    s.add("MR", {1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16}, "most rows of C per pass over a strip of B")
        .add("NV", {1, 2, 3, 4},
             "vectors per row of a tile (axpy form: NR = NV * lanes columns; dot form: NV columns)")
        .add("KB", {16, 24, 32, 64, 128, 256, 512, 1024, 2048}, "depth of a block of k")
        .add("threads", int_range(1, std::max(1, d.cores)), "OpenMP threads")
        .add("STREAM", {0, 1},
             "axpy form's order: 0 tiles of C in registers over KB rows of B, 1 whole rows of B past C's "
             "rows in cache")
        .add("SPLIT_K", {0, 1}, "what the threads split: 0 the columns (or the rows), 1 the depth")
        .added_later("SPLIT_K", 0);  // BLAS tables written before it: the threads split C
    s.let("elem", elem, "bytes per element");
    const std::string registers = let_vector_registers(s, d);
    s.let("vector_bytes", uses_avx512(d) ? 64 : 32, "bytes per vector register");
    let_cache(s, d, "L1d", 1, 32 << 10);
    let_cache(s, d, "L2", 2, 1 << 20);
    s.require("STREAM == 1 || MR*NV + NV + 1 <= " + registers,
              "a tile's MR*NV accumulators, NV vectors of B and one of A (the row form keeps C in cache, "
              "not in registers; with a transposed B, which takes the dot form, a pass takes the rows "
              "that fit)")
        .require("SPLIT_K == 0 || threads > 1",
                 "one thread has nothing to split: no duplicate configurations")
        .require("STREAM == 0 || KB == 256",
                 "the row form reads the whole depth at once: one KB, no duplicate configurations")
        .require("MR*KB*elem <= L1d", "a pass's block of A stays in L1")
        .require("KB*NV*vector_bytes <= L2",
                 "the strip of B a tile reads stays in L2 for the next pass over M's rows");
    return s;
  }

  bool reads_transposed() const override { return true; }

  // With AVX2 only, 6 x 2 (15 of the 16 ymm registers).
  Config preferred_config(const DeviceInfo& d, Precision) const override {
    return {{"MR", uses_avx512(d) ? 8 : 6},    {"NV", 2},     {"KB", 256},
            {"threads", std::max(1, d.cores)}, {"STREAM", 0}, {"SPLIT_K", 0}};
  }
  // Where B streams from memory (a few rows of C against a large B), a shallow block: 24 rows of
  // B at a time, each read as one stream across the columns, few enough for the hardware
  // prefetcher to follow them all. On the Intel Xeon development machine, 16 x 11008 x 4096 on
  // one thread: 66-70 GFLOP/s (fp32) at the table's MR=6 NV=4 KB=32, 75-76 here; fp64 28-29 ->
  // 30-31; two threads 149-153 -> 168-175 and 55 -> 62-63.
  // And the 6 x 4 tile: 24 accumulators for 10 loads per step of k (the default's 8 x 2: 16 for
  // 10), the fewest loads per FMA the registers allow, as 05's 6 x 4. A 24-configuration search
  // from the default alone had not found it for 196 x 256 x 2304 on one thread: 0.88 of oneDNN
  // with the table's MR=12 NV=2 KB=512, 0.94 with MR=6 NV=4 KB=256 (Intel Xeon, three rounds).
  // And the 6 x 4 tile in row order, for one row of C (1 x 11008 x 4096, one thread: 1.03-1.08 of
  // oneDNN where the best tile order ran 0.95-0.97).
  // And, with several cores, the threads splitting the depth: a search that starts from the
  // column split alone reaches it only as one of many one-parameter moves.
  std::vector<Config> preferred_variants(const DeviceInfo& d, Precision precision) const override {
    Config shallow = preferred_config(d, precision);
    shallow["KB"] = 24;
    Config wide = preferred_config(d, precision);  // AVX2: 4 x 3, 12 accumulators for 7 loads
    wide["MR"] = uses_avx512(d) ? 6 : 4;
    wide["NV"] = uses_avx512(d) ? 4 : 3;
    Config rows = wide;
    rows["STREAM"] = 1;
    std::vector<Config> variants = {shallow, wide, rows};
    if (d.cores > 1) {
      Config split = preferred_config(d, precision);
      split["SPLIT_K"] = 1;
      variants.push_back(split);
    }
    return variants;
  }

 protected:
  std::unique_ptr<Executable> build(Device& d, const Problem& p, const Config& c) const override {
    // The L2 the space's constraints were computed with (the OS's figure, or the one assumed).
    const std::int64_t l2 = *space(d.info(), p.precision).value_of("L2", c);
    return make_executable(p, SmallMRoutine(p, c, l2, uses_avx512(d.info())));
  }
};
}  // namespace

std::unique_ptr<Kernel> make_small_m() { return std::make_unique<SmallM>(); }

}  // namespace gemmlab::cpu
