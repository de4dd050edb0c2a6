#include "gemmlab/ranks.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "gemmlab/result.hpp"

#ifdef GEMMLAB_HAVE_MPI
#include <mpi.h>
#endif

namespace gemmlab::ranks {

namespace {
World the_world;

// The node's online CPUs and the ones this process may run on.
int online_cpus() { return static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN))); }
}  // namespace

const World& world() { return the_world; }

int pin_to_share() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) return online_cpus();
  const int cpus = online_cpus(), mine = CPU_COUNT(&allowed);
  if (the_world.local_size <= 1 || mine < cpus) return mine;  // alone, or bound by the launcher
  const int share = std::max(1, cpus / the_world.local_size);
  const int first = the_world.local_size <= cpus ? the_world.local_rank * cpus / the_world.local_size
                                                 : the_world.local_rank % cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c = first; c < first + share && c < cpus; ++c) CPU_SET(c, &set);
  if (::sched_setaffinity(0, sizeof set, &set) != 0) return mine;
  return CPU_COUNT(&set);
}

#ifndef GEMMLAB_HAVE_MPI

bool built_with_mpi() { return false; }
Session::Session(int&, char**&) {}
Session::~Session() = default;
int serve_rank(const Registry&, const std::vector<std::string>&) { return 0; }
std::unique_ptr<ConfigurationRunner> make_rank_runner(std::unique_ptr<ConfigurationRunner> local, const WorkerSetup&,
                                                      const std::string&) {
  return local;
}

#else

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {
enum Tag : int { setup_tag = 1, ready_tag, job_tag, result_tag, alive_tag, stop_tag };

bool mpi_started = false;
// A rank was taken for dead. MPI_Finalize waits for every rank (Open MPI 4.1), so then no rank
// calls it: rank 0 tells the others so in its stop message.
bool ranks_lost = false;
bool finalize_at_exit = true;
// How long a serving rank waits for rank 0 while idle before concluding that it has died (rank 0
// can be silent for minutes while it times the reference or makes a large problem's operands).
constexpr double rank0_silence_s = 900;

// Set in a rank's environment once MPI has started: the processes a rank starts itself (its
// sandboxed worker) inherit the launcher's variables, and must not take themselves for ranks.
constexpr const char* rank_marker = "GEMMLAB_MPI_RANK";

// Whether a launcher started this process as one of several (Open MPI, PMI and PMIx: mpirun,
// mpiexec, srun).
bool launched_with_others() {
  if (std::getenv(rank_marker) != nullptr) return false;
  for (const char* size : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* v = std::getenv(size); v != nullptr && std::atoi(v) > 1) return true;
  const char* tasks = std::getenv("SLURM_NTASKS");
  return std::getenv("PMIX_RANK") != nullptr && tasks != nullptr && std::atoi(tasks) > 1;
}

void send(int rank, Tag tag, const json& message) {
  const std::string text = message.dump();
  // A small message to a rank that has died is buffered and lost, not an error: the silence
  // that follows is how a dead rank shows.
  MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, rank, tag, MPI_COMM_WORLD);
}

// The next message from `source` (MPI_ANY_SOURCE: any), if one is waiting.
struct Message {
  int source = 0, tag = 0;
  json body;
};
std::optional<Message> receive(int source) {
  MPI_Status status;
  int waiting = 0;
  if (MPI_Iprobe(source, MPI_ANY_TAG, MPI_COMM_WORLD, &waiting, &status) != MPI_SUCCESS || !waiting) return std::nullopt;
  int count = 0;
  MPI_Get_count(&status, MPI_CHAR, &count);
  std::string text(static_cast<std::size_t>(count), '\0');
  MPI_Recv(text.data(), count, MPI_CHAR, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  Message m;
  m.source = status.MPI_SOURCE;
  m.tag = status.MPI_TAG;
  m.body = text.empty() ? json::object() : json::parse(text, nullptr, false);
  return m;
}

// One long-lived thread that runs tasks in turn. A sandboxed worker is killed when the thread
// that started it ends (PR_SET_PDEATHSIG), and an evaluation may start a new worker (after a
// crash): evaluations therefore run here, never on a thread of their own.
class TaskThread {
 public:
  TaskThread() : thread_([this] { serve(); }) {}
  ~TaskThread() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    ready_.notify_one();
    thread_.join();
  }
  TaskThread(const TaskThread&) = delete;
  TaskThread& operator=(const TaskThread&) = delete;

  template <class Work>
  auto run(Work work) -> std::future<decltype(work())> {
    auto task = std::make_shared<std::packaged_task<decltype(work())()>>(std::move(work));
    auto result = task->get_future();
    {
      std::lock_guard lock(mutex_);
      tasks_.push_back([task] { (*task)(); });
    }
    ready_.notify_one();
    return result;
  }

 private:
  void serve() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return stop_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
  bool stop_ = false;
  std::thread thread_;
};

