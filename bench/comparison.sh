#!/usr/bin/env bash
# The hardware comparison on this machine: sweeps of every backend present (the CPU, OpenCL,
# every simulated systolic preset), tuning runs of the CPU's 05 with three strategies (the
# convergence plot and the heat map), then the report (with the BLAS library's last benchmark).
#   bench/comparison.sh [BUILD_DIR] [OUT_DIR]     (defaults: build/default, bench/results/comparison)
# Results from other machines (a GPU's sweep) go beside them in OUT_DIR and into the report with
#   gemmlab report --in OUT_DIR/*.json --out REPORT_DIR
set -euo pipefail
build=${1:-build/default}
out=${2:-bench/results/comparison}
gemmlab=$build/apps/gemmlab/gemmlab
mkdir -p "$out"
host=$(hostname)

"$gemmlab" sweep --backend cpu --sizes 128,256,512,1024,2048 --json --out "$out/sweep-cpu-$host.json" > /dev/null
devices=$("$gemmlab" devices --no-measure --json)
if grep -q '"backend": "opencl"' <<< "$devices"; then
  "$gemmlab" sweep --backend opencl --sizes 128,256,512,1024 --json --out "$out/sweep-opencl-$host.json" > /dev/null
fi
# The presets at their native precision.
precisions=(int8 bf16 bf16 bf16 bf16 int8)
for device in 0 1 2 3 4 5; do
  "$gemmlab" sweep --backend systolic --device $device --precision ${precisions[$device]} \
    --sizes 128,256,512,1024,2048 --json --out "$out/sweep-systolic-$device.json" > /dev/null
done
for strategy in random annealing bayesian; do
  "$gemmlab" tune --backend cpu --kernel 05_packed_avx512 --m 512 --n 512 --k 512 --strategy $strategy \
    --budget 40 --seed 1 --no-cache --json > "$out/tune-05-512-$strategy-$host.json"
done
# The BLAS library's last benchmark (bench/blas_bench.py), where there is one, as its own section.
blas=()
[ -f bench/results/blas-bench.json ] && blas=(bench/results/blas-bench.json)
"$gemmlab" report --in "$out"/*.json "${blas[@]}" --out "$build/comparison-report"
