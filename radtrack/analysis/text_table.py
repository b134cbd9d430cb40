"""Frames as aligned text: the tables ``radtrack report`` prints, studies included."""

from __future__ import annotations

import math

import pandas as pd


def _fmt(x: object) -> str:
    if isinstance(x, float):
        if math.isnan(x):
            return "-"
        if abs(x) >= 1000:
            return f"{x:.0f}"
        if abs(x) >= 1 or x == 0:
            return f"{x:.2f}"
        return f"{x:.3g}"
    return str(x)


def render(frame: pd.DataFrame, columns: list[str] | None = None) -> str:
    """A frame as aligned text, NaN as '-', without the index."""
    if frame.empty:
        return "(none)"
    view = frame[[c for c in columns if c in frame.columns]] if columns else frame
    return view.to_string(index=False, na_rep="-", formatters={c: _fmt for c in view.columns})
