// The Kokkos backend: a device per enabled execution space, buffers from kokkos_malloc in the
// space's memory space, copies through deep_copy of unmanaged views, fence + steady-clock timing,
// the FMA and triad ceilings as Kokkos kernels, and KokkosBlas::gemm as the reference.
#include "gemmlab/kokkos.hpp"

#include <KokkosBlas3_gemm.hpp>
#include <dlfcn.h>

#if __has_include(<Trilinos_version.h>)
#include <Trilinos_version.h>
#endif

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <mutex>

#include "gemmlab/cpu.hpp"
#include "gemmlab/measure.hpp"

namespace gemmlab::kokkos {

namespace {

// Finalises Kokkos at exit if this process initialised it here. Function-local static: created on
// first use, so destroyed after everything created later (devices, buffers, references).
struct KokkosSession {
  KokkosSession() {
    if (!Kokkos::is_initialized()) {
      Kokkos::initialize();
      owned = true;
    }
  }
  ~KokkosSession() {
    if (owned && Kokkos::is_initialized()) Kokkos::finalize();
  }
  KokkosSession(const KokkosSession&) = delete;
  KokkosSession& operator=(const KokkosSession&) = delete;
  bool owned = false;
};

template <class Space>
struct EmptyTeamFunctor {
  KOKKOS_INLINE_FUNCTION void operator()(const typename Kokkos::TeamPolicy<Space>::member_type&) const {}
};

std::string space_name(int index) {
  std::string name;
  if (!with_space(index, [&](auto space) { name = decltype(space)::name(); }))
    throw std::invalid_argument("kokkos device " + std::to_string(index) + " does not exist; the kokkos backend has " +
                                std::to_string(space_count()) + " device(s), one per execution space");
  return name;
}

}  // namespace

void ensure_initialized() { static KokkosSession session; }

int space_count() {
  int count = 0;
  while (with_space(count, [](auto) {})) ++count;
  return count;
}

SpaceLimits space_limits(int device_index) {
  ensure_initialized();
  SpaceLimits limits;
  limits.space = space_name(device_index);
  with_space(device_index, [&](auto space) {
    using Space = decltype(space);
    using Policy = Kokkos::TeamPolicy<Space>;
    limits.host = runs_on_host<Space>();
    limits.concurrency = Space::concurrency();
    limits.team_size_max = Policy(1, 1, 1).team_size_max(EmptyTeamFunctor<Space>{}, Kokkos::ParallelForTag());
    limits.vector_length_max = Policy::vector_length_max();
    limits.scratch_bytes_max = static_cast<std::int64_t>(Policy::scratch_size_max(0));
    limits.scratch1_bytes_max = static_cast<std::int64_t>(Policy::scratch_size_max(1));
  });
  return limits;
}

namespace {

DeviceInfo describe(int index) {
  const SpaceLimits limits = space_limits(index);
  DeviceInfo d;
  if (limits.host) {
    // The host's cores as the space uses them: the CPU's description with the space's concurrency.
    d = cpu::detect();
    const double share = d.cores > 0 ? static_cast<double>(limits.concurrency) / d.cores : 1.0;
    d.peak_gflops_fp32 *= share;
    d.peak_gflops_fp64 *= share;
    d.name = "Kokkos " + limits.space + " on " + d.name;
    d.cores = limits.concurrency;
  } else {
    d.name = "Kokkos " + limits.space;
    d.cores = limits.concurrency;
  }
  d.backend = "kokkos";
  d.index = index;
  d.host_memory = limits.host;  // a host space allocates the process's own memory
  d.features.push_back("kokkos-" + limits.space);
  return d;
}

template <class MemorySpace>
class KokkosBuffer final : public DeviceBuffer {
 public:
  explicit KokkosBuffer(std::size_t bytes)
      : bytes_(bytes), data_(Kokkos::kokkos_malloc<MemorySpace>("gemmlab", std::max<std::size_t>(bytes, 1))) {}
  ~KokkosBuffer() override { Kokkos::kokkos_free<MemorySpace>(data_); }
  KokkosBuffer(const KokkosBuffer&) = delete;
  KokkosBuffer& operator=(const KokkosBuffer&) = delete;
  void* data() override { return data_; }
  std::size_t bytes() const override { return bytes_; }

