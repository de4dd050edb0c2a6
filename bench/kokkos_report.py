#!/usr/bin/env python3
"""The Kokkos speed bar for the README, generated from `gemmlab tune --json` (never typed by hand).

  bench/kokkos_report.py [--gemmlab PATH] [--device N] [--sizes 512,1024] [--budget B] [--precision fp32]

Tunes 03_team_register_blocked at each size on Kokkos device N (the Serial execution space of
Debian's Kokkos here) with B evaluations (default 300, no results cache); each tuning ends by
timing the best configuration and KokkosBlas::gemm alternately in the same process, so the ratio is
from one run. The reference's own description (Kokkos and Kokkos Kernels versions, and the BLAS
library Kokkos Kernels hands LayoutRight host GEMMs to, where it was built with one) comes from one
`gemmlab run` of the best configuration. Prints a Markdown table and writes the runs, the device,
the date and the command line to bench/results/kokkos-tune.json.
"""
import datetime
import sys

from cpu_report import backend_devices, gemmlab, git_commit, save_results, tuning_arguments

KERNEL = "03_team_register_blocked"


def main():
    parser = tuning_arguments(__doc__, sizes="512,1024", budget=300)
    parser.add_argument("--precision", default="fp32")
    args = parser.parse_args()
    device = backend_devices(args.gemmlab, "kokkos",
                             "no Kokkos device: build with Kokkos (scripts/install-deps.sh installs Debian's)")[args.device]
    runs, rows, reference_version = [], [], None
    for size in map(int, args.sizes.split(",")):
        tune_args = ["tune", "--backend", "kokkos", "--device", args.device, "--kernel", KERNEL,
                     "--precision", args.precision, "--m", size, "--n", size, "--k", size,
                     "--budget", args.budget, "--no-cache"]
        r = gemmlab(args.gemmlab, *tune_args)
        best = r["best"]
        if reference_version is None:
            params = [arg for key, value in sorted(best["params"].items()) for arg in ("--param", f"{key}={value}")]
            single = gemmlab(args.gemmlab, "run", "--backend", "kokkos", "--device", args.device, "--kernel", KERNEL,
                             "--precision", args.precision, "--m", 64, "--n", 64, "--k", 64, "--max-seconds", 0.05,
                             *params)
            reference_version = single["reference"].get("version")
        runs.append({"command": "gemmlab " + " ".join(map(str, tune_args)) + " --json", "size": size,
                     "kernel": KERNEL, "precision": args.precision, "params": best["params"],
                     "gflops": best["gflops"], "reference": r["reference"]["name"],
                     "reference_gflops": r["reference"]["gflops"], "ratio": best["ratio_to_reference"],
                     "max_rel_error": best["max_rel_error"], "tune": r})
        rows.append((size, best["gflops"], r["reference"]["gflops"], best["ratio_to_reference"],
                     best["max_rel_error"], best["params"]))
    print(f"| size | kernel | precision | tuned GFLOP/s | KokkosBlas::gemm GFLOP/s | ratio | max rel. error "
          f"| best configuration ({args.budget} evaluations) |")
    print("|---|---|---|---|---|---|---|---|")
    for size, ours, ref, ratio, error, params in rows:
        config = " ".join(f"{k}={v}" for k, v in sorted(params.items()))
        print(f"| {size}³ | {KERNEL} | {args.precision} | {ours:.1f} | {ref:.1f} | **{ratio:.2f}** | {error:.1e} | {config} |")
    document = {"command": " ".join(sys.argv), "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "commit": git_commit(), "device": device, "reference": reference_version, "runs": runs}
    saved = save_results("kokkos-tune.json", document)
    print(f"\n({device['name']}; reference: {reference_version}; raw runs: {saved})")


if __name__ == "__main__":
    main()
