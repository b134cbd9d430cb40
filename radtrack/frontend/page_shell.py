"""The page's HTML shell: which scripts load, and when, so a page (a shared link above all)
is drawn sooner. Four changes to what Dash writes, each measured in docs/performance.md
("Frontend", second rework):

- **plotly.js with two traces** (1.1 MB) instead of the full bundle (4.8 MB). The page
  draws scatter lines, filled scatter areas (shares) and a heatmap (correlation): plotly.js's
  core and its heatmap trace, built from the npm package by
  ``scripts/build-plotly-bundle.sh`` (MIT) into ``assets/vendor/``, which Dash serves but
  does not add to the page by itself. Starting it takes a quarter of the time the
  distributed cartesian bundle takes (eleven traces and world calendars) and an eighth of
  the full one's. It is used only when its version is the installed plotly package's
  plotly.js (the figures are built for that one); otherwise the page loads the full bundle
  and the log says why. It is one of the page's scripts, run before the renderer starts,
  so the charts (chart.py, not dcc.Graph, which loads plotly.js only once a graph is
  rendered) draw as soon as they mount.
- **No @babel/polyfill.** Dash puts it before React for old browsers; in a current one it
  only replaces native built-ins (``String.prototype.trim`` among them) with slower copies,
  0.1-0.25 s of script at every page start. Dash's lazy-loading code needs the
  ``regeneratorRuntime`` global it also defines, so that runtime (facebook/regenerator,
  MIT, vendored) takes its place. The page needs a browser from 2020 or later.
- **No dash_table script** while the page has no DataTable (the Summary is a plain table,
  assets/summary_table.js).
- **The layout comes with the page.** The Dash renderer asks for ``/_dash-layout`` and
  ``/_dash-dependencies`` (the callbacks) only after every script has run, and the
  layout request then queued behind the page's dozen script downloads on a server that
  builds a shared link's layout, chart included (restore.py), in 0.06-0.5 s. The page is
  sent in two parts instead: everything up to the renderer's start at once, so the browser
  fetches and runs its scripts while the server builds the layout, then the layout and the
  callbacks as JSON elements; a small script in the page head answers the renderer's two
  requests from them. The page's URL is the link, so the layout is the link's.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path

from dash import Dash
from dash._utils import to_json
from flask import Response, stream_with_context
from plotly.offline import get_plotlyjs_version

log = logging.getLogger(__name__)

VENDOR = Path(__file__).resolve().parent / "assets" / "vendor"
FULL_BUNDLE = "_dash-component-suites/plotly/package_data/plotly.min.js"
REGENERATOR = "vendor/regenerator-runtime-0.14.1.js"
POLYFILL_TAG = re.compile(r'<script src="[^"]*/deps/polyfill@[^"]*"></script>\s*')
TABLE_TAG = re.compile(r'<script src="[^"]*/dash_table/bundle[^"]*"></script>\s*')

# Runs in the page head before any other script: the renderer's first GET of the layout or
# of the callbacks is answered from the JSON the page carries, then fetch is left alone.
EMBEDDED_JS = """(function () {
    var own = window.fetch, early = %s;
    window.fetch = function (input, init) {
        var get = !init || !init.method || init.method === 'GET';
        var id = get && typeof input === 'string' && early[input];
        var node = id && document.getElementById(id);
        if (node) {
            delete early[input];
            if (!Object.keys(early).length) { window.fetch = own; }
            return Promise.resolve(new Response(node.textContent, {
                status: 200, headers: {'Content-Type': 'application/json'}}));
        }
        return own.apply(this, arguments);
    };
})();"""


LAYOUT_ID, CALLBACKS_ID = "_radtrack-layout", "_radtrack-dependencies"
LAYOUT_MARK = "<!-- radtrack: layout -->"


def json_script(element_id: str, text: str) -> str:
    """``text`` (JSON) in a script element; ``</`` escaped so no ``</script>`` ends it early."""
    safe = text.replace("</", "<" + "\\" + "/")
    return f'<script id="{element_id}" type="application/json">{safe}</script>'


def vendored_bundle(version: str | None = None) -> str | None:
    """The vendored bundle's asset path for plotly.js ``version``, or None."""
    version = version or get_plotlyjs_version()
    name = f"plotly-radtrack-{version}.min.js"
    if (VENDOR / name).is_file():
        return f"vendor/{name}"
    found = sorted(p.name for p in VENDOR.glob("plotly-radtrack-*.min.js"))
    log.warning("plotly.js %s: no %s in %s (found: %s); the page loads the full bundle "
                "(scripts/build-plotly-bundle.sh builds it)", version, name, VENDOR,
                ", ".join(found) or "none")
    return None


