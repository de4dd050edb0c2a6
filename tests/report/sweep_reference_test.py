#!/usr/bin/env python3
"""A reference library's speed at one shape must not depend on the kernel it was timed beside.

    sweep_reference_test.py live GEMMLAB        a sweep here: single-threaded kernels (02, 04) and a
                                                multi-threaded one (05; 03 on a CPU with neither
                                                AVX-512F nor AVX2) at three square sizes
    sweep_reference_test.py committed DIR       the committed comparison's sweeps (DIR/sweep-*.json)

Fails when two rows of one sweep report the reference at the same shape more than 15% apart.
Live, a row the sweep itself found disturbed (other work on the machine while it was timed) is
left out of the comparison and said so; if that leaves nothing to compare, the test is skipped
(exit 77). The committed inputs must have no disturbed row and no kernel above its measured
ceiling: they are what the report shows a reader.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

TOLERANCE = 0.15


def reference(row):
    ref = row.get("reference")
    if isinstance(ref, dict):
        return ref.get("gflops")
    return row.get("reference_gflops")  # schema 1


def disagreements(rows):
    by_shape = {}
    for r in rows:
        g = reference(r)
        if g:
            by_shape.setdefault(f"{r['m']}x{r['n']}x{r['k']}", []).append((g, r["kernel"]))
    out = []
    for shape, values in sorted(by_shape.items()):
        lo, hi = min(values), max(values)
        if hi[0] / lo[0] - 1 > TOLERANCE:
            out.append(f"{shape}: {lo[0]:.1f} beside {lo[1]}, {hi[0]:.1f} beside {hi[1]} "
                       f"({100 * (hi[0] / lo[0] - 1):.0f}% apart)")
    return out


def live(gemmlab):
    listed = subprocess.run([gemmlab, "kernels", "--json"], capture_output=True, text=True, check=True)
    supported = {k["name"] for k in json.loads(listed.stdout)["kernels"] if k["backend"] == "cpu" and k["supported"]}
    third = "05_packed_avx512"
    if third not in supported:
        third = "03_cache_blocked"
        print("05_packed_avx512 does not run on this CPU: 03_cache_blocked in its place")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "sweep.json")
        command = [gemmlab, "sweep", "--backend", "cpu", "--kernels", f"02_loop_order,04_register_blocked_avx2,{third}",
                   "--sizes", "384,512", "--shapes", "768x768x768", "--max-seconds", "0.5", "--no-ceilings", "--no-cache",
                   "--out", out]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"FAIL: {' '.join(command)} exited {done.returncode}: {done.stderr.strip()}")
        with open(out, encoding="utf-8") as f:
            doc = json.load(f)
    rows = doc["results"]
    if len(rows) != 9:
        sys.exit(f"FAIL: 9 rows expected (3 kernels x 3 shapes), {len(rows)} written")
    disturbed = [r for r in rows if (r.get("machine_load") or {}).get("disturbed")]
    for r in disturbed:
        load = r["machine_load"]
        print(f"left out: {r['kernel']} {r['m']}x{r['n']}x{r['k']} was timed while other work took "
              f"{load['others_cores'] + load['steal_cores']:.2f} cores")
    clean = [r for r in rows if r not in disturbed]
    shapes = {f"{r['m']}x{r['n']}x{r['k']}" for r in clean}
    comparable = [s for s in shapes if sum(1 for r in clean if f"{r['m']}x{r['n']}x{r['k']}" == s) > 1]
    if not comparable:
        print("SKIPPED: every shape had disturbed rows; nothing to compare")
        return 77
    problems = disagreements(clean)
    for r in clean:
        print(f"{r['kernel']:26} {r['m']}x{r['n']}x{r['k']}: kernel {r['gflops']:.1f}, {doc['reference']['name']} "
              f"{reference(r):.1f} GFLOP/s")
    if problems:
        print("FAIL: the reference's speed depends on the kernel beside it:\n  " + "\n  ".join(problems))
        return 1
    print(f"reference within {100 * TOLERANCE:.0f}% across kernels at {len(comparable)} shapes")
    return 0


def committed(directory):
    failures = []
    files = sorted(glob.glob(os.path.join(directory, "sweep-*.json")))
    if not files:
        sys.exit(f"FAIL: no sweep-*.json in {directory}")
    for path in files:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        name = os.path.basename(path)
        rows = [r for r in doc["results"] if r.get("valid") and r.get("gflops")]
        failures += [f"{name}: {d}" for d in disagreements(rows)]
        failures += [f"{name}: {r['kernel']} {r['m']}x{r['n']}x{r['k']} was timed while the machine was busy"
                     for r in rows if (r.get("machine_load") or {}).get("disturbed")]
        if doc["backend"] != "systolic":
            ceiling = (doc["device"].get("measured") or {}).get(f"fma_gflops_{rows[0]['precision']}") if rows else None
            failures += [f"{name}: {r['kernel']} {r['m']}x{r['n']}x{r['k']} at {r['gflops']:.1f} is above the measured "
                         f"ceiling {ceiling:.1f}" for r in rows if ceiling and r["gflops"] > ceiling]
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print(f"{len(files)} committed sweeps: references consistent, nothing disturbed, nothing above its ceiling")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("live", "committed"):
        sys.exit(__doc__)
    sys.exit(live(sys.argv[2]) if sys.argv[1] == "live" else committed(sys.argv[2]))
