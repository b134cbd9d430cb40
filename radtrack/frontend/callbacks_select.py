"""Callbacks of the picker, the selection basket, saved views and the URL."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

from dash import ALL, Dash, Input, Output, State, ctx, html, no_update
from dash.exceptions import PreventUpdate

from radtrack.errors import RadtrackError
from radtrack.frontend import picker
from radtrack.frontend.callbacks_chart import chart_answer, listed_metrics
from radtrack.frontend.chart_query import (
    chart_inputs,
    link_range,
    overlay_on,
    power_mode,
    view_xrange,
)
from radtrack.frontend.data import DataSource, workload_number
from radtrack.frontend.figures import legend_labels, run_colours
from radtrack.frontend.links import link_message, usable
from radtrack.frontend.views import View, ViewError, ViewStore, read_link, to_query


def current_view(selection, metrics, xmode, smooth, logy, experiment, workload,
                 power=None, overlay=None, xrange=None) -> View:
    """The page state as a View; values a browser sends half-typed fall back to defaults.
    ``xrange``: the zoom shown (chart_query.view_xrange)."""
    try:
        smooth_n = int(smooth) if smooth not in (None, "") else 1
    except (TypeError, ValueError):
        smooth_n = 1
    return View(runs=list(selection or []), metrics=list(metrics or []), xmode=xmode or "seconds",
                smooth=max(1, min(smooth_n, 10_000)), logy="log" in (logy or []),
                experiment=experiment or None, workload=workload or None, xrange=xrange,
                power=power_mode(power), overlay=overlay_on(overlay))


def shown_view(source: DataSource, selection, metrics, xmode, smooth, logy, experiment,
               workload, power, overlay, view_range) -> View:
    """:func:`current_view` with the chart's zoom when it is the shown chart's (no zoom: no
    store read, the URL is recorded on every tick)."""
    xrange = None
    if isinstance(view_range, dict) and view_range.get("x"):
        *_, rev = chart_inputs(source, selection, metrics, xmode, smooth, logy, None, power,
                               overlay)
        xrange = view_xrange(view_range, rev, xmode or "seconds")
    return current_view(selection, metrics, xmode, smooth, logy, experiment, workload, power,
                        overlay, xrange)


RUN_CHECKS = {"type": "run-check", "run": ALL}

# Runs in the browser, once, when the page starts: the URL's query goes to apply_view unless
# the layout was built from that very query (it shows it already). Then the browser's back
# and forward go to it from the popstate event: dcc.Location compares the address with the
# one it last saw, so it misses a return to the page's first address (the address bar is
# written by the other Location, "url-out").
URL_GATE_JS = """
function(search, restored) {
    const keep = window.dash_clientside.no_update;
    if (window.radtrackUrlWatched) { return keep; }
    window.radtrackUrlWatched = true;
    window.addEventListener('popstate', () => window.dash_clientside.set_props(
        'url-in', {data: window.location.search}));
    const query = (search || '').replace(/^\\?/, '');
    if (query === restored) { return keep; }  // restored: null when not built from it
    return search || '';
}
"""


_listings: dict[str, tuple[object, dict[str, dict], list[picker.Workload]]] = {}
_listings_lock = threading.Lock()


def listing(source: DataSource, experiment: str) -> tuple[dict[str, dict], list[picker.Workload]]:
    """An experiment's run rows by id and its workloads, worked out once per listing read
    (the source re-reads a listing at most every few seconds; every picker step asks)."""
    records = source.experiment_rows(experiment)
    with _listings_lock:
        memo = _listings.get(experiment)
        if memo is not None and memo[0] is records:
            return memo[1], memo[2]
    linked = linked_rows(source, records)
    rows = {r["run_id"]: r for r in [*linked, *records]}
    found = picker.workloads(records, linked)
    with _listings_lock:
        _listings[experiment] = (records, rows, found)
    return rows, found


def linked_rows(source: DataSource, records: list[dict]) -> list[dict]:
    """The runs an experiment's listing links to in other experiments of the store (its rows'
    script runs, its script runs' rows, and those rows' other script runs), read by id."""
    linked: list[dict] = []
    for _ in range(2):  # a script run's row, then that row's script runs elsewhere
        wanted = picker.linked_ids([*records, *linked])
        if not wanted:
            break
        linked += source.known_rows(wanted)
    return linked


def run_rows(source: DataSource, experiment: str | None, workload: str | None,
             text: str | None, selection: list[str]) -> tuple[list, list[str]]:
    """The rows of one workload's runs that pass the filter, and their ids."""
    if not experiment or not workload:
        return [], []
    rows, found = listing(source, experiment)
    chosen = next((w for w in found if w.key == workload), None)
    if chosen is None:
        return [], []
    now = time.time()
    text = text or ""
    # a script run is shown with its row: when either matches the filter
    shown = {r for r in chosen.run_ids if picker.matches(rows[r], text)}
    shown |= {s for row, made in chosen.scripts.items() for s in made
              if row in shown or picker.matches(rows[s], text)}
    shown |= {row for row, made in chosen.scripts.items() if shown & set(made)}
    listed = [(r, script) for r, script in chosen.listed() if r in shown]
    row_of = {s: row for row, made in chosen.scripts.items() for s in made}
    return ([picker.run_row(rows[r], r in selection, now,
                            str(rows[row_of[r]].get("experiment") or "") if script else None)
             for r, script in listed], [r for r, _ in listed])


