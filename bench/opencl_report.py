#!/usr/bin/env python3
"""The OpenCL speed bar for the README, generated from `gemmlab tune --json` (never typed by hand).

  bench/opencl_report.py [--gemmlab PATH] [--device N] [--sizes 1024,2048] [--budget B]

Tunes 03_register_tiled and 04_interior_fast_path (fp32) at each size on OpenCL device N (pocl on
the CPU here) with B evaluations (default 60, no results cache); each tuning ends by timing the best
configuration and CLBlast alternately in the same process, so the ratio is from one run. Prints a
Markdown table and writes the runs, the device and the command line to
bench/results/opencl-tune.json.
"""
import argparse
import datetime
import sys

from cpu_report import DEFAULT_CLI, gemmlab, git_commit, save_results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gemmlab", default=DEFAULT_CLI, help="path of the gemmlab program")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--sizes", default="1024,2048")
    parser.add_argument("--budget", type=int, default=60)
    args = parser.parse_args()
    devices = [d for d in gemmlab(args.gemmlab, "devices", "--no-measure")["devices"] if d["backend"] == "opencl"]
    if not devices:
        sys.exit("no OpenCL device: install pocl-opencl-icd (scripts/install-deps.sh)")
    device = devices[args.device]
    runs, rows = [], []
    for size in map(int, args.sizes.split(",")):
        for kernel in ("03_register_tiled", "04_interior_fast_path"):
            r = gemmlab(args.gemmlab, "tune", "--backend", "opencl", "--device", args.device, "--kernel", kernel,
                        "--m", size, "--n", size, "--k", size, "--budget", args.budget, "--no-cache")
            runs.append(r)
            best = r["best"]
            rows.append((size, kernel, best["gflops"], r["reference"]["gflops"], best["ratio_to_reference"], best["params"]))
    print(f"| size | kernel | tuned GFLOP/s | CLBlast GFLOP/s | ratio | best configuration ({args.budget} evaluations) |")
    print("|---|---|---|---|---|---|")
    for size, kernel, ours, ref, ratio, params in rows:
        config = " ".join(f"{k}={v}" for k, v in sorted(params.items()))
        print(f"| {size}³ | {kernel} | {ours:.1f} | {ref:.1f} | **{ratio:.2f}** | {config} |")
    document = {"command": " ".join(sys.argv), "date": datetime.datetime.now().isoformat(timespec="seconds"),
                "commit": git_commit(), "device": device, "runs": runs}
    saved = save_results("opencl-tune.json", document)
    print(f"\n({device['name']}; raw runs: {saved})")


if __name__ == "__main__":
    main()
