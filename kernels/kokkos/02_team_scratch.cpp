// 02_team_scratch — one team per MT x NT tile of C; tiles of A and B staged in team scratch memory.
//
// Idea over 01: in 01 every element of A and B is read from the space's memory once per element
// of C it contributes to. Here a hierarchical TeamPolicy gives each team (league rank) one
// MT x NT tile of C. For each KT-deep step the team copies the MT x KT tile of A and the KT x NT
// tile of B into its scratch memory (at the edges only the part inside the matrices), meets at a
// barrier, and every (thread, vector lane) pair updates its elements of an MT x NT accumulator
// tile, also in scratch: team threads (TeamThreadRange) take rows, vector lanes
// (ThreadVectorRange) take columns. Each element of A and B staged is then used NT resp. MT times.
// Hardware: team scratch memory — on a GPU the on-chip shared memory / LDS (level 0) or global
// memory (level 1); on the host (Serial, OpenMP) a per-team buffer that stays in the L1/L2 cache.
// Parameters: MT, NT, KT (tile sizes), TEAM (team size), VEC (vector length), LEVEL (scratch level).
// Constraints (space(), as expressions): the tiles of A and B and the accumulator tile fit the
// team scratch at LEVEL; on a GPU, TEAM x VEC threads fit a team (TEAM and VEC are offered only up
// to the space's team size and vector length). The tile of C a team stages for is MT x NT
// (tile_m, tile_n).
#include "kokkos_kernel.hpp"
#include "kokkos_kernels.hpp"

namespace gemmlab::kokkos {
namespace {

template <class Space, class T, class AView, class BView, class CView>
struct TeamScratchGemm {
  using Member = typename Kokkos::TeamPolicy<Space>::member_type;
  using Tile = Kokkos::View<T**, Kokkos::LayoutRight, typename Space::scratch_memory_space,
                            Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  AView a;
  BView b;
  CView c;
  T alpha = {}, beta = {};
  std::int64_t m = 0, n = 0, k = 0;
  int mt = 0, nt = 0, kt = 0, level = 0;
  std::int64_t tiles_n = 0;

  static std::size_t scratch_bytes(int mt, int nt, int kt) {
    return Tile::shmem_size(mt, kt) + Tile::shmem_size(kt, nt) + Tile::shmem_size(mt, nt);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const std::int64_t i0 = team.league_rank() / tiles_n * mt;
    const std::int64_t j0 = team.league_rank() % tiles_n * nt;
    // The part of the tile inside C (all of it except at the bottom and right edges): only that
    // part is staged, multiplied and written, so an edge tile costs what it covers.
    const int rows = static_cast<int>(m - i0 < mt ? m - i0 : mt);
    const int cols = static_cast<int>(n - j0 < nt ? n - j0 : nt);
    Tile a_tile(team.team_scratch(level), mt, kt);
    Tile b_tile(team.team_scratch(level), kt, nt);
    Tile acc(team.team_scratch(level), mt, nt);

    // Each (thread, lane) pair owns the same accumulators in every loop below: no barrier needed
    // between zeroing, updating and writing them.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](const int i) {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, cols), [&](const int j) { acc(i, j) = T(0); });
    });
    for (std::int64_t k0 = 0; k0 < k; k0 += kt) {
      const int depth = static_cast<int>(k - k0 < kt ? k - k0 : kt);  // the last step may be shallower
      team.team_barrier();  // the previous step's tiles are no longer read
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](const int i) {
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, depth), [&](const int q) { a_tile(i, q) = a(i0 + i, k0 + q); });
      });
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, depth), [&](const int q) {
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, cols), [&](const int j) { b_tile(q, j) = b(k0 + q, j0 + j); });
      });
      team.team_barrier();  // the tiles are complete
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](const int i) {
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, cols), [&](const int j) {
          T sum = acc(i, j);
          for (int q = 0; q < depth; ++q) sum += a_tile(i, q) * b_tile(q, j);
          acc(i, j) = sum;
        });
      });
    }
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](const int i) {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, cols), [&](const int j) {
        const T result = alpha * acc(i, j);
        c(i0 + i, j0 + j) = beta == T(0) ? result : result + beta * c(i0 + i, j0 + j);
      });
    });
  }
};

