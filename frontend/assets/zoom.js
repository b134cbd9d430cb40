// A zoom or pan of the chart becomes the "view-range" store straight from Plotly's relayout
// event, so the server request that re-samples the new window leaves before dcc.Graph
// re-applies its figure to the plot (a Plotly.react it makes after every relayout), and
// not after it: the request and that redraw overlap instead of queueing (docs/performance.md,
// "Frontend"). Relayouts that are not about x (autosize, a y zoom, the legend) leave the
// store alone, so they cannot supersede, and thereby cancel, the request a zoom just made.
(function () {
    'use strict';

    function viewRange(relayout, gd) {
        if (!relayout) { return null; }
        const rev = gd.layout ? gd.layout.uirevision : null;
        const keys = Object.keys(relayout);
        for (const key of keys) {
            if (/^xaxis\d*\.autorange$/.test(key) && relayout[key]) { return {rev: rev, x: null}; }
        }
        for (const key of keys) {
            const m = key.match(/^(xaxis\d*)\.range\[0\]$/);
            if (m) { return {rev: rev, x: [relayout[key], relayout[m[1] + '.range[1]']]}; }
            if (/^xaxis\d*\.range$/.test(key)) { return {rev: rev, x: relayout[key]}; }
        }
        return null;
    }

    function attach(gd) {
        if (gd.__radtrackViewRange || typeof gd.on !== 'function') { return; }
        gd.__radtrackViewRange = true;
        gd.on('plotly_relayout', function (relayout) {
            const range = viewRange(relayout, gd);
            if (range && window.dash_clientside && window.dash_clientside.set_props) {
                window.dash_clientside.set_props('view-range', {data: range});
            }
        });
    }

    function scan() {
        const gd = document.querySelector('#chart .js-plotly-plot');
        if (gd) { attach(gd); }
    }

    new MutationObserver(scan).observe(document.documentElement, {childList: true, subtree: true});
    document.addEventListener('DOMContentLoaded', scan);
})();
