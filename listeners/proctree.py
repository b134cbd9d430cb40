"""The run's process tree (the workload process and its descendants), with cached handles.

Finding descendants means reading every process's parent on the host (psutil's
ppid_map walks all of /proc), which dominates a 10 Hz sampler's cost on a busy host. So
the tree is rescanned at most every ``rescan_s`` seconds; in between, the known
processes are reused and dead ones dropped. Handles are kept so per-process counters
(CPU times) can be compared between samples.
"""

from __future__ import annotations

import time

import psutil


class ProcessTree:
    def __init__(self, root_pid: int | None, rescan_s: float = 1.0):
        self.root_pid = root_pid
        self.rescan_s = rescan_s
        self._procs: dict[int, psutil.Process] = {}
        self._scanned = float("-inf")

    def processes(self) -> list[psutil.Process]:
        """Live processes of the tree; empty when there is no root or it has exited."""
        if self.root_pid is None:
            return []
        now = time.monotonic()
        if now - self._scanned < self.rescan_s and self._procs:
            live = {pid: p for pid, p in self._procs.items() if p.is_running()}
            if self.root_pid in live:
                self._procs = live
                return list(live.values())
        self._scanned = now
        try:
            root = self._procs.get(self.root_pid) or psutil.Process(self.root_pid)
            found = [root, *root.children(recursive=True)]
        except psutil.Error:
            self._procs.clear()
            return []
        self._procs = {p.pid: self._procs.get(p.pid, p) for p in found}
        return list(self._procs.values())

    def pids(self) -> set[int]:
        return {p.pid for p in self.processes()}
