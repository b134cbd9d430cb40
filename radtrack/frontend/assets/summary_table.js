// The Summary tab's table, drawn from the "summary-data" store ({columns, rows}) as plain
// HTML: a Dash DataTable cost the page 0.63 MB of extra script (the table and its
// highlight.js chunks) evaluated while a shared link waited for its chart, and one Dash
// component per cell would cost more (docs/performance.md, "Frontend").
// Click a header to sort by it (again: the other way); numbers sort as numbers, empty
// cells last. The order holds while the table is redrawn with new rows.
// The run's column stays in view while the table scrolls sideways (style.css: sticky).
// Columns whose id starts with '_' are not drawn: a row's "_tips" ({column: text}) is its
// cells' tooltips (why a cell is blank, what a check says), "_flagged" the cells a check
// qualifies (class "flagged"; radtrack/frontend/summaries.py).
(function () {
    'use strict';

    let order = null;  // {column, descending}

    function compare(a, b, numeric) {
        const missing = (v) => v === null || v === undefined || v === '';
        if (missing(a) || missing(b)) { return missing(a) - missing(b); }
        if (numeric) { return Number(a) - Number(b); }
        return String(a).localeCompare(String(b), undefined, {numeric: true});
    }

    function sorted(table) {
        if (!order) { return table.rows; }
        const column = table.columns.find(c => c.id === order.column);
        if (!column) { return table.rows; }
        const numeric = column.type === 'numeric';
        const sign = order.descending ? -1 : 1;
        return table.rows.slice().sort((r, s) => {
            const a = r[column.id], b = s[column.id];
            const empty = (v) => v === null || v === undefined || v === '';
            // empty cells stay last whichever the direction
            if (empty(a) || empty(b)) { return compare(a, b, numeric); }
            return sign * compare(a, b, numeric);
        });
    }

    function cell(tag, text) {
        const node = document.createElement(tag);
        node.textContent = text === null || text === undefined ? '' : String(text);
        return node;
    }

    function shown(table) {
        return table.columns.filter(c => !String(c.id).startsWith('_'));
    }

    function draw(host, table) {
        host.textContent = '';
        if (!table || !table.columns || !table.columns.length) { return; }
        const columns = shown(table);
        const element = document.createElement('table');
        const head = element.createTHead().insertRow();
        for (const column of columns) {
            const th = cell('th', column.name);
            th.dataset.column = column.id;
            th.tabIndex = 0;
            th.title = (column.help ? column.help + ' · ' : '') + 'sort by ' + column.name;
            if (order && order.column === column.id) {
                th.setAttribute('aria-sort', order.descending ? 'descending' : 'ascending');
            }
            if (column.type === 'numeric') { th.className = 'numeric'; }
            head.appendChild(th);
        }
        const body = element.createTBody();
        for (const row of sorted(table)) {
            const tr = body.insertRow();
            const tips = row._tips || {};
            const flagged = row._flagged || [];
            columns.forEach((column, index) => {
                const td = cell('td', row[column.id]);
                if (column.type === 'numeric') { td.classList.add('numeric'); }
                const tip = tips[column.id];
                // the run's column may be cut to its width: its full name in the tooltip
                const title = [index === 0 ? row[column.id] : null, tip].filter(Boolean).join('\n');
                if (title) { td.title = String(title); }
                if (tip && String(tip).startsWith('blank: ')) { td.classList.add('blank'); }
                if (flagged.includes(column.id)) { td.classList.add('flagged'); }
                tr.appendChild(td);
            });
        }
        host.appendChild(element);
    }

    function resort(event) {
        const th = event.target.closest('#summary th');
        if (!th || (event.type === 'keydown' && event.key !== 'Enter' && event.key !== ' ')) {
            return;
        }
        const column = th.dataset.column;
        order = {column: column, descending: !!order && order.column === column && !order.descending};
        const host = document.getElementById('summary');
        draw(host, host.__radtrackTable);
        event.preventDefault();
    }

    document.addEventListener('click', resort);
    document.addEventListener('keydown', resort);

    window.dash_clientside = window.dash_clientside || {};
    window.dash_clientside.radtrack_summary = {
        // Output: the host's data-rows attribute (the row count), so the page can tell
        // when a table has been drawn; the rows themselves are drawn here.
        draw: function (table) {
            const host = document.getElementById('summary');
            if (!host) { return window.dash_clientside.no_update; }
            host.__radtrackTable = table || null;
            draw(host, table);
            return String(table && table.rows ? table.rows.length : 0);
        },
    };
})();

// Every tab of the page reachable and usable from the keyboard: Dash's tabs are divs
// without a tab stop, so each gets one (role "tab"), and Enter or Space picks it.
// Only the tabs' own box is watched once it exists: a chart's redraw changes many class
// attributes elsewhere, which must not wake this script.
(function () {
    'use strict';

    function mark(tabs) {
        for (const tab of tabs.querySelectorAll('.tab')) {
            if (tab.tabIndex !== 0) { tab.tabIndex = 0; }
            if (tab.getAttribute('role') !== 'tab') { tab.setAttribute('role', 'tab'); }
            const selected = tab.classList.contains('tab--selected') ? 'true' : 'false';
            if (tab.getAttribute('aria-selected') !== selected) {
                tab.setAttribute('aria-selected', selected);
            }
        }
    }

    document.addEventListener('keydown', function (event) {
        const tab = event.target.closest && event.target.closest('#tabs .tab');
        if (tab && (event.key === 'Enter' || event.key === ' ')) {
            tab.click();
            event.preventDefault();
        }
    });

    let watched = null;
    function find() {
        const tabs = document.getElementById('tabs');
        if (!tabs || tabs === watched) { return; }
        watched = tabs;
        page.disconnect();  // the layout is rendered once
        mark(tabs);
        new MutationObserver(() => mark(tabs)).observe(tabs, {
            childList: true, subtree: true, attributes: true, attributeFilter: ['class']});
    }
    // the page's layout is rendered after this script runs; the tabs' box is made once
    const page = new MutationObserver(find);
    page.observe(document.documentElement, {childList: true, subtree: true});
    document.addEventListener('DOMContentLoaded', find);
})();
