#include "gemmlab/worker.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "gemmlab/evaluate.hpp"
#include "gemmlab/sanitizer.hpp"
#include "gemmlab/setup.hpp"

extern char** environ;

namespace gemmlab {
namespace {

using nlohmann::json;

}  // namespace

json worker_setup_json(const WorkerSetup& s) {
  const Problem& p = s.problem;
  const MeasureOptions& m = s.measure;
  return {{"backend", s.backend}, {"device", s.device}, {"kernel", s.kernel},
          {"problem", {{"m", p.m}, {"n", p.n}, {"k", p.k}, {"alpha", p.alpha}, {"beta", p.beta},
                       {"lda", p.lda}, {"ldb", p.ldb}, {"ldc", p.ldc}, {"precision", to_string(p.precision)},
                       {"trans_a", p.trans_a}, {"trans_b", p.trans_b}}},
          {"seed", s.seed}, {"reference", s.reference}, {"reference_threads", s.reference_threads},
          {"measure", {{"warmup", m.warmup}, {"min_repetitions", m.min_repetitions},
                       {"max_repetitions", m.max_repetitions}, {"max_seconds", m.max_seconds},
                       {"target_spread", m.target_spread}, {"block_seconds", m.block_seconds},
                       {"settle_seconds", m.settle_seconds}}},
          {"flush_cache", s.flush_cache}, {"memory_limit_bytes", s.memory_limit_bytes}};
}

WorkerSetup worker_setup_from_json(const json& j) {
  WorkerSetup s;
  s.backend = j.at("backend").get<std::string>();
  s.device = j.at("device").get<int>();
  s.kernel = j.at("kernel").get<std::string>();
  const json& p = j.at("problem");
  s.problem = {.m = p.at("m"), .n = p.at("n"), .k = p.at("k"), .alpha = p.at("alpha"), .beta = p.at("beta"),
               .lda = p.at("lda"), .ldb = p.at("ldb"), .ldc = p.at("ldc"),
               .precision = parse_precision(p.at("precision").get<std::string>()),
               .trans_a = p.value("trans_a", false), .trans_b = p.value("trans_b", false)};
  s.seed = j.at("seed").get<std::uint64_t>();
  s.reference = j.at("reference").get<std::string>();
  s.reference_threads = j.at("reference_threads").get<int>();
  const json& m = j.at("measure");
  s.measure = {.warmup = m.at("warmup"), .min_repetitions = m.at("min_repetitions"),
               .max_repetitions = m.at("max_repetitions"), .max_seconds = m.at("max_seconds"),
               .target_spread = m.at("target_spread"), .block_seconds = m.at("block_seconds"),
               .settle_seconds = m.at("settle_seconds")};
  s.flush_cache = j.at("flush_cache").get<bool>();
  s.memory_limit_bytes = j.at("memory_limit_bytes").get<std::uint64_t>();
  return s;
}

namespace {

bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// Reads newline-terminated lines from a file descriptor.
class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}
  bool next(std::string& line) {
    for (;;) {
      if (auto end = buffer_.find('\n'); end != std::string::npos) {
        line = buffer_.substr(0, end);
        buffer_.erase(0, end + 1);
        return true;
      }
      char chunk[4096];
      const ssize_t n = ::read(fd_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }

 private:
  int fd_;
  std::string buffer_;
};

std::string signal_name(int sig) {
  const char* description = strsignal(sig);
  return "signal " + std::to_string(sig) + (description != nullptr ? std::string(" (") + description + ")" : "");
}

}  // namespace

bool worker_memory_limit_supported() { return !address_sanitizer; }

std::uint64_t default_worker_memory_limit(const DeviceInfo& device) {
  // GPU runtimes reserve address space far beyond physical memory: their workers get no limit.
  if (!device.host_memory) return 0;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
}

int run_worker(const Registry& registry, int in_fd, int out_fd) {
  // Answers go to a private copy of out_fd; when that is standard output, standard output itself
  // is pointed at standard error so that nothing a kernel or library prints can corrupt them.
  const int answers = ::dup(out_fd);
  if (answers < 0) return 1;
  if (out_fd == STDOUT_FILENO) ::dup2(STDERR_FILENO, STDOUT_FILENO);
  // A worker must not outlive the tuning process, even when stuck in a hanging kernel.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  auto answer = [&](const json& j) { return write_all(answers, j.dump() + "\n"); };

  LineReader in(in_fd);
  std::string line;
  if (!in.next(line)) return 0;
  WorkerSetup setup;
  EvaluationSetup evaluation;
  Reference* reference = nullptr;
  std::unique_ptr<Evaluator> evaluator;
  const Kernel* kernel = nullptr;
  try {
    setup = worker_setup_from_json(json::parse(line).at("setup"));
    if (setup.memory_limit_bytes > 0 && !address_sanitizer) {
      const rlimit limit{.rlim_cur = setup.memory_limit_bytes, .rlim_max = setup.memory_limit_bytes};
      if (::setrlimit(RLIMIT_AS, &limit) != 0) throw std::runtime_error(std::string("setrlimit: ") + std::strerror(errno));
    }
    kernel = &registry.kernel(setup.backend, setup.kernel);
    evaluation = open_evaluation(registry.backend(setup.backend),
                                 {.device = setup.device, .flush_cache = setup.flush_cache, .reference = setup.reference,
                                  .timed_reference = !setup.reference.empty(), .threads = setup.reference_threads});
    reference = evaluation.reference.get();
    evaluator = std::make_unique<Evaluator>(*evaluation.device, setup.problem, evaluation.truth.get(), setup.seed);
    evaluator->compute_truth();
  } catch (const std::exception& e) {
    answer({{"error", e.what()}});
    return 1;
  }
  if (!answer({{"ready", true}})) return 1;

  while (in.next(line)) {
    json request;
    try {
      request = json::parse(line);
    } catch (const json::exception& e) {
      answer({{"error", std::string("malformed request: ") + e.what()}});
      return 1;
    }
    json reply;
    if (request.contains("reference")) {
      try {
        const double gflops = reference ? evaluator->time_reference(*reference, setup.measure).gflops : 0.0;
        reply = {{"gflops", gflops}};
      } catch (const std::exception& e) {
        reply = {{"error", e.what()}};
      }
    } else if (request.contains("reference_beside")) {
      try {
        const Config config = request.at("reference_beside").get<Config>();
        const EvaluationOptions options{.seed = setup.seed, .time = true, .measure = setup.measure};
        const Evaluation e = evaluator->run(*kernel, config, reference, options);
        reply = {{"gflops", e.reference ? e.reference->gflops : 0.0}};
      } catch (const std::exception& e) {
        reply = {{"error", e.what()}};
      }
    } else if (request.contains("evaluate")) {
      ConfigResult result;
      try {
        result.config = request.at("evaluate").get<Config>();
        const EvaluationOptions options{.seed = setup.seed, .time = true, .measure = setup.measure,
                                        .abort_above_s = request.value("abort_above_s", 0.0)};
        result = result_of(result.config, evaluator->run(*kernel, result.config, nullptr, options));
      } catch (const std::bad_alloc&) {
        result.status = Status::failed;
        result.reason = "out of memory (an allocation failed in the worker)";
      } catch (const std::exception& e) {  // the kernel refused to build or run this configuration
        result.status = Status::failed;
        result.reason = e.what();
      }
      reply = result;
    } else {
      reply = {{"error", "unknown request"}};
    }
    if (!answer(reply)) return 1;
  }
  return 0;
}

// One running worker: its process id and the three pipes.
class WorkerRunner::Process {
 public:
  explicit Process(const std::vector<std::string>& command) {
    // A write to a worker that just died must be an error to handle, not a SIGPIPE that ends
    // the tuning process.
    ::signal(SIGPIPE, SIG_IGN);
    int to_child[2], from_child[2], err_child[2];
    if (::pipe2(to_child, O_CLOEXEC) != 0 || ::pipe2(from_child, O_CLOEXEC) != 0 || ::pipe2(err_child, O_CLOEXEC) != 0)
      throw std::runtime_error(std::string("cannot create pipes for the worker: ") + std::strerror(errno));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err_child[1], STDERR_FILENO);
    std::vector<char*> argv;
    for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const int error = ::posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(to_child[0]);
    ::close(from_child[1]);
    ::close(err_child[1]);
    to_ = to_child[1];
    from_ = from_child[0];
    err_ = err_child[0];
    if (error != 0) {
      pid_ = -1;
      close_pipes();
      throw std::runtime_error("cannot start the worker " + command.front() + ": " + std::strerror(error));
    }
  }

