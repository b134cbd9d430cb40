"""The zoom path: one HTTP request, one binary answer, no Dash round.

A zoom or pan of the chart is answered outside Dash's callback machinery:
``assets/zoom.js`` posts the chart's query (runs, metrics, x mode, smoothing, log y, the
uirevision) and the new x range to ``/_radtrack/zoom`` from Plotly's relayout event, and
hands the re-sampled arrays to ``Plotly.restyle``. Through Dash the same answer cost a
store update, a callback dispatch, a JSON Patch, a clientside decode and a React render
on each side of the request, and the request left only after dcc.Graph had re-applied
its figure (docs/performance.md, "Frontend").

The answer is one compact payload::

    uint32 little-endian header length | header JSON (padded to 8 bytes)
    | every trace's x as float64 | every trace's y as float32

The header names each trace (``[run_id, metric]``, as the figure's ``meta``) and its
length, so the browser can check that the arrays belong to the traces it shows.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping

import numpy as np
from flask import Flask, Response, request

from radtrack.errors import RadtrackError
from radtrack.frontend.chart_query import chart_inputs
from radtrack.frontend.data import DataSource
from radtrack.frontend.exposure import zoom_problem
from radtrack.frontend.figures import chart_arrays
from radtrack.frontend.nodes import plotted

ROUTE = "/_radtrack/zoom"
def encode(arrays: list[tuple[str, str, np.ndarray, np.ndarray]], rev: str) -> bytes:
    """The binary payload for ``chart_arrays`` output (see the module docstring)."""
    header = json.dumps({"rev": rev, "traces": [[[r, m], int(len(x))] for m, r, x, _ in arrays]},
                        separators=(",", ":")).encode()
    header += b" " * (-(4 + len(header)) % 8)  # the float64 block starts 8-aligned
    xs = [np.ascontiguousarray(x, dtype="<f8").tobytes() for _, _, x, _ in arrays]
    ys = [np.ascontiguousarray(y, dtype="<f4").tobytes() for _, _, _, y in arrays]
    return b"".join([struct.pack("<I", len(header)), header, *xs, *ys])


def decode(payload: bytes) -> tuple[dict, list[tuple[np.ndarray, np.ndarray]]]:
    """The inverse of :func:`encode` (tests; the browser does this in zoom.js)."""
    (size,) = struct.unpack_from("<I", payload)
    header = json.loads(payload[4:4 + size])
    offset = 4 + size
    lengths = [n for _, n in header["traces"]]
    xs = []
    for n in lengths:
        xs.append(np.frombuffer(payload, dtype="<f8", count=n, offset=offset))
        offset += 8 * n
    ys = []
    for n in lengths:
        ys.append(np.frombuffer(payload, dtype="<f4", count=n, offset=offset))
        offset += 4 * n
    return header, list(zip(xs, ys, strict=True))


def zoom_payload(source: DataSource, query: Mapping[str, object]) -> bytes | None:
    """The re-sampled arrays of the chart ``query`` describes, or None when the query's
    uirevision is no longer that chart's (the browser then keeps what it shows)."""
    view_range = {"rev": query.get("rev"), "x": query.get("x")}
    runs, metrics, options, rev = chart_inputs(
        source, query.get("runs"), query.get("metrics"), query.get("xmode") or "seconds",
        query.get("smooth"), query.get("logy"), view_range, query.get("power"),
        query.get("overlay"))
    if rev != query.get("rev") or not runs or not metrics:
        return None
    lanes, series, _ = plotted(source, runs, metrics, options)  # as the chart (nodes.py)
    return encode(chart_arrays(metrics, lanes, series, options), rev)


def register(server: Flask, source: DataSource) -> None:
    @server.post(ROUTE)
    def zoom() -> Response:
        query = request.get_json(silent=True)
        if not isinstance(query, dict):
            return Response("expected a JSON object", status=400, mimetype="text/plain")
        problem = zoom_problem(query)  # each malformed body a 400 with its reason, never a 500
        if problem:
            return Response(f"bad zoom query: {problem}", status=400, mimetype="text/plain")
        try:
            payload = zoom_payload(source, query)
        except (TypeError, ValueError, OverflowError, RadtrackError) as exc:  # unknown run: 400
            return Response(f"bad zoom query: {exc}", status=400, mimetype="text/plain")
        if payload is None:
            return Response(status=204)
        return Response(payload, mimetype="application/octet-stream",
                        headers={"Cache-Control": "no-store"})
