// 03_team_register_blocked — 02's team tiles, each thread / vector lane accumulating an RM x RN
// block of C in registers.
//
// Idea over 02: in 02 the innermost loop reads an accumulator from scratch, one element of A and
// one of B per multiply-add, and writes the accumulator back: memory traffic, not arithmetic,
// sets its speed. Here the MT x NT tile is cut into RM x RN register blocks; team threads
// (TeamThreadRange) take rows of blocks, vector lanes (ThreadVectorRange) take columns of blocks.
// For each KT-deep step staged in scratch as in 02, a block's RM x RN accumulators are a local
// array (compile-time sizes, so the compiler keeps it in registers) and each step q loads RN
// contiguous elements of the B tile and RM of the A tile for RM * RN multiply-adds. After the
// step the block is added to C (alpha * acc, and beta * C on the first step only), so no
// accumulator tile is needed in scratch and the staged tiles can be deeper.
// Hardware: registers. On the host the RN-long inner loops are contiguous, so the compiler
// vectorises them (with FMA under GEMMLAB_KOKKOS_HOST_FLAGS, -march=native -ffp-contract=fast);
// 12 x 32 fp32 is 24 of AVX-512's 32 registers, leaving room for two loads of B and a broadcast
// of A. On a GPU each lane keeps its block in its own registers.
// Parameters: MT, NT, KT, TEAM, VEC, LEVEL as in 02; RM, RN (register block, compile-time variants:
// RM in {1, 2, 4, 6, 8, 12}, RN in {4, 8, 16, 32, 64}).
// Constraints (space(), as expressions): a register block is no taller than the tile (the last
// row block of a tile may be partial) and a whole number of them spans the tile's columns; a
// block's accumulators fit the register budget (host: 3/4 of the vector registers; GPU: 64 32-bit
// registers); the A panels (MT rounded up to whole blocks) and the B panels fit the team scratch
// at LEVEL; on a GPU, TEAM x VEC threads fit a team. The tile of C a team stages for is MT x NT
// (tile_m, tile_n).
#include "kokkos_kernel.hpp"
#include "kokkos_kernels.hpp"

namespace gemmlab::kokkos {
namespace {

template <class Space, class T, int RM, int RN, class AView, class BView, class CView>
struct RegisterBlockedGemm {
  using Member = typename Kokkos::TeamPolicy<Space>::member_type;
  // The staged tiles are stored in the order the register blocks read them: A as ceil(MT/RM)
  // panels of KT x RM (the RM values of one step adjacent), B as NT/RN panels of KT x RN. A block
  // then reads two sequential streams, and no two of its rows of B or A fall in the same cache set.
  // MT need not be a multiple of RM: the tile's last panel is then partial, its rows past the tile
  // staged as zeros and never stored (so RM = 12 can cover 1024 rows as 2 x 43 blocks).
  using Panels = Kokkos::View<T*, typename Space::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  AView a;
  BView b;
  CView c;
  T alpha = {}, beta = {};
  std::int64_t m = 0, n = 0, k = 0;
  int mt = 0, nt = 0, kt = 0, level = 0;
  std::int64_t tiles_n = 0;

  static int row_blocks(int mt) { return (mt + RM - 1) / RM; }
  static std::size_t scratch_bytes(int mt, int nt, int kt) {
    return Panels::shmem_size(static_cast<std::size_t>(row_blocks(mt)) * RM * kt) +
           Panels::shmem_size(static_cast<std::size_t>(kt) * nt);
  }

