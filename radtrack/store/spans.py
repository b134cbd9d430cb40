"""A run's traces cut to its span: its readings from its script's start to its end, and its ends.

A row's listeners start as its script does and stop once its process (group) ended
(radtrack/run/supervise.py), so a run's spool holds little outside its span: a reading
taken while a listener started before the release (``--wait-listeners``), the final one
taken as it stopped. What the run stores is its span, ``start`` .. ``end``
(radtrack/store/spool.py Span):

- every reading stamped inside it, as taken;
- a point at each end of the span for every series with a reading inside it: the value
  there interpolated between the series' readings either side of that end (a reading just
  outside the span shapes its end, e.g. an energy counter's final reading), else its
  nearest reading inside the span held; but an energy counter never read at or after the
  end (its listener died without its final reading) ends at its last reading plus the
  device's power readings integrated from there to the end, not held (a 0-W tail). A
  series with a reading exactly at an end needs none there. A series read rarely (an energy counter, every 5 s) may have no reading
  inside a short span: with readings either side of both ends, it gets both end points,
  interpolated, and a count of 0. A series read first after the end, none before, whose
  reading covers an interval (from the listener's previous tick) at least half inside the
  span, gets that reading held at both ends, with a count of 0: a rate such as CPU % is a
  mean since the previous tick, and a listener that started late into a short span reads
  it first as it stops.

So every series covers the span exactly: its time-weighted mean times the run's duration
is its integral over the run, an energy counter's last minus first value (over its lives:
stats.counter_delta) is the run's energy, and readers need no convention of their own for
the first and last gap.
:func:`span_frame` also counts each series' own readings inside the span (the ends not
counted): ``summary/<key>/n`` (radtrack/store/traces.py), so that a mean over 3 readings
is not taken for a measurement.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Mapping

    import pandas as pd


def span_frame(frame: pd.DataFrame, start: float | None, end: float | None,
               late: Mapping[str, float] | None = None) -> tuple[pd.DataFrame, dict[str, int]]:
    """``frame`` (time, step, one column per key) cut to ``start`` .. ``end`` (None: open)
    with the span's end points added (module docstring); and each key's readings inside.
    Empty, with no counts, when nothing of it lies in the span. ``late``: key -> when its
    series became the run's, inside the span (a GPU smi followed mid-run,
    radtrack/listeners/gpu_follow.py): it gets no point at the span's start, its readings begin there."""
    import pandas as pd

    if frame.empty:
        return frame, {}
    t = frame["time"].to_numpy(dtype=float)
    inside = np.ones(len(t), dtype=bool)
    if start is not None:
        inside &= t >= start
    if end is not None:
        inside &= t <= end
    keys = list(frame.columns[2:])
    part = frame[inside]
    n = {k: int(c) for k, c in part[keys].notna().sum().items()}
    steps = frame["step"].to_numpy()
    at_step = [(float(start), _step_at(t, steps, inside, float(start), before=True))] if start is not None else []
    if end is not None:
        at_step.append((float(end), _step_at(t, steps, inside, float(end), before=False)))
    values = {k: [_value_at(t, frame[k].to_numpy(dtype=float), inside, at) for at, _ in at_step]
              for k in keys}
    if start is not None:
        for k, since in (late or {}).items():
            if k in values and since > start:
                values[k][0] = float("nan")
    if end is not None:
        _counter_tails(frame, t, values, float(end))
    # a series read inside the span; or one read rarely (an energy counter every few
    # seconds) with readings either side of both ends: its ends interpolated, no reading
    counts = {k: n[k] for k in keys if n[k] or (at_step and all(v == v for v in values[k]))}
    if end is not None:
        for k in keys:
            if k not in counts:
                held = _first_after_end(t, frame[k].to_numpy(dtype=float), start, float(end))
                if held == held:
                    values[k] = [held] * len(at_step)
                    counts[k] = 0
    if not counts:
        return frame.iloc[0:0], {}
    extra = []
    for i, (at, step) in enumerate(at_step):
        row = {k: values[k][i] for k in counts if values[k][i] == values[k][i]}
        if row:
            extra.append({"time": at, "step": step, **row})
    out = part[["time", "step", *counts]]
    out = out[out[list(counts)].notna().any(axis=1)]
    if extra:
        add = pd.DataFrame(extra, columns=out.columns)
        add["step"] = add["step"].astype("int64")
        out = pd.concat([out, add], ignore_index=True)
    out = out.sort_values(["time", "step"], kind="stable").reset_index(drop=True)
    for col in out.columns[2:]:
        out[col] = out[col].astype("float64")
    return out, counts


