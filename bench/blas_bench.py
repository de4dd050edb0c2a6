#!/usr/bin/env python3
"""The BLAS library's speed bar: libgemmlab_blas.so against OpenBLAS, BLIS and oneDNN on the
benchmark's shape set, with 1 thread and with all cores, ratios taken in one process per thread
count (build/default/bench/blas_bench: alternating blocks on the same buffers).

    bench/blas_bench.py [--bench PATH] [--gemmlab PATH] [--shapes MxNxK[:TT],...] [--precision P]
                        [--threads 1,2] [--max-seconds S] [--rounds R] [--plot FILE]

The whole set is timed R times (default 3), the thread counts in turn within each round, so that
the rounds of one pairing lie minutes apart: a stretch when the machine runs slow (another guest's
burst of work) lands in one round, and each figure is the median of its rounds. Each ratio is
taken between gemmlab and one peer timed in alternating blocks; gemmlab's ratio to the best peer at
a shape is the smallest of its per-peer ratios.
Prints per shape the GFLOP/s of gemmlab and of each peer and gemmlab's ratio to the best peer, then
the bar: the geometric mean of those ratios per precision and thread count (>= 1.0 wanted), the
worst shape (>= 0.9 wanted) and, for squares of 1024 and more, the share of the FMA ceiling for the
cores used (>= 85% wanted), twice: against the ceiling `gemmlab devices` measures before the
rounds (the highest of five), and against the same FMA loop timed in alternating blocks with the
GEMM at each large square (blas_bench's "ceilings": the ceiling at the moments the GEMM ran,
median of the rounds' shares). The table the library used
($GEMMLAB_BLAS_TABLE or the default path: `gemmlab blas-table`) is recorded with the results in
bench/results/blas-bench.json, which `gemmlab report` also takes; the plot (the report's: gemmlab
over each peer, per shape) goes to --plot (default bench/results/blas-bench.png).
"""
import argparse
import datetime
import json
import math
import os
import statistics
import subprocess
import sys

from cpu_report import DEFAULT_CLI, ROOT, git_commit, save_results

DEFAULT_BENCH = os.path.join(ROOT, "build", "default", "bench", "blas_bench")


def run_bench(bench, threads, args):
    command = [bench, "--threads", str(threads), "--max-seconds", str(args.max_seconds)]
    if args.shapes:
        command += ["--shapes", args.shapes]
    if args.precision:
        command += ["--precision", args.precision]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return command, json.loads(done.stdout)


def table_in_use(gemmlab):
    path = os.environ.get("GEMMLAB_BLAS_TABLE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "gemmlab",
        "blas-table.json")
    if not os.path.exists(path):
        return {"path": path, "entries": 0, "note": "no table: every call on the defaults"}
    table = json.load(open(path))
    return {"path": path, "entries": len(table.get("entries", [])), "created": table.get("created"),
            "device_name": table.get("device_name")}


def ceilings(gemmlab, tries=5):
    """The CPU as `gemmlab devices` describes it, each measured ceiling the highest of `tries`
    measurements: a peak is what the machine can reach, and noise (a neighbour's burst of work) only
    lowers a short measurement (seen here: 192 among 389-449 GFLOP/s on two cores)."""
    cpu = None
    for _ in range(tries):
        done = subprocess.run([gemmlab, "devices", "--json"], capture_output=True, text=True, check=True)
        this = [d for d in json.loads(done.stdout)["devices"] if d["backend"] == "cpu"][0]
        if cpu is None:
            cpu = this
            continue
        for name, value in (this.get("measured") or {}).items():
            if isinstance(value, (int, float)) and value > (cpu["measured"].get(name) or 0):
                cpu["measured"][name] = value
    return cpu


def combine_rounds(rounds):
    """One row per (precision, threads, shape, peer) from the rows of every round: the median of
    each figure over the rounds (gemmlab's and the peer's GFLOP/s and their ratio, each ratio taken
    within its round's alternating blocks), the rounds' own figures kept beside it."""
    combined = {}
    for rows in rounds:
        for r in rows:
            key = (r["precision"], r["threads"], r["shape"], r["peer"])
            combined.setdefault(key, []).append(r)
    out = []
    for group in combined.values():
        row = dict(group[0])
        for name in ("gemmlab_gflops", "peer_gflops", "ratio", "gemmlab_spread", "peer_spread"):
            row[name] = statistics.median(r[name] for r in group)
        row["rounds"] = [{name: r[name] for name in ("gemmlab_gflops", "peer_gflops", "ratio")} for r in group]
        out.append(row)
    return out


