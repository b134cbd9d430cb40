"""The run's process tree (the workload process and its descendants), with cached handles.

psutil's cpu_percent() needs the same Process object across calls, so handles are kept
between samples and new children are picked up on every call.
"""

from __future__ import annotations

import psutil


class ProcessTree:
    def __init__(self, root_pid: int | None):
        self.root_pid = root_pid
        self._procs: dict[int, psutil.Process] = {}

    def processes(self) -> list[psutil.Process]:
        """Live processes of the tree; empty when there is no root or it has exited."""
        if self.root_pid is None:
            return []
        try:
            root = self._procs.get(self.root_pid) or psutil.Process(self.root_pid)
            found = [root, *root.children(recursive=True)]
        except psutil.Error:
            self._procs.clear()
            return []
        live: dict[int, psutil.Process] = {}
        for p in found:
            live[p.pid] = self._procs.get(p.pid, p)
        self._procs = live
        return list(live.values())

    def pids(self) -> set[int]:
        return {p.pid for p in self.processes()}
