#!/usr/bin/env python3
"""The records of scripts/gpu-measure.sh as Markdown: the tuned CUDA kernels against cuBLAS (timed
alternately with each kernel, in the same process) and the datasheet's peak, and verify's counts.

    bench/gpu_measure_table.py [RECORDS_DIR]     (default: bench/results/nvidia-h100-80gb-hbm3)

The peak is the datasheet's (data/datasheets/devices.json) for the GPU the records name: dense
tensor-core fp16/bf16, non-tensor fp32 and fp64 (cuBLAS's dgemm uses the fp64 tensor cores, which
the datasheet entry does not list, and may exceed that figure). The records' power readings are left out: NVML's reading averages over a
window far longer than these millisecond runs and the idle gaps between them (130-250 W were read
while 12 ran at 765 TFLOP/s), so GFLOP/s per watt from them would be wrong.
"""
import glob
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def datasheet_peaks(gpu_name):
    """{precision: GFLOP/s} of the datasheet device whose name shares the records' model and memory."""
    with open(os.path.join(ROOT, "data", "datasheets", "devices.json")) as f:
        devices = json.load(f)["devices"]
    words = gpu_name.replace("NVIDIA", "").split()  # e.g. H100, 80GB, HBM3
    for device in devices:
        if device.get("vendor") == "NVIDIA" and all(w in device["name"] for w in words[:2]):
            figures = device["figures"]
            return {p: figures[f"peak_{p}_gflops"]["value"] for p in ("fp32", "fp64", "fp16", "bf16")
                    if f"peak_{p}_gflops" in figures}, device["name"]
    return {}, None


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "bench", "results", "nvidia-h100-80gb-hbm3")
    tunes = sorted(glob.glob(os.path.join(folder, "tune-*.json")))
    if not tunes:
        print(f"no tune-*.json records in {folder}", file=sys.stderr)
        return 2
    rows, gpu = [], None
    for path in tunes:
        with open(path) as f:
            record = json.load(f)
        gpu = record["device"]
        result = record["result"]
        if record["status"] != "ok" or not result or not result.get("best"):
            rows.append((os.path.basename(path), record["status"], record.get("error", "")))
            continue
        best = result["best"]
        rows.append({
            "kernel": result["kernel"], "precision": result["precision"], "size": result["m"],
            "gflops": best["gflops"], "reference": result["reference"]["gflops"],
            "ratio": best["ratio_to_reference"], "params": best["params"],
            "evaluations": result["evaluations"],
        })
    peaks, datasheet = datasheet_peaks(gpu["name"])
    print(f"{gpu['name']}, driver {gpu['driver_version']}, CUDA {gpu['cuda_driver_version']}; "
          f"peaks from the datasheet entry '{datasheet}'\n")
    print("| kernel | precision | M=N=K | TFLOP/s | cuBLAS TFLOP/s | ratio | % of peak | evaluations | best configuration |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if not isinstance(r, dict):
            print(f"| {r[0]} | {r[1]} | | | | | | | {r[2]} |")
            continue
        peak = peaks.get(r["precision"])
        share = f"{100 * r['gflops'] / peak:.0f}%" if peak else ""
        params = " ".join(f"{k}={v}" for k, v in sorted(r["params"].items()))
        print(f"| {r['kernel']} | {r['precision']} | {r['size']} | {r['gflops'] / 1000:.1f} | "
              f"{r['reference'] / 1000:.1f} | {r['ratio']:.2f} | {share} | {r['evaluations']} | {params} |")
    verify = os.path.join(folder, "verify-cuda.json")
    if os.path.exists(verify):
        with open(verify) as f:
            v = json.load(f)
        res = v["result"] or {}
        print(f"\n`{v['command']}`: {res.get('passed')} cases passed, {res.get('failed')} failed, "
              f"{res.get('unsupported')} unsupported ({v['seconds']} s).")
    ratios = [r["ratio"] for r in rows if isinstance(r, dict)]
    if ratios:
        print(f"\nMedian ratio to cuBLAS over the {len(ratios)} runs: {statistics.median(ratios):.2f}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
