"""The page's HTML shell: which scripts load, and when, so a page (a shared link above all)
is drawn sooner. Three changes to what Dash writes, each measured in docs/performance.md
("Frontend"):

- **plotly.js with two traces** (1.1 MB) instead of the full bundle (4.8 MB). The page
  draws scatter lines, filled scatter areas (shares) and a heatmap (correlation): plotly.js's
  core and its heatmap trace, built from the npm package by
  ``scripts/build-plotly-bundle.sh`` (MIT) into ``assets/vendor/``, which Dash serves but
  does not add to the page by itself. Starting it takes a quarter of the time the
  distributed cartesian bundle takes (eleven traces and world calendars) and an eighth of
  the full one's. dcc.Graph loads plotly.js on first use from the URL the renderer's
  config names: with ``serve_locally`` the plotly package's full bundle, otherwise
  ``plotlyjs_url``; nothing else in the browser reads ``serve_locally`` (Dash 4), so the
  config names the vendored bundle and every other script stays local. It is used only
  when its version is the installed plotly package's plotly.js (the figures are built for
  that one); otherwise the page keeps the full bundle and the log says why. It is
  preloaded from the page head, so it is downloaded (and compiled) by the time the first
  graph mounts and dcc.Graph runs it; run as the page's first script, or an async one,
  it took 0.7-1 s instead of 0.3 s and held up everything behind it.
- **No @babel/polyfill.** Dash puts it before React for old browsers; in a current one it
  only replaces native built-ins (``String.prototype.trim`` among them) with slower copies,
  0.1-0.25 s of script at every page start. Dash's lazy-loading code needs the
  ``regeneratorRuntime`` global it also defines, so that runtime (facebook/regenerator,
  MIT, vendored) takes its place. The page needs a browser from 2020 or later.
- **No dash_table script** while the page has no DataTable (the Summary is a plain table,
  assets/summary_table.js).
- **The layout is asked for at once.** The Dash renderer asks for ``/_dash-layout`` only
  after every script has run; a shared link's layout carries its chart (restore.py), which
  the server needs 0.15-0.5 s to build. A small script in the page head starts that request
  first and hands its answer to the renderer's own request for it, so the server works
  while the browser runs the scripts. Its ``Referer`` is the page, as for the renderer's.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

from dash import Dash
from plotly.offline import get_plotlyjs_version

log = logging.getLogger(__name__)

VENDOR = Path(__file__).resolve().parent / "assets" / "vendor"
FULL_BUNDLE = "_dash-component-suites/plotly/package_data/plotly.min.js"
REGENERATOR = "vendor/regenerator-runtime-0.14.1.js"
POLYFILL_TAG = re.compile(r'<script src="[^"]*/deps/polyfill@[^"]*"></script>\s*')
TABLE_TAG = re.compile(r'<script src="[^"]*/dash_table/bundle[^"]*"></script>\s*')

# Runs in the page head before any other script: asks for the layout now and gives that
# answer to the first GET of the same URL (the renderer's), then steps out of the way.
PREFETCH_JS = """(function () {
    var url = %s, early = window.fetch(url, {method: 'GET', credentials: 'same-origin',
        headers: {Accept: 'application/json', 'Content-Type': 'application/json'}});
    var own = window.fetch;
    window.fetch = function (input, init) {
        var get = !init || !init.method || init.method === 'GET';
        if (early && input === url && get) {
            var answer = early;
            early = null;
            window.fetch = own;
            return answer;
        }
        return own.apply(this, arguments);
    };
})();"""


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

    def _config(self) -> dict:
        config = super()._config()
        if self.plotly_url:
            # The renderer reads serve_locally only to pick plotly.js's URL.
            config["serve_locally"] = False
            config["plotlyjs_url"] = self.plotly_url
        return config

    def interpolate_index(self, **kwargs: str) -> str:
        plotly = self.plotly_url or self.get_relative_path("/" + FULL_BUNDLE)
        layout = self.config.requests_pathname_prefix + "_dash-layout"
        kwargs["metas"] = (kwargs.get("metas", "")
                           + f'\n<link rel="preload" as="script" href="{plotly}">'
                           + f"\n<script>{PREFETCH_JS % json.dumps(layout)}</script>")
        scripts = kwargs.get("scripts", "")
        runtime = f'<script src="{self.get_asset_url(REGENERATOR)}"></script>\n'
        scripts, swapped = POLYFILL_TAG.subn(runtime, scripts, count=1)
        if not swapped:
            scripts = runtime + scripts
        if not self._uses_dash_table():
            # Dash adds dash_table's script to every page (importing dash imports it).
            scripts = TABLE_TAG.sub("", scripts, count=1)
        kwargs["scripts"] = scripts
        return super().interpolate_index(**kwargs)

    def _uses_dash_table(self) -> bool:
        layout = self.validation_layout
        if layout is None:
            return True  # unknown: keep it
        if getattr(layout, "_namespace", None) == "dash_table":
            return True
        return any(getattr(c, "_namespace", None) == "dash_table" for c in layout._traverse())


def create_shell_app(name: str, assets_folder: Path, **kwargs: object) -> ShellDash:
    """A ShellDash serving ``assets_folder`` (its vendor/ folder on request only), local scripts."""
    app = ShellDash(name, assets_folder=str(assets_folder), assets_path_ignore=["vendor"],
                    serve_locally=True, **kwargs)
    asset = vendored_bundle()
    app.plotly_url = app.get_asset_url(asset) if asset else None
    return app
