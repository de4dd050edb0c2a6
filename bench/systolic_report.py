#!/usr/bin/env python3
"""The systolic curriculum's staircase for the README, generated from `gemmlab run/tune --json`.

  bench/systolic_report.py [--gemmlab PATH] [--size N] [--budget B]

For every systolic preset, in its native precision at N^3 (default 1024): 01_array_tiles (one
`gemmlab run`), the heuristic mapping (02_buffer_tiled's default, the backend's reference) and
02_buffer_tiled tuned with B evaluations (default 100, no results cache). All times are simulated
(cycles / clock), so one run of each is exact. Prints a Markdown table and writes the runs, the
devices and the command line to bench/results/systolic-staircase.json.
"""
import argparse
import datetime
import os
import sys

from cpu_report import backend_devices, DEFAULT_CLI, gemmlab, git_commit, save_results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gemmlab", default=DEFAULT_CLI, help="path of the gemmlab program")
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--budget", type=int, default=100)
    args = parser.parse_args()
    if not os.path.exists(args.gemmlab):
        sys.exit(f"{args.gemmlab} not found: build first (cmake --preset default && cmake --build --preset default)")
    devices = backend_devices(args.gemmlab, "systolic", "no systolic device: gemmlab lists one per preset")
    n = args.size
    rows, runs = [], []
    for d in devices:
        precision = d["features"][1]  # the preset's native precision
        shape = ["--m", n, "--n", n, "--k", n, "--precision", precision, "--backend", "systolic", "--device", d["index"]]
        first = gemmlab(args.gemmlab, "run", "--kernel", "01_array_tiles", *shape)
        tuned = gemmlab(args.gemmlab, "tune", "--kernel", "02_buffer_tiled", *shape, "--budget", args.budget, "--no-cache")
        runs.append({"device": d, "run_01": first, "tune_02": tuned})
        best = tuned["best"]
        rows.append((d["name"], precision, first["gflops"], tuned["reference"]["gflops"], best["gflops"],
                     best["ratio_to_reference"], 100 * best["gflops"] / d["peak_gflops_fp32"], best["params"]))
    print(f"| preset | precision | 01_array_tiles | heuristic (02 default) | 02 tuned ({args.budget} evaluations) | "
          f"tuned ÷ heuristic | % of the array's peak | tuned mapping |")
    print("|---|---|---|---|---|---|---|---|")
    for name, precision, first, heuristic, best, ratio, peak, params in rows:
        mapping = " ".join(f"{k}={v}" for k, v in sorted(params.items()))
        print(f"| {name} | {precision} | {first:.0f} | {heuristic:.0f} | {best:.0f} | {ratio:.3f} | {peak:.1f}% | {mapping} |")
    document = {"command": " ".join(sys.argv), "date": datetime.datetime.now().isoformat(timespec="seconds"),
                "commit": git_commit(), "size": n, "budget": args.budget, "runs": runs}
    saved = save_results("systolic-staircase.json", document)
    print(f"\n(GFLOP/s at the preset's clock, one simulated array; raw runs: {saved})")


if __name__ == "__main__":
    main()
