"""Chart images (PNG, JPG, SVG, PDF) as the page exports them.

Rendered by kaleido 1.x with the system Chromium (radtrack/analysis/plotting.py; kaleido is
in the ``ui`` extra, ``pip install -e '.[ui]'``). The exported figure is the page's chart
with a title naming the experiment(s), and with margins that grow to fit every label (the
page's chart keeps fixed margins for speed, which cut the x axis title off in a PDF). A
PDF's document title is the chart's title (Chromium would name it after kaleido's page,
"Kaleido-fier"). Anything that stops an export is an :class:`ExportError` with a message
saying what to do, shown next to the export buttons; what stops every export on this machine
(:func:`image_export_problem`) is said on the buttons before a click.
"""

from __future__ import annotations

import copy
import importlib.util
import os
import re
import shutil

from radtrack.analysis import plotting

IMAGE_FORMATS = ("png", "jpg", "svg", "pdf")
MIME = {"png": "image/png", "jpg": "image/jpeg", "svg": "image/svg+xml", "pdf": "application/pdf"}
EXPORT_WIDTH = 1200


class ExportError(RuntimeError):
    """An image export that cannot be made, with what to do about it."""


def export_figure(figure: dict, title: str) -> dict:
    """The page's chart made for a file: titled, every axis sized to its labels."""
    fig = copy.deepcopy(figure)
    fig.pop("radtrack", None)
    layout = fig.setdefault("layout", {})
    margin = dict(layout.get("margin") or {})
    margin["t"] = int(margin.get("t", 40)) + 40
    margin["b"] = max(int(margin.get("b", 50)), 70)
    layout["margin"] = margin
    layout["title"] = {"text": title, "x": 0.01, "xanchor": "left", "y": 0.995,
                       "yanchor": "top", "font": {"size": 16}}
    for key, axis in list(layout.items()):
        if re.fullmatch(r"[xy]axis\d*", key) and isinstance(axis, dict):
            axis = {**axis, "automargin": True}
            axis.pop("ticklabeloverflow", None)
            layout[key] = axis
    layout.setdefault("height", 500)
    return fig


def _browser_problem() -> str | None:
    if os.environ.get("BROWSER_PATH") or os.path.exists(plotting.CHROMIUM):
        return None
    if any(shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")):
        return None
    return ("image export needs Chromium or Chrome (apt-get install chromium, or set "
            "BROWSER_PATH to the browser); CSV and JSON exports work without it")


KALEIDO_MISSING = ("image export needs kaleido: pip install -e '.[ui]' in the radtrack "
                   "checkout (or pip install 'kaleido>=1.0'); CSV and JSON exports work without it")


def image_export_problem() -> str | None:
    """What stops image export on this machine (kaleido not installed, no Chromium), said on
    the page's buttons before a click (layout.py); None when it can run. kaleido is looked
    up, not imported (its import starts nothing, but takes a while)."""
    if importlib.util.find_spec("kaleido") is None:
        return KALEIDO_MISSING
    return _browser_problem()


def render(figure: dict, fmt: str, title: str, width: int = EXPORT_WIDTH) -> bytes:
    """``figure`` as ``fmt`` bytes, titled ``title``; ExportError saying why not."""
    if fmt not in IMAGE_FORMATS:
        raise ExportError(f"image format {fmt!r} is not one of {', '.join(IMAGE_FORMATS)}")
    try:
        import kaleido  # noqa: F401
    except ImportError:
        raise ExportError(KALEIDO_MISSING) from None
    problem = _browser_problem()
    if problem:
        raise ExportError(problem)
    spec = export_figure(figure, title)
    try:
        if fmt == "jpg":
            plotting._start_kaleido()  # one browser for the process (plotting.py)
            import kaleido

            height = int(spec["layout"].get("height") or 500)
            data = kaleido.calc_fig_sync(spec, opts={"format": "jpeg", "width": width,
                                                     "height": height, "scale": 1})
        else:
            data = plotting.figure_image(spec, fmt, width=width)
    except Exception as exc:  # noqa: BLE001 (kaleido's and the browser's errors vary)
        raise ExportError(f"image export failed ({type(exc).__name__}: {exc}); CSV and JSON "
                          "exports still work") from exc
    return pdf_titled(data, title) if fmt == "pdf" else data


def _pdf_string(text: str) -> bytes:
    """A PDF text string: ASCII as a literal, anything else as UTF-16BE hex."""
    if text.isascii():
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        return b"(" + escaped.encode("ascii") + b")"
    return b"<FEFF" + text.encode("utf-16-be").hex().upper().encode() + b">"


_TITLE = re.compile(rb"/Title\s*(\((?:\\.|[^\\)])*\)|<[0-9A-Fa-f\s]*>)")
_XREF = re.compile(rb"xref\s*\n(\d+) (\d+)\s*\n")


def pdf_titled(pdf: bytes, title: str) -> bytes:
    """``pdf`` with its document title (the Info dictionary's ``/Title``) set to ``title``;
    the cross-reference offsets after it are moved by the change in length. A PDF whose
    title or classic xref table is not found is returned as it is."""
    found = _TITLE.search(pdf)
    xref = _XREF.search(pdf, found.end()) if found else None
    start = pdf.rfind(b"startxref")
    if not found or not xref or start < 0:
        return pdf
    new = b"/Title " + _pdf_string(title)
    delta = len(new) - (found.end() - found.start())
    where = found.start()
    body = pdf[:where] + new + pdf[found.end():xref.start()]
    first, count = int(xref.group(1)), int(xref.group(2))
    lines = pdf[xref.end():].split(b"\n")
    moved = []
    for line in lines[:count]:
        offset, gen, kind = line[:10], line[11:16], line[17:18]
        value = int(offset)
        if kind == b"n" and value > where:
            value += delta
        moved.append(b"%010d %s %s " % (value, gen, kind) if len(line) >= 18 else line)
    rest = b"\n".join(lines[count:])
    table_at = xref.start() + delta
    rest = re.sub(rb"startxref\s*\n\d+", b"startxref\n%d" % table_at, rest, count=1)
    header = b"xref\n%d %d\n" % (first, count)
    return body + header + b"\n".join(moved) + b"\n" + rest
