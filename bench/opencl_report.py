#!/usr/bin/env python3
"""The OpenCL speed bar for the README, generated from `gemmlab tune --json` (never typed by hand).

  bench/opencl_report.py [--gemmlab PATH] [--device N] [--sizes 1024,2048] [--budget B]

Tunes 03_register_tiled and 04_interior_fast_path (fp32) at each size on OpenCL device N (pocl on
the CPU here) with B evaluations (default 60, no results cache); each tuning ends by timing the best
configuration and CLBlast alternately in the same process, so the ratio is from one run. Prints a
Markdown table and writes the runs, the device and the command line to
bench/results/opencl-tune.json.
"""
import datetime
import sys

from cpu_report import backend_devices, gemmlab, git_commit, save_results, tuning_arguments


def main():
    args = tuning_arguments(__doc__, sizes="1024,2048", budget=60).parse_args()
    device = backend_devices(args.gemmlab, "opencl", "no OpenCL device: install pocl-opencl-icd (scripts/install-deps.sh)")[
        args.device]
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
