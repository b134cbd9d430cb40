"""The GPU's energy between the run's start and smi's first counter reading.

The launcher starts a run's script at once, with its listeners beside it, not after them
(radtrack/run/start.py): a listener process needs 0.5-1 s to import NVML, open the devices
and take its first reading, and a script held that long starts that much later. smi's
energy still covers the script from its first instant, because the energy before the
first counter reading is recovered afterwards:

- from the driver's own power samples (radtrack/listeners/driver_samples.py; about 50 a second
  on an H100, kept about 2.4 s): the samples from the run's start to the counter reading,
  integrated (trapezoid); the power at the start is interpolated between the samples
  around it; where the ring no longer reaches back that far, the oldest sample stands
  for the time before it (``extrapolated_s``);
- else from the first polled power reading, held over the whole gap (a GPU without the
  sample buffer).

smi then counts its energy from the run's start: the counter's first reading starts at
the recovered joules, and a reading of 0 J is stamped at the start itself. The tags
``radtrack.listener.smi.<scope>.energy_backfill_s`` / ``..._source`` /
``..._extrapolated_s`` say how much was recovered and how. A listener restarted after it
had read does not reach back (its energy counts from the restart); one that died before
its first reading does, as its first process would have.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import isfinite

# a gap longer than this is not the listener's own start-up (a clock step, a stale
# ``--since``): nothing is recovered, the energy counts from the first reading as before
MAX_BACKFILL_S = 30.0


@dataclass(frozen=True)
class Backfill:
    joules: float  # the GPU's energy from ``since`` to the counter's first reading
    seconds: float  # that span
    source: str  # "driver power samples" or "polled power"
    extrapolated_s: float  # the part of the span no power sample covered

    def tags(self, prefix: str) -> dict[str, str]:
        return {f"{prefix}.energy_backfill_s": f"{self.seconds:.3f}",
                f"{prefix}.energy_backfill_source": self.source,
                f"{prefix}.energy_backfill_extrapolated_s": f"{self.extrapolated_s:.3f}"}


def backfill(samples: list[tuple[int, float]], since: float, at: float,
             polled_w: float | None) -> Backfill | None:
    """The energy from ``since`` to ``at`` (unix s): from the driver power ``samples``
    ((timestamp us, W), any order) that cover it, else ``polled_w`` held over the span.
    None when the span is empty or implausibly long (MAX_BACKFILL_S), or nothing is known."""
    span = at - since
    if not 0.0 < span <= MAX_BACKFILL_S:
        return None
    points = sorted((t / 1e6, w) for t, w in samples if isfinite(w))
    before = [p for p in points if p[0] <= since]
    after = [p for p in points if p[0] > since]
    inside = [p for p in after if p[0] <= at]
    if before or inside:
        extrapolated = 0.0
        if before and after:  # between the samples around the start
            (t0, w0), (t1, w1) = before[-1], after[0]
            start_w = w0 + (w1 - w0) * (since - t0) / (t1 - t0)
        elif before:  # no sample after the start: the last one before it
            start_w = before[-1][1]
        else:  # the ring begins after the start: its oldest sample stands for the gap
            start_w = inside[0][1]
            extrapolated = inside[0][0] - since
        curve = [(since, start_w), *inside, (at, inside[-1][1] if inside else start_w)]
        joules = sum((tb - ta) * (wa + wb) / 2 for (ta, wa), (tb, wb) in zip(curve, curve[1:], strict=False))
        return Backfill(joules, span, "driver power samples", extrapolated)
    if polled_w is not None and isfinite(polled_w):
        return Backfill(polled_w * span, span, "polled power", span)
    return None
