"""Double-precision square matrix products (DGEMM): the fp64 peak, reported in TFLOP/s.

The workload is ``sgemm.py`` with fp64 as the default; ``--dtype`` still picks any of
fp32, tf32, bf16, fp16, fp64.
"""

from __future__ import annotations

import sys

from sgemm import main

if __name__ == "__main__":
    sys.exit(main(default_dtype="fp64"))
