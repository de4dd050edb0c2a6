#!/usr/bin/env bash
# scripts/gpu-measure.sh where there is no GPU: bad options are exit 2 with one line, a missing
# GPU is exit 3 before anything is built (no build directory appears), --debs needs a folder of
# .deb files, and --dry-run with a stand-in nvidia-smi prints the tune commands.
#   gpu_measure_test.sh SCRIPT
set -uo pipefail
script=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
expect() {  # expect STATUS PATTERN -- COMMAND...: the exit status and a line of output matching
  local status=$1 pattern=$2
  shift 3
  local out rc=0
  out=$("$@" 2>&1) || rc=$?
  if [ "$rc" -ne "$status" ] || ! grep -qE -e "$pattern" <<<"$out"; then
    echo "FAIL: $* exited $rc (expected $status), output: $out"
    failures=$((failures + 1))
  fi
}
no_gpu_path=$work/empty-bin
mkdir -p "$no_gpu_path"
for tool in bash dirname basename cat grep sed awk tr head tail mktemp date git cut paste sort mkdir rm; do
  command -v "$tool" >/dev/null && ln -s "$(command -v "$tool")" "$no_gpu_path/$tool"
done
expect 2 "unknown option '--bogus'" -- "$script" --bogus
expect 2 "--budget must be" -- "$script" --budget 0
expect 2 "--kernels: '13'" -- "$script" --kernels 13
expect 2 "--debs: '$work/none' is not a directory" -- "$script" --debs "$work/none"
mkdir -p "$work/nodebs"
expect 2 "no .deb files" -- "$script" --debs "$work/nodebs"
expect 3 "no NVIDIA GPU: nvidia-smi is not installed" -- env PATH="$no_gpu_path" "$script" --build-dir "$work/build"
[ ! -e "$work/build" ] || { echo "FAIL: a build directory appeared without a GPU"; failures=$((failures + 1)); }

# A stand-in nvidia-smi describing one H100: --dry-run prints the tune commands.
cat >"$no_gpu_path/nvidia-smi" <<'SMI'
#!/bin/sh
case "$*" in
  *compute_cap*) echo "9.0" ;;
  *query-gpu*) echo "0, NVIDIA H100 80GB HBM3, 580.159.04, 81559 MiB, GPU-00000000-0000-0000-0000-000000000000" ;;
  *) echo "| NVIDIA-SMI 580.159.04   Driver Version: 580.159.04   CUDA Version: 13.0 |" ;;
esac
SMI
chmod +x "$no_gpu_path/nvidia-smi"
expect 0 "gemmlab tune --backend cuda --kernel 12_warp_specialized --precision bf16 --m 64" -- \
  env PATH="$no_gpu_path:$PATH" "$script" --steps tune --kernels 12 --sizes 64 --dry-run --out "$work/out"
[ "$failures" -eq 0 ] && echo "gpu-measure.sh: all checks passed"
exit $((failures > 0))