def all_runs(source: DataSource, experiment: str | None, workload: str | None,
             text: str | None) -> list[str]:
    """The row runs (not the scripts' own runs) of ``workload``, or of every workload of
    ``experiment`` when it is None, that pass the filter: what *Select workload* and
    *Select experiment* tick."""
    if not experiment:
        return []
    rows, found = listing(source, experiment)
    chosen = [w for w in found if workload is None or w.key == workload]
    return [r for w in chosen for r in w.run_ids if picker.matches(rows[r], text or "")]


def placed(source: DataSource, view: View) -> View:
    """``view`` with the experiment and workload its first run was picked from, where the
    link leaves them out or names a pair the store does not list: a link of ``runs`` alone
    opens with its experiment and workload picked and its runs ticked in the list
    (docs/frontend.md, "Share, save and export"). A pair the store lists is kept as given,
    whichever runs it holds: the page's own address names the workload last looked at, and
    the ticked runs may come from several."""
    if not view.runs:
        return view
    first = view.runs[0]
    if view.experiment and view.workload:
        try:
            _, found = listing(source, view.experiment)
        except RadtrackError:  # an experiment the store does not hold (renamed, deleted)
            found = []
        if any(w.key == view.workload for w in found):
            return view
    row = next(iter(source.known_rows([first])), None)
    if row is None:
        return view
    # a script's own run is listed under its row, in the row's experiment
    owner = next(iter(source.known_rows(picker.linked_ids([row]))), row) if picker.is_script(row) else row
    for experiment in dict.fromkeys(e for e in (owner.get("experiment"), row.get("experiment")) if e):
        _, found = listing(source, str(experiment))
        chosen = next((w for w in found if first in (r for r, _ in w.listed())), None)
        if chosen is not None:
            return replace(view, experiment=str(experiment), workload=chosen.key)
    return view


def runs_children(source: DataSource, experiment: str | None, workload: str | None,
                  text: str | None, selection: list[str]) -> list | html.P:
    rows, _ = run_rows(source, experiment, workload, text, selection)
    return rows or picker.runs_hint(workload, experiment)


def workload_options(source: DataSource, experiment: str | None, text: str | None) -> list[dict]:
    if not experiment:
        return []
    rows, found = listing(source, experiment)
    shown = [w for w in found if any(picker.matches(rows[r], text or "") for r, _ in w.listed())]
    options: list[dict] = []
    for launch, header, members in picker.by_launch(shown):
        if header:  # several launches: each one's workloads under its own header
            options.append({"label": header, "value": picker.LAUNCH_HEADER + launch,
                            "disabled": True})
        options += [{"label": w.label, "value": w.key} for w in members]
    return options


