// A running run's duration in the run list advances every second (the list itself is
// redrawn only when the picker changes): each such span carries its run's start
// (data-start, unix seconds, frontend/picker.py run_row) and is written as duration_text
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
