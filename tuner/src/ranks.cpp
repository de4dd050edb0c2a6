#include "gemmlab/ranks.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <map>
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

// The node's online CPUs.
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

namespace {
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

}  // namespace

int device_index(const std::vector<DeviceInfo>& devices, int asked) {
  if (devices.empty() || devices.front().host_memory) return asked;
  return (asked + the_world.local_rank) % static_cast<int>(devices.size());
}

namespace {
std::map<std::string, JobHandler>& job_handlers() {
  static std::map<std::string, JobHandler> handlers;
  return handlers;
}

// A job's answer, run in this process: its handler's, or {"error": why}.
nlohmann::json run_job(const nlohmann::json& job) {
  try {
    const std::string kind = job.at("kind").get<std::string>();
    const auto handler = job_handlers().find(kind);
    if (handler == job_handlers().end()) return {{"error", "no handler for jobs of kind " + kind}};
    return handler->second(job);
  } catch (const std::exception& e) {
    return {{"error", e.what()}};
  }
}

std::vector<nlohmann::json> run_jobs_here(const std::vector<nlohmann::json>& jobs) {
  std::vector<nlohmann::json> answers;
  for (const nlohmann::json& job : jobs) answers.push_back(run_job(job));
  return answers;
}
}  // namespace

void add_job_handler(const std::string& kind, JobHandler handler) { job_handlers()[kind] = std::move(handler); }

#ifndef GEMMLAB_HAVE_MPI

Session::Session(int&, char**&) {
  if (launched_with_others())
    std::fprintf(stderr, "gemmlab: this build has no MPI (GEMMLAB_WITH_MPI): each process started by the launcher "
                         "runs the whole command alone\n");
}
Session::~Session() = default;
int serve_rank(const Registry&, const std::vector<std::string>&) { return 0; }
std::vector<nlohmann::json> run_jobs(const std::vector<nlohmann::json>& jobs) { return run_jobs_here(jobs); }
std::unique_ptr<ConfigurationRunner> make_rank_runner(std::unique_ptr<ConfigurationRunner> local, const WorkerSetup&,
                                                      const std::string&) {
  return local;
}

#else

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {
enum Tag : int { setup_tag = 1, ready_tag, job_tag, result_tag, alive_tag, stop_tag };
// The kind of job that evaluates one configuration on the rank's sandboxed worker (after a setup).
constexpr const char* evaluate_kind = "evaluate";

bool mpi_started = false;
// A rank was taken for dead. MPI_Finalize waits for every rank (Open MPI 4.1), so then no rank
// calls it: rank 0 tells the others so in its stop message.
bool ranks_lost = false;
bool finalize_at_exit = true;
// How long a serving rank waits for rank 0 while idle before concluding that it has died (rank 0
// can be silent for minutes while it times the reference or makes a large problem's operands).
constexpr double rank0_silence_s = 900;

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

}  // namespace

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
        setup.device = device_index(devices, setup.device);
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
      const json& job = m->body.at("job");
      json answer;
      if (job.value("kind", "") == evaluate_kind) {
        const Config config = job.at("config").get<Config>();
        ConfigResult result;
        const auto start = Clock::now();
        if (runner) {
          result = with_heartbeat(evaluations, [&] {
            return runner->run(config, job.at("abort_above_s").get<double>(), job.at("timeout_s").get<double>());
          });
        } else {
          result = {.config = config, .status = Status::failed, .reason = "the rank was not set up"};
        }
        answer = {{"result", result}, {"wall_s", std::chrono::duration<double>(Clock::now() - start).count()}};
      } else {
        answer = with_heartbeat(evaluations, [&] { return run_job(job); });
      }
      send(0, result_tag, {{"ticket", m->body.at("ticket")}, {"answer", answer}});
    }
  }
}

namespace {
// Rank 0's side of every rank's work: hands JSON jobs to free slots — its own through `local`, on a
// task thread of its own; rank r's as a message — notices ranks that fall silent while they owe an
// answer, and gives the answers back as they arrive. A job whose rank died goes to another slot,
// once; a second loss answers {"lost": why}.
class Dispatcher {
 public:
  using Local = std::function<json(const json& job)>;
  struct Slot {
    int rank = 0;
    bool alive = true;
    std::optional<std::pair<std::size_t, json>> job;  // ticket, job
    int attempts = 0;
    Clock::time_point last_heard;
  };

