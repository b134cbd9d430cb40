// A run's "i" popover (radtrack/frontend/picker.py): its rows come as the data-info attribute
// ([[name, value], ...]) and are drawn into one popover for the whole page while the
// pointer is over the "i" or it has the keyboard focus.
(function () {
    'use strict';

    let popover = null;

    function show(info) {
        let pairs;
        try { pairs = JSON.parse(info.dataset.info || '[]'); } catch (e) { return; }
        if (!popover) {
            popover = document.createElement('table');
            popover.id = 'run-popover';
            popover.setAttribute('role', 'tooltip');
            document.body.appendChild(popover);
        }
        popover.textContent = '';
        const body = popover.createTBody();
        for (const [name, value] of pairs) {
            const row = body.insertRow();
            const th = document.createElement('th');
            th.textContent = name;
            row.appendChild(th);
            row.insertCell().textContent = value;
        }
        const box = info.getBoundingClientRect();
        popover.style.left = (box.right + 4) + 'px';
        popover.style.top = Math.max(box.top - 6, 4) + 'px';
        popover.classList.add('shown');
    }

    function hide() { if (popover) { popover.classList.remove('shown'); } }

    function over(event) {
        const info = event.target.closest && event.target.closest('.run-row .info');
        if (info) { show(info); }
    }

    function out(event) {
        const info = event.target.closest && event.target.closest('.run-row .info');
        if (info && !(event.relatedTarget && info.contains(event.relatedTarget))) { hide(); }
    }

    document.addEventListener('mouseover', over);
    document.addEventListener('focusin', over);
    document.addEventListener('mouseout', out);
    document.addEventListener('focusout', out);
})();

// A running run's duration in the run list advances every second (the list itself is
// redrawn only when the picker changes): each such span carries its run's start
// (data-start, unix seconds, radtrack/frontend/picker.py run_row) and is written as duration_text
// writes it.
(function () {
    'use strict';

    function text(seconds) {
        if (seconds < 60) { return seconds.toFixed(1) + ' s'; }
        const total = Math.round(seconds);
        const hours = Math.floor(total / 3600), minutes = Math.floor(total / 60) % 60;
        const pad = (n) => String(n).padStart(2, '0');
        return hours ? hours + 'h ' + pad(minutes) + 'm' : minutes + 'm ' + pad(total % 60) + 's';
    }

    setInterval(function () {
        const now = Date.now() / 1000;
        for (const span of document.querySelectorAll('.duration.live[data-start]')) {
            span.textContent = text(Math.max(0, now - Number(span.dataset.start)));
        }
    }, 1000);
})();
