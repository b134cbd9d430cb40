"""An independent reader of GPU 0's energy counter, the reference for the energy intervals.

Reads ``nvmlDeviceGetTotalEnergyConsumption`` (mJ since the driver loaded) and the power
every ``period`` seconds until killed (SIGTERM) or ``--seconds`` pass, writing one CSV line
per read: the unix time at the middle of the call, the counter in joules and the power in
watts. A process of its own, apart from radtrack's listeners, so that the windows
radtrack reports can be checked against a reading radtrack did not make
(benchmarks/attribution_gpu.sh starts it; benchmarks/attribution_analysis.py reads it).

    python3 benchmarks/counter_reader.py OUT.csv [--period 0.05] [--seconds 900]
"""

from __future__ import annotations

import argparse
import signal
import sys
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--period", type=float, default=0.05, help="seconds between reads")
    parser.add_argument("--seconds", type=float, default=900.0, help="stop after this long")
    parser.add_argument("--index", type=int, default=0, help="NVML index of the GPU")
    args = parser.parse_args(argv)
    import pynvml as nvml

    nvml.nvmlInit()
    handle = nvml.nvmlDeviceGetHandleByIndex(args.index)
    stop = False

    def _stop(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _stop)
    end = time.time() + args.seconds
    with open(args.out, "w") as f:
        f.write("time,energy_j,power_w\n")
        next_at = time.time()
        while not stop and time.time() < end:
            t0 = time.time()
            mj = nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
            t1 = time.time()
            mw = nvml.nvmlDeviceGetPowerUsage(handle)
            f.write(f"{(t0 + t1) / 2:.6f},{mj / 1000.0:.3f},{mw / 1000.0:.3f}\n")
            f.flush()
            next_at += args.period
            time.sleep(max(next_at - time.time(), 0.0))
    nvml.nvmlShutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