  // acc = A panel rb [0:depth] * B panel cb [0:depth], then into C's rows below row_end.
  KOKKOS_INLINE_FUNCTION void block(const T* a_panel, const T* b_panel, const int rb, const int cb, const int depth,
                                    const std::int64_t i0, const std::int64_t j0, const std::int64_t row_end,
                                    const bool first_step) const {
    T acc[RM][RN];
    for (int r = 0; r < RM; ++r)
      for (int j = 0; j < RN; ++j) acc[r][j] = T(0);
    for (int q = 0; q < depth; ++q) {
      const T* a_q = a_panel + q * RM;
      const T* b_q = b_panel + q * RN;
      for (int r = 0; r < RM; ++r) {
        const T a_rq = a_q[r];
        // The loop to vectorise is this one, along a row of the block; left to itself GCC 12
        // vectorises fp64 blocks along q instead (see kernels/CMakeLists.txt).
#pragma omp simd
        for (int j = 0; j < RN; ++j) acc[r][j] += a_rq * b_q[j];
      }
    }
    const std::int64_t row0 = i0 + rb * RM, col0 = j0 + cb * RN;
    if (row0 + RM <= row_end && col0 + RN <= n) {  // a whole block: contiguous rows, vectorised
      for (int r = 0; r < RM; ++r) {
        T* c_row = &c(row0 + r, col0);
        if (!first_step)
          for (int j = 0; j < RN; ++j) c_row[j] += alpha * acc[r][j];
        else if (beta == T(0))
          for (int j = 0; j < RN; ++j) c_row[j] = alpha * acc[r][j];
        else
          for (int j = 0; j < RN; ++j) c_row[j] = alpha * acc[r][j] + beta * c_row[j];
      }
      return;
    }
    for (int r = 0; r < RM; ++r) {
      const std::int64_t i = i0 + rb * RM + r;
      if (i >= row_end) break;
      for (int jj = 0; jj < RN; ++jj) {
        const std::int64_t j = j0 + cb * RN + jj;
        if (j >= n) break;
        const T result = alpha * acc[r][jj];
        if (!first_step) c(i, j) += result;
        else c(i, j) = beta == T(0) ? result : result + beta * c(i, j);
      }
    }
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const std::int64_t i0 = team.league_rank() / tiles_n * mt;
    const std::int64_t j0 = team.league_rank() % tiles_n * nt;
    const std::int64_t row_end = i0 + mt < m ? i0 + mt : m;  // rows of C this team owns
    const std::int64_t col_end = j0 + nt < n ? j0 + nt : n;
    // Only the blocks holding part of C are staged and multiplied: an edge tile (or a problem
    // smaller than one tile) costs what it covers, not MT x NT.
    const int blocks_m = static_cast<int>((row_end - i0 + RM - 1) / RM);
    const int blocks_n = static_cast<int>((col_end - j0 + RN - 1) / RN);
    Panels a_panels(team.team_scratch(level), static_cast<std::size_t>(row_blocks(mt)) * RM * kt);
    Panels b_panels(team.team_scratch(level), static_cast<std::size_t>(kt) * nt);
    T* const a_pack = a_panels.data();
    T* const b_pack = b_panels.data();
    for (std::int64_t k0 = 0; k0 < k; k0 += kt) {
      // The last step may be shallower than KT: only its valid depth is staged and multiplied.
      const int depth = static_cast<int>(k - k0 < kt ? k - k0 : kt);
      team.team_barrier();  // the previous step's panels are no longer read
      // Staging is a large share of the work when a tile row of B is staged for every row of
      // tiles: whole panels copy without bounds checks (contiguous runs the compiler
      // vectorises), a partial edge panel zero-pads the rows or columns past C.
      // A is staged panel by panel with the panel's RM values of one step written together: the
      // writes are one sequential run and each of the RM rows of A is read sequentially (writing
      // row by row instead scatters every element RM apart, which cost more than the copy itself).
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, blocks_m), [&](const int rb) {
        T* const panel = a_pack + static_cast<std::size_t>(rb) * kt * RM;
        const std::int64_t row0 = i0 + rb * RM;
        if (row0 + RM <= row_end)
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, depth), [&](const int q) {
            for (int r = 0; r < RM; ++r) panel[q * RM + r] = a(row0 + r, k0 + q);
          });
        else
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, depth), [&](const int q) {
            for (int r = 0; r < RM; ++r) panel[q * RM + r] = row0 + r < row_end ? a(row0 + r, k0 + q) : T(0);
          });
      });
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, depth), [&](const int q) {
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, blocks_n), [&](const int cb) {
          T* b_run = b_pack + (static_cast<std::size_t>(cb) * kt + q) * RN;
          const std::int64_t col0 = j0 + cb * RN;
          if (col0 + RN <= n) {
            const T* from = &b(k0 + q, col0);
            for (int j = 0; j < RN; ++j) b_run[j] = from[j];
          } else {
            for (int j = 0; j < RN; ++j) b_run[j] = col0 + j < n ? b(k0 + q, col0 + j) : T(0);
          }
        });
      });
      team.team_barrier();  // the panels are complete
      const bool first_step = k0 == 0;
      // Each (thread, lane) pair owns the same blocks of C in every step: no race on C.
      // Threads take rows of blocks and lanes columns: on the host a row of blocks keeps its A
      // panel in L1 while the B panels stream from L2, and C is then updated left to right along
      // its rows, an order the hardware prefetcher follows.
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, blocks_m), [&](const int rb) {
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, blocks_n), [&](const int cb) {
          block(a_pack + static_cast<std::size_t>(rb) * kt * RM, b_pack + static_cast<std::size_t>(cb) * kt * RN, rb, cb,
                depth, i0, j0, row_end, first_step);
        });
      });
    }
  }
};

constexpr int register_rows[] = {1, 2, 4, 6, 8, 12};
constexpr int register_columns[] = {4, 8, 16, 32, 64};

struct RegisterBlockedLauncher {
  int mt = 0, nt = 0, kt = 0, rm = 0, rn = 0, team_size = 0, vector_length = 0, level = 0;

