#!/usr/bin/env python3
"""netlib's level-3 BLAS test program (Debian's libblas-test: xblat3s or xblat3d) with
libgemmlab_blas.so preloaded, on tests/data/blas/<s|d>blat3.in (GEMM only; sizes up to 65, so
that the small path, 06_small_m (M <= 16) and 05_packed_avx512 are all called).

    netlib_blas_test.py LIBRARY TESTER INPUT ROUTINE

Passes when the summary file has both of ROUTINE's lines, "PASSED THE TESTS OF ERROR-EXITS" and
"PASSED THE COMPUTATIONAL TESTS", and GEMMLAB_BLAS_VERBOSE's log shows gemmlab's kernels ran
(05_packed_avx512 and 06_small_m where the CPU has AVX-512). A missing line or file is a failure.
"""
import os
import re
import subprocess
import sys
import tempfile


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def main():
    library, tester, input_file, routine = sys.argv[1:5]
    for path in (library, tester, input_file):
        if not os.path.exists(path):
            fail(f"{path} does not exist (the tester is Debian's libblas-test: scripts/install-deps.sh installs it)")
    with tempfile.TemporaryDirectory() as work, open(input_file) as stdin:
        env = dict(os.environ, LD_PRELOAD=os.path.abspath(library), GEMMLAB_BLAS_VERBOSE="1")
        done = subprocess.run([tester], stdin=stdin, cwd=work, env=env, capture_output=True, text=True, timeout=600)
        summary_name = re.search(r"'([^']+)'", open(input_file).readline()).group(1)
        summary_path = os.path.join(work, summary_name)
        if not os.path.exists(summary_path):
            fail(f"{tester} wrote no {summary_name} (exit {done.returncode}): {done.stderr[-2000:]}")
        summary = open(summary_path).read()
    print(summary)
    lines = [line.strip() for line in summary.splitlines() if line.strip().startswith(routine)]
    errors = [line for line in lines if "PASSED THE TESTS OF ERROR-EXITS" in line]
    computations = [line for line in lines if re.search(r"PASSED THE COMPUTATIONAL TESTS \(\s*\d+ CALLS\)", line)]
    if not errors:
        fail(f"no '{routine}  PASSED THE TESTS OF ERROR-EXITS' line")
    if not computations:
        fail(f"no '{routine}  PASSED THE COMPUTATIONAL TESTS' line")
    if any("FAIL" in line or "SUSPECT" in line for line in lines):
        fail(f"{routine} reports a failure")
    log = done.stderr.splitlines()
    calls = [line for line in log if line.startswith("gemmlab-blas: ") and " -> cpu/" in line]
    packed = [line for line in calls if "05_packed_avx512" in line]
    small_m = [line for line in calls if "06_small_m" in line]
    print(f"{len(calls)} calls ran gemmlab's kernels, {len(packed)} of them 05_packed_avx512, {len(small_m)} 06_small_m")
    if not calls:
        fail("the log shows no call through gemmlab (was the library preloaded?)")
    if "no AVX-512" not in done.stderr:
        if not packed:
            fail("no call reached 05_packed_avx512")
        if not small_m:
            fail("no call reached 06_small_m")


if __name__ == "__main__":
    main()
