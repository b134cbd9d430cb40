"""A GPU listener killed mid-run, on a GPU host (issue 50, "a restarted listener's energy
counter"): two launches of the same steady matmul load (``-l smi``), the second with its smi
listener SIGKILLed 8 s in (the launcher restarts it; its energy counter counts from 0 again).
Prints, for each run, its counter energy (``summary/smi/gpu0/energy_j``), its power integral
(time-weighted mean power x duration), the accounting's (the report's ``energy_j``) and their
ratios, as JSON lines, into OUT/restart_energy.json.

    python3 benchmarks/restart_energy_gpu.py OUT [SECONDS]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

LOAD = """import os, signal, sys, time
import torch
seconds, kill_at = float(sys.argv[1]), float(sys.argv[2])
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
t0, killed = time.monotonic(), False
while time.monotonic() - t0 < seconds:
    for _ in range(20):
        a = (a @ a).clamp_(-1, 1)
    torch.cuda.synchronize()
    if kill_at > 0 and not killed and time.monotonic() - t0 > kill_at:
        for pid in os.listdir("/proc"):
            try:
                cmd = open(f"/proc/{pid}/cmdline", "rb").read()
            except OSError:
                continue
            if b"listeners" in cmd and b"smi" in cmd and int(pid) != os.getpid():
                os.kill(int(pid), signal.SIGKILL)
                print("killed smi listener", pid, flush=True)
                killed = True
print("done", flush=True)
"""


def main() -> None:
    out, seconds = Path(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 20.0
    work = Path("/tmp/restart_energy")
    work.mkdir(exist_ok=True)
    (work / "load.py").write_text(LOAD)
    uri = f"sqlite:///{work / 'mlflow.db'}"
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, "RADTRACK_HOME": str(work / "home"),
           "PYTHONUNBUFFERED": "1"}
    results = []
    for name, kill_at in (("steady", 0.0), ("restarted", 8.0)):
        p = subprocess.run([sys.executable, "-m", "radtrack", "--wait-end", "-e", name, "-l", "smi",
                            "--interval", "0.1", str(work / "load.py"), str(seconds), str(kill_at)],
                           env=env, capture_output=True, text=True, timeout=300)
        print(p.stdout[-1500:], p.stderr[-1500:], flush=True)
        rep = subprocess.run([sys.executable, "-m", "radtrack", "report", name, "--format", "json"],
                             env=env, capture_output=True, text=True, timeout=300)
        from mlflow import MlflowClient

        c = MlflowClient(uri)
        (run,) = [r for r in c.search_runs([c.get_experiment_by_name(name).experiment_id])
                  if r.data.tags.get("radtrack.role") == "row"]
        m = run.data.metrics
        history = sorted(c.get_metric_history(run.info.run_id, "system/smi/gpu0/energy_j"),
                         key=lambda x: (x.timestamp, x.step))
        drops = sum(1 for a, b in zip(history, history[1:], strict=False) if b.value < a.value)
        power = m.get("summary/smi/gpu0/power_w/mean", float("nan"))
        duration = m.get("summary/duration_s", float("nan"))
        counter = m.get("summary/smi/gpu0/energy_j", float("nan"))
        rows = json.loads(rep.stdout)["runs"] if rep.returncode == 0 else []
        accounted = next((float(r["energy_j"]) for r in rows if r.get("run_id") == run.info.run_id),
                         float("nan"))
        last_life = history[-1].value - min(h.value for h in history) if history else float("nan")
        results.append({"run": name, "status": run.info.status, "exit": p.returncode,
                        "restart_tag": run.data.tags.get("radtrack.listener.smi", ""),
                        "counter_drops": drops, "duration_s": duration, "counter_energy_j": counter,
                        "power_integral_j": power * duration, "accounted_energy_j": accounted,
                        "counter_over_power": counter / (power * duration),
                        "accounted_over_counter": accounted / counter,
                        "last_life_only_j": last_life})
    text = "\n".join(json.dumps(r) for r in results)
    print(text)
    (out / "restart_energy.json").write_text(text + "\n")


if __name__ == "__main__":
    main()
