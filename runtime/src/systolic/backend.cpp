// The systolic backend: each preset is a device. Its memory is host memory, and the time of a
// run is the simulated time of the last GEMM run on it (cycles / clock), which never varies.

#include "gemmlab/buffer.hpp"
#include "gemmlab/systolic.hpp"
#include "systolic/tiling.hpp"

namespace gemmlab::systolic {

namespace {

DeviceInfo describe(const ArraySpec& a, int index) {
  DeviceInfo d;
  d.backend = "systolic";
  d.index = index;
  d.name = a.name;
  d.vendor = "simulated " + std::to_string(a.rows) + "x" + std::to_string(a.cols) + " systolic array, " +
             std::string(to_string(a.precision)) + ", " + std::to_string(a.arrays_per_chip) + " per chip";
  d.cores = 1;  // one matrix unit is simulated
  d.features = {"systolic", std::string(to_string(a.precision)), "ws", "os", "is"};
  d.caches = {{.level = 1, .type = "ifmap buffer", .size_bytes = a.ifmap_buffer_bytes, .shared_by_cores = 1},
              {.level = 1, .type = "filter buffer", .size_bytes = a.filter_buffer_bytes, .shared_by_cores = 1},
              {.level = 1, .type = "ofmap buffer", .size_bytes = a.ofmap_buffer_bytes, .shared_by_cores = 1}};
  d.clock_ghz = a.clock_ghz;
  d.fma_units_per_core = static_cast<int>(a.rows * a.cols);
  d.peak_gflops_fp32 = a.peak_gflops();
  d.native_precision = a.precision;
  d.host_memory = true;  // the simulator keeps the operands in host memory
  return d;
}

class SimulatedDevice final : public HostMemoryDevice {
 public:
  SimulatedDevice(ArraySpec array, int index) : array_(std::move(array)), info_(describe(array_, index)) {}
  const DeviceInfo& info() const override { return info_; }
  // A timed run asks only for the simulated time: the analytic counts, which are the cycle
  // engine's (the tests check it on random cases). C is computed, and checked, by the
  // evaluator's untimed run.
  double time_once(const std::function<void()>& launch) override {
    last_seconds_ = 0;
    timing_only_ = true;
    try {
      launch();
    } catch (...) {
      timing_only_ = false;
      throw;
    }
    timing_only_ = false;
    return last_seconds_;
  }
  bool timing_only() const { return timing_only_; }
  bool deterministic_timing() const override { return true; }
  // The ceilings of a simulated array: the heuristic mapping's throughput on a large GEMM
  // (analytic engine) and the off-chip bandwidth it is given.
  void measure_ceilings() override {
    const std::int64_t size = 8192;
    const Mapping h = heuristic_mapping(array_, array_.precision);
    const Report r = make_report(array_, h, size, size, size, array_.precision,
                                 simulate_analytic(array_, h, size, size, size, array_.precision), Convention::physical,
                                 "analytic");
    MeasuredCeilings c;
    c.fma_gflops_fp32 = c.fma_gflops_fp32_one_core = r.gflops_at_clock;
    c.triad_gb_per_s = array_.bandwidth_bytes_per_cycle * array_.clock_ghz;
    info_.measured = c;
  }
  const ArraySpec& array() const { return array_; }
  void record(double seconds) { last_seconds_ += seconds; }

 private:
  ArraySpec array_;
  DeviceInfo info_;
  double last_seconds_ = 0;
  bool timing_only_ = false;
};

// The heuristic mapping run on the same array: the baseline every tuned mapping is compared with.
class HeuristicReference final : public Reference {
 public:
  explicit HeuristicReference(Device& device) : device_(device) {}
  std::string name() const override { return "heuristic"; }
  std::string version() const override {
    return "weight-stationary, loop order m-n-k, array-sized tiles doubled until the buffers are full";
  }
  void set_threads(int) override {}
  void gemm(const Problem& problem, const Operands& operands) override {
    require_untransposed(problem, name());
    const ArraySpec& a = array_of(device_);
    run_mapping(device_, heuristic_mapping(a, problem.precision), problem, operands);
  }

 private:
  Device& device_;
};

class SystolicBackend final : public Backend {
 public:
  std::string name() const override { return "systolic"; }
  std::vector<DeviceInfo> devices() override {
    std::vector<DeviceInfo> list;
    for (std::size_t i = 0; i < presets().size(); ++i) list.push_back(describe(presets()[i], static_cast<int>(i)));
    return list;
  }
  std::unique_ptr<Device> open(int index) override {
    if (index < 0 || static_cast<std::size_t>(index) >= presets().size()) {
      std::string names;
      for (std::size_t i = 0; i < presets().size(); ++i) names += (i ? ", " : "") + std::to_string(i) + " " + presets()[i].name;
      throw std::invalid_argument("systolic device " + std::to_string(index) + " does not exist; devices: " + names);
    }
    return std::make_unique<SimulatedDevice>(presets()[static_cast<std::size_t>(index)], index);
  }
  std::vector<std::string> reference_names() const override { return {"heuristic"}; }
  std::unique_ptr<Reference> make_reference(const std::string& name, Device& device) override {
    if (name != "heuristic")
      throw std::invalid_argument("unknown reference '" + name + "' for the systolic backend; allowed: heuristic");
    array_of(device);  // must be a simulated device
    return std::make_unique<HeuristicReference>(device);
  }
};

}  // namespace

const ArraySpec& array_of(const Device& device) {
  const auto* simulated = dynamic_cast<const SimulatedDevice*>(&device);
  if (simulated == nullptr) throw std::invalid_argument(device.info().name + " is not a simulated systolic array");
  return simulated->array();
}

void run_mapping(Device& device, const Mapping& mapping, const Problem& p, const Operands& operands) {
  auto& simulated = dynamic_cast<SimulatedDevice&>(device);
  const ArraySpec& a = simulated.array();
  const GemmData data{.a = operands.a, .b = operands.b, .c = operands.c, .lda = p.lda, .ldb = p.ldb, .ldc = p.ldc,
                      .alpha = p.alpha, .beta = p.beta};
  Counts counts = simulate_analytic(a, mapping, p.m, p.n, p.k, p.precision, p.beta != 0);
  if (simulated.timing_only()) {
    // nothing to compute: the time is all a timed run asks for
  } else if (counts.cell_updates <= cycle_engine_cell_update_limit) {
    counts = simulate_cycles(a, mapping, p.m, p.n, p.k, p.precision, data);
  } else {
    compute_functional(a, mapping, p.m, p.n, p.k, p.precision, data);
  }
  simulated.record(static_cast<double>(counts.total_cycles) / (a.clock_ghz * 1e9));
}

std::unique_ptr<Backend> make_backend() { return std::make_unique<SystolicBackend>(); }

}  // namespace gemmlab::systolic