def basket_children(source: DataSource, selection: list[str] | None) -> list | html.P:
    """The Selection basket: the runs grouped by experiment and workload, each in its colour."""
    if not selection:
        return picker.empty_basket()
    rows = source.run_rows(selection)
    colours, labels = run_colours(selection), legend_labels(rows)
    # a script's own run goes with its row's workload (its row read by id, cached)
    owners = {r["run_id"]: r for r in source.known_rows(
        picker.linked_ids([r for r in rows if picker.is_script(r)]))}
    groups: dict[str, list] = {}
    places = {}
    for row in rows:
        owner = owners.get(str(row.get(picker.ROW_RUN_TAG)), row)
        workload = workload_number(owner.get("workload"))
        places[row["run_id"]] = (f"{owner.get('experiment')} · " + (
            f"Workload {workload}" if workload is not None else "single runs"),
            str(owner.get(picker.LAUNCH_TAG) or ""))
    # one workload number from two launches (a sheet run twice): each group names its launch
    launches: dict[str, set[str]] = {}
    for place, launch in places.values():
        launches.setdefault(place, set()).add(launch)
    for row in rows:
        place, launch = places[row["run_id"]]
        key = place + (f" · launch {launch}" if launch and len(launches[place]) > 1 else "")
        # Two components per run (the name is the item's text, its colour a CSS variable):
        # the basket is redrawn on every tick.
        groups.setdefault(key, []).append(html.Li([
            labels[row["run_id"]],
            html.Button("✕", id={"type": "remove", "run": row["run_id"]},
                        className="remove", title="remove from the selection"),
        ], className="basket-item", style={"--swatch": colours[row["run_id"]]},
            title=f"{row.get('run_name')} ({row['run_id']}), {row.get('status')}"))
    return [html.Div([html.H3(key), html.Ul(items)], className="basket-group")
            for key, items in groups.items()]


