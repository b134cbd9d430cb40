"""The run's process tree: the workload process and its descendants.

Finding descendants is the costly part of a per-process reading: psutil's
``children(recursive=True)`` reads the parent of every process on the host (3.5 ms of CPU
on the 16-core H100 host). On Linux the tree is walked downwards instead, through each
thread's ``/proc/<pid>/task/<tid>/children`` (only the tree's own files); elsewhere, or
on a kernel without those files, psutil does it. Either way the tree is rescanned at
most every ``rescan_s`` seconds and the known pids are reused in between; readers skip
a pid that has exited.
"""

from __future__ import annotations

import time

# psutil is imported where it is used, not here: the launcher imports this module (the
# listener's class) before its scripts start, and psutil's import takes ~15 ms
from radtrack.listeners import procfs


class ProcessTree:
    def __init__(self, root_pid: int | None, rescan_s: float = 1.0):
        self.root_pid = root_pid
        self.rescan_s = rescan_s
        self._pids: list[int] = []
        self._scanned = float("-inf")
        self._use_proc = procfs.available()

    def pids(self) -> list[int]:
        """Pids of the tree, root first; empty when there is no root or it has exited."""
        if self.root_pid is None:
            return []
        now = time.monotonic()
        if now - self._scanned < self.rescan_s and self._pids:
            return self._pids
        self._scanned = now
        self._pids = self._scan(self.root_pid)
        return self._pids

    def forget(self) -> None:
        """Rescan at the next :meth:`pids` (for the final reading at stop)."""
        self._scanned = float("-inf")

    def _scan(self, root: int) -> list[int]:
        import psutil
        if self._use_proc:
            try:
                return procfs.descendants(root)
            except FileNotFoundError:
                if not psutil.pid_exists(root):
                    return []
                self._use_proc = False  # the kernel has no task/*/children files
            except OSError:
                return []
        try:
            proc = psutil.Process(root)
            return [root, *(c.pid for c in proc.children(recursive=True))]
        except psutil.Error:
            return []
