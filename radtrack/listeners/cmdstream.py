"""A long-running monitoring command (dcgmi dmon, tegrastats) read line by line.

The command runs without a shell; a reader thread hands each stdout line to a parser
callback, so :meth:`Listener.sample` only copies the latest parsed values. Closing is
safe to repeat: terminate, wait, then kill.
"""

from __future__ import annotations

import subprocess
import threading
from collections import deque
from collections.abc import Callable


class CommandStream:
    def __init__(self, argv: list[str], on_line: Callable[[str], None]):
        self.argv = argv
        self._on_line = on_line
        self._proc: subprocess.Popen[str] | None = None
        self._thread: threading.Thread | None = None
        self.tail: deque[str] = deque(maxlen=20)  # last lines, for error messages
        self.error: BaseException | None = None  # what the parser raised, if anything
        self.ended = threading.Event()

    def start(self) -> None:
        self._proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, text=True, bufsize=1)
        self._thread = threading.Thread(target=self._read, name=f"read {self.argv[0]}", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        try:
            for line in self._proc.stdout:
                line = line.rstrip("\n")
                self.tail.append(line)
                if self.error is None:
                    try:
                        self._on_line(line)
                    except Exception as exc:  # kept for the listener to report, reading goes on
                        self.error = exc
        finally:
            self.ended.set()

    @property
    def returncode(self) -> int | None:
        return None if self._proc is None else self._proc.poll()

    def close(self, timeout: float = 2.0) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout)
        if self._thread is not None:
            self._thread.join(timeout)  # EOF follows the exit, so the reader ends by itself
            self._thread = None
        if proc is not None and proc.stdout is not None:
            proc.stdout.close()
