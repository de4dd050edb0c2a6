#!/usr/bin/env python3
"""bench/blas_bench on transposed shapes, briefly: each `MxNxK:TT` of --shapes is called with those
transposes and its operands' leading dimensions (an argument the library rejects would print
XERBLA's message and time nothing), and every row is named with its transposes. A shape with
other transposes, and fewer than one block a side, are errors with a one-line message.

    blas_bench_smoke.py BLAS_BENCH
"""
import json
import os
import subprocess
import sys

SHAPES = ["7x13x5:NT", "7x13x5:TN", "7x13x5:TT", "9x9x9"]


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def main():
    bench = sys.argv[1]
    done = subprocess.run([bench, "--threads", "1", "--shapes", ",".join(SHAPES), "--precision", "fp32",
                           "--max-seconds", "0.01", "--blocks", "1"], capture_output=True, text=True,
                          env=dict(os.environ, GEMMLAB_BLAS_TABLE="/nonexistent"))
    if done.returncode != 0:
        fail(f"blas_bench exited {done.returncode}: {done.stderr[-2000:]}")
    if "illegal value" in done.stderr:
        fail(f"the library rejected an argument of a transposed call: {done.stderr[-2000:]}")
    record = json.loads(done.stdout)
    if not record["results"]:
        fail(f"no peer was timed (skipped: {record['skipped']})")
    for shape in SHAPES:
        rows = [r for r in record["results"] if r["shape"] == shape]
        if not rows or any(not r["gemmlab_gflops"] > 0 or not r["ratio"] > 0 for r in rows):
            fail(f"{shape}: no timed rows: {record['results']}")
    print(f"{len(record['results'])} rows over {len(SHAPES)} shapes, peers {sorted({r['peer'] for r in record['results']})}")
    bad = subprocess.run([bench, "--threads", "1", "--shapes", "7x13x5:XT"], capture_output=True, text=True)
    if bad.returncode != 2 or "7x13x5:XT" not in bad.stderr or len(bad.stderr.strip().splitlines()) != 1:
        fail(f"a shape with unknown transposes: exit {bad.returncode}, {bad.stderr!r}")
    if record.get("blocks") != 1:
        fail(f"the record does not say it took --blocks 1: {record.get('blocks')!r}")
    bad = subprocess.run([bench, "--threads", "1", "--blocks", "0"], capture_output=True, text=True)
    if bad.returncode != 2 or "--blocks" not in bad.stderr or len(bad.stderr.strip().splitlines()) != 1:
        fail(f"--blocks 0: exit {bad.returncode}, {bad.stderr!r}")


if __name__ == "__main__":
    main()