  ~Process() {
    kill();
    close_pipes();
  }

  bool send(const json& request) { return write_all(to_, request.dump() + "\n"); }

  // Waits for the next answer line (timeout_s <= 0: no limit), collecting standard error meanwhile.
  Wait receive(double timeout_s, json& answer) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    for (;;) {
      if (auto end = pending_.find('\n'); end != std::string::npos) {
        const std::string line = pending_.substr(0, end);
        pending_.erase(0, end + 1);
        answer = json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (answer.is_discarded()) {
          death_ = "answered something that is not JSON: " + line.substr(0, 200);
          kill();
          return Wait::died;
        }
        return Wait::answer;
      }
      int wait_ms = -1;
      if (timeout_s > 0) {
        const auto left = std::chrono::duration<double, std::milli>(deadline - std::chrono::steady_clock::now()).count();
        if (left <= 0) return Wait::timed_out;
        wait_ms = static_cast<int>(std::ceil(left));
      }
      pollfd fds[2] = {{.fd = from_, .events = POLLIN, .revents = 0}, {.fd = err_, .events = POLLIN, .revents = 0}};
      const int ready = ::poll(fds, err_ >= 0 ? 2 : 1, wait_ms);
      if (ready < 0 && errno != EINTR) throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
      if (ready <= 0) continue;
      if (err_ >= 0 && fds[1].revents != 0) drain_errors();
      if (fds[0].revents != 0) {
        char chunk[4096];
        const ssize_t n = ::read(from_, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {  // the worker closed its end: it is exiting or was killed
          reap();
          return Wait::died;
        }
        pending_.append(chunk, static_cast<std::size_t>(n));
      }
    }
  }

