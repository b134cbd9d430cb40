"""Prints the BLAS/OpenMP thread variables it was given ("-" for unset)."""
import os

for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    print(f"{var}={os.environ.get(var, '-')}", flush=True)
