// gemmlab report: merges sweep and tune results (several machines, the systolic presets) into
// DIR/index.html with PNG and SVG plots, the datasheet catalogue beside the measurements, and
// explanations computed from the numbers. The plots are matplotlib's: this runs
// bench/report/gemmlab_report.py with python3.
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "cli.hpp"

extern char** environ;

#ifndef GEMMLAB_REPORT_SCRIPT
#define GEMMLAB_REPORT_SCRIPT "bench/report/gemmlab_report.py"
#endif
#ifndef GEMMLAB_PYTHON
#define GEMMLAB_PYTHON "python3"
#endif
#ifndef GEMMLAB_DATASHEETS
#define GEMMLAB_DATASHEETS "data/datasheets/devices.json"
#endif

namespace gemmlab::cli {
namespace {

// $variable, else the file in the source tree this program was built from, else the installed
// one (share/gemmlab beside the program's bin directory).
std::string locate(const char* variable, const std::string& built, const std::string& installed_name) {
  if (const char* value = std::getenv(variable); value != nullptr && value[0] != '\0') return value;
  if (std::filesystem::is_regular_file(built)) return built;
  std::error_code error;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? built : (exe.parent_path().parent_path() / "share" / "gemmlab" / installed_name).string();
}

}  // namespace

void add_report_command(CLI::App& app, Outcome& outcome) {
  struct Options {
    std::vector<std::string> inputs;
    std::string out, datasheets, python = GEMMLAB_PYTHON;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("report", "Merge sweep and tune results into an HTML report with plots");
  cmd->add_option("--in", o->inputs, "Results: `gemmlab sweep --json`, `gemmlab tune --json` or bench/blas_bench.py output (repeatable)")
      ->required();
  cmd->add_option("--out", o->out, "Directory of the report (index.html, PNG and SVG plots)")->required();
  cmd->add_option("--datasheets", o->datasheets,
                  "Datasheet catalogue (default: the one shipped with gemmlab, data/datasheets/devices.json)");
  cmd->add_option("--python", o->python, "Python interpreter with matplotlib")->capture_default_str();
  cmd->callback([o, &outcome] {
    for (const std::string& path : o->inputs)
      if (!std::filesystem::is_regular_file(path)) throw UsageError("--in " + path + ": no such file");
    const std::string script = locate("GEMMLAB_REPORT_SCRIPT", GEMMLAB_REPORT_SCRIPT, "gemmlab_report.py");
    if (!std::filesystem::is_regular_file(script))
      throw UsageError("the report script " + script + " is missing (set GEMMLAB_REPORT_SCRIPT)");
    const std::string datasheets =
        o->datasheets.empty() ? locate("GEMMLAB_DATASHEETS", GEMMLAB_DATASHEETS, "devices.json") : o->datasheets;
    if (!o->datasheets.empty() && !std::filesystem::is_regular_file(datasheets))
      throw UsageError("--datasheets " + datasheets + ": no such file");
    std::vector<std::string> args = {o->python, script, "--out", o->out, "--datasheets", datasheets};
    args.insert(args.end(), o->inputs.begin(), o->inputs.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    if (const int error = ::posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ); error != 0)
      throw UsageError("cannot run " + o->python + " (" + std::strerror(error) +
                       "); the report needs Python 3 with matplotlib (Debian: python3-matplotlib)");
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    // The script exits 2 for bad input (it said why on stderr), 1 when matplotlib is missing or
    // it failed otherwise.
    outcome.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  });
}

}  // namespace gemmlab::cli
