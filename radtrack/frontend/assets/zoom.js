// A zoom or pan of the chart, answered without a Dash round (docs/performance.md, "Frontend"):
// on Plotly's relayout event the new x range goes straight to /_radtrack/zoom
// (radtrack/frontend/zoom_data.py) with the chart's query, which the figure carries
// (gd.radtrackQuery, set by the chart component, assets/chart.js); the binary answer (every
// trace's x as float64, then every y as float32) becomes typed arrays without a copy, and
// one Plotly.restyle puts them in the plot. Only then is the "view-range" store set, which
// the live refresh and the exports read. Relayouts that are not about x (autosize, a y
// zoom, the legend) leave everything alone; a newer zoom aborts the request of an older one.
(function () {
    'use strict';

    const ROUTE = '_radtrack/zoom';
    let inflight = null;

    function viewRange(relayout) {
        if (!relayout) { return undefined; }
        const keys = Object.keys(relayout);
        for (const key of keys) {
            if (/^xaxis\d*\.autorange$/.test(key) && relayout[key]) { return null; }
        }
        for (const key of keys) {
            const m = key.match(/^(xaxis\d*)\.range\[0\]$/);
            if (m) { return [relayout[key], relayout[m[1] + '.range[1]']]; }
            if (/^xaxis\d*\.range$/.test(key)) { return relayout[key]; }
        }
        return undefined;
    }

    function parse(buffer) {
        const size = new DataView(buffer).getUint32(0, true);
        const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, size)));
        let offset = 4 + size;
        const xs = header.traces.map(([, n]) => {
            const x = new Float64Array(buffer, offset, n); offset += 8 * n; return x;
        });
        const ys = header.traces.map(([, n]) => {
            const y = new Float32Array(buffer, offset, n); offset += 4 * n; return y;
        });
        return {header: header, xs: xs, ys: ys};
    }

    function sameTraces(gd, traces) {
        return gd.data.length === traces.length && traces.every(([meta], i) => {
            const own = gd.data[i].meta;
            return own && own[0] === meta[0] && own[1] === meta[1];
        });
    }

    function record(rev, x) {
        if (window.dash_clientside && window.dash_clientside.set_props) {
            window.dash_clientside.set_props('view-range', {data: {rev: rev, x: x}});
        }
    }

    // The zoom goes into the address bar's "range" (x axis units; wall clock as unix
    // seconds, as radtrack/frontend/views.py reads it) with replaceState: no Dash request, no
    // history entry per zoom; a double-click reset removes it.
    function seconds(v, wall) {
        if (!wall) { return Number(v); }
        if (typeof v === 'number') { return v / 1000; }
        const text = String(v).trim().replace(' ', 'T');
        return Date.parse(/Z|[+-]\d\d:?\d\d$/.test(text) ? text : text + 'Z') / 1000;
    }

    function linkRange(chart, x) {
        const params = new URLSearchParams(window.location.search);
        if (!x) {
            params.delete('range');
        } else {
            const wall = chart.xmode === 'wall';
            let [lo, hi] = x.map(v => seconds(v, wall));
            if (!isFinite(lo) || !isFinite(hi)) { return; }
            if (lo > hi) { [lo, hi] = [hi, lo]; }
            params.set('range', [lo, hi].map(v => String(Number(v.toFixed(6)))).join(','));
        }
        const query = params.toString();
        history.replaceState(history.state, '', window.location.pathname + (query ? '?' + query : ''));
    }

    function zoom(gd, x) {
        const chart = gd.radtrackQuery;
        const rev = gd.layout ? gd.layout.uirevision : null;
        if (!chart || chart.rev !== rev) { record(rev, x); return; }
        if (inflight) { inflight.abort(); }
        const controller = new AbortController();
        inflight = controller;
        fetch(ROUTE, {method: 'POST', headers: {'Content-Type': 'application/json'},
                      body: JSON.stringify(Object.assign({}, chart, {x: x})),
                      signal: controller.signal})
            .then(response => (response.status === 200 ? response.arrayBuffer() : null))
            .then(buffer => {
                if (inflight === controller) { inflight = null; }
                if (!buffer || controller.signal.aborted) { return null; }
                const answer = parse(buffer);
                // The chart may have been replaced while the request was out.
                if (gd.radtrackQuery !== chart || answer.header.rev !== gd.layout.uirevision
                    || !sameTraces(gd, answer.header.traces)) { return null; }
                const indices = answer.xs.map((_, i) => i);
                return Plotly.restyle(gd, {x: answer.xs, y: answer.ys}, indices);
            })
            .catch(error => { if (error.name !== 'AbortError') { console.error(error); } })
            // after the next paint: the store update wakes Dash's renderer (10-40 ms),
            // which would otherwise hold back the frame that shows the new arrays
            .finally(() => requestAnimationFrame(() => setTimeout(() => {
                record(rev, x);
                linkRange(chart, x);  // after the paint too: replaceState is not free
            }, 0)));
    }

    function attach(gd) {
        if (gd.__radtrackZoom || typeof gd.on !== 'function') { return; }
        gd.__radtrackZoom = true;
        gd.on('plotly_relayout', function (relayout) {
            if (!relayout) { return; }
            const x = viewRange(relayout);
            if (x !== undefined) { zoom(gd, x); }
        });
    }

    function scan() {
        const gd = document.querySelector('#chart .js-plotly-plot');
        if (gd) { attach(gd); }
    }

    new MutationObserver(scan).observe(document.documentElement, {childList: true, subtree: true});
    document.addEventListener('DOMContentLoaded', scan);
})();
