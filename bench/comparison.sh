#!/usr/bin/env bash
# The hardware comparison on this machine, then the report:
#  - the CPU: every kernel against the fastest CPU library here (oneDNN where found, else
#    OpenBLAS), with the configurations the results cache holds for this machine;
#  - OpenCL where a device is present;
#  - every simulated systolic preset at its native precision, its 02 tuned first at each size
#    (the sweep then reads the tuned configuration from the cache instead of the heuristic one);
#  - each CUDA kernel counted on the PTX simulator (not timed);
#  - tuning runs of the CPU's 05 with three strategies (the convergence plot and the heat map);
#  - the GPU records of scripts/gpu-measure.sh and the BLAS library's last benchmark, where present.
# Run it on an idle machine: every sweep row records what else ran while it was timed, and the
# report flags disturbed rows. Takes about half an hour on 2 cores.
#   bench/comparison.sh [BUILD_DIR] [OUT_DIR]     (defaults: build/default, bench/results/comparison)
# Results from other machines (a GPU's sweep) go beside them in OUT_DIR and into the report with
#   gemmlab report --in OUT_DIR/*.json --out REPORT_DIR
set -euo pipefail
build=${1:-build/default}
out=${2:-bench/results/comparison}
gemmlab=$build/apps/gemmlab/gemmlab
mkdir -p "$out"
host=$(hostname)

reference=openblas
if "$gemmlab" run --kernel 02_loop_order --m 8 --n 8 --k 8 --reference onednn --no-cache --max-seconds 0.01 \
    > /dev/null 2>&1; then
  reference=onednn
fi
"$gemmlab" sweep --backend cpu --reference $reference --sizes 128,256,512,1024,2048 --json \
  --out "$out/sweep-cpu-$host.json" > /dev/null
devices=$("$gemmlab" devices --no-measure --json)
if grep -q '"backend": "opencl"' <<< "$devices"; then
  "$gemmlab" sweep --backend opencl --sizes 128,256,512,1024 --json --out "$out/sweep-opencl-$host.json" > /dev/null
fi
# The presets at their native precision, 02 tuned at each size before the sweep.
precisions=(int8 bf16 bf16 bf16 bf16 int8)
sizes=(128 256 512 1024 2048)
for device in 0 1 2 3 4 5; do
  for s in "${sizes[@]}"; do
    "$gemmlab" tune --backend systolic --device $device --precision ${precisions[$device]} --kernel 02_buffer_tiled \
      --m "$s" --n "$s" --k "$s" --budget 40 --seed 1 > /dev/null
  done
  "$gemmlab" sweep --backend systolic --device $device --precision ${precisions[$device]} \
    --sizes "$(IFS=,; echo "${sizes[*]}")" --json --out "$out/sweep-systolic-$device.json" > /dev/null
done
# The CUDA curriculum on the simulated H100, counted at 256^3 (one JSON array of `gemmlab run --json`).
if "$gemmlab" kernels --backend cuda > /dev/null 2>&1; then
  {
    echo "["
    first=1
    for kernel in $("$gemmlab" kernels --backend cuda | sed -n 's|^cuda/\([^ ]*\) .*|\1|p'); do
      [ $first = 1 ] || echo ","
      first=0
      "$gemmlab" run --backend cuda --kernel "$kernel" --m 256 --n 256 --k 256 --no-cache --json
    done
    echo "]"
  } > "$out/ptx-sim-counts.json"
fi
for strategy in random annealing bayesian; do
  "$gemmlab" tune --backend cpu --kernel 05_packed_avx512 --m 512 --n 512 --k 512 --strategy $strategy \
    --budget 40 --seed 1 --no-cache --json > "$out/tune-05-512-$strategy-$host.json"
done
extra=()
for f in bench/results/nvidia-*/tune-*.json; do
  [ -f "$f" ] && extra+=("$f")
done
[ -f bench/results/blas-bench.json ] && extra+=(bench/results/blas-bench.json)
"$gemmlab" report --in "$out"/*.json "${extra[@]}" --out "$build/comparison-report"