  explicit Dispatcher(Local local) : local_(std::move(local)) {
    for (int r = 0; r < world().size; ++r) {
      Slot s;
      s.rank = r;
      s.last_heard = Clock::now();
      slots_.push_back(std::move(s));
    }
  }

  std::vector<Slot>& slots() { return slots_; }
  std::size_t alive() const {
    return static_cast<std::size_t>(std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.alive; }));
  }
  bool idle() const {
    return waiting_.empty() && done_.empty() &&
           std::none_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.job.has_value(); });
  }

  void submit(std::size_t ticket, json job) {
    waiting_.push_back({ticket, std::move(job), 0});
    dispatch();
  }

  std::pair<std::size_t, json> collect() {
    for (;;) {
      dispatch();
      if (!done_.empty()) {
        auto answer = std::move(done_.front());
        done_.pop_front();
        return answer;
      }
      if (idle()) throw std::logic_error("collect() with no job submitted");
      Slot& own = slots_[0];
      if (own.job && local_answer_.wait_for(std::chrono::milliseconds(0)) == std::future_status::ready) {
        done_.emplace_back(own.job->first, local_answer_.get());
        own.job.reset();
        continue;
      }
      bool heard = false;
      while (const std::optional<Message> m = receive(MPI_ANY_SOURCE)) {
        heard = true;
        Slot& s = slots_[static_cast<std::size_t>(m->source)];
        if (!s.alive) continue;  // taken for dead: its job went elsewhere
        s.last_heard = Clock::now();
        if (m->tag != result_tag || !s.job) continue;
        done_.emplace_back(s.job->first, m->body.value("answer", json{{"error", "an answer without a body"}}));
        s.job.reset();
      }
      for (Slot& s : slots_)
        if (s.rank > 0 && s.alive && s.job && silent(s)) lose(s);
      if (!heard && done_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  static bool silent(const Slot& s) {
    return std::chrono::duration<double>(Clock::now() - s.last_heard).count() > rank_silence_s;
  }

 private:
  struct Waiting {
    std::size_t ticket;
    json job;
    int attempts;
  };

  void lose(Slot& s) {
    s.alive = false;
    ranks_lost = true;
    auto [ticket, job] = std::move(*s.job);
    s.job.reset();
    if (s.attempts + 1 < 2) {
      waiting_.push_front({ticket, std::move(job), s.attempts + 1});
      return;
    }
    done_.emplace_back(ticket, json{{"lost", "the ranks running it died, twice (last: rank " + std::to_string(s.rank) + ")"}});
  }

  void dispatch() {
    for (Slot& s : slots_) {
      if (waiting_.empty()) return;
      if (!s.alive || s.job) continue;
      Waiting next = std::move(waiting_.front());
      waiting_.pop_front();
      s.job.emplace(next.ticket, std::move(next.job));
      s.attempts = next.attempts;
      if (s.rank == 0) {
        local_answer_ = local_thread_.run([this, job = s.job->second] { return local_(job); });
      } else {
        send(s.rank, job_tag, {{"ticket", s.job->first}, {"job", s.job->second}});
        s.last_heard = Clock::now();
      }
    }
  }

  Local local_;
  std::vector<Slot> slots_;  // index = rank
  std::deque<Waiting> waiting_;
  std::deque<std::pair<std::size_t, json>> done_;
  std::future<json> local_answer_;
  TaskThread local_thread_;  // destroyed first: no job outlives the dispatcher
};

class RankRunner final : public ConfigurationRunner {
 public:
  RankRunner(std::unique_ptr<ConfigurationRunner> local, const WorkerSetup& setup, const std::string& fingerprint)
      : local_(std::move(local)), ranks_([this](const json& job) { return evaluate_here(job); }) {
    std::vector<Dispatcher::Slot>& slots = ranks_.slots();
    for (std::size_t r = 1; r < slots.size(); ++r) send(static_cast<int>(r), setup_tag, worker_setup_json(setup));
    // Every rank answers (or falls silent) before the first evaluation.
    std::vector<std::string> devices(slots.size());
    devices[0] = fingerprint;
    std::size_t answered = 1;
    while (answered < slots.size()) {
      if (const std::optional<Message> m = receive(MPI_ANY_SOURCE)) {
        Dispatcher::Slot& s = slots[static_cast<std::size_t>(m->source)];
        s.last_heard = Clock::now();
        if (m->tag != ready_tag) continue;
        if (m->body.contains("error"))
          throw std::runtime_error("rank " + std::to_string(m->source) + " could not set up: " +
                                   m->body.at("error").get<std::string>());
        devices[static_cast<std::size_t>(m->source)] = m->body.value("fingerprint", "");
        ++answered;
        continue;
      }
      for (Dispatcher::Slot& s : slots)
        if (s.rank > 0 && s.alive && devices[static_cast<std::size_t>(s.rank)].empty() && Dispatcher::silent(s)) {
          s.alive = false;
          ranks_lost = true;
          ++answered;
        }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    bool same = true;
    for (std::size_t r = 1; r < slots.size(); ++r) same &= !slots[r].alive || devices[r] == fingerprint;
    if (!same) {
      std::string list;
      for (std::size_t r = 0; r < slots.size(); ++r)
        if (slots[r].alive) list += (list.empty() ? "" : "; ") + ("rank " + std::to_string(r) + ": " + devices[r]);
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
  std::size_t slots() const override { return ranks_.alive(); }

  void submit(std::size_t ticket, const Config& config, double abort_above_s, double timeout_s) override {
    configs_[ticket] = config;
    ranks_.submit(ticket, {{"kind", evaluate_kind}, {"config", config}, {"abort_above_s", abort_above_s},
                           {"timeout_s", timeout_s}});
  }

  Completion collect() override {
    auto [ticket, answer] = ranks_.collect();
    Completion c;
    c.ticket = ticket;
    c.wall_s = answer.value("wall_s", 0.0);
    const Config config = configs_[ticket];
    configs_.erase(ticket);
    try {
      if (answer.contains("lost"))
        c.result = {.config = config, .status = Status::failed, .reason = answer.at("lost").get<std::string>()};
      else
        c.result = answer.at("result").get<ConfigResult>();
    } catch (const std::exception& e) {
      c.result = {.config = config, .status = Status::failed, .reason = std::string("an unusable answer: ") + e.what()};
    }
    return c;
  }

 private:
  json evaluate_here(const json& job) {
    const auto start = Clock::now();
    const ConfigResult r = local_->run(job.at("config").get<Config>(), job.at("abort_above_s").get<double>(),
                                       job.at("timeout_s").get<double>());
    return {{"result", r}, {"wall_s", std::chrono::duration<double>(Clock::now() - start).count()}};
  }

  std::unique_ptr<ConfigurationRunner> local_;
  std::map<std::size_t, Config> configs_;  // in flight, by ticket
  Dispatcher ranks_;  // after local_: destroyed first
};
}  // namespace

std::unique_ptr<ConfigurationRunner> make_rank_runner(std::unique_ptr<ConfigurationRunner> local,
                                                      const WorkerSetup& setup, const std::string& fingerprint) {
  if (world().size <= 1) return local;
  return std::make_unique<RankRunner>(std::move(local), setup, fingerprint);
}

std::vector<nlohmann::json> run_jobs(const std::vector<nlohmann::json>& jobs) {
  if (world().size <= 1) return run_jobs_here(jobs);
  std::vector<json> answers(jobs.size());
  Dispatcher ranks([](const json& job) { return run_job(job); });
  for (std::size_t i = 0; i < jobs.size(); ++i) ranks.submit(i, jobs[i]);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    auto [ticket, answer] = ranks.collect();
    answers[ticket] = answer.contains("lost") ? json{{"error", answer.at("lost")}} : std::move(answer);
  }
  return answers;
}

#endif

}  // namespace gemmlab::ranks
