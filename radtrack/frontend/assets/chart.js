// The page's plotly.js charts (radtrack/frontend/chart.py): a Dash component that draws its figure
// with one Plotly.react as soon as it mounts. dcc.Graph loads its code and plotly.js
// lazily, so a page's first chart waited for two script loads and a second React pass,
// and it redrew the plot after each zoom and on its own resizes (docs/performance.md,
// "Frontend", third rework). plotly.js is one of the page's scripts (page_shell.py).
//
// The figure comes as the server wrote it: arrays as base64 typed-array specs, decoded
// here once per figure (plotly.js would decode a spec again on every react), the height in
// layout.height (moved to the box: the plot fills it), and the chart's query for zoom.js
// under "radtrack" (kept on the plot element as gd.radtrackQuery). A chart in a hidden
// panel is drawn when it is first shown; a change of the box's size resizes the plot.
(function () {
    'use strict';
    const React = window.React;
    const TYPES = {f8: Float64Array, f4: Float32Array, i4: Int32Array, u4: Uint32Array,
                   i2: Int16Array, u2: Uint16Array, i1: Int8Array, u1: Uint8Array};

    function decode(value) {
        if (!value || typeof value.bdata !== 'string' || value.shape || !TYPES[value.dtype]) {
            return value;
        }
        const raw = atob(value.bdata);
        const bytes = new Uint8Array(raw.length);
        for (let i = 0; i < raw.length; i++) { bytes[i] = raw.charCodeAt(i); }
        return new TYPES[value.dtype](bytes.buffer);
    }

    // {data, layout, height, query}: what Plotly.react gets, and what stays with the chart.
    function prepare(figure) {
        const stored = figure || {};
        const data = (stored.data || []).map(
            trace => Object.assign({}, trace, {x: decode(trace.x), y: decode(trace.y)}));
        const layout = Object.assign({}, stored.layout || {}, {autosize: true});
        const height = layout.height;
        delete layout.height;
        return {data: data, layout: layout, height: height || null, query: stored.radtrack || null};
    }

    class Chart extends React.Component {
        constructor(props) {
            super(props);
            this.box = React.createRef();
            this.plot = React.createRef();
            this.source = undefined;  // the figure prop this.prepared was made from
            this.prepared = null;
            this.drawn = null;  // the prepared figure the plot shows
            this.size = null;   // the box's size when the plot was last laid out
        }

        componentDidMount() {
            this.observer = new ResizeObserver(() => this.fit());
            this.observer.observe(this.box.current);
            // After the page's first paint: the page shows at once, the plot a moment later.
            this.scheduled = true;
            requestAnimationFrame(() => setTimeout(() => {
                this.scheduled = false;
                if (!this.unmounted) { this.draw(); }  // the latest figure, if it changed meanwhile
            }, 0));
        }

        componentDidUpdate(previous) {
            if (this.scheduled) { return; }  // the first draw is still to come, with these props
            if (previous.figure !== this.props.figure || previous.config !== this.props.config) {
                this.drawn = null;
                this.draw();
            }
        }

        figure() {
            if (this.source !== this.props.figure) {
                this.source = this.props.figure;
                this.prepared = prepare(this.props.figure);
            }
            return this.prepared;
        }

        componentWillUnmount() {
            this.unmounted = true;
            this.observer.disconnect();
            if (window.Plotly && this.plot.current) { window.Plotly.purge(this.plot.current); }
        }

        shown() {
            const box = this.box.current;
            return box.offsetWidth > 0 && box.offsetHeight > 0;
        }

        draw() {
            const gd = this.plot.current;
            if (!window.Plotly) {
                gd.textContent = 'plotly.js did not load: the chart cannot be drawn.';
                return;
            }
            if (!this.shown()) { return; }  // drawn by fit() when the panel is shown
            const figure = this.figure();
            gd.radtrackQuery = figure.query;
            this.drawn = figure;
            this.size = [this.box.current.offsetWidth, this.box.current.offsetHeight];
            const config = Object.assign({}, this.props.config || {}, {responsive: false});
            window.Plotly.react(gd, figure.data, figure.layout, config);
        }

        fit() {
            if (this.scheduled || !this.shown()) { return; }
            if (this.drawn !== this.figure()) { this.draw(); return; }
            const size = [this.box.current.offsetWidth, this.box.current.offsetHeight];
            if (this.size && size[0] === this.size[0] && size[1] === this.size[1]) { return; }
            this.size = size;
            window.Plotly.Plots.resize(this.plot.current);
        }

        render() {
            const style = Object.assign({}, this.props.style || {});
            const height = this.figure().height;
            if (height) { style.height = height + 'px'; }
            return React.createElement(
                'div', {id: this.props.id, className: this.props.className, style: style,
                        ref: this.box},
                React.createElement('div', {ref: this.plot, className: 'chart-plot'}));
        }
    }

    window.radtrack_frontend = Object.assign(window.radtrack_frontend || {}, {Chart: Chart});
})();
