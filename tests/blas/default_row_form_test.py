#!/usr/bin/env python3
"""The library's untuned choice for one row of C: with no table, a call with M = 1 and B as stored
runs 06_small_m's row form (STREAM=1, KB=256), and one with M = 4 its tile order (STREAM=0) — in
both precisions, as GEMMLAB_BLAS_VERBOSE reports each call of bench/blas_bench. Where 06 cannot
run (a CPU with neither AVX-512 nor AVX2) the test skips.

    default_row_form_test.py BLAS_BENCH
"""
import os
import re
import subprocess
import sys

SKIP = 77


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def main():
    bench = sys.argv[1]
    for precision in ("fp32", "fp64"):
        done = subprocess.run([bench, "--threads", "1", "--shapes", "1x300x77,4x300x77", "--precision", precision,
                               "--max-seconds", "0.01", "--blocks", "1"], capture_output=True, text=True,
                              env=dict(os.environ, GEMMLAB_BLAS_TABLE="/nonexistent", GEMMLAB_BLAS_VERBOSE="1"))
        if done.returncode != 0:
            fail(f"blas_bench exited {done.returncode}: {done.stderr[-2000:]}")
        if "neither AVX-512 nor AVX2" in done.stderr:
            print("skipped: 06_small_m cannot run on this CPU")
            sys.exit(SKIP)
        for shape, stream in (("1x300x77", "1"), ("4x300x77", "0")):
            calls = {line for line in done.stderr.splitlines() if re.search(rf" {precision} {shape} NN -> ", line)}
            if not calls:
                fail(f"{precision} {shape}: no call logged: {done.stderr[-2000:]}")
            for line in calls:
                if "cpu/06_small_m" not in line or f"STREAM={stream}" not in line or "default configuration" not in line:
                    fail(f"{precision} {shape}: expected 06_small_m's default with STREAM={stream}: {line}")
            if stream == "1" and any("KB=256" not in line for line in calls):
                fail(f"{precision} {shape}: the row form takes KB=256: {calls}")
    print("M = 1: 06's row form; M = 4: its tile order (fp32 and fp64)")


if __name__ == "__main__":
    main()
