#!/usr/bin/env python3
"""gemmlab on MPI ranks (mpirun --oversubscribe, loopback), end to end:

 1. the systolic simulator and a CPU kernel at one thread, on 3 ranks, give as many results as one
    process with the same budget, each configuration once, and say they ran on 3 ranks;
 2. a worker rank killed with SIGKILL mid-run (mpirun --enable-recovery): the run finishes with
    the whole budget evaluated and every result in the cache, none lost, none failed;
 3. rank 0 killed with SIGKILL mid-run: mpirun ends the job, every result committed before is
    still in the cache, and the same command run again reuses them and completes the budget;
 4. ranks holding different devices (one rank hides AVX-512 and AVX2): a clear error, exit status 2;
 5. gemmlab sweep of the systolic simulator on 3 ranks gives the rows of a one-process sweep
    (simulated times: equal to the last digit);
 6. gemmlab blas-table --tune on 3 ranks tunes its class with both kernels, fills the cache with
    the budget's results and writes the table entry (left out, and said so, on a CPU with neither
    AVX-512F nor AVX2, where 05 and 06 cannot run);
 7. two ranks on this node split its cores (unless the launcher bound them): rank 0's CPU device
    reports half of them.

The CPU kernel of 1-3 is 05_packed_avx512 at one thread; on a CPU with neither AVX-512F nor AVX2,
which cannot run it, 03_cache_blocked.

    mpi_ranks_test.py GEMMLAB MPIRUN
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

GEMMLAB, MPIRUN = sys.argv[1], sys.argv[2]
# Root is allowed (CI runs as root); shared-memory messages are copied through a buffer (the
# kernel's cross-process copy needs ptrace rights that containers often withhold).
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl_vader_single_copy_mechanism="none")


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def supported(kernel):
    """Whether this CPU runs the CPU kernel `kernel` (gemmlab kernels --json)."""
    listed = subprocess.run([GEMMLAB, "kernels", "--json"], env=ENV, capture_output=True, text=True, check=True)
    return next(k for k in json.loads(listed.stdout)["kernels"] if k["backend"] == "cpu" and k["name"] == kernel)["supported"]


def tune(args, ranks=0, mpirun_options=(), expect=0, timeout=300):
    command = [GEMMLAB, "tune"] + args + ["--json"]
    if ranks:
        command = [MPIRUN, "--oversubscribe", *mpirun_options, "-np", str(ranks)] + command
    done = subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=timeout)
    if done.returncode != expect:
        fail(f"{' '.join(command)} exited {done.returncode}, expected {expect}\n{done.stderr[-3000:]}")
    return json.loads(done.stdout) if expect == 0 else done


def configs(result):
    return [json.dumps(h["params"], sort_keys=True) for h in result["history"]]


def check_same_count(args, budget, label):
    alone = tune(args)
    spread = tune(args, ranks=3)
    if spread.get("ranks") != 3:
        fail(f"{label}: the run on 3 ranks reports {spread.get('ranks')} ranks")
    if len(configs(alone)) != budget or len(configs(spread)) != budget:
        fail(f"{label}: {len(configs(alone))} results alone, {len(configs(spread))} on 3 ranks; budget {budget}")
    if len(set(configs(spread))) != budget:
        fail(f"{label}: a configuration was evaluated twice on 3 ranks")
    if spread["best"] is None or spread["failed"] != 0:
        fail(f"{label}: on 3 ranks {spread['failed']} failed, best {spread['best']}")
    print(f"ok: {label}: {budget} results alone and on 3 ranks ({spread['evaluations_per_second']:.1f} evaluations/s)")


def rows(cache):
    if not os.path.exists(cache):
        return set()
    try:
        with sqlite3.connect(cache) as db:
            return {r[0] for r in db.execute("SELECT config FROM results")}
    except sqlite3.OperationalError:  # rank 0 is creating the file
        return set()


def rank_pid(rank):
    """The gemmlab tune process of MPI rank `rank` (not its sandboxed worker)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if len(argv) > 1 and argv[0] == GEMMLAB.encode() and argv[1] == b"tune" and \
                f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
            return int(pid)
    return None


