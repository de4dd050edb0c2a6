// The evaluation worker of the tests: gemmlab's own kernels plus the deliberately faulty ones.
#include <unistd.h>

#include "faulty_kernels.hpp"
#include "gemmlab/builtin.hpp"
#include "gemmlab/worker.hpp"

int main() {
  gemmlab::Registry registry;
  gemmlab::register_builtin(registry);
  gemmlab::testing::register_faulty_kernels(registry);
  return gemmlab::run_worker(registry, STDIN_FILENO, STDOUT_FILENO);
}