  template <class Space, class T, int RM, int RN, class AView, class BView, class CView>
  void launch_variant(const Problem& p, AView a, BView b, CView c) const {
    using Gemm = RegisterBlockedGemm<Space, T, RM, RN, AView, BView, CView>;
    const std::int64_t tiles_m = (p.m + mt - 1) / mt, tiles_n = (p.n + nt - 1) / nt;
    const Gemm gemm{a, b, c, static_cast<T>(p.alpha), static_cast<T>(p.beta), p.m, p.n, p.k,
                    mt, nt, kt, level, tiles_n};
    Kokkos::TeamPolicy<Space> policy(static_cast<int>(tiles_m * tiles_n), team_size, vector_length);
    policy.set_scratch_size(level, Kokkos::PerTeam(static_cast<int>(Gemm::scratch_bytes(mt, nt, kt))));
    Kokkos::parallel_for("gemmlab_03_team_register_blocked", policy, gemm);
  }
  template <class Space, class T, int RM, class AView, class BView, class CView>
  bool launch_rows(const Problem& p, AView a, BView b, CView c) const {
    if (rm != RM) return false;
    if (rn == 4) launch_variant<Space, T, RM, 4>(p, a, b, c);
    else if (rn == 8) launch_variant<Space, T, RM, 8>(p, a, b, c);
    else if (rn == 16) launch_variant<Space, T, RM, 16>(p, a, b, c);
    else if (rn == 32) launch_variant<Space, T, RM, 32>(p, a, b, c);
    else if (rn == 64) launch_variant<Space, T, RM, 64>(p, a, b, c);
    else return false;
    return true;
  }
  template <class Space, class T, class AView, class BView, class CView>
  void launch(const Problem& p, AView a, BView b, CView c) const {
    const bool launched = launch_rows<Space, T, 1>(p, a, b, c) || launch_rows<Space, T, 2>(p, a, b, c) ||
                          launch_rows<Space, T, 4>(p, a, b, c) || launch_rows<Space, T, 6>(p, a, b, c) ||
                          launch_rows<Space, T, 8>(p, a, b, c) || launch_rows<Space, T, 12>(p, a, b, c);
    if (!launched) throw ConfigError("03_team_register_blocked has no RM=" + std::to_string(rm) + " RN=" + std::to_string(rn) + " variant");
  }
};

class TeamRegisterBlocked final : public KokkosKernel {
 public:
  TeamRegisterBlocked()
      : KokkosKernel("03_team_register_blocked", "02's team tiles with RM x RN register blocks per thread / lane") {}

  SearchSpace space(const DeviceInfo& d, Precision precision) const override {
    const SpaceLimits limits = limits_of(d);
    SearchSpace s;
    s.add("MT", {8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024}, "rows of the team's tile of C")
        .add("NT", pow2_range(4, 1024), "columns of the team's tile of C")
        .add("KT", pow2_range(4, 1024), "depth of the tiles of A and B staged per step")
        .add("RM", {std::begin(register_rows), std::end(register_rows)}, "rows of a register block")
        .add("RN", {std::begin(register_columns), std::end(register_columns)}, "columns of a register block")
        .add("TEAM", pow2_range(1, std::max(1, limits.team_size_max)), "threads per team (rows of blocks)")
        .add("VEC", pow2_range(1, std::max(1, std::min(limits.vector_length_max, limits.host ? 4 : 64))),
             "vector length (columns of blocks)")
        .add("LEVEL", {0, 1}, "team scratch level: 0 on-chip (GPU shared memory), 1 larger");
    s.let("elem", static_cast<ParamValue>(element_size(precision)), "bytes per element");
    let_register_budget(s, d, limits);
    s.require("RM <= MT", "no register block taller than the tile")
        .require("NT % RN == 0", "whole register blocks across a tile")
        .require("RM*RN*elem <= register_budget", "a block's accumulators stay in registers");
    constrain_team(s, limits, "(MT + RM - 1)/RM*RM*KT + KT*NT", 2);
    return s;
  }
  // Host: 512 x 512 tiles 256 deep in level-1 scratch (1 MiB of panels, in L2), 8 x 32 (fp32) /
  // 8 x 16 (fp64) register blocks: near the best the tuner found at 512^3 and 1024^3 on an AVX-512
  // Xeon (Serial); large tiles stage each operand few times.
  // GPU: 64 x 64 x 16 in level 0, 4 x 4 blocks, 16 x 16 threads.
  // Where the device's space rejects these, default_config takes the nearest valid configuration.
  Config preferred_config(const DeviceInfo& d, Precision precision) const override {
    if (limits_of(d).host)
      return {{"MT", 512}, {"NT", 512}, {"KT", 256}, {"RM", 8}, {"RN", precision == Precision::fp32 ? 32 : 16},
              {"TEAM", 1}, {"VEC", 1}, {"LEVEL", 1}};
    return {{"MT", 64}, {"NT", 64}, {"KT", 16}, {"RM", 4}, {"RN", 4}, {"TEAM", 16}, {"VEC", 16}, {"LEVEL", 0}};
  }

 protected:
  std::unique_ptr<Executable> build(Device& device, const Problem& p, const Config& c) const override {
    const auto param = [&](const char* name) { return static_cast<int>(c.at(name)); };
    return make_executable(device, p,
                           RegisterBlockedLauncher{param("MT"), param("NT"), param("KT"), param("RM"), param("RN"),
                                                   param("TEAM"), param("VEC"), param("LEVEL")});
  }
};
}  // namespace

std::unique_ptr<Kernel> make_team_register_blocked() { return std::make_unique<TeamRegisterBlocked>(); }

}  // namespace gemmlab::kokkos