 private:
  std::size_t bytes_ = 0;
  void* data_ = nullptr;
};

template <class MemorySpace>
using Bytes = Kokkos::View<char*, MemorySpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// --- Ceilings -----------------------------------------------------------------------------------

// FMA throughput: each work item runs `chains` independent dependent chains acc = acc * x + y
// (the compiler turns them into vector FMAs where the space runs on the host); the sum of all
// accumulators is reduced, so nothing is dropped, and x, y arrive at run time.
template <class T, int Chains>
struct FmaChains {
  T x = {}, y = {};
  long iterations = 0;
  KOKKOS_INLINE_FUNCTION void operator()(const int item, T& sum) const {
    T acc[Chains];
    for (int c = 0; c < Chains; ++c) acc[c] = T(1) + T(0.001) * static_cast<T>(c + item);
    for (long it = 0; it < iterations; ++it)
      for (int c = 0; c < Chains; ++c) acc[c] = acc[c] * x + y;
    for (int c = 0; c < Chains; ++c) sum += acc[c];
  }
};

volatile double sink;

template <class Space, class T, int Chains>
double fma_gflops(int items) {
  const FmaChains<T, Chains> f{T(0.999999), T(1e-6), 200'000};
  auto run = [&] {
    return wall_seconds([&] {
      T sum = 0;
      Kokkos::parallel_reduce("gemmlab_fma", Kokkos::RangePolicy<Space>(0, items), f, sum);
      Space().fence();
      sink = static_cast<double>(sum);
    });
  };
  const Measurement m = measure(run, {.warmup = 1, .min_repetitions = 5, .max_repetitions = 20,
                                      .max_seconds = 1.0, .target_spread = 0.01});
  return 2.0 * Chains * static_cast<double>(f.iterations) * items / m.median_s * 1e-9;
}

// The STREAM triad a[i] = b[i] + s * c[i] over three 64 MiB arrays of the space's memory,
// counted as 3 x 8 bytes per element.
template <class Space>
double triad_gb_per_s() {
  const std::size_t n = (std::size_t{64} << 20) / sizeof(double);
  Kokkos::View<double*, typename Space::memory_space> a("triad_a", n), b("triad_b", n), c("triad_c", n);
  Kokkos::deep_copy(b, 1.0);
  Kokkos::deep_copy(c, 2.0);
  const double s = 3.0;
  auto run = [&] {
    return wall_seconds([&] {
      Kokkos::parallel_for("gemmlab_triad", Kokkos::RangePolicy<Space>(0, n),
                           KOKKOS_LAMBDA(const std::size_t i) { a(i) = b(i) + s * c(i); });
      Space().fence();
    });
  };
  const Measurement m = measure(run, {.warmup = 1, .min_repetitions = 5, .max_repetitions = 20,
                                      .max_seconds = 2.0, .target_spread = 0.02});
  return 3.0 * static_cast<double>(n * sizeof(double)) / m.median_s * 1e-9;
}

template <class Space>
MeasuredCeilings measure_space_ceilings() {
  MeasuredCeilings c;
  const int items = std::max(1, Space::concurrency());
  c.fma_gflops_fp32 = fma_gflops<Space, float, 128>(items);
  c.fma_gflops_fp64 = fma_gflops<Space, double, 64>(items);
  // One compute unit is what the space has when its concurrency is one (Serial): the same figure.
  if (Space::concurrency() == 1) {
    c.fma_gflops_fp32_one_core = c.fma_gflops_fp32;
    c.fma_gflops_fp64_one_core = c.fma_gflops_fp64;
  }
  c.triad_gb_per_s = triad_gb_per_s<Space>();
  return c;
}

// --- Device ---------------------------------------------------------------------------------------

template <class Space>
class KokkosDevice final : public Device {
 public:
  using MemorySpace = typename Space::memory_space;
  explicit KokkosDevice(int index) : info_(describe(index)) {}
  const DeviceInfo& info() const override { return info_; }
  bool buffers_in_host_memory() const override { return std::is_same_v<MemorySpace, Kokkos::HostSpace>; }
  std::unique_ptr<DeviceBuffer> allocate(std::size_t bytes) override {
    return std::make_unique<KokkosBuffer<MemorySpace>>(bytes);
  }
  void upload(DeviceBuffer& dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
    Bytes<MemorySpace> to(static_cast<char*>(dst.data()), bytes);
    Bytes<Kokkos::HostSpace> from(static_cast<char*>(const_cast<void*>(src)), bytes);
    Kokkos::deep_copy(to, from);
  }
  void download(void* dst, DeviceBuffer& src, std::size_t bytes) override {
    if (bytes == 0) return;
    Bytes<Kokkos::HostSpace> to(static_cast<char*>(dst), bytes);
    Bytes<MemorySpace> from(static_cast<char*>(src.data()), bytes);
    Kokkos::deep_copy(to, from);
  }
  void synchronize() override { Space().fence(); }
  // Wall time from a fenced start to the fence after the launch: all of the launch's work.
  double time_once(const std::function<void()>& launch) override {
    Space().fence();
    const auto start = std::chrono::steady_clock::now();
    launch();
    Space().fence();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  void measure_ceilings() override { info_.measured = measure_space_ceilings<Space>(); }

 private:
  DeviceInfo info_;
};

// --- Reference: KokkosBlas::gemm ------------------------------------------------------------------

// Row-major operands as LayoutRight views (right_view, gemmlab/kokkos.hpp) or, as here, as
// LayoutStride views (row stride ld, column stride 1).
template <class T, class MemorySpace>
auto strided_view(T* data, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  return Kokkos::View<T**, Kokkos::LayoutStride, MemorySpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
      data, Kokkos::LayoutStride(static_cast<std::size_t>(rows), static_cast<std::size_t>(std::max(ld, cols)),
                                 static_cast<std::size_t>(cols), 1));
}

// The library that defines a symbol in this process (its real file: Debian's libblas.so.3 is an
// alternatives link), or "" where none does; with OpenBLAS's configuration string where it is one.
std::string library_of(const char* symbol) {
  void* address = dlsym(RTLD_DEFAULT, symbol);
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "";
  std::error_code error;
  const auto real = std::filesystem::canonical(info.dli_fname, error);
  std::string library = error ? std::string(info.dli_fname) : real.string();
  using GetConfig = char* (*)();
  if (auto config = reinterpret_cast<GetConfig>(dlsym(RTLD_DEFAULT, "openblas_get_config")))
    library += std::string(" = ") + config();
  return library;
}

std::string kokkos_kernels_version() {
#ifdef TRILINOS_VERSION_STRING
  return "Kokkos Kernels of Trilinos " TRILINOS_VERSION_STRING ", Kokkos " GEMMLAB_KOKKOS_VERSION;
#else
  return "Kokkos Kernels, Kokkos " GEMMLAB_KOKKOS_VERSION;
#endif
}

// "kokkoskernels": KokkosBlas::gemm on LayoutRight views — what a Kokkos program calls. Where Kokkos
// Kernels was built with a BLAS third-party library (Debian's is: KOKKOSKERNELS_ENABLE_TPL_BLAS),
// it hands host LayoutRight/LayoutLeft float and double GEMMs to that BLAS (sgemm_/dgemm_).
// "kokkoskernels-native": KokkosBlas::gemm on LayoutStride views, which no TPL takes: Kokkos
// Kernels' own TeamPolicy implementation.
template <class Space>
class KokkosBlasReference final : public Reference {
 public:
  KokkosBlasReference(std::string name, bool strided) : name_(std::move(name)), strided_(strided) {}
  std::string name() const override { return name_; }
  std::string version() const override {
    std::string v = kokkos_kernels_version() + ", " + Space::name();
    if (strided_) return v + ", LayoutStride views (Kokkos Kernels' own implementation)";
#ifdef KOKKOSKERNELS_ENABLE_TPL_BLAS
    if (runs_on_host<Space>()) {
      const std::string blas = library_of("sgemm_");
      return v + ", LayoutRight views (BLAS TPL: " + (blas.empty() ? std::string("unknown") : blas) + ")";
    }
#endif
    return v + ", LayoutRight views";
  }
  // The BLAS TPL's threads where it is OpenBLAS (the same number as the space's concurrency, for a
  // like-for-like comparison); Kokkos Kernels' own implementation runs on the space itself.
  void set_threads(int threads) override {
    using SetThreads = void (*)(int);
    if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
      set(std::max(1, threads));
  }
  void gemm(const Problem& p, const Operands& o) override {
    require_untransposed(p, name());
    if (p.precision == Precision::fp32) gemm_typed<float>(p, o);
    else if (p.precision == Precision::fp64) gemm_typed<double>(p, o);
    else throw std::invalid_argument("KokkosBlas::gemm here is fp32 or fp64");
  }

 private:
  template <class T>
  void gemm_typed(const Problem& p, const Operands& o) {
    using Memory = typename Space::memory_space;
    if (p.m == 0 || p.n == 0) return;
    const T alpha = static_cast<T>(p.alpha), beta = static_cast<T>(p.beta);
    if (strided_) {
      auto a = strided_view<const T, Memory>(static_cast<const T*>(o.a), p.m, p.k, p.lda);
      auto b = strided_view<const T, Memory>(static_cast<const T*>(o.b), p.k, p.n, p.ldb);
      auto c = strided_view<T, Memory>(static_cast<T*>(o.c), p.m, p.n, p.ldc);
      KokkosBlas::gemm("N", "N", alpha, a, b, beta, c);
    } else {
      auto a = right_view<const T, Memory>(static_cast<const T*>(o.a), p.m, p.k, p.lda);
      auto b = right_view<const T, Memory>(static_cast<const T*>(o.b), p.k, p.n, p.ldb);
      auto c = right_view<T, Memory>(static_cast<T*>(o.c), p.m, p.n, p.ldc);
      KokkosBlas::gemm("N", "N", alpha, a, b, beta, c);
    }
  }
  std::string name_;
  bool strided_ = false;
};

class KokkosBackend final : public Backend {
 public:
  std::string name() const override { return "kokkos"; }
  std::vector<DeviceInfo> devices() override {
    std::vector<DeviceInfo> list;
    for (int i = 0; i < space_count(); ++i) list.push_back(describe(i));
    return list;
  }
  std::unique_ptr<Device> open(int index) override {
    std::unique_ptr<Device> device;
    space_name(index);  // throws for an index without a space
    with_space(index, [&](auto space) { device = std::make_unique<KokkosDevice<decltype(space)>>(index); });
    return device;
  }
  std::vector<std::string> reference_names() const override { return {"kokkoskernels", "kokkoskernels-native"}; }
  std::unique_ptr<Reference> make_reference(const std::string& name, Device& device) override {
    if (name != "kokkoskernels" && name != "kokkoskernels-native")
      throw std::invalid_argument("unknown kokkos reference '" + name +
                                  "'; references: kokkoskernels, kokkoskernels-native");
    std::unique_ptr<Reference> reference;
    with_space(device.info().index, [&](auto space) {
      reference = std::make_unique<KokkosBlasReference<decltype(space)>>(name, name == "kokkoskernels-native");
    });
    return reference;
  }
};

}  // namespace

std::unique_ptr<Backend> make_backend() { return std::make_unique<KokkosBackend>(); }

}  // namespace gemmlab::kokkos
