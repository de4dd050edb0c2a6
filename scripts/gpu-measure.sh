#!/usr/bin/env bash
# gpu-measure.sh: everything gemmlab can measure on a machine with an NVIDIA GPU, in one command.
#
#   scripts/gpu-measure.sh [options]          (scripts/gpu-measure.sh --help for the options)
#
# Steps (each can be chosen with --steps; all by default):
#   build    configure a CUDA-only build (GEMMLAB_WITH_CUDA=ON, HIP/OpenCL/Kokkos/MPI OFF, no
#            benchmarks, warnings not errors) in --build-dir with Ninja, and build it
#   test     the test suite (ctest)
#   devices  gemmlab devices --json
#   verify   gemmlab verify --backend cuda --json
#   tune     gemmlab tune of kernels/cuda 05..12 at every --sizes (M=N=K) in each kernel's
#            precisions: 05 fp32 fp64; 06, 07, 08 fp32; 09, 10, 11, 12 fp16 bf16 (from
#            kernels/cuda/simt_kernels.cpp, tensor_core_kernels.cpp, hopper_kernels.cpp); 11 and
#            12 need sm_90 and are recorded as skipped elsewhere
# Each step writes one JSON file per gemmlab command to --out (default bench/results/<GPU name,
# slugged>/): the command exactly as run, the script's own command line, the date, the git commit
# (+dirty when the tracked files differ from it), the GPU (name, driver version, CUDA version the
# driver supports, compute capability, memory, UUID), the exit status and gemmlab's JSON document
# under "result". Logs go to OUT/logs/, and OUT/summary.json lists every step and file.
#
# What the build needs. A bare GPU machine with only the CUDA toolkit, CMake and Ninja cannot
# build gemmlab: the top-level CMakeLists.txt requires these with no option to turn them off
#   - OpenMP (libgomp, part of GCC), OpenBLAS and BLIS (the CPU references), nlohmann_json >= 3.10,
#     fmt, SQLite3 (results cache), CLI11 (the command line), ZLIB (gzip-compressed records);
#   - GoogleTest for the test suite (--skip-tests configures with GEMMLAB_BUILD_TESTS=OFF instead).
# Google Benchmark (GEMMLAB_BUILD_BENCH=OFF) and the other backends' toolkits (GEMMLAB_WITH_*=OFF)
# are dropped. Before building, the script configures a small probe project that asks CMake for
# each of them and stops with one line naming all that are missing (on Debian/Ubuntu:
# scripts/install-deps.sh, or apt-get install libopenblas-dev libblis-dev nlohmann-json3-dev
# libfmt-dev libsqlite3-dev libcli11-dev zlib1g-dev libgtest-dev; elsewhere set CMAKE_PREFIX_PATH
# to where they are installed, which CMake reads from the environment). Where nothing can be
# installed: --fetch-debs DIR on a Debian 12 machine, then --debs DIR on the GPU machine.
#
# Exit status: 0 every step succeeded; 1 a step failed (the others still ran where they could:
# see OUT/summary.json); 2 bad options; 3 no NVIDIA GPU (checked first, before anything is built);
# 4 a tool or library the build needs is missing.
set -euo pipefail

readonly prog=gpu-measure
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly root
# shell_word ARG: ARG as the shell reads it back (quoted only when it needs to be).
shell_word() {
  if [[ $1 =~ ^[A-Za-z0-9_./:=,+@%-]+$ ]]; then
    printf '%s' "$1"
  else
    printf "'%s'" "${1//\'/\'\\\'\'}"
  fi
}
quoted() {  # the arguments as one shell-quoted line
  local line="" a
  for a in "$@"; do line+="${line:+ }$(shell_word "$a")"; done
  printf '%s' "$line"
}
# The command line as the records show it.
script_command=$(quoted scripts/gpu-measure.sh "$@")
readonly script_command

die() {  # die STATUS MESSAGE: one line on stderr, then exit
  echo "$prog: $2" >&2
  exit "$1"
}
note() { echo "$prog: $*"; }

