#!/usr/bin/env python3
"""The BLAS library's table, end to end: `gemmlab tune` fills a scratch results cache, `gemmlab
blas-table` turns it into a table, and numpy with libgemmlab_blas.so preloaded runs the tuned
configuration for that shape class (GEMMLAB_BLAS_VERBOSE says so). A table made for another
device, a stale entry and a file that is not JSON are each ignored with a warning, printed once,
and the products stay right, as with an unknown GEMMLAB_BLAS_KERNEL; a known one puts the table
aside. Transposed calls of a class the table lacks run 05's entry for the same sizes untransposed,
never 06's (whose dot form reads a transposed B). `gemmlab blas-table --tune` tunes a few-row
shape with 06_small_m, also with B transposed (MxNxK:NT), and the library runs that entry: the
one for its thread count, also in a process bound to one of the cores the table was made with.

    table_blas_test.py GEMMLAB LIBRARY        (with a Python that has numpy)
"""
import json
import os
import subprocess
import sys
import tempfile

from numpy_blas import SKIP, skip_unless_interposable

PRODUCT = """
import sys
import numpy as np
m, n, k = (int(x) for x in sys.argv[1:4])
transposes = sys.argv[4]
rng = np.random.default_rng(3)
a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
# Stored transposed where asked (A as K x M, B as N x K): numpy passes the views' transposes on.
if transposes[0] == "T":
    a = np.ascontiguousarray(a.T).T
if transposes[1] == "T":
    b = np.ascontiguousarray(b.T).T
for _ in range(2):
    c = a @ b
truth = a.astype(np.float64) @ b.astype(np.float64)
bound = 258 * np.finfo(np.float32).eps * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))
print("RIGHT" if np.all(np.abs(c - truth) <= bound) else "WRONG")
"""


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def run(command, env=None, expect=0):
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != expect:
        fail(f"{' '.join(command)} exited {done.returncode} (expected {expect}): {done.stderr[-2000:]}")
    return done


def product(library, table, shape=(300, 200, 256), kernel="", threads="", cpus=None, transposes="NN"):
    """numpy's products with the library preloaded; `cpus`: the CPUs the process is bound to;
    `transposes`: how A and B are stored (NN, TN, NT, TT)."""
    env = dict(os.environ, LD_PRELOAD=library, GEMMLAB_BLAS_VERBOSE="1", GEMMLAB_BLAS_TABLE=table,
               GEMMLAB_BLAS_KERNEL=kernel, GEMMLAB_NUM_THREADS=threads)
    command = [sys.executable, "-c", PRODUCT] + [str(x) for x in shape] + [transposes]
    if cpus is not None:
        command = ["taskset", "--cpu-list", ",".join(str(c) for c in sorted(cpus))] + command
    done = run(command, env)
    if "RIGHT" not in done.stdout:
        fail(f"the product is wrong with the table {table}: {done.stdout} {done.stderr[-2000:]}")
    # The float32 products (the float64 truth goes through the library too, as dgemm).
    calls = [line for line in done.stderr.splitlines() if " -> cpu/" in line and "sgemm" in line]
    if len(calls) != 2 or any(f" {transposes} -> " not in call for call in calls):
        fail(f"expected 2 logged float32 {transposes} calls, got: {done.stderr[-2000:]}")
    return calls, done.stderr


