"""A shared link opened in a new tab: the page arrives with its state already in it.

The page's layout is built into the page itself when the page is requested
(page_shell.py), from the page's URL; Dash's own ``/_dash-layout`` request, where it is
made, comes from the page, so its ``Referer`` is that URL. When the query names runs, the
layout is built with everything the link restores (experiment, workload and its runs,
the basket, the ticked metrics and their options, axis settings) and with the chart's
figure in the chart itself (chart.py): the chart is drawn on the first render, with no
callback round at all, and with the Summary's rows: the page starts with no callback
request (the URL goes to ``apply_view`` only when it differs from the query the layout was
built from, callbacks_select.URL_GATE_JS).

Without a usable query (a referrer stripped by the browser, a saved view by name, a bad query)
the layout is the plain one and ``callbacks_select.apply_view`` restores the link in one
callback answer, as it does for the *Load* button.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from urllib.parse import urlparse

from flask import has_request_context, request
from mlflow.exceptions import MlflowException

from radtrack.errors import RadtrackError
from radtrack.frontend.callbacks_chart import chart_answer, listed_metrics, summary_answer
from radtrack.frontend.callbacks_select import (
    basket_children,
    placed,
    runs_children,
    workload_options,
)
from radtrack.frontend.chart_query import link_range
from radtrack.frontend.data import DataSource
from radtrack.frontend.links import link_message, usable
from radtrack.frontend.summaries import SummaryCache
from radtrack.frontend.views import ViewError, read_link

log = logging.getLogger(__name__)


@dataclass
class Restored:
    """Initial values of the page's components for one link."""

    selection: list[str]
    metrics: list[str]
    metric_options: list[dict]
    experiment: str | None
    workload: str | None
    workload_options: list[dict]
    runs: object  # the run rows (components) of the workload
    basket: object
    xmode: str
    smooth: int
    logy: list[str]
    figure: dict
    chart_key: str
    summary: dict  # the Summary table's answer (callbacks_chart.summary_answer)
    live: bool  # some run of the link is still going: the page refreshes it
    message: str = ""  # what of the link could not be restored (link_message)
    power: str = "attributed"
    overlay: bool = False
    view_range: dict | None = None  # the link's zoom, as zoom.js records one


def page_query() -> str:
    """The query string of the page whose layout is being built: the page's own URL when the
    page itself is requested (page_shell.py builds the layout into it), else the
    ``Referer`` of the renderer's ``/_dash-layout`` request; '' outside a request."""
    if not has_request_context():
        return ""
    if not request.path.endswith("_dash-layout"):
        return request.query_string.decode("utf-8", "replace")
    if not request.referrer:
        return ""
    page = urlparse(request.referrer)
    return page.query if page.netloc == request.host else ""


def restore(source: DataSource, search: str, summaries: SummaryCache) -> Restored | None:
    """The page state a link's query describes, or None when the callbacks should do it."""
    if not search:
        return None
    try:
        view, problems = read_link(search)
        if not view.runs:
            return None  # nothing to draw, or a saved view by name: apply_view loads it
        view = usable(source, view, problems)
        if not view.runs:
            return None  # apply_view says what was dropped
        view = placed(source, view)  # the runs' experiment and workload, where left out
        runs = list(dict.fromkeys(view.runs))
        logy = ["log"] if view.logy else []
        zoom = link_range(source, view)
        figure, key = chart_answer(source, runs, view.metrics, view.xmode, view.smooth, logy,
                                   zoom, view.power, view.overlay)
        return Restored(
            selection=runs, metrics=list(view.metrics),
            metric_options=listed_metrics(source, runs, None, list(view.metrics)),
            experiment=view.experiment, workload=view.workload,
            workload_options=workload_options(source, view.experiment, None),
            runs=runs_children(source, view.experiment, view.workload, None, runs),
            basket=basket_children(source, runs), xmode=view.xmode, smooth=view.smooth,
            logy=logy, figure=figure, chart_key=key,
            summary=summary_answer(source, summaries, runs), live=source.any_live(runs),
            message=link_message(problems), power=view.power, overlay=view.overlay,
            view_range=zoom)
    except (ViewError, RadtrackError, MlflowException, ValueError, KeyError) as exc:
        # The callbacks restore it again and say what is wrong where the user sees it.
        log.info("link not restored in the layout: %s", exc)
        return None