usage() {
  cat <<'EOF'
Usage: scripts/gpu-measure.sh [options]

Builds gemmlab with the CUDA backend only, runs the test suite, `gemmlab devices`,
`gemmlab verify --backend cuda`, and tunes the CUDA kernels 05-12 in their precisions;
writes one JSON record per command to OUT (see docs/gpu-measure.md).

Options:
  --build-dir DIR     build tree (default: build/gpu)
  --out DIR           where the JSON records go (default: bench/results/<GPU name, slugged>)
  --sizes LIST        comma-separated sizes, each tuned as M=N=K (default: 4096,8192)
  --kernels LIST      comma-separated CUDA kernels, by number (05) or name (05_2d_register_tiled)
                      (default: 05,06,07,08,09,10,11,12)
  --steps LIST        comma-separated subset of build,test,devices,verify,tune (default: all)
  --skip-tests        leave out the test step and configure without the test suite
  --device N          the GPU, by nvidia-smi index (default: 0); gemmlab sees only that one
  --budget N          evaluations per tuning run at most (default: 100)
  --time-limit S      seconds per tuning run at most, 0 for none (default: 300)
  --debs DIR          unpack the Debian packages (*.deb) in DIR into BUILD/deps and build against
                      them: for a GPU machine with nothing but the CUDA toolkit, CMake and Ninja
  --fetch-debs DIR    on a Debian 12 machine with network: download into DIR the packages the
                      build needs beyond those three (about 35 MB), then exit; needs no GPU
  --dry-run           print the commands instead of running them (the GPU check still runs)
  -h, --help          this text

Exit status: 0 all steps succeeded; 1 a step failed; 2 bad options; 3 no NVIDIA GPU;
4 a tool or library the build needs is missing.
EOF
}

# --- Options ------------------------------------------------------------------------------------
build_dir=build/gpu
out_dir=""
sizes_list=4096,8192
kernels_list=05,06,07,08,09,10,11,12
steps_list=build,test,devices,verify,tune
skip_tests=false
gpu_index=0
budget=100
time_limit=300
dry_run=false
debs_dir=""
fetch_debs_dir=""

need_value() {  # need_value OPTION ARGC: the option must be followed by a value
  [ "$2" -ge 2 ] || die 2 "$1 needs a value (see --help)"
}
while [ $# -gt 0 ]; do
  case $1 in
    --build-dir) need_value "$1" $#; build_dir=$2; shift 2 ;;
    --build-dir=*) build_dir=${1#*=}; shift ;;
    --out) need_value "$1" $#; out_dir=$2; shift 2 ;;
    --out=*) out_dir=${1#*=}; shift ;;
    --sizes) need_value "$1" $#; sizes_list=$2; shift 2 ;;
    --sizes=*) sizes_list=${1#*=}; shift ;;
    --kernels) need_value "$1" $#; kernels_list=$2; shift 2 ;;
    --kernels=*) kernels_list=${1#*=}; shift ;;
    --steps) need_value "$1" $#; steps_list=$2; shift 2 ;;
    --steps=*) steps_list=${1#*=}; shift ;;
    --skip-tests) skip_tests=true; shift ;;
    --device) need_value "$1" $#; gpu_index=$2; shift 2 ;;
    --device=*) gpu_index=${1#*=}; shift ;;
    --budget) need_value "$1" $#; budget=$2; shift 2 ;;
    --budget=*) budget=${1#*=}; shift ;;
    --time-limit) need_value "$1" $#; time_limit=$2; shift 2 ;;
    --time-limit=*) time_limit=${1#*=}; shift ;;
    --debs) need_value "$1" $#; debs_dir=$2; shift 2 ;;
    --debs=*) debs_dir=${1#*=}; shift ;;
    --fetch-debs) need_value "$1" $#; fetch_debs_dir=$2; shift 2 ;;
    --fetch-debs=*) fetch_debs_dir=${1#*=}; shift ;;
    --dry-run) dry_run=true; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die 2 "unknown option '$1' (see --help)" ;;
  esac
done

[ -n "$build_dir" ] || die 2 "--build-dir must not be empty"
[[ $gpu_index =~ ^[0-9]+$ ]] || die 2 "--device must be a GPU index (0, 1, ...), not '$gpu_index'"
[[ $budget =~ ^[1-9][0-9]*$ ]] || die 2 "--budget must be a whole number >= 1, not '$budget'"
[[ $time_limit =~ ^[0-9]+$ ]] || die 2 "--time-limit must be a whole number of seconds (0: none), not '$time_limit'"