  // Kills the worker (if still running) and collects its exit status.
  void kill() {
    if (pid_ <= 0) return;
    killed_ = true;
    ::kill(pid_, SIGKILL);
    reap();
  }

  // Why the worker is gone, with the last line it wrote to standard error.
  std::string death_reason() {
    if (pid_ > 0) reap();
    std::string reason = death_;
    if (reason.empty()) reason = "the worker ended unexpectedly";
    if (err_ >= 0) drain_errors();
    const std::string last = telling_error_line();
    if (!last.empty()) reason += "; its error output ends: " + last;
    return reason;
  }

 private:
  void reap() {
    if (pid_ <= 0) return;
    int status = 0;
    // The worker closed its pipe because it is ending; give it a moment, then make sure.
    for (int i = 0; i < 200; ++i) {
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_ || (r < 0 && errno != EINTR)) break;
      if (i == 199) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pid_ = -1;
    if (!death_.empty()) return;
    if (WIFSIGNALED(status)) {
      const int sig = WTERMSIG(status);
      if (sig == SIGKILL && !killed_)
        death_ = "killed by " + signal_name(sig) + ", as the system's out-of-memory killer does";
      else
        death_ = "crashed: killed by " + signal_name(sig);
    } else if (WIFEXITED(status)) {
      death_ = "the worker exited with status " + std::to_string(WEXITSTATUS(status));
    }
  }

  void drain_errors() {
    char chunk[4096];
    const ssize_t n = ::read(err_, chunk, sizeof chunk);
    if (n <= 0) {
      if (n == 0 || errno != EINTR) {
        ::close(err_);
        err_ = -1;
      }
      return;
    }
    errors_.append(chunk, static_cast<std::size_t>(n));
    constexpr std::size_t keep = 4096;
    if (errors_.size() > keep) errors_.erase(0, errors_.size() - keep);
  }

  // The last line of the worker's error output, or a sanitizer's "SUMMARY:" line, which says
  // more than the "ABORTING" after it.
  std::string telling_error_line() const {
    if (auto summary = errors_.rfind("SUMMARY:"); summary != std::string::npos)
      return errors_.substr(summary, errors_.find('\n', summary) - summary);
    const std::size_t end = errors_.find_last_not_of("\r\n \t");
    if (end == std::string::npos) return "";
    const std::size_t start = errors_.find_last_of('\n', end);
    const std::size_t from = start == std::string::npos ? 0 : start + 1;
    return errors_.substr(from, end + 1 - from);
  }

