"""Where a listener's CPU goes: the CPU time (user + system, this process) of each reading
radtrack's listeners make, call by call, on this host.

  python benchmarks/listener_costs.py [--n 100] [--json FILE]

Each reading is made ``--n`` times 10 ms apart (as a sampler would, so driver caches
behave as in a run) and reported as microseconds of CPU and of wall time per call. NVML
rows appear only where NVML and a GPU are there; GPM rows only on GPUs that offer it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import psutil


def cost(fn: Callable[[], Any], n: int, gap: float = 0.01) -> dict[str, float]:
    fn()  # warm: first calls load code and fill caches
    cpu = wall = 0.0
    for _ in range(n):
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpu += time.process_time() - c0
        wall += time.perf_counter() - w0
        time.sleep(gap)
    return {"cpu_us": cpu / n * 1e6, "wall_us": wall / n * 1e6}


def nvml_rows(n: int) -> dict[str, dict[str, float]]:
    try:
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
    except Exception as exc:  # no NVML here
        print(f"# NVML rows skipped: {exc}", file=sys.stderr)
        return {}
    rows: dict[str, dict[str, float]] = {}

    def add(label: str, fn: Callable[[], Any]) -> None:
        try:
            fn()
        except pynvml.NVMLError as exc:
            print(f"# {label}: {exc}", file=sys.stderr)
            return
        rows[label] = cost(fn, n)

    fields = {"POWER_INSTANT(186)": 186, "POWER_AVERAGE(185)": 185, "MEMORY_TEMP(82)": 82,
              "PCIE_TX_BYTES(197)": 197, "PCIE_RX_BYTES(198)": 198, "TOTAL_ENERGY(83)": 83}
    add("FieldValues x5 (smi's set)", lambda: pynvml.nvmlDeviceGetFieldValues(h, [186, 185, 82, 197, 198]))
    for label, fid in fields.items():
        add(f"FieldValues {label}", lambda fid=fid: pynvml.nvmlDeviceGetFieldValues(h, [fid]))
    add("PowerUsage", lambda: pynvml.nvmlDeviceGetPowerUsage(h))
    add("TotalEnergyConsumption", lambda: pynvml.nvmlDeviceGetTotalEnergyConsumption(h))
    add("UtilizationRates", lambda: pynvml.nvmlDeviceGetUtilizationRates(h))
    add("MemoryInfo", lambda: pynvml.nvmlDeviceGetMemoryInfo(h))
    add("Temperature(GPU)", lambda: pynvml.nvmlDeviceGetTemperature(h, 0))
    add("ClockInfo(SM)", lambda: pynvml.nvmlDeviceGetClockInfo(h, 1))
    add("ClockInfo(MEM)", lambda: pynvml.nvmlDeviceGetClockInfo(h, 2))
    add("PerformanceState", lambda: pynvml.nvmlDeviceGetPerformanceState(h))
    add("FanSpeed", lambda: pynvml.nvmlDeviceGetFanSpeed(h))
    add("CurrentClocksEventReasons", lambda: pynvml.nvmlDeviceGetCurrentClocksEventReasons(h))
    add("TotalEccErrors", lambda: pynvml.nvmlDeviceGetTotalEccErrors(h, 0, 0))
    add("ComputeRunningProcesses", lambda: pynvml.nvmlDeviceGetComputeRunningProcesses(h))

    def util() -> Any:
        try:
            return pynvml.nvmlDeviceGetProcessUtilization(h, 0)
        except pynvml.NVMLError_NotFound:
            return []
    add("ProcessUtilization", util)

    try:
        supported = pynvml.nvmlGpmQueryDeviceSupport(h).isSupportedDevice
    except Exception:
        supported = False
    if supported:
        s1, s2 = pynvml.nvmlGpmSampleAlloc(), pynvml.nvmlGpmSampleAlloc()
        pynvml.nvmlGpmSampleGet(h, s1)
        time.sleep(0.1)
        add("GpmSampleGet", lambda: pynvml.nvmlGpmSampleGet(h, s2))
        ids = [1, 2, 3, 5, 10, 11, 12, 13, 20, 21, 60, 61]
        for k in (1, 4, 12):
            def metrics(k: int = k) -> Any:
                req = pynvml.c_nvmlGpmMetricsGet_t()
                req.version = pynvml.NVML_GPM_METRICS_GET_VERSION
                req.numMetrics = k
                req.sample1, req.sample2 = s1, s2
                for i in range(k):
                    req.metrics[i].metricId = ids[i]
                return pynvml.nvmlGpmMetricsGet(req)
            add(f"GpmMetricsGet {k} metric(s)", metrics)
        req = pynvml.c_nvmlGpmMetricsGet_t()
        add("c_nvmlGpmMetricsGet_t() construction only", pynvml.c_nvmlGpmMetricsGet_t)
        del req
    return rows


def sample_buffers(seconds: float = 3.0) -> dict[str, dict[str, float]]:
    """The driver's own sample buffers (nvmlDeviceGetSamples): how many samples a read
    returns, their spacing, and the CPU of reading them once a second; and how often
    the polled utilisation and power readings change (polled at 50 Hz)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
    except Exception:
        return {}
    out: dict[str, dict[str, float]] = {}
    kinds = {"power": pynvml.NVML_TOTAL_POWER_SAMPLES, "gpu_util": pynvml.NVML_GPU_UTILIZATION_SAMPLES,
             "mem_util": pynvml.NVML_MEMORY_UTILIZATION_SAMPLES, "sm_clock": pynvml.NVML_PROCESSOR_CLK_SAMPLES}
    for label, kind in kinds.items():
        try:
            _, first = pynvml.nvmlDeviceGetSamples(h, kind, 0)
        except pynvml.NVMLError as exc:
            print(f"# GetSamples {label}: {exc}", file=sys.stderr)
            continue
        ts = sorted(s.timeStamp for s in first)
        gaps = [b - a for a, b in zip(ts, ts[1:], strict=False)]
        last = ts[-1] if ts else 0
        cpu = 0.0
        got = 0
        for _ in range(int(seconds)):
            time.sleep(1.0)
            c0 = time.process_time()
            try:
                _, new = pynvml.nvmlDeviceGetSamples(h, kind, last)
            except pynvml.NVMLError:
                new = []
            cpu += time.process_time() - c0
            got += len(new)
            if new:
                last = max(s.timeStamp for s in new)
        out[f"GetSamples {label}"] = {
            "buffer_samples": float(len(first)),
            "median_gap_ms": sorted(gaps)[len(gaps) // 2] / 1000 if gaps else float("nan"),
            "new_per_s": got / int(seconds), "cpu_us_per_1s_read": cpu / int(seconds) * 1e6}
    for label, fn in (("UtilizationRates.gpu", lambda: pynvml.nvmlDeviceGetUtilizationRates(h).gpu),
                      ("FieldValues POWER_INSTANT", lambda: pynvml.nvmlDeviceGetFieldValues(h, [186])[0].value.uiVal)):
        changes, prev, t0 = 0, None, time.monotonic()
        while time.monotonic() - t0 < seconds:
            v = fn()
            changes += prev is not None and v != prev
            prev = v
            time.sleep(0.02)
        out[f"polled {label} @50 Hz"] = {"changes_per_s": changes / seconds}
    return out


def host_rows(n: int) -> dict[str, dict[str, float]]:
    me = psutil.Process()
    rows = {
        "psutil.cpu_percent(percpu)": cost(lambda: psutil.cpu_percent(percpu=True), n),
        "psutil.virtual_memory": cost(psutil.virtual_memory, n),
        "psutil.swap_memory": cost(psutil.swap_memory, n),
        "os.getloadavg": cost(os.getloadavg, n),
        "psutil.Process.children(recursive)": cost(lambda: me.children(recursive=True), n),
        "psutil.Process oneshot (5 readings)": cost(lambda: _oneshot(me), n),
        "read /proc/stat": cost(lambda: _read("/proc/stat"), n),
        "read /proc/meminfo": cost(lambda: _read("/proc/meminfo"), n),
        "read /proc/self/stat": cost(lambda: _read("/proc/self/stat"), n),
        "json.dumps 40-key sample": cost(lambda: json.dumps({f"smi/gpu0/k{i}_w": i * 1.5 for i in range(40)}), n),
    }
    return rows


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _oneshot(p: psutil.Process) -> None:
    with p.oneshot():
        p.cpu_times()
        p.memory_info()
        p.num_threads()
        p.num_ctx_switches()
        p.io_counters()


def idle_process(seconds: float = 10.0, interval: float = 0.1) -> dict[str, float]:
    """CPU of a Python process that only wakes every ``interval`` and writes a line."""
    import subprocess

    code = ("import time,sys\nt=time.monotonic()\nk=0\nwhile True:\n k+=1\n"
            f" time.sleep(max(0,t+k*{interval}-time.monotonic()))\n print('{{}}',flush=True)\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL)
    time.sleep(1.0)
    proc = psutil.Process(p.pid)
    t0 = proc.cpu_times()
    time.sleep(seconds)
    t1 = proc.cpu_times()
    p.kill()
    p.wait()
    used = (t1.user + t1.system) - (t0.user + t0.system)
    return {"cpu_pct_of_core": 100 * used / seconds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = {**nvml_rows(args.n), **host_rows(args.n)}
    for label, r in sample_buffers().items():
        print(label, r)
    print("| reading | CPU us/call | wall us/call |\n| --- | ---: | ---: |")
    for label, r in rows.items():
        print(f"| {label} | {r['cpu_us']:.0f} | {r['wall_us']:.0f} |")
    idle = idle_process()
    print(f"\nidle Python process waking at 10 Hz: {idle['cpu_pct_of_core']:.3f} % of a core")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"calls": rows, "idle_10hz": idle}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
