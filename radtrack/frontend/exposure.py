"""What the page exposes beyond this process: the address it listens on (it has no access
control of its own), Plotly's "Share chart..." upload, and malformed zoom requests."""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Mapping

# plotly.js config for every chart: no "Share chart..." button (it uploads the chart's data
# to Plotly's cloud, plotlyServerURL's default https://cloud.plotly.com/newchart), and no
# destination for it even if a script asked.
NO_CLOUD: dict[str, object] = {
    "showSendToCloud": False,
    "showEditInChartStudio": False,
    "plotlyServerURL": "",
    "modeBarButtonsToRemove": ["sendChartToCloud", "sendDataToCloud"],
}


def is_loopback(host: str) -> bool:
    """Whether ``--host`` only accepts connections from this machine."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False  # a host name or an interface address: reachable from elsewhere


def host_problem(host: str, debug: bool) -> tuple[str | None, str | None]:
    """(warning, refusal) for ``radtrack ui --host HOST [--debug]``."""
    if is_loopback(host):
        return None, None
    if debug:
        return None, (f"--debug with --host {host}: Dash's debug mode (reloader, dev tools) "
                      "must not be reachable from the network; use --debug only with "
                      "--host 127.0.0.1")
    return (f"warning: --host {host} serves every experiment of the store to anyone who can "
            "reach this port: the page has no access control (no login). Keep it on "
            "127.0.0.1 (reach it through an SSH tunnel), or put it behind the team server's "
            "authentication or a reverse proxy that authenticates (docs/deployment.md)"), None


def _strings(value: object, name: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return f"{name} must be a list of strings"
    return None


def zoom_problem(query: Mapping[str, object]) -> str | None:
    """Why a ``/_radtrack/zoom`` body is malformed (answered 400 with it), or None. The
    shape is the query chart.js sends back: runs, metrics, xmode, smooth, logy, rev, x."""
    for name in ("runs", "metrics"):
        problem = _strings(query.get(name), name, optional=True)
        if problem:
            return problem
    problem = _strings(query.get("logy"), "logy", optional=True)
    if problem:
        return problem
    from radtrack.frontend.figures import X_TITLES

    xmode = query.get("xmode")
    if xmode is not None and xmode not in X_TITLES:
        return f"xmode must be one of {', '.join(X_TITLES)}"
    smooth = query.get("smooth")
    if smooth is not None and (isinstance(smooth, bool) or not isinstance(smooth, int | float | str)
                               or (isinstance(smooth, float) and not math.isfinite(smooth))):
        return "smooth must be a number of points"
    rev = query.get("rev")
    if rev is not None and not isinstance(rev, str):
        return "rev must be a string"
    power = query.get("power")
    if power is not None and power not in ("attributed", "gpu"):
        return "power must be 'attributed' or 'gpu'"
    if not isinstance(query.get("overlay", False), bool):
        return "overlay must be true or false"
    x = query.get("x")
    if x is not None:
        if not isinstance(x, list) or len(x) != 2:
            return "x must be a list of two bounds"
        for v in x:
            if isinstance(v, bool) or not isinstance(v, int | float | str | None):
                return "x bounds must be numbers or date strings"
            if isinstance(v, float) and not math.isfinite(v):
                return "x bounds must be finite"
    return None