def start_and_kill(args, cache, rank, mpirun_options=()):
    """Starts a 3-rank run, kills rank `rank` once a few results are committed; returns the run."""
    command = [MPIRUN, "--oversubscribe", *mpirun_options, "-np", "3", GEMMLAB, "tune"] + args + ["--json"]
    run = subprocess.Popen(command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while len(rows(cache)) < 6:
        if run.poll() is not None or time.time() > deadline:
            fail(f"the run ended or stalled before 6 results were committed ({len(rows(cache))})")
        time.sleep(0.05)
    pid = rank_pid(rank)
    if pid is None:
        fail(f"no process of rank {rank} found")
    before = rows(cache)
    os.kill(pid, 9)
    out, err = run.communicate(timeout=300)
    return run.returncode, out, err, before


def check_cpu_share():
    """Two ranks on this node split its cores: the CPU device of each reports its share."""
    cores = os.cpu_count() or 1
    if cores < 2:
        print("ok: (one core: no share to check)")
        return
    alone = subprocess.run([GEMMLAB, "devices", "--json"], env=ENV, capture_output=True, text=True, check=True)
    ranked = subprocess.run([MPIRUN, "--oversubscribe", "--bind-to", "none", "-np", "2", GEMMLAB, "devices", "--json"],
                            env=ENV, capture_output=True, text=True, timeout=120)
    if ranked.returncode != 0:
        fail(f"gemmlab devices on 2 ranks exited {ranked.returncode}\n{ranked.stderr[-2000:]}")
    cpu = lambda out: next(d for d in json.loads(out)["devices"] if d["backend"] == "cpu")["cores"]
    if cpu(alone.stdout) != cores or cpu(ranked.stdout) != cores // 2:
        fail(f"cores: {cpu(alone.stdout)} alone, {cpu(ranked.stdout)} on rank 0 of 2; {cores} online")
    print(f"ok: alone the CPU has {cores} cores; rank 0 of 2 is pinned to {cores // 2}")


def main():
    check_cpu_share()
    check_same_count(["--backend", "systolic", "--kernel", "02_buffer_tiled", "--m", "512", "--n", "512", "--k", "512",
                      "--budget", "40", "--no-cache"], 40, "systolic 02_buffer_tiled")
    packed = supported("05_packed_avx512")
    kernel = ["--kernel", "05_packed_avx512", "--constraint", "threads == 1"] if packed else ["--kernel", "03_cache_blocked"]
    label = "cpu 05_packed_avx512, one thread" if packed else "cpu 03_cache_blocked (05 cannot run on this CPU)"
    check_same_count(kernel + ["--m", "96", "--n", "96", "--k", "96", "--budget", "20", "--no-cache"], 20, label)

    with tempfile.TemporaryDirectory() as tmp:
        # A worker rank dies: its configuration goes elsewhere, the run completes.
        cache = os.path.join(tmp, "worker.sqlite")
        args = kernel + ["--m", "1024", "--n", "1024", "--k", "1024", "--budget", "45", "--cache", cache]
        code, out, err, before = start_and_kill(args, cache, 2, ["--enable-recovery"])
        if code != 0:
            fail(f"after rank 2 was killed the run exited {code}\n{err[-3000:]}")
        result = json.loads(out)
        if len(result["history"]) != 45 or result["failed"] != 0:
            fail(f"after rank 2 was killed: {len(result['history'])} results, {result['failed']} failed; budget 45")
        after = rows(cache)
        if not before <= after or len(after) != 45:
            fail(f"the cache holds {len(after)} results (45 expected), {len(before - after)} lost")
        print(f"ok: rank 2 killed after {len(before)} results; the run finished with 45, none failed, none lost")

        # Rank 0 dies: the job ends; every committed result stays, and a rerun reuses them.
        cache = os.path.join(tmp, "rank0.sqlite")
        args = kernel + ["--m", "1024", "--n", "1024", "--k", "1024", "--budget", "45", "--cache", cache]
        code, out, err, before = start_and_kill(args, cache, 0)
        if code == 0:
            fail("killing rank 0 did not end the job")
        kept = rows(cache)
        if not before <= kept:
            fail(f"{len(before - kept)} committed results were lost when rank 0 was killed")
        again = tune(args, ranks=3)
        if len(again["history"]) != 45 or again["reused_from_cache"] == 0:
            fail(f"the rerun gave {len(again['history'])} results, {again['reused_from_cache']} from the cache")
        if not kept <= rows(cache):
            fail("the rerun lost results of the first run")
        print(f"ok: rank 0 killed after {len(kept)} results (mpirun ended the job, status {code}); "
              f"the rerun reused {again['reused_from_cache']} and completed 45")

    # Different devices on the ranks: rank 1 hides AVX-512 and AVX2 (another CPU fingerprint, on a
    # CPU with either).
    command = [MPIRUN, "--oversubscribe", "-np", "1", GEMMLAB, "tune", "--kernel", "03_cache_blocked", "--m", "64",
               "--n", "64", "--k", "64", "--budget", "4", "--no-cache", ":", "-np", "1", "-x",
               "GEMMLAB_CPU_DISABLE=avx512f,avx2", GEMMLAB, "tune"]
    done = subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=120)
    if done.returncode == 0 or "different devices" not in done.stderr or "rank 1" not in done.stderr:
        fail(f"ranks on different devices: exit {done.returncode}\n{done.stderr[-2000:]}")
    print("ok: ranks holding different devices are refused:", done.stderr.strip().splitlines()[0])

    sweep = [GEMMLAB, "sweep", "--backend", "systolic", "--sizes", "128,256,512", "--no-cache", "--no-ceilings", "--json"]
    sweeps = []
    for command in (sweep, [MPIRUN, "--oversubscribe", "-np", "3"] + sweep):
        done = subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            fail(f"{' '.join(command)} exited {done.returncode}\n{done.stderr[-2000:]}")
        sweeps.append([(r["kernel"], r["m"], r["n"], r["k"], r["params"], r["gflops"], r["valid"],
                        r["reference"]["gflops"]) for r in json.loads(done.stdout)["results"]])
    if not sweeps[0] or sweeps[0] != sweeps[1]:
        fail(f"the sweep on 3 ranks differs from one process:\n{sweeps[0]}\n{sweeps[1]}")
    print(f"ok: the systolic sweep on 3 ranks gives the one-process rows ({len(sweeps[0])} rows)")

    if not supported("06_small_m"):
        print("left out: blas-table --tune on 3 ranks (06_small_m cannot run on this CPU)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        cache, table = os.path.join(tmp, "results.sqlite"), os.path.join(tmp, "table.json")
        # --tune=true: Open MPI's mpirun reads a bare --tune as its own option (a parameter file).
        command = [MPIRUN, "--oversubscribe", "-np", "3", GEMMLAB, "blas-table", "--tune=true", "--shapes", "64x64x64",
                   "--precision", "fp32", "--library-threads", "1", "--budget", "6", "--cache", cache, "--out", table]
        done = subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=300)
        if done.returncode != 0 or "3 MPI ranks" not in done.stdout:
            fail(f"{' '.join(command)} exited {done.returncode}\n{done.stdout[-1000:]}{done.stderr[-2000:]}")
        with sqlite3.connect(cache) as db:
            kernels = dict(db.execute("SELECT kernel, COUNT(*) FROM results GROUP BY kernel").fetchall())
        entries = json.load(open(table))["entries"]
        if kernels != {"05_packed_avx512": 6, "06_small_m": 6} or len(entries) != 1:
            fail(f"blas-table on 3 ranks: cache {kernels}, {len(entries)} table entries")
        print(f"ok: blas-table --tune on 3 ranks: 6 results per kernel, entry {entries[0]['kernel']}")


if __name__ == "__main__":
    main()
