"""CSV cells a spreadsheet would run as formulas, neutralised as OWASP recommends.

Run names, params and tags are typed by whoever launched a run; a cell such as
``=HYPERLINK("http://x")`` or ``@SUM(1)`` in a CSV export becomes a live formula when the
file is opened in Excel, LibreOffice or Google Sheets. Each text cell that starts with
``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a single quote in front
(``'=HYPERLINK(...)``), which spreadsheets show as text. Numbers are left alone, whether
numeric columns or number-like text (``-1.5``, ``+3``, ``-2e-3``), so negative values stay
numbers, and so does a lone ``-`` (radtrack's "none", e.g. Collocation). ``radtrack
export/report --format csv --raw`` writes cells unchanged.
"""

from __future__ import annotations

import pandas as pd

from radtrack.inputs import DECIMAL_RE

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def neutralise(value: object) -> object:
    """``value`` with a leading ``'`` when it is text a spreadsheet would evaluate."""
    if not isinstance(value, str) or not value.startswith(TRIGGERS):
        return value
    if value == "-" or DECIMAL_RE.fullmatch(value):  # '-': radtrack's "none", never a formula
        return value
    return "'" + value


def safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` with every text cell and column name neutralised."""
    out = frame.copy()
    for column in out.columns:
        series = out[column]
        if series.dtype == object or pd.api.types.is_string_dtype(series.dtype):
            out[column] = series.map(neutralise)
    out.columns = [neutralise(c) for c in out.columns]
    return out