class ShellDash(Dash):
    """A Dash app with the shell above. Create it with ``assets_path_ignore=["vendor"]``."""

    plotly_url: str | None = None
    _dash_table: bool | None = None

    def interpolate_index(self, **kwargs: str) -> str:
        plotly = self.plotly_url or self.get_relative_path("/" + FULL_BUNDLE)
        kwargs["metas"] = (kwargs.get("metas", "")
                           + f"\n<script>{EMBEDDED_JS % json.dumps(self._early_ids())}</script>")
        # index() sends the page up to here at once, then the layout (built meanwhile).
        kwargs["renderer"] = LAYOUT_MARK + kwargs.get("renderer", "")
        scripts = kwargs.get("scripts", "")
        runtime = f'<script src="{self.get_asset_url(REGENERATOR)}"></script>\n'
        scripts, swapped = POLYFILL_TAG.subn(runtime, scripts, count=1)
        if not swapped:
            scripts = runtime + scripts
        if not self._uses_dash_table():
            # Dash adds dash_table's script to every page (importing dash imports it).
            scripts = TABLE_TAG.sub("", scripts, count=1)
        # Last, so the smaller scripts before it run while it is still downloading.
        kwargs["scripts"] = scripts + f'\n<script src="{plotly}"></script>'
        return super().interpolate_index(**kwargs)

    def index(self, *args: object, **kwargs: object) -> Response:
        """The page, sent in two parts: everything up to the renderer's start at once, so the
        browser fetches and runs the scripts while this thread builds the layout, then the
        layout and the callbacks as JSON and the rest."""
        page = super().index(*args, **kwargs)
        head, tail = page.split(LAYOUT_MARK, 1)

        def parts() -> Iterator[str]:
            yield head
            yield self._embedded()
            yield tail

        return Response(stream_with_context(parts()), mimetype="text/html")

    def _early_ids(self) -> dict[str, str]:
        prefix = self.config.requests_pathname_prefix
        return {prefix + "_dash-layout": LAYOUT_ID, prefix + "_dash-dependencies": CALLBACKS_ID}

    def _embedded(self) -> str:
        """The layout and the callbacks as JSON elements; '' (the renderer asks the server
        itself) if the layout fails here."""
        try:
            layout = to_json(self.get_layout())
        except Exception:  # the renderer's own request reports it where the user sees it
            log.exception("page layout not embedded; the page will ask for it")
            return ""
        return (json_script(LAYOUT_ID, layout) + "\n"
                + json_script(CALLBACKS_ID, to_json(self._callback_list)) + "\n")

    def _uses_dash_table(self) -> bool:
        """Whether the page has a DataTable (its layout is walked once, not per page)."""
        if self._dash_table is None:
            layout = self.validation_layout
            if layout is None:
                return True  # unknown yet: keep the script
            self._dash_table = getattr(layout, "_namespace", None) == "dash_table" or any(
                getattr(c, "_namespace", None) == "dash_table" for c in layout._traverse())
        return self._dash_table


def create_shell_app(name: str, assets_folder: Path, **kwargs: object) -> ShellDash:
    """A ShellDash serving ``assets_folder`` (its vendor/ folder on request only), local scripts."""
    app = ShellDash(name, assets_folder=str(assets_folder), assets_path_ignore=["vendor"],
                    serve_locally=True, **kwargs)
    asset = vendored_bundle()
    app.plotly_url = app.get_asset_url(asset) if asset else None
    return app