// Runs `work` on `thread` and tells rank 0 every second that this rank is alive meanwhile.
template <class Work>
auto with_heartbeat(TaskThread& thread, Work work) {
  auto done = thread.run(std::move(work));
  while (done.wait_for(std::chrono::seconds(1)) != std::future_status::ready) send(0, alive_tag, json::object());
  return done.get();
}

// The device index a rank uses: GPUs in turn by local rank, starting at the one asked for;
// devices in host memory (CPU, simulators) as asked.
int device_for_rank(const std::vector<DeviceInfo>& devices, int asked) {
  if (devices.empty() || devices.front().host_memory) return asked;
  return (asked + world().local_rank) % static_cast<int>(devices.size());
}
}  // namespace

bool built_with_mpi() { return true; }

Session::Session(int& argc, char**& argv) {
  if (!launched_with_others()) return;
  int provided = 0;
  // Only the main thread of a rank calls MPI (evaluations run on other threads).
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) return;
  mpi_started = true;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &the_world.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &the_world.size);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, the_world.rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &the_world.local_rank);
  MPI_Comm_size(node, &the_world.local_size);
  MPI_Comm_free(&node);
  ::setenv(rank_marker, std::to_string(the_world.rank).c_str(), 1);
}

Session::~Session() {
  if (!mpi_started) return;
  if (the_world.rank == 0) {
    // Sent without blocking: a dead rank never takes its message.
    const std::string stop = json{{"finalize", !ranks_lost}}.dump();
    std::vector<MPI_Request> sent(static_cast<std::size_t>(the_world.size - 1));
    for (int r = 1; r < the_world.size; ++r)
      MPI_Isend(stop.data(), static_cast<int>(stop.size()), MPI_CHAR, r, stop_tag, MPI_COMM_WORLD,
                &sent[static_cast<std::size_t>(r - 1)]);
    const auto start = Clock::now();
    for (int all = 0; !all && Clock::now() - start < std::chrono::seconds(5);) {
      MPI_Testall(static_cast<int>(sent.size()), sent.data(), &all, MPI_STATUSES_IGNORE);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (ranks_lost) return;
  }
  if (finalize_at_exit) MPI_Finalize();
}

int serve_rank(const Registry& registry, const std::vector<std::string>& worker_command) {
  TaskThread evaluations;
  std::unique_ptr<WorkerRunner> runner;
  auto heard = Clock::now();
  for (;;) {
    const std::optional<Message> m = receive(0);
    if (!m) {
      if (std::chrono::duration<double>(Clock::now() - heard).count() > rank0_silence_s) {
        finalize_at_exit = false;
        throw std::runtime_error("nothing from rank 0 for " + std::to_string(int(rank0_silence_s)) + " s: taken for dead");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    heard = Clock::now();
    if (m->tag == stop_tag) {
      finalize_at_exit = m->body.value("finalize", true);
      return 0;
    }
    if (m->tag == setup_tag) {
      runner.reset();
      json answer;
      try {
        WorkerSetup setup = worker_setup_from_json(m->body);
        const std::vector<DeviceInfo> devices = registry.backend(setup.backend).devices();
        setup.device = device_for_rank(devices, setup.device);
        if (setup.device < 0 || setup.device >= static_cast<int>(devices.size()))
          throw std::runtime_error("no device " + std::to_string(setup.device) + " of backend " + setup.backend);
        const DeviceInfo& device = devices[static_cast<std::size_t>(setup.device)];
        runner = with_heartbeat(evaluations, [&] { return std::make_unique<WorkerRunner>(worker_command, setup); });
        answer = {{"fingerprint", fingerprint(device)}, {"device", device.name}};
      } catch (const std::exception& e) {
        answer = {{"error", e.what()}};
      }
      send(0, ready_tag, answer);
    } else if (m->tag == job_tag) {
      const std::size_t ticket = m->body.at("ticket").get<std::size_t>();
      const Config config = m->body.at("config").get<Config>();
      ConfigResult result;
      const auto start = Clock::now();
      if (runner) {
        result = with_heartbeat(evaluations, [&] {
          return runner->run(config, m->body.at("abort_above_s").get<double>(), m->body.at("timeout_s").get<double>());
        });
      } else {
        result = {.config = config, .status = Status::failed, .reason = "the rank was not set up"};
      }
      const double wall_s = std::chrono::duration<double>(Clock::now() - start).count();
      send(0, result_tag, {{"ticket", ticket}, {"result", result}, {"wall_s", wall_s}});
    }
  }
}

namespace {
class RankRunner final : public ConfigurationRunner {
 public:
  RankRunner(std::unique_ptr<ConfigurationRunner> local, const WorkerSetup& setup, const std::string& fingerprint)
      : local_(std::move(local)) {
    for (int r = 0; r < world().size; ++r) {
      if (r > 0) send(r, setup_tag, worker_setup_json(setup));
      Slot s;
      s.rank = r;
      s.last_heard = Clock::now();
      slots_.push_back(std::move(s));
    }
    // Every rank answers (or falls silent) before the first evaluation.
    std::vector<std::string> devices(slots_.size());
    devices[0] = fingerprint;
    std::size_t answered = 1;
    while (answered < slots_.size()) {
      if (const std::optional<Message> m = receive(MPI_ANY_SOURCE)) {
        Slot& s = slots_[static_cast<std::size_t>(m->source)];
        s.last_heard = Clock::now();
        if (m->tag != ready_tag) continue;
        if (m->body.contains("error"))
          throw std::runtime_error("rank " + std::to_string(m->source) + " could not set up: " +
                                   m->body.at("error").get<std::string>());
        devices[static_cast<std::size_t>(m->source)] = m->body.value("fingerprint", "");
        ++answered;
        continue;
      }
      for (Slot& s : slots_)
        if (s.rank > 0 && s.alive && devices[static_cast<std::size_t>(s.rank)].empty() && silent(s)) {
          s.alive = false;
          ranks_lost = true;
          ++answered;
        }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    bool same = true;
    for (std::size_t r = 1; r < slots_.size(); ++r) same &= !slots_[r].alive || devices[r] == fingerprint;
    if (!same) {
      std::string list;
      for (std::size_t r = 0; r < slots_.size(); ++r)
        if (slots_[r].alive) list += (list.empty() ? "" : "; ") + ("rank " + std::to_string(r) + ": " + devices[r]);
      throw ConfigError("the ranks hold different devices (" + list +
                        "); a search compares timings of one device: run one job per kind of device");
    }
  }

  std::string reference_name() const override { return local_->reference_name(); }
  double reference_gflops() override { return local_->reference_gflops(); }
  ConfigResult run(const Config& config, double abort_above_s, double timeout_s) override {
    return local_->run(config, abort_above_s, timeout_s);
  }
  double reference_gflops_beside(const Config& config, double timeout_s) override {
    return local_->reference_gflops_beside(config, timeout_s);
  }
  std::size_t restarts() const override { return local_->restarts(); }

  std::size_t slots() const override {
    return static_cast<std::size_t>(std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.alive; }));
  }

  void submit(std::size_t ticket, const Config& config, double abort_above_s, double timeout_s) override {
    waiting_.push_back({.ticket = ticket, .config = config, .abort_above_s = abort_above_s, .timeout_s = timeout_s});
    dispatch();
  }

  Completion collect() override {
    for (;;) {
      dispatch();
      if (!done_.empty()) {
        Completion c = std::move(done_.front());
        done_.pop_front();
        return c;
      }
      if (waiting_.empty() && std::none_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.job.has_value(); }))
        throw std::logic_error("collect() with no configuration submitted");
      Slot& own = slots_[0];
      if (own.job && local_result_.wait_for(std::chrono::milliseconds(0)) == std::future_status::ready) {
        done_.push_back(local_result_.get());
        own.job.reset();
        continue;
      }
      bool heard = false;
      while (const std::optional<Message> m = receive(MPI_ANY_SOURCE)) {
        heard = true;
        Slot& s = slots_[static_cast<std::size_t>(m->source)];
        if (!s.alive) continue;  // taken for dead: its configuration went elsewhere
        s.last_heard = Clock::now();
        if (m->tag != result_tag || !s.job) continue;
        Completion c;
        c.ticket = s.job->ticket;
        c.wall_s = m->body.value("wall_s", 0.0);
        try {
          c.result = m->body.at("result").get<ConfigResult>();
        } catch (const std::exception& e) {
          c.result = {.config = s.job->config, .status = Status::failed,
                      .reason = "rank " + std::to_string(s.rank) + " gave an unusable answer: " + e.what()};
        }
        done_.push_back(std::move(c));
        s.job.reset();
      }
      for (Slot& s : slots_)
        if (s.rank > 0 && s.alive && s.job && silent(s)) lose(s);
      if (!heard && done_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

 private:
  struct Job {
    std::size_t ticket = 0;
    Config config;
    double abort_above_s = 0, timeout_s = 0;
    int attempts = 0;
  };
  struct Slot {
    int rank = 0;
    bool alive = true;
    std::optional<Job> job;
    Clock::time_point last_heard;
  };

  static bool silent(const Slot& s) {
    return std::chrono::duration<double>(Clock::now() - s.last_heard).count() > rank_silence_s;
  }

  // A rank fell silent: its configuration is tried once more on another slot.
  void lose(Slot& s) {
    s.alive = false;
    ranks_lost = true;
    Job job = std::move(*s.job);
    s.job.reset();
    if (++job.attempts < 2) {
      waiting_.push_front(std::move(job));
      return;
    }
    done_.push_back({.ticket = job.ticket,
                     .result = {.config = job.config, .status = Status::failed,
                                .reason = "the ranks evaluating it died, twice (last: rank " + std::to_string(s.rank) + ")"}});
  }

  void dispatch() {
    for (Slot& s : slots_) {
      if (waiting_.empty()) return;
      if (!s.alive || s.job) continue;
      s.job = std::move(waiting_.front());
      waiting_.pop_front();
      const Job& job = *s.job;
      if (s.rank == 0) {
        local_result_ = local_thread_.run([this, job] {
          const auto start = Clock::now();
          Completion c{.ticket = job.ticket, .result = local_->run(job.config, job.abort_above_s, job.timeout_s)};
          c.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
          return c;
        });
      } else {
        send(s.rank, job_tag, {{"ticket", job.ticket}, {"config", job.config}, {"abort_above_s", job.abort_above_s},
                               {"timeout_s", job.timeout_s}});
        s.last_heard = Clock::now();
      }
    }
  }

  std::unique_ptr<ConfigurationRunner> local_;
  std::vector<Slot> slots_;  // index = rank
  std::deque<Job> waiting_;
  std::deque<Completion> done_;
  std::future<Completion> local_result_;
  TaskThread local_thread_;  // destroyed first: no evaluation outlives the runner
};
}  // namespace

std::unique_ptr<ConfigurationRunner> make_rank_runner(std::unique_ptr<ConfigurationRunner> local,
                                                      const WorkerSetup& setup, const std::string& fingerprint) {
  if (world().size <= 1) return local;
  return std::make_unique<RankRunner>(std::move(local), setup, fingerprint);
}

#endif

}  // namespace gemmlab::ranks
