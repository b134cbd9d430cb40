"""The local executor's status and cancel (radtrack/executor_contract.py): what a sheet run
on this host says of itself, and stopping it.

A local launcher keeps no record beside the sheet: it holds the sheet's lock while it runs
(radtrack/sheet/lock.py: its pid, host and start) and writes each row's Status and Run
cells as its workloads end (radtrack/sheet/writeback.py). ``radtrack status`` reads those;
``radtrack cancel`` sends the launcher SIGINT, which it takes as Ctrl-C: it stops its
scripts (SIGINT, then SIGTERM and SIGKILL ``--grace`` seconds apart), starts no further
workload, ends the runs KILLED and writes their statuses back.
"""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path

from radtrack.errors import RadtrackError


def _workloads(sheet: Path) -> dict[str, list[str]]:
    """``<experiment>-<workload>`` -> the Status cells of its rows, in sheet order."""
    from radtrack.sheet.columns import column_key
    from radtrack.sheet.records import read_records

    records = read_records(sheet.read_text(encoding="utf-8-sig"))
    if not records:
        return {}
    where = {column_key(c): i for i, c in enumerate(records[0].cells)}
    exp, wl, st = (where.get(k) for k in ("experiment", "workload", "status"))
    found: dict[str, list[str]] = {}
    for r in records[1:]:
        def cell(i: int | None, cells: list[str] = r.cells) -> str:
            return cells[i].strip() if i is not None and i < len(cells) else ""

        found.setdefault(f"{cell(exp)}-{cell(wl)}", []).append(cell(st))
    return found


def status(sheet: Path) -> int | None:
    """One line for the launcher running the sheet (if one does) and one per workload with
    its rows' Status cells; 0 when every row FINISHED and no launcher runs it, else 1. None
    when no launcher holds the sheet and none of its rows has a Status: not run here."""
    from radtrack.sheet.columns import status_word
    from radtrack.sheet.lock import holder

    running = holder(sheet)
    workloads = _workloads(sheet)
    if running is None and not any(c for cells in workloads.values() for c in cells):
        return None
    if running is not None:
        pid, host, since = running
        print(f"launcher: pid {pid} on host {host} runs it (since {since})")
    for name, cells in workloads.items():
        print(f"{name}: " + ", ".join(c or "(not run)" for c in cells))
    done = all(status_word(c) == "FINISHED" for cells in workloads.values() for c in cells)
    return 0 if done and running is None else 1


def cancel(sheet: Path) -> int | None:
    """SIGINT to the launcher holding the sheet (as Ctrl-C); None when none holds it."""
    from radtrack.sheet.lock import holder

    running = holder(sheet)
    if running is None:
        return None
    pid, host, _since = running
    if host != socket.gethostname():
        raise RadtrackError(f"{sheet}: its launcher (pid {pid}) runs on host {host}: run "
                            f"'radtrack cancel {sheet}' there")
    try:
        os.kill(pid, signal.SIGINT)
    except ProcessLookupError:
        print(f"{sheet}: its launcher (pid {pid}) has just ended")
        return 0
    except PermissionError:
        raise RadtrackError(f"{sheet}: its launcher (pid {pid}) belongs to another user; "
                            "it may not be signalled from here") from None
    print(f"sent SIGINT to the launcher of {sheet} (pid {pid}), as Ctrl-C: it stops its "
          "scripts, ends their runs KILLED and writes their statuses to the sheet")
    return 0
