"""Whether a preloaded libgemmlab_blas.so can serve this numpy's matrix products.

Debian's python3-numpy calls cblas_sgemm/cblas_dgemm from the system's libblas.so.3, which a
preloaded library replaces. A numpy installed from a pip wheel carries its own OpenBLAS in
numpy.libs/ (auditwheel's folder beside the package), built with renamed symbols
(scipy_cblas_sgemm64_, cblas_sgemm64_), which no preloaded library can replace: such a numpy is
a reason to skip the test, not a failure of the library.
"""
import os

# CTest's SKIP_RETURN_CODE for the tests that need an interposable numpy.
SKIP = 77


def vendored_blas():
    """The BLAS files a wheel's numpy carries, or [] when it uses the system's BLAS."""
    import numpy as np

    libs = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
    if not os.path.isdir(libs):
        return []
    return sorted(f for f in os.listdir(libs) if "blas" in f.lower())


def skip_unless_interposable():
    """Exits with SKIP, saying why, when this numpy's BLAS cannot be replaced by preloading."""
    import sys

    import numpy as np

    bundled = vendored_blas()
    if bundled:
        print(f"SKIP: numpy {np.__version__} at {os.path.dirname(np.__file__)} carries its own BLAS "
              f"({', '.join(bundled)}) with renamed symbols, which LD_PRELOAD cannot replace; run with "
              "Debian's python3-numpy (/usr/bin/python3)")
        sys.exit(SKIP)
