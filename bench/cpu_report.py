#!/usr/bin/env python3
"""Measured tables for the README, generated from `gemmlab run --json` (never typed by hand).

  bench/cpu_report.py speed-bar   [--gemmlab PATH] [--repeats N]   05 vs OpenBLAS, 1024^3/2048^3, 1 and all threads
  bench/cpu_report.py curriculum  [--gemmlab PATH] [--size N]      every CPU kernel at N^3, fp32

Each command prints a Markdown table and writes the raw runs, the device and the command line to
bench/results/cpu-<command>.json. Every row comes from one `gemmlab run`, which times the kernel and
OpenBLAS alternately in the same process; repeated runs are summarised by their median.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CLI = os.path.join(ROOT, "build", "default", "apps", "gemmlab", "gemmlab")


def gemmlab(cli, *args):
    """Runs `gemmlab ARGS --json` and returns its document; a failure ends the script with gemmlab's message."""
    cmd = [cli, *map(str, args), "--json"]
    out = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}): {out.stderr.strip()}")
    return json.loads(out.stdout)


def run(cli, kernel, size, threads, extra=()):
    return gemmlab(cli, "run", "--kernel", kernel, "--m", size, "--n", size, "--k", size, "--threads", threads, *extra)


def device(cli):
    out = subprocess.run([cli, "devices", "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["devices"][0]


def backend_devices(cli, backend, missing):
    """The devices `gemmlab devices` lists for `backend` (not measured); none ends the script saying `missing`."""
    devices = [d for d in gemmlab(cli, "devices", "--no-measure")["devices"] if d["backend"] == backend]
    if not devices:
        sys.exit(missing)
    return devices


def tuning_arguments(doc, sizes, budget):
    """The options of the tuning reports: --gemmlab, --device, --sizes and --budget, with these defaults."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gemmlab", default=DEFAULT_CLI, help="path of the gemmlab program")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--sizes", default=sizes)
    parser.add_argument("--budget", type=int, default=budget)
    return parser


def git_commit():
    """HEAD, with "+dirty" when the working tree differs from it (the binary may too)."""
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               check=True, capture_output=True, text=True).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def save_results(file_name, document):
    """Writes `document` to bench/results/FILE_NAME and returns that path relative to the repository.
    The document (its commit included) is complete before the file is opened: truncating a tracked
    file first would make the commit read as "+dirty"."""
    path = os.path.join(ROOT, "bench", "results", file_name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(document, f, indent=2)
    return os.path.relpath(path, ROOT)


def save(name, document):
    print(f"\n(raw runs: {save_results(f'cpu-{name}.json', document)})")


def speed_bar(args):
    dev = device(args.gemmlab)
    rows, runs = [], []
    for size in (1024, 2048):
        for threads in sorted({1, dev["cores"]}):
            samples = [run(args.gemmlab, "05_packed_avx512", size, threads) for _ in range(args.repeats)]
            runs += samples
            ratios = [s["ratio_to_reference"] for s in samples]
            rows.append((size, threads, statistics.median(s["gflops"] for s in samples),
                         statistics.median(s["reference"]["gflops"] for s in samples),
                         statistics.median(ratios), min(ratios), max(ratios)))
    print(f"| size | threads | 05_packed_avx512 GFLOP/s | OpenBLAS GFLOP/s | ratio (median of {args.repeats}) | min | max |")
    print("|---|---|---|---|---|---|---|")
    for size, threads, ours, ref, med, lo, hi in rows:
        print(f"| {size}³ | {threads} | {ours:.1f} | {ref:.1f} | **{med:.3f}** | {lo:.3f} | {hi:.3f} |")
    save("speed-bar", {"command": " ".join(sys.argv), "date": datetime.datetime.now().isoformat(timespec="seconds"),
                       "commit": git_commit(), "device": dev, "runs": runs})


def curriculum(args):
    dev = device(args.gemmlab)
    ceiling = (dev.get("measured") or {}).get("fma_gflops_fp32_one_core") or 0
    runs = []
    print(f"| step | GFLOP/s at {args.size}³ fp32, 1 thread | vs OpenBLAS | % of measured 1-core FMA peak |")
    print("|---|---|---|---|")
    kernels = json.loads(subprocess.run([args.gemmlab, "kernels", "--backend", "cpu", "--json"], check=True,
                                        capture_output=True, text=True).stdout)["kernels"]
    for k in kernels:
        if not k["supported"]:
            print(f"| {k['name']} | unsupported: {k['unsupported_reason']} | | |")
            continue
        samples = [run(args.gemmlab, k["name"], args.size, 1) for _ in range(args.repeats)]
        runs += samples
        gflops = statistics.median(s["gflops"] for s in samples)
        ratio = statistics.median(s["ratio_to_reference"] for s in samples)
        share = f"{100 * gflops / ceiling:.0f}%" if ceiling else "n/a"
        print(f"| {k['name']} | {gflops:.1f} | {ratio:.3f} | {share} |")
    save("curriculum", {"command": " ".join(sys.argv), "date": datetime.datetime.now().isoformat(timespec="seconds"),
                        "commit": git_commit(), "device": dev, "runs": runs})


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gemmlab", default=DEFAULT_CLI, help="path of the gemmlab program")
    parser.add_argument("--repeats", type=int, default=5, help="gemmlab runs per row")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("speed-bar").set_defaults(func=speed_bar)
    c = sub.add_parser("curriculum")
    c.add_argument("--size", type=int, default=1024)
    c.set_defaults(func=curriculum)
    args = parser.parse_args()
    if not os.path.exists(args.gemmlab):
        sys.exit(f"{args.gemmlab} not found: build first (cmake --preset default && cmake --build --preset default)")
    args.func(args)


if __name__ == "__main__":
    main()
