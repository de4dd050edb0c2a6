#!/usr/bin/env python3
"""netlib's level-3 BLAS test program (Debian's libblas-test: xblat3s or xblat3d) with
libgemmlab_blas.so preloaded, on tests/data/blas/<s|d>blat3.in (GEMM only; sizes up to 65).

    netlib_blas_test.py LIBRARY TESTER INPUT ROUTINE

The tester runs three times: with the library's own choice per call (no table: the rule sends
these sizes to the small path, 01_naive, and to 06_small_m), then with GEMMLAB_BLAS_KERNEL set
to 05_packed_avx512 and to 06_small_m, so that each kernel answers every call netlib makes.
Each run passes when the summary file has both of ROUTINE's lines, "PASSED THE TESTS OF
ERROR-EXITS" and "PASSED THE COMPUTATIONAL TESTS", and GEMMLAB_BLAS_VERBOSE's log shows that
gemmlab's kernels ran (where the CPU has AVX-512: 06_small_m in the first run, only the named
kernel in the others). A missing line or file is a failure.
"""
import os
import re
import subprocess
import sys
import tempfile


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def run_tester(library, tester, input_file, routine, kernel=None):
    """Runs the tester once; returns the log lines of the calls that ran gemmlab's kernels and the log."""
    with tempfile.TemporaryDirectory() as work, open(input_file) as stdin:
        env = dict(os.environ, LD_PRELOAD=os.path.abspath(library), GEMMLAB_BLAS_VERBOSE="1",
                   GEMMLAB_BLAS_TABLE=os.path.join(work, "no-table.json"))
        env.pop("GEMMLAB_BLAS_KERNEL", None)
        if kernel:
            env["GEMMLAB_BLAS_KERNEL"] = kernel
        done = subprocess.run([tester], stdin=stdin, cwd=work, env=env, capture_output=True, text=True, timeout=600)
        summary_name = re.search(r"'([^']+)'", open(input_file).readline()).group(1)
        summary_path = os.path.join(work, summary_name)
        if not os.path.exists(summary_path):
            fail(f"{tester} wrote no {summary_name} (exit {done.returncode}): {done.stderr[-2000:]}")
        summary = open(summary_path).read()
    which = kernel or "the library's choice"
    lines = [line.strip() for line in summary.splitlines() if line.strip().startswith(routine)]
    print(f"--- {routine} on {which}:")
    print("\n".join(lines))
    errors = [line for line in lines if "PASSED THE TESTS OF ERROR-EXITS" in line]
    computations = [line for line in lines if re.search(r"PASSED THE COMPUTATIONAL TESTS \(\s*\d+ CALLS\)", line)]
    if not errors:
        fail(f"{which}: no '{routine}  PASSED THE TESTS OF ERROR-EXITS' line:\n{summary}")
    if not computations:
        fail(f"{which}: no '{routine}  PASSED THE COMPUTATIONAL TESTS' line:\n{summary}")
    if any("FAIL" in line or "SUSPECT" in line for line in lines):
        fail(f"{which}: {routine} reports a failure:\n{summary}")
    calls = [line for line in done.stderr.splitlines() if line.startswith("gemmlab-blas: ") and " -> cpu/" in line]
    if not calls:
        fail(f"{which}: the log shows no call through gemmlab (was the library preloaded?)")
    return calls, done.stderr


def main():
    library, tester, input_file, routine = sys.argv[1:5]
    for path in (library, tester, input_file):
        if not os.path.exists(path):
            fail(f"{path} does not exist (the tester is Debian's libblas-test: scripts/install-deps.sh installs it)")
    calls, log = run_tester(library, tester, input_file, routine)
    counts = {k: sum(k in line for line in calls) for k in ("01_naive", "05_packed_avx512", "06_small_m")}
    print(f"{len(calls)} calls ran gemmlab's kernels: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
    if "no AVX-512" in log:
        return
    if counts["06_small_m"] == 0:
        fail("no call reached 06_small_m")
    for kernel in ("05_packed_avx512", "06_small_m"):
        calls, _ = run_tester(library, tester, input_file, routine, kernel)
        others = [line for line in calls if f"-> cpu/{kernel} " not in line]
        if others:
            fail(f"GEMMLAB_BLAS_KERNEL={kernel}, yet other kernels ran: {others[:3]}")
        print(f"{len(calls)} calls ran {kernel}")


if __name__ == "__main__":
    main()