def _counter_tails(frame: pd.DataFrame, t: np.ndarray, values: dict[str, list[float]],
                   end: float) -> None:
    """An energy counter read last before the span's end and never after it (its listener
    died without its final reading, and its restarted life read none before the run ended):
    its end point is that reading plus the device's power readings beside it
    (``<device>/power_w``) integrated from there to the end, where they cover it, not the
    reading held, which would count the run's tail as 0 W. In place, in ``values``."""
    from radtrack.compute.stats import power_between
    from radtrack.vocab.energy_sources import bridging_power_key

    for key, at in values.items():
        power = bridging_power_key(str(key))
        if power is None or power not in frame.columns or at[-1] != at[-1]:
            continue
        v = frame[key].to_numpy(dtype=float)
        ok = ~np.isnan(v)
        if (ok & (t >= end)).any():
            continue  # read at or after the end: interpolated as any series
        idx = np.flatnonzero(ok)
        last = idx[np.argmax(t[idx])]
        tail = power_between((t, frame[power].to_numpy(dtype=float)), float(t[last]), end)
        if tail == tail:
            at[-1] = float(v[last]) + tail


def _first_after_end(t: np.ndarray, v: np.ndarray, start: float | None, end: float) -> float:
    """A series' first reading after ``end`` when it has none up to it (none before the span,
    none inside) and the interval it was read over, from the listener's previous tick (a
    reading of any of its series) on, lies at least half inside the span: the listener's
    reading as it stopped, which covers the span's last interval. NaN otherwise."""
    ok = ~np.isnan(v)
    after = ok & (t > end)
    if (ok & (t <= end)).any() or not after.any():
        return float("nan")
    i = np.flatnonzero(after)[np.argmin(t[after])]
    earlier = t[t < t[i]]
    if not len(earlier):
        return float("nan")
    prev = max(float(earlier.max()), start if start is not None else float("-inf"))
    if prev >= end or end - prev < t[i] - end:
        return float("nan")
    return float(v[i])


def _step_at(t: np.ndarray, steps: np.ndarray, inside: np.ndarray, at: float, before: bool) -> int:
    """The step of an added end point: the index of the reading just outside the span on its
    side (not stored on the run), so every stored point of a series keeps a step of its own;
    -1 before a first reading."""
    if inside.any():
        return int(steps[inside].min()) - 1 if before else int(steps[inside].max()) + 1
    if before:
        return int(steps[t < at].max()) if (t < at).any() else -1
    return int(steps[t > at].min()) if (t > at).any() else int(steps.max()) + 1


def _value_at(t: np.ndarray, v: np.ndarray, inside: np.ndarray, at: float) -> float:
    """The series' value at the span's end ``at``: interpolated between its readings either
    side, else its nearest reading inside the span; NaN where it has a reading exactly
    there (it needs no added point) or none inside the span."""
    ok = ~np.isnan(v)
    if (ok & (t == at)).any():
        return float("nan")
    before, after = ok & (t < at), ok & (t > at)
    if before.any() and after.any():
        i = np.flatnonzero(before)[np.argmax(t[before])]
        j = np.flatnonzero(after)[np.argmin(t[after])]
        return float(v[i] + (v[j] - v[i]) * (at - t[i]) / (t[j] - t[i]))
    held = ok & inside
    if not held.any():
        return float("nan")
    idx = np.flatnonzero(held)
    k = idx[np.argmin(np.abs(t[idx] - at))]
    return float(v[k])