def register(app: Dash, source: DataSource, views: ViewStore) -> None:
    # prevent_initial_call: the page's layout (layout.py, restore.py) already holds what
    # these would answer on page load (and on new rows or buttons, what they show), so a
    # page starts with no callback request (docs/performance.md, "Frontend").
    @app.callback(Output("workload", "options"),
                  Input("experiment", "value"), Input("run-filter", "value"), prevent_initial_call=True)
    def list_workloads(experiment, text):
        return workload_options(source, experiment, text)

    @app.callback(Output("runs", "children"),
                  Input("workload", "value"), Input("run-filter", "value"),
                  Input("selection", "data"), State(RUN_CHECKS, "value"), State(RUN_CHECKS, "id"),
                  State("experiment", "value"), prevent_initial_call=True)
    def show_runs(workload, text, selection, shown_values, shown_ids, experiment):
        selection = list(selection or [])
        if ctx.triggered_id == "selection":
            _, visible = run_rows(source, experiment, workload, text, selection)
            shown = {i["run"]: bool(v) for i, v in zip(shown_ids, shown_values, strict=True)}
            if shown == {r: r in selection for r in visible}:
                raise PreventUpdate  # the boxes already say so (the user just ticked one)
        return runs_children(source, experiment, workload, text, selection)

    # The basket comes in the same answer as the selection (not from a callback on the
    # selection): a tick shows in the basket after one request, not two in a row.
    @app.callback(Output("selection", "data"), Output("basket", "children"),
                  Input(RUN_CHECKS, "value"), Input("clear", "n_clicks"),
                  Input({"type": "remove", "run": ALL}, "n_clicks"),
                  Input("select-workload", "n_clicks"), Input("select-experiment", "n_clicks"),
                  State("selection", "data"), State("experiment", "value"),
                  State("workload", "value"), State("run-filter", "value"),
                  prevent_initial_call=True)
    def control_selection(_checks, _clear, _removes, _all_workload, _all_experiment, selection,
                          experiment, workload, text):
        selection = list(selection or [])
        trigger = ctx.triggered_id
        if trigger == "clear":
            updated = []
        elif trigger in ("select-workload", "select-experiment"):
            found = (all_runs(source, experiment, workload if trigger == "select-workload"
                              else None, text))
            updated = selection + [r for r in found if r not in selection]
        elif isinstance(trigger, dict) and trigger.get("type") == "remove":
            # New remove buttons announce themselves with n_clicks None.
            clicked = ctx.triggered[0]["value"]
            updated = [r for r in selection if r != trigger["run"]] if clicked else selection
        else:
            # Boxes ticked, or boxes (re)drawn: the shown boxes decide for the shown runs.
            items = ctx.inputs_list[0]
            visible = [i["id"]["run"] for i in items]
            checked = [i["id"]["run"] for i in items if i.get("value")]
            updated = ([r for r in selection if r not in visible or r in checked]
                       + [r for r in checked if r not in selection])
        if updated == selection:
            raise PreventUpdate
        return updated, basket_children(source, updated)

    # The page's URL goes to apply_view unless the layout was built from it (restore.py; the
    # "restored" store holds the query it was built from): a shared link's page starts with
    # no request. Back and forward go through.
    app.clientside_callback(URL_GATE_JS, Output("url-in", "data"),
                            Input("url", "search"), State("restored", "data"))

    # A shared link or a saved view is restored in one answer: runs, ticked metrics (with
    # their options), experiment, workload and axis settings, so the chart is drawn from
    # the next request alone, not at the end of a chain of callbacks.
    @app.callback(Output("selection", "data", allow_duplicate=True),
                  Output("basket", "children", allow_duplicate=True),
                  Output("metrics", "value", allow_duplicate=True),
                  Output("metrics", "options", allow_duplicate=True),
                  Output("experiment", "value"), Output("workload", "value"),
                  Output("xmode", "value"), Output("smooth", "value"), Output("logy", "value"),
                  Output("view-msg", "children"),
                  Output("chart", "figure", allow_duplicate=True),
                  Output("chart-key", "data", allow_duplicate=True),
                  Output("link-msg", "children"),
                  Output("power", "value"), Output("overlay", "value"),
                  Output("view-range", "data", allow_duplicate=True),
                  Input("url-in", "data"), Input("load-view", "n_clicks"),
                  State("views", "value"), State("selection", "data"), State("metrics", "value"),
                  State("xmode", "value"), State("smooth", "value"), State("logy", "value"),
                  State("experiment", "value"), State("workload", "value"),
                  State("metric-search", "value"), State("power", "value"),
                  State("overlay", "value"), State("view-range", "data"),
                  prevent_initial_call=True)
    def apply_view(search, _load, name, selection, metrics, xmode, smooth, logy, experiment,
                   workload, metric_search, power, overlay, view_range):
        current = shown_view(source, selection, metrics, xmode, smooth, logy, experiment,
                             workload, power, overlay, view_range)
        problems: list[str] = []
        keep = (no_update,) * 3
        try:
            if ctx.triggered_id == "load-view":
                if not name:
                    return (*[no_update] * 9, "Pick a saved view to load.", no_update, no_update,
                            "", *keep)
                view = views.load(name)
                message = f"Loaded view {name!r}."
            else:
                view, problems = read_link(search)  # restored as far as it can be
                message = ""
                if view.name and not view.runs and not view.metrics:
                    view = views.load(view.name)
                    message = f"Loaded view {view.name!r}."
                elif to_query(View(**{**view.to_dict(), "name": None})) == to_query(current):
                    raise PreventUpdate
        except ViewError as exc:
            return (*[no_update] * 9, str(exc), no_update, no_update, "", *keep)
        view = placed(source, usable(source, view, problems))
        runs = list(dict.fromkeys(view.runs))
        logy_value = ["log"] if view.logy else []
        zoom = link_range(source, view) if runs else None
        figure, key = chart_answer(source, runs, view.metrics, view.xmode, view.smooth,
                                   logy_value, zoom, view.power, view.overlay)
        return (runs, basket_children(source, runs), list(view.metrics),
                listed_metrics(source, runs, metric_search, list(view.metrics)),
                view.experiment, view.workload, view.xmode, view.smooth, logy_value, message,
                figure, key, link_message(problems), view.power,
                ["gpus"] if view.overlay else [], zoom)

    @app.callback(Output("url-out", "search"),
                  Input("selection", "data"), Input("metrics", "value"), Input("xmode", "value"),
                  Input("smooth", "value"), Input("logy", "value"), Input("experiment", "value"),
                  Input("workload", "value"), Input("power", "value"), Input("overlay", "value"),
                  # a State: a zoom writes its range into the address bar itself (zoom.js),
                  # without a callback request
                  State("view-range", "data"), prevent_initial_call=True)
    def record_url(selection, metrics, xmode, smooth, logy, experiment, workload, power,
                   overlay, view_range):
        return to_query(shown_view(source, selection, metrics, xmode, smooth, logy, experiment,
                                   workload, power, overlay, view_range))

    @app.callback(Output("views", "options"), Output("view-msg", "children", allow_duplicate=True),
                  Input("save-view", "n_clicks"),
                  State("view-name", "value"), State("selection", "data"), State("metrics", "value"),
                  State("xmode", "value"), State("smooth", "value"), State("logy", "value"),
                  State("experiment", "value"), State("workload", "value"),
                  State("power", "value"), State("overlay", "value"), State("view-range", "data"),
                  prevent_initial_call=True)
    def save_view(_clicks, name, selection, metrics, xmode, smooth, logy, experiment, workload,
                  power, overlay, view_range):
        view = shown_view(source, selection, metrics, xmode, smooth, logy, experiment, workload,
                          power, overlay, view_range)
        try:
            path = views.save(name or "", view)
        except ViewError as exc:
            return no_update, str(exc)
        return views.names(), f"Saved view {name.strip()!r} to {path}."