IFS=, read -r -a sizes <<<"$sizes_list"
[ ${#sizes[@]} -gt 0 ] || die 2 "--sizes is empty"
for s in "${sizes[@]}"; do
  [[ $s =~ ^[1-9][0-9]*$ ]] || die 2 "--sizes takes positive whole numbers separated by commas, not '$sizes_list'"
done

declare -A want_step=()
IFS=, read -r -a steps <<<"$steps_list"
[ ${#steps[@]} -gt 0 ] || die 2 "--steps is empty"
for s in "${steps[@]}"; do
  case $s in
    build | test | devices | verify | tune) want_step[$s]=1 ;;
    *) die 2 "unknown step '$s' in --steps (steps: build,test,devices,verify,tune)" ;;
  esac
done
$skip_tests && unset 'want_step[test]'

# The kernels: kernels/cuda/NN_name.cu is kernel NN_name; the precisions are the kernels' own
# (the *_kernels.cpp specifications), kept here because the script resolves them before building.
declare -A kernel_precisions=(
  [05]="fp32 fp64" [06]="fp32" [07]="fp32" [08]="fp32"
  [09]="fp16 bf16" [10]="fp16 bf16" [11]="fp16 bf16" [12]="fp16 bf16"
)
kernels=()
IFS=, read -r -a kernel_args <<<"$kernels_list"
[ ${#kernel_args[@]} -gt 0 ] || die 2 "--kernels is empty"
for k in "${kernel_args[@]}"; do
  number=${k%%_*}
  [[ $number =~ ^[0-9][0-9]$ && -n ${kernel_precisions[$number]:-} ]] ||
    die 2 "--kernels: '$k' is not one of the CUDA kernels 05..12 (a number such as 05, or its full name)"
  files=("$root"/kernels/cuda/"$number"_*.cu)
  [ -e "${files[0]}" ] || die 2 "--kernels: no kernels/cuda/${number}_*.cu in $root"
  name=$(basename "${files[0]}" .cu)
  [ "$k" = "$number" ] || [ "$k" = "$name" ] || die 2 "--kernels: '$k' is not a CUDA kernel (kernel $number is $name)"
  kernels+=("$name")
done

# The Debian 12 packages a bare GPU machine lacks: the libraries the build finds with CMake
# (the probe below names the same ones), the runtime libraries they need, GoogleTest, and netlib's
# BLAS test programs (the BLAS library's tests run them).
readonly build_debs=(libopenblas-dev libopenblas-pthread-dev libopenblas0 libopenblas0-pthread libgfortran5
  libblis-dev libblis-pthread-dev libblis4 libblis4-pthread nlohmann-json3-dev libfmt-dev libfmt9
  libsqlite3-dev libsqlite3-0 libcli11-dev zlib1g-dev libgtest-dev libblas-test)
if [ -n "$fetch_debs_dir" ]; then
  command -v apt-get >/dev/null 2>&1 || die 4 "--fetch-debs needs apt-get (a Debian 12 machine)"
  mkdir -p "$fetch_debs_dir" || die 2 "--fetch-debs: cannot create '$fetch_debs_dir'"
  (cd "$fetch_debs_dir" && apt-get download "${build_debs[@]}") || die 1 "--fetch-debs: apt-get download failed"
  note "fetched ${#build_debs[@]} packages into $fetch_debs_dir; on the GPU machine: scripts/gpu-measure.sh --debs $fetch_debs_dir"
  exit 0
fi
if [ -n "$debs_dir" ]; then
  [ -d "$debs_dir" ] || die 2 "--debs: '$debs_dir' is not a directory"
  compgen -G "$debs_dir/*.deb" >/dev/null || die 2 "--debs: no .deb files in '$debs_dir' (make them with --fetch-debs)"
  debs_dir=$(cd "$debs_dir" && pwd)
fi

# --- The GPU: before anything else ------------------------------------------------------------
command -v nvidia-smi >/dev/null 2>&1 ||
  die 3 "no NVIDIA GPU: nvidia-smi is not installed (this script needs a machine with an NVIDIA GPU and its driver)"
if ! smi_list=$(nvidia-smi --query-gpu=index,name,driver_version,memory.total,uuid --format=csv,noheader 2>&1); then
  die 3 "no NVIDIA GPU: nvidia-smi failed: $(head -n 1 <<<"$smi_list")"
fi
smi_list=$(grep -E '^[[:space:]]*[0-9]+,' <<<"$smi_list" || true)
[ -n "$smi_list" ] || die 3 "no NVIDIA GPU: nvidia-smi lists none"
gpu_line=$(awk -F', *' -v i="$gpu_index" '$1 == i' <<<"$smi_list")
[ -n "$gpu_line" ] || die 2 "--device $gpu_index: nvidia-smi lists GPUs $(cut -d, -f1 <<<"$smi_list" | tr -d ' ' | paste -sd, -) only"
IFS=, read -r _ gpu_name gpu_driver gpu_memory gpu_uuid <<<"$gpu_line"
trim() { local s=$1; s=${s#"${s%%[![:space:]]*}"}; printf '%s' "${s%"${s##*[![:space:]]}"}"; }
gpu_name=$(trim "$gpu_name")
gpu_driver=$(trim "$gpu_driver")
gpu_memory=$(trim "$gpu_memory")
gpu_uuid=$(trim "$gpu_uuid")
gpu_cc=$(nvidia-smi -i "$gpu_index" --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 || true)
[[ $gpu_cc =~ ^[0-9]+\.[0-9]+$ ]] || gpu_cc=""  # older drivers lack the field
gpu_cuda=$(nvidia-smi 2>/dev/null | grep -oE 'CUDA Version: *[0-9.]+' | grep -oE '[0-9.]+$' | head -n 1 || true)
slug=$(tr '[:upper:]' '[:lower:]' <<<"$gpu_name" | sed -E 's/[^a-z0-9]+/-/g; s/^-+//; s/-+$//')
[ -n "$slug" ] || slug=nvidia-gpu
[ -n "$out_dir" ] || out_dir=bench/results/$slug

# gemmlab and the tests see the chosen GPU only, as CUDA device 0.
export CUDA_DEVICE_ORDER=PCI_BUS_ID
export CUDA_VISIBLE_DEVICES=$gpu_uuid
note "GPU $gpu_index: $gpu_name (driver $gpu_driver${gpu_cuda:+, CUDA $gpu_cuda}${gpu_cc:+, compute capability $gpu_cc}, $gpu_memory)"

cd "$root"
gemmlab=$build_dir/apps/gemmlab/gemmlab

# The CUDA toolkit where its installer puts it, when it is not on PATH; cuBLAS (the reference) is
# opened by its soname, so the toolkit's library directory must be in the loader's reach.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
if command -v nvcc >/dev/null 2>&1; then
  cuda_lib=$(cd "$(dirname "$(command -v nvcc)")/.." && pwd)/lib64
  [ ! -d "$cuda_lib" ] || export LD_LIBRARY_PATH="$cuda_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

# The commit, once, before any file is written (writing a tracked record would make it "+dirty").
commit=unknown
if command -v git >/dev/null 2>&1 && head=$(git -C "$root" rev-parse --short HEAD 2>/dev/null); then
  commit=$head
  [ -z "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ] || commit+="+dirty"
fi

# --- JSON records -------------------------------------------------------------------------------
json_string() {  # a JSON string literal of $1
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\n'/\\n}
  s=${s//$'\r'/\\r}
  s=${s//$'\t'/\\t}
  s=$(printf '%s' "$s" | tr -d '\000-\010\013\014\016-\037')
  printf '"%s"' "$s"
}

# Whether file $1 holds one JSON document (python3 when here, else its first and last characters).
is_json() {
  [ -s "$1" ] || return 1
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$1" 2>/dev/null
  else
    [ "$(tr -d '[:space:]' <"$1" | head -c 1)" = "{" ] && [ "$(tr -d '[:space:]' <"$1" | tail -c 1)" = "}" ]
  fi
}

device_json() {
  printf '{"name": %s, "driver_version": %s, "cuda_driver_version": %s, "compute_capability": %s, ' \
    "$(json_string "$gpu_name")" "$(json_string "$gpu_driver")" "$(json_string "$gpu_cuda")" "$(json_string "$gpu_cc")"
  printf '"memory_total": %s, "uuid": %s, "nvidia_smi_index": %s}' \
    "$(json_string "$gpu_memory")" "$(json_string "$gpu_uuid")" "$gpu_index"
}

# write_record FILE COMMAND DATE SECONDS EXIT STATUS ERROR RESULT_FILE: the record, written to a
# temporary file first and then moved into place. RESULT_FILE's JSON (or null) becomes "result".
write_record() {
  local file=$1 command=$2 date=$3 seconds=$4 exit_status=$5 status=$6 error=$7 result=$8
  local tmp=$file.tmp
  {
    printf '{\n  "command": %s,\n  "script": %s,\n' "$(json_string "$command")" "$(json_string "$script_command")"
    printf '  "date": %s,\n  "commit": %s,\n' "$(json_string "$date")" "$(json_string "$commit")"
    printf '  "device": %s,\n' "$(device_json)"
    printf '  "seconds": %s,\n  "exit_status": %s,\n  "status": %s,\n' "$seconds" "$exit_status" "$(json_string "$status")"
    printf '  "error": %s,\n  "result": ' "$(json_string "$error")"
    if [ -n "$result" ] && is_json "$result"; then cat "$result"; else printf 'null'; fi
    printf '\n}\n'
  } >"$tmp"
  mv "$tmp" "$file"
}

# --- Running the steps --------------------------------------------------------------------------
declare -a summary_lines=()
failed=false

summarize() {  # summarize STEP FILE STATUS EXIT
  summary_lines+=("$(printf '{"step": %s, "file": %s, "status": %s, "exit_status": %s}' \
    "$(json_string "$1")" "$(json_string "$2")" "$(json_string "$3")" "$4")")
  [ "$3" != failed ] || failed=true
  note "$1: $3${2:+ ($2)}"
}

# record STEP NAME CLASSIFY -- COMMAND...: runs a gemmlab command with --json, its stdout to a
# scratch file and its stderr to logs/NAME.log, and writes OUT/NAME.json. CLASSIFY names a
# function that turns (exit status, stderr file) into ok/failed/skipped.
record() {
  local step=$1 name=$2 classify=$3
  shift 4
  local command date start rc=0 status error="" seconds
  command=$(quoted "$@")
  if $dry_run; then
    echo "$command"
    return 0
  fi
  local stdout=$out_dir/logs/$name.stdout stderr=$out_dir/logs/$name.log
  date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  start=$(date +%s)
  "$@" >"$stdout" 2>"$stderr" || rc=$?
  seconds=$(($(date +%s) - start))
  status=$("$classify" "$rc" "$stderr")
  [ "$rc" -eq 0 ] || error=$(grep -v '^[[:space:]]*$' "$stderr" | tail -n 1 || true)
  if is_json "$stdout"; then
    write_record "$out_dir/$name.json" "$command" "$date" "$seconds" "$rc" "$status" "$error" "$stdout"
    rm -f "$stdout"
  else  # kept in logs/ for a look; a command that exited 0 without its document did not work
    [ "$status" != ok ] || status=failed
    [ -n "$error" ] || error="no JSON document on standard output (kept in logs/$name.stdout)"
    write_record "$out_dir/$name.json" "$command" "$date" "$seconds" "$rc" "$status" "$error" ""
  fi
  summarize "$step" "$out_dir/$name.json" "$status" "$rc"
}

# OUT/summary.json: every step so far with its status and file.
write_summary() {
  local summary=$out_dir/logs/summary-steps.json sep="" line overall_exit=0 overall=ok
  {
    printf '{"steps": ['
    for line in ${summary_lines[@]+"${summary_lines[@]}"}; do
      printf '%s\n  %s' "$sep" "$line"
      sep=","
    done
    printf '\n]}\n'
  } >"$summary"
  if $failed; then
    overall_exit=1
    overall=failed
  fi
  write_record "$out_dir/summary.json" "$script_command" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" 0 "$overall_exit" "$overall" \
    "" "$summary"
  rm -f "$summary"
}
# stop MESSAGE: a step the later ones need failed; the summary so far, then exit 1.
stop() {
  failed=true
  write_summary
  die 1 "$1"
}

ok_if_zero() { if [ "$1" -eq 0 ]; then echo ok; else echo failed; fi; }
# gemmlab tune: exit 2 "not supported on this device" (11/12 before Hopper) is a skip.
tune_status() {
  if [ "$1" -eq 0 ]; then
    echo ok
  elif [ "$1" -eq 2 ] && grep -q 'not supported on this device' "$2"; then
    echo skipped
  else
    echo failed
  fi
}

# run_logged STEP LOG -- COMMAND...: a command with its output to a log (build, tests).
run_logged() {
  local log=$2
  shift 3
  if $dry_run; then
    quoted "$@"
    echo
    return 0
  fi
  note "$1: $(quoted "$@")  (log: $log)"
  "$@" >"$log" 2>&1
}

# unpack_debs: --debs's packages into BUILD/deps (dpkg -x, never into /), with the links Debian's
# alternatives would make (libopenblas.so, cblas.h, libblis.so, blis.h from the pthread flavours),
# then CMAKE_PREFIX_PATH and the loader's path pointing there.
unpack_debs() {
  local prefix deb dir f arch=x86_64-linux-gnu
  prefix=$(mkdir -p "$build_dir/deps" && cd "$build_dir/deps" && pwd)
  for deb in "$debs_dir"/*.deb; do
    if command -v dpkg >/dev/null 2>&1; then
      dpkg -x "$deb" "$prefix" || die 4 "--debs: cannot unpack $deb"
    else  # a .deb is an ar archive holding data.tar.*
      local scratch
      scratch=$(mktemp -d) || die 4 "--debs: cannot make a scratch directory"
      if ! (cd "$scratch" && ar x "$deb" && tar -x -f "$scratch"/data.tar.* -C "$prefix"); then
        die 4 "--debs: cannot unpack $deb (needs dpkg, or ar and tar)"
      fi
      rm -rf "$scratch"
    fi
  done
  # OpenBLAS first: its cblas.h is the one Debian's alternatives choose when both are installed.
  for dir in "$prefix"/usr/{lib,include}/"$arch"/{openblas,blis}-pthread; do
    [ -d "$dir" ] || continue
    for f in "$dir"/*; do
      if [ ! -f "$f" ] || [ "${f##*/}" = pkgconfig ]; then continue; fi
      [ -e "$(dirname "$dir")/${f##*/}" ] || ln -s "$(basename "$dir")/${f##*/}" "$(dirname "$dir")/${f##*/}"
    done
  done
  [ ! -d "$prefix/usr/include/$arch/blis-pthread" ] || [ -e "$prefix/usr/include/$arch/blis" ] ||
    ln -s blis-pthread "$prefix/usr/include/$arch/blis"
  note "build: unpacked $(compgen -G "$debs_dir/*.deb" | wc -l) packages from $debs_dir into $prefix"
  use_deps_prefix
}
# use_deps_prefix: CMake and the loader look in BUILD/deps first (also for the steps after a build
# made with --debs by an earlier run).
use_deps_prefix() {
  local prefix=$build_dir/deps/usr
  [ -d "$prefix" ] || return 0
  prefix=$(cd "$prefix" && pwd)
  export CMAKE_PREFIX_PATH="$prefix${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export LD_LIBRARY_PATH="$prefix/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

# --- build --------------------------------------------------------------------------------------
if [ -n "${want_step[build]:-}" ]; then
  # The tools first, then what CMake must find, each missing one named.
  command -v cmake >/dev/null 2>&1 || die 4 "missing: cmake (3.25 or later)"
  cmake_version=$(cmake --version | head -n 1 | grep -oE '[0-9]+\.[0-9]+(\.[0-9]+)?' | head -n 1)
  printf '%s\n%s\n' 3.25 "$cmake_version" | sort -V -C ||
    die 4 "missing: cmake 3.25 or later (found $cmake_version)"
  command -v ninja >/dev/null 2>&1 || die 4 "missing: ninja (the build uses the Ninja generator)"
  if [ -n "$debs_dir" ] && ! $dry_run; then unpack_debs; fi

  probe=$(mktemp -d "${TMPDIR:-/tmp}/gpu-measure-probe.XXXXXX")
  trap 'rm -rf "$probe"' EXIT
  cat >"$probe/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.25)
project(gemmlab_dependency_probe LANGUAGES C CXX)
list(APPEND CMAKE_MODULE_PATH "$root/cmake")
set(missing "")
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_FLAGS -std=c++20)
check_cxx_source_compiles("#include <bit>
#include <span>
#include <concepts>
int main() { unsigned v[1] = {1}; std::span<unsigned> s(v); return std::popcount(s[0]) - 1; }" probe_cxx20)
if(NOT probe_cxx20)
  list(APPEND missing "a C++20 compiler (GCC 11+ or Clang 14+)")
endif()
macro(probe package what)
  find_package(\${package} \${ARGN} QUIET)
  if(NOT \${package}_FOUND)
    list(APPEND missing "\${what}")
  endif()
endmacro()
probe(CUDAToolkit "the CUDA toolkit (CUDAToolkit)")
if(CUDAToolkit_FOUND AND (NOT CUDA_nvrtc_LIBRARY OR NOT TARGET CUDA::cudart_static))
  list(APPEND missing "NVRTC or the static CUDA runtime of the CUDA toolkit")
endif()
probe(OpenMP "OpenMP (libgomp)")
probe(OpenBLAS "OpenBLAS (libopenblas-dev)")
probe(BLIS "BLIS (libblis-dev)")
probe(nlohmann_json "nlohmann_json 3.10+ (nlohmann-json3-dev)" 3.10)
probe(fmt "fmt (libfmt-dev)")
probe(SQLite3 "SQLite3 (libsqlite3-dev)")
probe(CLI11 "CLI11 (libcli11-dev)")
probe(ZLIB "ZLIB (zlib1g-dev)")
if(PROBE_TESTS)
  probe(GTest "GoogleTest (libgtest-dev, or --skip-tests)")
endif()
list(JOIN missing "; " missing_text)
message(STATUS "gpu-measure-missing: \${missing_text}")
EOF
  probe_tests=ON
  if $skip_tests; then probe_tests=OFF; fi
  note "build: checking what the build needs (cmake probe)"
  if ! cmake -S "$probe" -B "$probe/build" -G Ninja -DPROBE_TESTS=$probe_tests >"$probe/probe.log" 2>&1; then
    mkdir -p "$out_dir/logs" && cp "$probe/probe.log" "$out_dir/logs/dependency-probe.log"
    die 4 "missing: the probe configure failed ($(grep -m 1 -E 'Error|error' "$probe/probe.log" || tail -n 1 "$probe/probe.log")); see $out_dir/logs/dependency-probe.log"
  fi
  missing=$(sed -n 's/^-- gpu-measure-missing: //p' "$probe/probe.log")
  [ -z "$missing" ] || die 4 "missing: $missing (see scripts/gpu-measure.sh's header)"
  $dry_run || mkdir -p "$out_dir/logs"

  tests_option=ON
  if $skip_tests; then tests_option=OFF; fi
  configure=(cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
    -DGEMMLAB_WITH_CUDA=ON -DGEMMLAB_WITH_HIP=OFF -DGEMMLAB_WITH_OPENCL=OFF -DGEMMLAB_WITH_KOKKOS=OFF
    -DGEMMLAB_WITH_MPI=OFF -DGEMMLAB_BUILD_BENCH=OFF "-DGEMMLAB_BUILD_TESTS=$tests_option"
    -DGEMMLAB_WARNINGS_AS_ERRORS=OFF)
  build=(cmake --build "$build_dir" --parallel "$(nproc 2>/dev/null || echo 2)")
  build_command="$(quoted "${configure[@]}") && $(quoted "${build[@]}")"
  date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  start=$(date +%s)
  rc=0
  run_logged build "$out_dir/logs/configure.log" -- "${configure[@]}" || rc=$?
  [ "$rc" -ne 0 ] || run_logged build "$out_dir/logs/build.log" -- "${build[@]}" || rc=$?
  if ! $dry_run; then
    error=""
    if [ "$rc" -ne 0 ]; then
      log=$out_dir/logs/build.log
      [ -s "$log" ] || log=$out_dir/logs/configure.log
      error=$(grep -m 1 -E 'error|Error' "$log" || tail -n 1 "$log")
    fi
    versions=$out_dir/logs/build-versions.json
    nvcc_version=$( (command -v nvcc >/dev/null && nvcc --version | tail -n 1) || true)
    cxx_version=$( (c++ --version 2>/dev/null || true) | head -n 1)
    printf '{"nvcc": %s, "cxx": %s, "cmake": %s, "build_dir": %s}\n' "$(json_string "$nvcc_version")" \
      "$(json_string "$cxx_version")" "$(json_string "$cmake_version")" "$(json_string "$build_dir")" >"$versions"
    write_record "$out_dir/build.json" "$build_command" "$date" "$(($(date +%s) - start))" "$rc" \
      "$(ok_if_zero "$rc")" "$error" "$versions"
    rm -f "$versions"
    summarize build "$out_dir/build.json" "$(ok_if_zero "$rc")" "$rc"
    [ "$rc" -eq 0 ] || stop "build failed: $error (log: $log)"
  fi
fi

$dry_run || mkdir -p "$out_dir/logs"
[ -z "$debs_dir" ] || [ -n "${want_step[build]:-}" ] || use_deps_prefix
if ! $dry_run && [ ! -x "$gemmlab" ]; then
  die 1 "no gemmlab at $gemmlab: build it first (--steps build, or --build-dir pointing at a build with CUDA)"
fi

# --- test ---------------------------------------------------------------------------------------
if [ -n "${want_step[test]:-}" ]; then
  if ! $dry_run && [ ! -x "$build_dir/tests/gemmlab_tests" ]; then
    die 1 "no test suite in $build_dir (configured with --skip-tests?): run --steps build without --skip-tests"
  fi
  jobs=$((($(nproc 2>/dev/null || echo 2) + 1) / 2))
  ctest=(ctest --test-dir "$build_dir" --output-on-failure --parallel "$jobs")
  log=$out_dir/logs/ctest.log
  date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  start=$(date +%s)
  rc=0
  run_logged test "$log" -- "${ctest[@]}" || rc=$?
  if ! $dry_run; then
    # ctest's own summary: "N% tests passed, F tests failed out of T", then the failed tests.
    result=$out_dir/logs/ctest-summary.json
    line=$(grep -E 'tests passed, [0-9]+ tests? failed out of' "$log" | tail -n 1 || true)
    failed_tests=""
    while IFS= read -r t; do
      failed_tests+="${failed_tests:+, }$(json_string "$t")"
    done < <(sed -n '/The following tests FAILED:/,$p' "$log" | grep -oE '^[[:space:]]*[0-9]+ - [^ ]+' |
      sed -E 's/^[[:space:]]*[0-9]+ - //' || true)
    printf '{"summary": %s, "failed_tests": [%s], "log": %s}\n' "$(json_string "$line")" "$failed_tests" \
      "$(json_string "logs/ctest.log")" >"$result"
    write_record "$out_dir/tests.json" "$(quoted "${ctest[@]}")" "$date" "$(($(date +%s) - start))" "$rc" \
      "$(ok_if_zero "$rc")" "$([ "$rc" -eq 0 ] || echo "$line")" "$result"
    rm -f "$result"
    summarize test "$out_dir/tests.json" "$(ok_if_zero "$rc")" "$rc"
  fi
fi

# --- devices ------------------------------------------------------------------------------------
if [ -n "${want_step[devices]:-}" ]; then
  record devices devices ok_if_zero -- "$gemmlab" devices --json
fi
# gemmlab must see the GPU before verify and tune are worth running.
if ! $dry_run && { [ -n "${want_step[verify]:-}" ] || [ -n "${want_step[tune]:-}" ]; }; then
  listed=$("$gemmlab" devices --no-measure 2>&1 || true)
  # The PTX simulator's devices (sim-sm_90a, sim-sm_80) are always listed; the GPU must be there too.
  if ! grep '^cuda:' <<<"$listed" | grep -vq ' sim-sm_'; then
    summarize devices "" failed 1
    stop "gemmlab lists no cuda device although nvidia-smi lists $gpu_name: is $gemmlab built with CUDA (GEMMLAB_WITH_CUDA), and does the driver work?"
  fi
fi

# --- verify -------------------------------------------------------------------------------------
if [ -n "${want_step[verify]:-}" ]; then
  record verify verify-cuda ok_if_zero -- "$gemmlab" verify --backend cuda --json
fi

# --- tune ---------------------------------------------------------------------------------------
if [ -n "${want_step[tune]:-}" ]; then
  runs=0
  for kernel in "${kernels[@]}"; do
    for precision in ${kernel_precisions[${kernel%%_*}]}; do runs=$((runs + ${#sizes[@]})); done
  done
  limit_text=""
  [ "$time_limit" -eq 0 ] || limit_text=" and $time_limit s"
  note "tune: $runs runs of at most $budget evaluations$limit_text each"
  # A results cache of its own in the build tree: a rerun reuses what an interrupted one measured
  # (each record says how many evaluations came from it: reused_from_cache).
  cache=$build_dir/gpu-measure-results.sqlite
  for kernel in "${kernels[@]}"; do
    for precision in ${kernel_precisions[${kernel%%_*}]}; do
      for size in "${sizes[@]}"; do
        record tune "tune-$kernel-$precision-$size" tune_status -- "$gemmlab" tune --backend cuda --kernel "$kernel" \
          --precision "$precision" --m "$size" --n "$size" --k "$size" --budget "$budget" --time-limit "$time_limit" \
          --seed 1 --cache "$cache" --json
      done
    done
  done
fi

# --- summary ------------------------------------------------------------------------------------
$dry_run && exit 0
write_summary
if $failed; then
  note "done with failures: see $out_dir/summary.json and $out_dir/logs/"
  exit 1
fi
note "done: records in $out_dir"
