"""numpy, imported with OpenBLAS on one thread.

numpy's wheels load OpenBLAS, which starts a thread per core as it loads (its own
OPENBLAS_NUM_THREADS, read once, then) and lets them spin while they wait for work: on a
2-core machine that was 60 ms of CPU of numpy's 140 ms import, a fifth of `cutaway report`'s
CPU (docs/performance.md, "Start-up"). cutaway's arrays are a few thousand values at most;
no computation of its own gains from a BLAS thread. The variable is set only while numpy loads
and taken back at once: the measured commands, which inherit cutaway's environment, never see
it. A value the user set is kept as it is.

Every module of cutaway that cutaway's commands may import numpy through first imports it
from here (``from cutaway.numeric import np``); once numpy is loaded, importing it again
anywhere is free and loads no BLAS."""

from __future__ import annotations

import os
import sys

BLAS_THREADS_VARIABLE = "OPENBLAS_NUM_THREADS"


def _load_numpy_single_threaded() -> None:
    if "numpy" in sys.modules or BLAS_THREADS_VARIABLE in os.environ:
        return
    os.environ[BLAS_THREADS_VARIABLE] = "1"
    try:
        import numpy  # noqa: F401  (the variable is read as its BLAS loads)
    finally:
        os.environ.pop(BLAS_THREADS_VARIABLE, None)


_load_numpy_single_threaded()

import numpy as np  # noqa: E402  (after the variable is set: see above)

__all__ = ["np"]
