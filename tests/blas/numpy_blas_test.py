#!/usr/bin/env python3
"""numpy's matmul with libgemmlab_blas.so preloaded, against numpy without it.

    numpy_blas_test.py LIBRARY        (run with a Python that has numpy: Debian's python3-numpy)

Runs the same products twice in child processes, once plain and once with LD_PRELOAD and
GEMMLAB_BLAS_VERBOSE=1: float32 and float64; C- and Fortran-ordered operands and transposed views;
odd shapes (1x1x1, primes, K = 1, tall-skinny) and one whose C is large enough (at least 512 x 512)
for 05_packed_avx512 on two threads; no table, so the library's rule picks the kernels. Each product of the preloaded run must be within the validator's bound of the float64
truth, (K + 2) * eps * (|A| |B|) elementwise, and within twice that of plain numpy's; the log must
show that gemmlab's kernels ran.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

from numpy_blas import skip_unless_interposable

SHAPES = [(1, 1, 1), (7, 13, 5), (127, 129, 131), (293, 2, 307), (2, 293, 307), (513, 257, 1), (96, 96, 96),
          (301, 203, 257), (601, 577, 67)]
LAYOUTS = ["CC", "FF", "CF", "TT"]  # A then B: C-ordered, Fortran-ordered, or a transposed view (.T)


def operand(rng, rows, cols, dtype, layout):
    values = rng.uniform(-1, 1, size=(rows, cols)).astype(dtype)
    if layout == "F":
        return np.asfortranarray(values)
    if layout == "T":
        return np.ascontiguousarray(values.T).T  # a transposed view of a C-ordered array
    return np.ascontiguousarray(values)


def cases():
    rng = np.random.default_rng(7)
    for dtype in (np.float32, np.float64):
        for m, n, k in SHAPES:
            for layout in LAYOUTS:
                a = operand(rng, m, k, dtype, layout[0])
                b = operand(rng, k, n, dtype, layout[1])
                yield f"{np.dtype(dtype).name}_{m}x{n}x{k}_{layout}", a, b


def compute(out_dir):
    for name, a, b in cases():
        sys.stderr.write(f"case {name}\n")
        sys.stderr.flush()
        np.save(os.path.join(out_dir, name + ".npy"), a @ b)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--compute":
        return compute(sys.argv[2])
    skip_unless_interposable()
    library = os.path.abspath(sys.argv[1])
    if not os.path.exists(library):
        print(f"FAIL: {library} does not exist")
        return 1
    with tempfile.TemporaryDirectory() as work:
        plain, ours = os.path.join(work, "plain"), os.path.join(work, "ours")
        os.mkdir(plain)
        os.mkdir(ours)
        env = {k: v for k, v in os.environ.items()
               if k not in ("LD_PRELOAD", "GEMMLAB_BLAS_VERBOSE", "GEMMLAB_BLAS_KERNEL", "GEMMLAB_BLAS_TABLE")}
        subprocess.run([sys.executable, __file__, "--compute", plain], env=env, check=True, capture_output=True)
        # no table (a path that does not exist): the library's rule picks each kernel
        env.update(LD_PRELOAD=library, GEMMLAB_BLAS_VERBOSE="1", GEMMLAB_BLAS_TABLE=os.path.join(work, "no-table.json"))
        done = subprocess.run([sys.executable, __file__, "--compute", ours], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"FAIL: numpy with the library preloaded exited {done.returncode}: {done.stderr[-3000:]}")
            return 1
        # Which cases logged a call through gemmlab (the log lines follow their case's name).
        called, current = {}, None
        for line in done.stderr.splitlines():
            if line.startswith("case "):
                current = line[5:]
                called[current] = []
            elif line.startswith("gemmlab-blas: ") and " -> cpu/" in line and current:
                called[current].append(line)
        failures, through_gemmlab, packed, small_m = [], 0, 0, 0
        for name, a, b in cases():
            got = np.load(os.path.join(ours, name + ".npy"))
            theirs = np.load(os.path.join(plain, name + ".npy"))
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            truth, scale = a64 @ b64, np.abs(a64) @ np.abs(b64)
            bound = (a.shape[1] + 2) * np.finfo(a.dtype).eps * scale
            if got.shape != truth.shape or not np.all(np.isfinite(got)):
                failures.append(f"{name}: shape {got.shape} or non-finite values")
            elif np.any(np.abs(got - truth) > bound):
                failures.append(f"{name}: off the float64 truth by {np.max(np.abs(got - truth) / np.maximum(bound, 1e-300)):.2f}x the bound")
            elif np.any(np.abs(got - theirs) > 2 * bound):
                failures.append(f"{name}: differs from plain numpy beyond twice the bound")
            lines = called.get(name, [])
            through_gemmlab += bool(lines)
            packed += any("05_packed_avx512" in line for line in lines)
            small_m += any("06_small_m" in line for line in lines)
        total = len(list(cases()))
        print(f"{total} products; {through_gemmlab} went through gemmlab's sgemm/dgemm, {packed} of them to 05_packed_avx512, {small_m} to 06_small_m")
        for f in failures:
            print("FAIL:", f)
        if failures:
            return 1
        # numpy hands 2-D products with a dimension of 1 to gemv or its own loops, not to GEMM:
        # the other shapes must all have come through gemmlab.
        gemm_shaped = [name for name, a, b in cases() if min(a.shape[0], a.shape[1], b.shape[1]) > 1]
        missed = [name for name in gemm_shaped if not called.get(name)]
        if missed:
            print("FAIL: no call through gemmlab for", ", ".join(missed[:10]))
            return 1
        for kernel, count in (("05_packed_avx512", packed), ("06_small_m", small_m)):
            if "no AVX-512" not in done.stderr and count == 0:
                print(f"FAIL: no product reached {kernel}")
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