struct TeamScratchLauncher {
  int mt = 0, nt = 0, kt = 0, team_size = 0, vector_length = 0, level = 0;

  template <class Space, class T, class AView, class BView, class CView>
  void launch(const Problem& p, AView a, BView b, CView c) const {
    using Gemm = TeamScratchGemm<Space, T, AView, BView, CView>;
    const std::int64_t tiles_m = (p.m + mt - 1) / mt, tiles_n = (p.n + nt - 1) / nt;
    const Gemm gemm{a, b, c, static_cast<T>(p.alpha), static_cast<T>(p.beta), p.m, p.n, p.k,
                    mt, nt, kt, level, tiles_n};
    Kokkos::TeamPolicy<Space> policy(static_cast<int>(tiles_m * tiles_n), team_size, vector_length);
    policy.set_scratch_size(level, Kokkos::PerTeam(static_cast<int>(Gemm::scratch_bytes(mt, nt, kt))));
    Kokkos::parallel_for("gemmlab_02_team_scratch", policy, gemm);
  }
};

class TeamScratch final : public KokkosKernel {
 public:
  TeamScratch()
      : KokkosKernel("02_team_scratch", "a team per MT x NT tile of C, A and B tiles staged in team scratch") {}

  SearchSpace space(const DeviceInfo& d, Precision precision) const override {
    const SpaceLimits limits = limits_of(d);
    SearchSpace s;
    s.add("MT", pow2_range(4, 256), "rows of the team's tile of C")
        .add("NT", pow2_range(4, 512), "columns of the team's tile of C")
        .add("KT", pow2_range(4, 256), "depth of the tiles of A and B staged per step")
        .add("TEAM", pow2_range(1, std::max(1, limits.team_size_max)), "threads per team (rows)")
        .add("VEC", pow2_range(1, vector_lengths(limits)), "vector length (columns)")
        .add("LEVEL", {0, 1}, "team scratch level: 0 on-chip (GPU shared memory), 1 larger");
    s.let("elem", static_cast<ParamValue>(element_size(precision)), "bytes per element");
    constrain_team(s, limits, "MT*KT + KT*NT + MT*NT", 3);
    return s;
  }
  // 32 x 64 tiles of C, 32 deep, in level-0 scratch; on a GPU 64 threads of 4 x 16 lanes. Where
  // the scratch is too small for them, default_config takes the nearest valid configuration.
  Config preferred_config(const DeviceInfo& d, Precision) const override {
    const bool host = limits_of(d).host;
    return {{"MT", 32}, {"NT", 64}, {"KT", 32}, {"TEAM", host ? 1 : 4}, {"VEC", host ? 1 : 16}, {"LEVEL", 0}};
  }

  // Vector lengths worth trying: on the host a team's lanes are iterations of one thread's loop,
  // so a few; on a GPU up to the warp / wavefront.
  static ParamValue vector_lengths(const SpaceLimits& limits) {
    return std::max(1, std::min(limits.vector_length_max, limits.host ? 4 : 64));
  }

 protected:
  std::unique_ptr<Executable> build(Device& device, const Problem& p, const Config& c) const override {
    const auto param = [&](const char* name) { return static_cast<int>(c.at(name)); };
    return make_executable(device, p,
                           TeamScratchLauncher{param("MT"), param("NT"), param("KT"), param("TEAM"), param("VEC"),
                                               param("LEVEL")});
  }
};
}  // namespace

std::unique_ptr<Kernel> make_team_scratch() { return std::make_unique<TeamScratch>(); }

}  // namespace gemmlab::kokkos