def is_large_square(shape):
    """A square of 1024 and more: the shapes the bar's share of the FMA ceiling is for (blas_bench's
    large_square, which times these beside the FMA loop)."""
    m, n, k = (int(d) for d in shape.split(":")[0].split("x"))  # "MxNxK", or "MxNxK:TT" transposed
    return m == n == k >= 1024


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def plot(rows, path):
    """The report's chart of the BLAS library against its peers (bench/report/gemmlab_report.py)."""
    sys.path.insert(0, os.path.join(ROOT, "bench", "report"))
    try:
        from gemmlab_report import plot_blas
    except ImportError:
        print("(no matplotlib: no plot)")
        return None
    return plot_blas(rows, path, formats=("png",))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", default=DEFAULT_BENCH)
    parser.add_argument("--gemmlab", default=DEFAULT_CLI)
    parser.add_argument("--shapes", default="")
    parser.add_argument("--precision", default="")
    parser.add_argument("--threads", default="")
    parser.add_argument("--max-seconds", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--plot", default=os.path.join(ROOT, "bench", "results", "blas-bench.png"))
    args = parser.parse_args()
    if args.rounds < 1:
        sys.exit("--rounds must be at least 1")

    commit = git_commit()  # before anything is written: the plot is a tracked file
    device = ceilings(args.gemmlab)
    measured = device.get("measured") or {}
    thread_counts = [int(t) for t in args.threads.split(",")] if args.threads else sorted({1, device["cores"]})
    rounds, commands, skipped, same_moment = [], [], {}, {}
    for round_number in range(args.rounds):
        rows = []
        for threads in thread_counts:
            command, doc = run_bench(args.bench, threads, args)
            commands.append(" ".join(command))
            rows += doc["results"]
            skipped.update(doc["skipped"])
            for c in doc.get("ceilings", []):
                same_moment.setdefault((c["precision"], c["threads"], c["shape"]), []).append(c)
        rounds.append(rows)
        print(f"(round {round_number + 1} of {args.rounds} done)", file=sys.stderr)
    for name, why in skipped.items():
        print(f"(skipped {name}: {why})")
    rows = combine_rounds(rounds)

    print("| shape | precision | threads | gemmlab GFLOP/s | best peer | its GFLOP/s | ratio to the best | all peers |")
    print("|---|---|---|---|---|---|---|---|")
    summary = {}
    for key in sorted({(r["precision"], r["threads"], r["shape"]) for r in rows},
                      key=lambda k: (k[0], k[1], rows.index(next(r for r in rows if (r["precision"], r["threads"], r["shape"]) == k)))):
        precision, threads, shape = key
        group = [r for r in rows if (r["precision"], r["threads"], r["shape"]) == key]
        ours = statistics.median(r["gemmlab_gflops"] for r in group)
        best = min(group, key=lambda r: r["ratio"])  # the peer gemmlab is slowest against
        ratio = best["ratio"]
        summary.setdefault((precision, threads), []).append((shape, ratio, ours))
        peers = ", ".join(f"{r['peer']} {r['peer_gflops']:.1f}" for r in group)
        print(f"| {shape} | {precision} | {threads} | {ours:.1f} | {best['peer']} | {best['peer_gflops']:.1f} | "
              f"{ratio:.2f} | {peers} |")

    print("\nThe bar (gemmlab against the best peer at each shape):")
    bar = []
    for (precision, threads), items in sorted(summary.items()):
        g = geomean([r for _, r, _ in items])
        worst = min(items, key=lambda x: x[1])
        ceiling = measured.get("fma_gflops_" + precision + ("_one_core" if threads == 1 else ""))
        large = [(s, gf) for s, _, gf in items if is_large_square(s)]
        shares = [(s, gf / ceiling) for s, gf in large] if ceiling else []
        # The same large squares against the FMA loop timed beside them: the median of the rounds.
        beside = {s: same_moment[(precision, threads, s)] for s, _ in large if (precision, threads, s) in same_moment}
        shares_beside = {s: statistics.median(c["share"] for c in cs) for s, cs in beside.items()}
        ceilings_beside = {s: statistics.median(c["fma_gflops"] for c in cs) for s, cs in beside.items()}
        print(f"- {precision}, {threads} thread(s): geometric mean {g:.2f} (>= 1.0 wanted); worst {worst[0]} at "
              f"{worst[1]:.2f} (>= 0.9 wanted)" +
              ("; large squares " + ", ".join(f"{s} {100 * share:.0f}%" for s, share in shares) +
               f" of the measured {ceiling:.1f} GFLOP/s FMA ceiling (>= 85% wanted)" if shares else "") +
              ("; of the FMA loop timed beside them " +
               ", ".join(f"{s} {100 * shares_beside[s]:.0f}% of {ceilings_beside[s]:.1f}" for s in shares_beside)
               if shares_beside else ""))
        bar.append({"precision": precision, "threads": threads, "geomean_ratio": g, "worst_shape": worst[0],
                    "worst_ratio": worst[1], "fma_ceiling_gflops": ceiling,
                    "large_square_shares": {s: share for s, share in shares},
                    "large_square_shares_beside_fma_loop": shares_beside,
                    "fma_loop_beside_gflops": ceilings_beside})

    picture = plot(rows, args.plot)
    document = {"kind": "blas-bench", "script": " ".join(sys.argv), "rounds": args.rounds, "commands": commands,
                "date": datetime.datetime.now().isoformat(timespec="seconds"), "commit": commit,
                "device": {k: device.get(k) for k in ("name", "vendor", "cores", "fingerprint", "measured")},
                "table": table_in_use(args.gemmlab), "bar": bar, "results": rows,
                "ceilings_beside": [c for cs in same_moment.values() for c in cs],
                "plot": os.path.relpath(picture, ROOT) if picture else None}
    print(f"\n(results: {save_results('blas-bench.json', document)}" + (f"; plot: {document['plot']})" if picture else ")"))


if __name__ == "__main__":
    main()
