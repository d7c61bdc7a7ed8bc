"""Set-up shared by the example suite: BLAS threads pinned before anything is measured.

Why pin BLAS threads: OpenBLAS starts one thread per CPU. On a machine where other work runs
beside the tests (a shared CI runner, a 2-vCPU VM, a laptop with a browser open), a
multi-threaded GEMM waits at every barrier for its slowest thread, and one busy CPU turns a
100 µs GEMM into a 16 ms one at random: tails that belong to the neighbours, not to the code.
One thread per BLAS call makes each kernel's time its own. The suite uses
``OPENBLAS_NUM_THREADS`` when it is set (so ``OPENBLAS_NUM_THREADS=4 pytest ...`` measures four
threads on purpose) and 1 otherwise, and says so in the revision tags (``env_OPENBLAS_NUM_THREADS``),
so a baseline and a candidate with different thread counts are never compared silently.

OpenBLAS reads its thread count when numpy loads it, and pytest-roofline loads numpy before this
file runs, so the count is applied with ``threadpoolctl`` (``pip install -e '.[examples]'``).
The environment variables are set too: the host calibration's cache key and the revision tags
read them, and child processes inherit them.
"""

from __future__ import annotations

import os
import warnings

_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_SET_BEFORE_START = "OPENBLAS_NUM_THREADS" in os.environ
BLAS_THREADS = int(os.environ.get("OPENBLAS_NUM_THREADS") or 1)
for _name in _VARIABLES:
    os.environ.setdefault(_name, str(BLAS_THREADS))

try:
    from threadpoolctl import threadpool_limits
except ImportError:  # pragma: no cover - depends on the environment
    if not _SET_BEFORE_START:
        warnings.warn(
            "example_suite: threadpoolctl is not installed, so BLAS keeps its default threads "
            "and GEMM tails depend on what else runs here; `pip install -e '.[examples]'` or "
            "set OPENBLAS_NUM_THREADS=1 before starting pytest",
            stacklevel=1,
        )
else:
    # Process-wide and for the whole session: the limit is never lifted.
    threadpool_limits(limits=BLAS_THREADS, user_api="blas")
