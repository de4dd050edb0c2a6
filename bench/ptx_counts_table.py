#!/usr/bin/env python3
"""The CUDA curriculum's counts on the PTX simulator, as the markdown table of docs/curriculum.md.

Runs `gemmlab run --json` for every CUDA kernel at its default configuration on the simulated
H100 (device 0 of the cuda backend where no GPU is present) at one size, and prints per step:
warp instructions by class, FLOPs on the FMA pipe and on tensor cores, global sectors per request
(coalescing), unique global bytes, shared wavefronts per request (bank conflicts) and barriers.
These are simulated counts: deterministic, and not a time.

    bench/ptx_counts_table.py [--gemmlab build/default/apps/gemmlab/gemmlab] [--size 256]
"""
import argparse
import json
import subprocess
import sys

STEPS = ["01_naive", "02_coalesced", "03_smem_tiled", "04_1d_register_tiled", "05_2d_register_tiled",
         "06_vectorized", "07_warp_tiled", "08_cp_async_pipeline", "09_wmma", "10_mma_sync", "11_wgmma_tma",
         "12_warp_specialized"]


def counts(gemmlab, kernel, size):
    command = [gemmlab, "run", "--backend", "cuda", "--kernel", kernel, "--m", str(size), "--n", str(size), "--k",
               str(size), "--no-cache", "--json"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed: {done.stderr.strip()}")
    run = json.loads(done.stdout)
    if not run.get("simulated"):
        sys.exit(f"{run['device']} is not a simulated device: these counts come from the PTX simulator")
    if not run["valid"]:
        sys.exit(f"{kernel}: wrong C on the simulator: {run['reason']}")
    return run


def ratio(a, b):
    return f"{a / b:.2f}" if b else "–"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gemmlab", default="build/default/apps/gemmlab/gemmlab")
    parser.add_argument("--size", type=int, default=256)
    args = parser.parse_args()
    print(f"| step | precision | warp instr. | FP32 / FP64 / int / mem / ctrl / sync / tensor | FMA-pipe GFLOP "
          f"| tensor GFLOP | global sectors per request | unique global MB | shared wavefronts per request | "
          f"barriers |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for kernel in STEPS:
        run = counts(args.gemmlab, kernel, args.size)
        c = run["simulated_counts"]
        classes = " / ".join(f"{int(c[k + '_instructions']):,}" for k in
                             ["fp32", "fp64", "integer", "memory", "control", "sync", "tensor"])
        requests = c["global_load_requests"] + c["global_store_requests"]
        sectors = c["global_load_sectors"] + c["global_store_sectors"]
        print(f"| {kernel} | {run['precision']} | {int(c['warp_instructions']):,} | {classes} | "
              f"{c['fma_flops'] / 1e9:.3f} | {c['tensor_flops'] / 1e9:.3f} | {ratio(sectors, requests)} | "
              f"{c['global_unique_bytes'] / 1e6:.2f} | {ratio(c['shared_wavefronts'], c['shared_requests'])} | "
              f"{int(c['barriers']):,} |")


if __name__ == "__main__":
    main()