def main():
    skip_unless_interposable()
    gemmlab, library = sys.argv[1], os.path.abspath(sys.argv[2])
    listed = json.loads(run([gemmlab, "kernels", "--json"], dict(os.environ)).stdout)["kernels"]
    missing = [k["name"] for k in listed if k["backend"] == "cpu" and k["name"] in ("05_packed_avx512", "06_small_m")
               and not k["supported"]]
    if missing:
        print(f"SKIP: {', '.join(missing)} cannot run on this CPU (neither AVX-512F nor AVX2): the table this test builds needs both")
        sys.exit(SKIP)
    with tempfile.TemporaryDirectory() as work:
        # the table in a directory that does not exist yet: blas-table creates it
        cache, table = os.path.join(work, "results.sqlite"), os.path.join(work, "tables", "table.json")
        env = dict(os.environ, XDG_CACHE_HOME=work)
        run([gemmlab, "tune", "--kernel", "05_packed_avx512", "--m", "300", "--n", "200", "--k", "256", "--budget", "3",
             "--cache", cache, "--json"], env)
        done = run([gemmlab, "blas-table", "--cache", cache, "--out", table, "--json"], env)
        contents = json.loads(done.stdout)["contents"]
        entries = [e for e in contents["entries"] if e["precision"] == "fp32" and e["transposes"] == "NN"
                   and (e["m_bucket"], e["n_bucket"], e["k_bucket"]) == (8, 7, 8)]
        if not entries or len(entries) != len({e["library_threads"] for e in entries}):
            fail(f"the table has not one entry per library thread count for fp32 NN 256-511 x 128-255 x 256-511: {contents}")
        # the library runs on every core: the entry for the most threads serves it
        tuned = max(entries, key=lambda e: e["library_threads"])
        if json.load(open(table)) != contents:
            fail("the file differs from what blas-table printed")

        calls, _ = product(library, table)
        params = ", ".join(f"{k}={v}" for k, v in sorted(tuned["params"].items()))
        logged_params = "{" + " ".join(f"{k}={v}" for k, v in sorted(tuned["params"].items())) + "}"
        for call in calls:
            if "tuned " not in call or "05_packed_avx512" not in call:
                fail(f"the call did not use the table: {call}")
        print("tuned:", calls[0])
        # Transposes the table has no entry for run 05's entry for the same sizes untransposed:
        # 05 reads them in its packing.
        for transposes in ("TN", "NT", "TT"):
            calls, _ = product(library, table, transposes=transposes)
            if any("tuned " not in c or f"NN entry: 05 packs {transposes} as NN" not in c or logged_params not in c
                   for c in calls):
                fail(f"the {transposes} call did not run the same sizes' NN entry of 05: {calls}")
        print("transposed, from the NN entry:", calls[0])

        # GEMMLAB_BLAS_KERNEL puts the table aside; a name that is not the library's is ignored, once.
        calls, _ = product(library, table, kernel="06_small_m")
        if any("-> cpu/06_small_m " not in c or "GEMMLAB_BLAS_KERNEL" not in c for c in calls):
            fail(f"GEMMLAB_BLAS_KERNEL=06_small_m did not run every call on 06_small_m: {calls}")
        calls, log = product(library, table, kernel="07_nope")
        if log.count("GEMMLAB_BLAS_KERNEL=07_nope is not one of") != 1 or any("tuned " not in c for c in calls):
            fail(f"an unknown GEMMLAB_BLAS_KERNEL was not ignored with one warning: {log[-2000:]}")

        # Another device's table: ignored, one warning for the two calls.
        foreign = dict(contents, device="cpu:another machine", device_name="Another CPU")
        other = os.path.join(work, "foreign.json")
        json.dump(foreign, open(other, "w"))
        calls, log = product(library, other)
        if log.count("was made for Another CPU") != 1 or any("tuned " in c for c in calls):
            fail(f"a foreign table was not ignored with one warning: {log[-2000:]}")

        # A stale entry (a configuration today's space rejects): dropped with a warning.
        stale = json.loads(json.dumps(contents))
        for e in stale["entries"]:
            e["params"]["MR"], e["params"]["NV"] = 16, 4  # 16 x 4 accumulators do not fit 32 zmm registers
        stale_path = os.path.join(work, "stale.json")
        json.dump(stale, open(stale_path, "w"))
        calls, log = product(library, stale_path)
        if log.count("no longer valid") != 1 or any("tuned " in c for c in calls):
            fail(f"a stale entry was not dropped with one warning: {log[-2000:]}")

        # An entry written before 05_packed_avx512 had PACK_A, PACK_B and SPLIT_ROWS: kept, and run as
        # it was tuned (PACK_A=1, PACK_B=1, SPLIT_ROWS=0).
        older = json.loads(json.dumps(contents))
        for e in older["entries"]:
            for later in ("PACK_A", "PACK_B", "SPLIT_ROWS"):
                e["params"].pop(later, None)
        older_path = os.path.join(work, "older.json")
        json.dump(older, open(older_path, "w"))
        calls, log = product(library, older_path)
        ran_as = ("PACK_A=1", "PACK_B=1", "SPLIT_ROWS=0")
        if "no longer valid" in log or any("tuned " not in c or any(v not in c for v in ran_as) for c in calls):
            fail(f"an entry from before PACK_A, PACK_B and SPLIT_ROWS was not run with {' '.join(ran_as)}: "
                 f"{calls} {log[-2000:]}")

        # Not JSON: ignored with a warning.
        broken = os.path.join(work, "broken.json")
        open(broken, "w").write("{ not json")
        calls, log = product(library, broken)
        if log.count("is not JSON") != 1:
            fail(f"a broken table was not reported once: {log[-2000:]}")

        # --tune fills the classes the table lacks, a few-row shape with 06_small_m, which the library then runs.
        # Entries per library thread count: one thread and all cores. 6x400x300 shares the class of
        # 5x300x256: it is not searched, but given the class's finalists, and each entry is chosen over both.
        done = run([gemmlab, "blas-table", "--tune", "--shapes", "5x300x256,6x400x300", "--precision", "fp32",
                    "--budget", "3", "--cache", cache, "--out", table], env)
        if "trying on 6x400x300 fp32 with 06_small_m" not in done.stdout or "tuning 6x400x300" in done.stdout:
            fail(f"6x400x300 was searched, or not given its class's finalists: {done.stdout[-2000:]}")
        done = run([gemmlab, "blas-table", "--shapes", "5x300x256,6x400x300", "--cache", cache, "--out", table,
                    "--json"], env)
        few = [e for e in json.loads(done.stdout)["contents"]["entries"] if e["m_bucket"] == 2]
        if {e["kernel"] for e in few} != {"06_small_m"} or 1 not in {e["library_threads"] for e in few}:
            fail(f"blas-table --tune did not tune 5x300x256 with 06_small_m for one thread and all cores: {few}")
        if any("finalists timed together on 2 shapes of the class" not in e["source"] for e in few):
            fail(f"the entries were not chosen among finalists timed together on both shapes of the class: {few}")
        calls, _ = product(library, table, (5, 300, 256))
        for call in calls:
            if "tuned " not in call or "06_small_m" not in call:
                fail(f"the few-row call did not use its tuned 06_small_m entry: {call}")
        print("tuned, few rows:", calls[0])
        # 06's NN entry does not serve B transposed (another loop, the dot form): the defaults do,
        # with the deepest block of k the space allows for the default tile in fp32 (8 rows with
        # AVX-512, 6 with AVX2: MR x KB x 4 bytes within a 32-48 KiB L1d: KB = 1024).
        default_mr = next(k for k in listed if k["backend"] == "cpu" and k["name"] == "06_small_m")["default_config"]["MR"]
        calls, _ = product(library, table, (5, 300, 256), transposes="NT")
        if any("(default configuration" not in c or f"06_small_m {{KB=1024 MR={default_mr} " not in c for c in calls):
            fail(f"the NT call with only an NN entry of 06 did not run 06's dot-form defaults: {calls}")
        # Tuned with B transposed (--shapes MxNxK:NT), the class has its own entry, which the library runs.
        run([gemmlab, "blas-table", "--tune", "--shapes", "5x300x256:NT", "--precision", "fp32", "--budget", "3",
             "--cache", cache, "--out", table], env)
        entries = json.load(open(table))["entries"]
        if not any(e["transposes"] == "NT" and e["m_bucket"] == 2 and e["kernel"] == "06_small_m" for e in entries):
            fail(f"blas-table --tune --shapes 5x300x256:NT made no NT entry of 06_small_m: {entries}")
        calls, _ = product(library, table, (5, 300, 256), transposes="NT")
        if any("tuned " not in c or "for 5x300x256 NT" not in c for c in calls):
            fail(f"the NT call did not run its own tuned entry: {calls}")
        print("tuned, B transposed:", calls[0])
        # The library takes the entry for its own thread count (labelled here to tell them apart).
        labelled = json.load(open(table))
        for e in labelled["entries"]:
            e["source"] = f"the entry for {e['library_threads']} thread(s)"
        labelled_path = os.path.join(work, "labelled.json")
        json.dump(labelled, open(labelled_path, "w"))
        most = max(e["library_threads"] for e in few)
        for threads, label in (("1", "the entry for 1 thread(s)"), ("", f"the entry for {most} thread(s)")):
            calls, _ = product(library, labelled_path, (5, 300, 256), threads=threads)
            if any(label not in call for call in calls):
                fail(f"GEMMLAB_NUM_THREADS={threads or 'unset'}: the call did not use {label}: {calls}")
        print("per library thread count:", calls[0])
        # A process bound to one of the cores the table was made with keeps the table (taskset; a
        # batch system's or MPI's binding alike): the entry for one thread serves it.
        allowed = sorted(os.sched_getaffinity(0))
        if len(allowed) > 1:
            calls, log = product(library, labelled_path, (5, 300, 256), cpus=allowed[:1])
            if f"was made with {len(allowed)} cores of this machine; this process may use 1" not in log:
                fail(f"a process bound to one core did not take the table made with {len(allowed)}: {log[-2000:]}")
            if any("the entry for 1 thread(s)" not in call for call in calls):
                fail(f"a process bound to one core did not run the table's one-thread entry: {calls}")
            print("bound to one core:", calls[0])
        run([gemmlab, "blas-table", "--library-threads", "0", "--cache", cache, "--out", table], env, expect=2)

        # The command's own errors.
        run([gemmlab, "blas-table", "--tune", "--no-cache", "--out", table], env, expect=2)
        run([gemmlab, "blas-table", "--cache", cache, "--out", table, "--precision", "int8"], env, expect=2)
        done = run([gemmlab, "blas-table", "--tune", "--shapes", "5x300x256:XT", "--cache", cache, "--out", table], env,
                   expect=2)
        if "5x300x256:XT" not in done.stderr or len(done.stderr.strip().splitlines()) != 1:
            fail(f"a shape with unknown transposes did not get one line naming it: {done.stderr}")
        print(f"the table's entry {tuned['class']} {{{params}}} was used; foreign, stale and broken tables ignored")


if __name__ == "__main__":
    main()
