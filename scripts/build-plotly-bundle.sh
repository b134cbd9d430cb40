#!/usr/bin/env bash
# Builds the page's plotly.js (radtrack/frontend/assets/vendor/plotly-radtrack-<version>.min.js):
# plotly.js's core (scatter: lines and filled areas) plus the heatmap trace, nothing else.
# The distributed bundles register more traces and components (the cartesian one: eleven
# traces and world calendars); their start-up is what a page load waits for
# (docs/performance.md, "Frontend"). Needs node and npm with access to the npm registry.
#   scripts/build-plotly-bundle.sh [PLOTLY_JS_VERSION]
# The version must be the plotly.js of the installed plotly package (page_shell.py uses
# the bundle only then); by default it is read from it.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-$here/.venv/bin/python}
version=${1:-$("$python" -c 'from plotly.offline import get_plotlyjs_version as v; print(v())')}
esbuild_version=0.28.2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
npm init -y >/dev/null
npm install --no-audit --no-fund --ignore-scripts --silent "plotly.js@$version" "esbuild@$esbuild_version"
cat > entry.js <<'JS'
'use strict';
var Plotly = require('plotly.js/lib/core');
Plotly.register([require('plotly.js/lib/heatmap')]);
module.exports = Plotly;
JS
out="$here/frontend/assets/vendor/plotly-radtrack-$version.min.js"
cat > build.mjs <<JS
import * as esbuild from 'esbuild';
await esbuild.build({
  entryPoints: ['entry.js'], outfile: 'bundle.js', format: 'iife', globalName: 'Plotly',
  bundle: true, minify: true, target: 'es2016', legalComments: 'inline',
  define: {global: 'window', 'define.amd': 'false', 'process.env.NODE_DEBUG': 'false'},
  alias: {stream: 'stream-browserify'},
  // The first line asks V8 to compile every function while the script streams in, off the
  // page's main thread, instead of on first call: a page's first chart draws 0.1 s sooner
  // (docs/performance.md, "Frontend", third rework).
  banner: {js: '//# allFunctionsCalledOnLoad\\n/*! plotly.js v$version (MIT license, Copyright Plotly, Inc.): core with the scatter and heatmap traces, built for radtrack by scripts/build-plotly-bundle.sh with esbuild $esbuild_version */'},
  logLevel: 'warning',
});
JS
node build.mjs
mv bundle.js "$out"
cp node_modules/plotly.js/LICENSE "$here/frontend/assets/vendor/plotly-LICENSE.txt"
echo "wrote $out ($(wc -c <"$out") bytes)"
