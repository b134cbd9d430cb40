"""The page's chart component: a plotly.js chart drawn as soon as the page renders.

Its code is ``assets/chart.js`` (the page's assets load with it, before Dash's renderer);
plotly.js is one of the page's scripts (page_shell.py). It takes the figure as the server
writes it (typed arrays as base64 specs, the height in ``layout.height``, the zoom query
under ``radtrack``), so a callback's answer or a shared link's layout goes to it as it is.
It replaces dcc.Graph, which loads its code and plotly.js only once it is first rendered
and redraws its plot after each zoom (benchmarks/results/performance-history.md, "Frontend", third rework).
"""

from __future__ import annotations

from dash.development.base_component import Component

NAMESPACE = "radtrack_frontend"  # window.radtrack_frontend, set by assets/chart.js


class Chart(Component):
    """A plotly.js chart: ``figure`` (a figure dict), ``config`` (plotly.js's config)."""

    _children_props: list[str] = []
    _base_nodes = ["children"]
    _namespace = NAMESPACE
    _type = "Chart"

    def __init__(self, id: str | dict | None = None, figure: dict | None = None,
                 config: dict | None = None, className: str | None = None,
                 style: dict | None = None) -> None:
        self._prop_names = ["id", "figure", "config", "className", "style"]
        self._valid_wildcard_attributes: list[str] = []
        self.available_properties = list(self._prop_names)
        self.available_wildcard_properties: list[str] = []
        given = {"id": id, "figure": figure, "config": config, "className": className,
                 "style": style}
        super().__init__(**{k: v for k, v in given.items() if v is not None})