  void close_pipes() {
    for (int* fd : {&to_, &from_, &err_})
      if (*fd >= 0) {
        ::close(*fd);
        *fd = -1;
      }
  }

  pid_t pid_ = -1;
  int to_ = -1, from_ = -1, err_ = -1;
  bool killed_ = false;  // by us (a timeout), not by a crash or the system
  std::string pending_, errors_, death_;
};

WorkerRunner::WorkerRunner(std::vector<std::string> command, WorkerSetup setup, double setup_timeout_s)
    : command_(std::move(command)), setup_(std::move(setup)), setup_timeout_s_(setup_timeout_s) {
  if (command_.empty()) throw std::invalid_argument("WorkerRunner: empty worker command");
  start();
}

WorkerRunner::~WorkerRunner() = default;

void WorkerRunner::start() {
  process_ = std::make_unique<Process>(command_);
  json answer;
  Wait wait = Wait::died;
  if (process_->send({{"setup", worker_setup_json(setup_)}})) wait = process_->receive(setup_timeout_s_, answer);
  std::string why;
  if (wait == Wait::answer && answer.value("ready", false)) return;
  if (wait == Wait::answer) why = answer.value("error", answer.dump());
  else if (wait == Wait::timed_out) why = "no answer within " + std::to_string(setup_timeout_s_) + " s";
  else why = process_->death_reason();
  process_.reset();
  throw std::runtime_error("the evaluation worker (" + command_.front() + ") could not be set up: " + why);
}

WorkerRunner::Wait WorkerRunner::ask(const json& request, double timeout_s, json& answer) {
  if (!process_) {
    start();
    ++restarts_;
  }
  if (!process_->send(request)) return Wait::died;
  return process_->receive(timeout_s, answer);
}

double WorkerRunner::reference_gflops() {
  if (reference_gflops_) return *reference_gflops_;
  if (setup_.reference.empty()) return *(reference_gflops_ = 0.0);
  json answer;
  const Wait wait = ask({{"reference", true}}, setup_timeout_s_, answer);
  if (wait == Wait::answer && answer.contains("gflops")) return *(reference_gflops_ = answer["gflops"].get<double>());
  const std::string why = wait == Wait::answer      ? answer.value("error", answer.dump())
                          : wait == Wait::timed_out ? "no answer in time"
                                                    : process_->death_reason();
  process_.reset();
  throw std::runtime_error("timing the reference " + setup_.reference + " failed: " + why);
}

double WorkerRunner::reference_gflops_beside(const Config& config, double timeout_s) {
  if (setup_.reference.empty()) return 0;
  json answer;
  // Two sides are timed, each at least as long as one evaluation's timing.
  if (ask({{"reference_beside", config}}, 2 * timeout_s, answer) == Wait::answer) return answer.value("gflops", 0.0);
  process_.reset();  // the measurement is lost, not the tuning: the start's reference figure stays
  return 0;
}

ConfigResult WorkerRunner::run(const Config& config, double abort_above_s, double timeout_s) {
  json answer;
  const Wait wait = ask({{"evaluate", config}, {"abort_above_s", abort_above_s}}, timeout_s, answer);
  if (wait == Wait::answer) {
    try {
      return answer.get<ConfigResult>();
    } catch (const std::exception& e) {
      process_.reset();
      return {.config = config, .status = Status::failed,
              .reason = std::string("the worker gave an unusable answer: ") + e.what()};
    }
  }
  ConfigResult failed;
  failed.config = config;
  if (wait == Wait::timed_out) {
    process_->kill();
    char limit[32];
    std::snprintf(limit, sizeof limit, "%.3g", timeout_s);
    failed.reason = std::string("timed out: no result after ") + limit + " s (the worker was killed)";
  } else {
    failed.reason = process_->death_reason();
  }
  process_.reset();  // the next evaluation starts a new worker
  return failed;
}

}  // namespace gemmlab
