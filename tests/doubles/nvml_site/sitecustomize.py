"""Test-only: NVML doubles in every Python process when RADTRACK_FAKE_NVML is set
(tests/doubles/nvml_scenario.py)."""
import os

if os.environ.get("RADTRACK_FAKE_NVML"):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import nvml_scenario

    nvml_scenario.install(os.environ["RADTRACK_FAKE_NVML"])
