"""End-of-run stage: co-location accounting, code-window energy, footprint."""
