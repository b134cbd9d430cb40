"""An empty workload for the malformed-sheet corpus; never run."""
