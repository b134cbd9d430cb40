"""What the page shows, as a value: saved as named JSON files and carried in the URL.

Saved views live in a local folder (``--views-dir``, else ``$RADTRACK_HOME/views``), never
in the tracking store, which the frontend only reads.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlencode

from radtrack.frontend.data import X_MODES
from radtrack.vocab.schema import canonical_key

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.\-]{0,79}$")
MAX_SMOOTH = 10_000


class ViewError(ValueError):
    """A view (file, URL or name) that cannot be used, with what is wrong in it."""


@dataclass
class View:
    runs: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    xmode: str = "seconds"
    smooth: int = 1
    logy: bool = False
    experiment: str | None = None
    workload: str | None = None
    name: str | None = None
    #: the zoomed x window, in the x axis' units (wall clock: unix seconds); None: whole runs
    xrange: list[float] | None = None
    power: str = "attributed"  # a co-located run's GPU power (attributed.py)
    overlay: bool = False  # one subplot per quantity for several GPUs

    def __post_init__(self) -> None:
        if self.xmode not in X_MODES:
            raise ViewError(f"view: x axis {self.xmode!r} is not one of {', '.join(X_MODES)}")
        if not isinstance(self.smooth, int) or not 1 <= self.smooth <= MAX_SMOOTH:
            raise ViewError(f"view: smoothing must be a whole number of samples in 1..{MAX_SMOOTH}, "
                            f"got {self.smooth!r}")
        if self.xrange is not None and not _is_range(self.xrange):
            raise ViewError(f"view: xrange must be two numbers, low first, got {self.xrange!r}")
        if self.power not in ("attributed", "gpu"):
            raise ViewError(f"view: power {self.power!r} is not 'attributed' or 'gpu'")
        if not isinstance(self.overlay, bool):
            raise ViewError(f"view: overlay must be true or false, got {self.overlay!r}")

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: object, where: str = "view") -> View:
        if not isinstance(data, dict):
            raise ViewError(f"{where}: expected a JSON object, got {type(data).__name__}")
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ViewError(f"{where}: unknown field {', '.join(map(repr, unknown))}")
        for key in ("runs", "metrics"):
            value = data.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ViewError(f"{where}: {key!r} must be a list of strings")
        try:
            return cls(**data)
        except (TypeError, ViewError) as exc:
            raise ViewError(f"{where}: {exc}") from exc


def _is_range(value: object) -> bool:
    return (isinstance(value, list) and len(value) == 2
            and all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
                    for v in value) and value[0] < value[1])


def parse_xrange(text: str) -> list[float] | None:
    """``lo,hi`` (the link's ``range``) as two numbers, or None when it is not that."""
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        return None
    return values if _is_range(values) else None


def to_query(view: View) -> str:
    """The URL query string (with '?') that reproduces ``view``; defaults are left out."""
    pairs: list[tuple[str, str]] = []
    if view.experiment:
        pairs.append(("experiment", view.experiment))
    if view.workload:
        pairs.append(("workload", view.workload))
    if view.runs:
        pairs.append(("runs", ",".join(view.runs)))
    pairs.extend(("metric", m) for m in view.metrics)
    if view.xmode != "seconds":
        pairs.append(("x", view.xmode))
    if view.smooth != 1:
        pairs.append(("smooth", str(view.smooth)))
    if view.logy:
        pairs.append(("logy", "1"))
    if view.xrange:
        pairs.append(("range", ",".join(f"{v:.6f}".rstrip("0").rstrip(".") for v in view.xrange)))
    if view.power != "attributed":
        pairs.append(("power", view.power))
    if view.overlay:
        pairs.append(("overlay", "1"))
    if view.name:
        pairs.append(("view", view.name))
    return "?" + urlencode(pairs) if pairs else ""


def from_query(search: str | None) -> View:
    """The view a URL query string describes; ViewError naming the bad parameter."""
    query = parse_qs((search or "").lstrip("?"), keep_blank_values=False)

    def one(key: str) -> str | None:
        values = query.get(key)
        return values[-1] if values else None

    smooth_text = one("smooth") or "1"
    if not smooth_text.isdigit():
        raise ViewError(f"URL parameter smooth={smooth_text!r} is not a whole number")
    runs = [r for r in (one("runs") or "").split(",") if r]
    xrange = parse_xrange(one("range")) if one("range") else None
    if one("range") and xrange is None:
        raise ViewError(f"URL parameter range={one('range')!r} is not two numbers 'low,high'")
    try:
        return View(runs=runs, metrics=query.get("metric", []), xmode=one("x") or "seconds",
                    smooth=int(smooth_text), logy=one("logy") in ("1", "true"),
                    experiment=one("experiment"), workload=one("workload"), name=one("view"),
                    xrange=xrange, power=one("power") or "attributed",
                    overlay=one("overlay") in ("1", "true"))
    except ViewError as exc:
        raise ViewError(f"URL: {exc}") from exc


def read_link(search: str | None) -> tuple[View, list[str]]:
    """The view a link describes, restored as far as it can be: a bad ``smooth`` or ``x``
    falls back to its default, named in the problems; metric keys in MLflow's stored form
    (``system/smi/gpu0/power_w``) read as the page names them."""
    query = parse_qs((search or "").lstrip("?"), keep_blank_values=False)
    problems: list[str] = []
    fields: dict[str, str] = {"smooth": "1", "x": "seconds", "power": "attributed"}
    for key in list(fields):
        values = query.get(key)
        if values:
            fields[key] = values[-1]
    if not fields["smooth"].isdigit() or not 1 <= int(fields["smooth"]) <= MAX_SMOOTH:
        problems.append(f"smooth={fields['smooth']!r} is not a whole number in 1..{MAX_SMOOTH}: "
                        "smoothing left at 1")
        fields["smooth"] = "1"
    if fields["x"] not in X_MODES:
        problems.append(f"x={fields['x']!r} is not one of {', '.join(X_MODES)}: "
                        "x axis left at seconds")
        fields["x"] = "seconds"
    if fields["power"] not in ("attributed", "gpu"):
        problems.append(f"power={fields['power']!r} is not 'attributed' or 'gpu': "
                        "co-located runs' power left attributed")
        fields["power"] = "attributed"
    ranges = query.pop("range", None)
    if ranges and parse_xrange(ranges[-1]) is None:
        problems.append(f"range={ranges[-1]!r} is not two numbers 'low,high': the whole runs shown")
    elif ranges:
        fields["range"] = ranges[-1]
    rest = [(k, v) for k, values in query.items() if k not in fields for v in values]
    view = from_query(urlencode([*rest, *fields.items()]))
    view.metrics = list(dict.fromkeys(canonical_key(m) for m in view.metrics))
    return view, problems


def default_views_dir() -> Path:
    return Path(os.environ.get("RADTRACK_HOME") or ".radtrack") / "views"


class ViewStore:
    """Named views as ``<dir>/<name>.json``."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)

    def names(self) -> list[str]:
        if not self.directory.is_dir():
            return []
        return sorted(p.stem for p in self.directory.glob("*.json"))

    def _path(self, name: str) -> Path:
        name = (name or "").strip()
        if not _NAME_RE.match(name):
            raise ViewError(f"view name {name!r}: use 1-80 letters, digits, spaces, '_', '-' or '.', "
                            "starting with a letter or digit")
        return self.directory / f"{name}.json"

    def save(self, name: str, view: View) -> Path:
        path = self._path(name)
        view = View(**{**view.to_dict(), "name": name.strip()})
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(view.to_dict(), indent=2) + "\n")
        tmp.replace(path)
        return path

    def load(self, name: str) -> View:
        path = self._path(name)
        if not path.is_file():
            raise ViewError(f"no saved view {name!r} in {self.directory}")
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ViewError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from exc
        return View.from_dict(data, where=str(path))
