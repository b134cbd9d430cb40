"""A link restored as far as it can be: what the store lacks is left out, and named.

A shared link or a saved view may name runs deleted since, metrics its runs never
recorded, a half-typed ``smooth``: the page restores the rest and says, above the
metrics, what it left out and why (``views.read_link`` for the query itself).
"""

from __future__ import annotations

from dataclasses import replace

from radtrack.frontend.data import DataSource
from radtrack.frontend.views import View


def usable(source: DataSource, view: View, problems: list[str]) -> View:
    """``view`` without the runs the store lacks and the metrics none of its runs has,
    each named in ``problems`` (read from the source's caches where it has them)."""
    runs = list(dict.fromkeys(view.runs))
    found = {r["run_id"] for r in source.known_rows(runs)}
    dropped = [r for r in runs if r not in found]
    if dropped:
        problems.append(f"run{'s' if len(dropped) > 1 else ''} {', '.join(dropped)} not in "
                        f"{source.tracking_uri}: left out")
    runs = [r for r in runs if r in found]
    metrics = list(view.metrics)
    if runs:
        keys = set(source.metric_keys(runs))
        gone = [m for m in metrics if m not in keys]
        if gone:
            problems.append(f"metric{'s' if len(gone) > 1 else ''} {', '.join(gone)} not "
                            "recorded by these runs: left out")
        metrics = [m for m in metrics if m in keys]
    return replace(view, runs=runs, metrics=metrics)


def link_message(problems: list[str]) -> str:
    """What the page says about a link it could restore only in part."""
    return ("This link was restored in part: " + "; ".join(problems) + ".") if problems else ""
