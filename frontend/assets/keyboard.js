// Every tab of the page reachable and usable from the keyboard: Dash's tabs are divs
// without a tab stop, so each gets one (role "tab"), and Enter or Space picks it.
(function () {
    'use strict';

    function mark() {
        for (const tab of document.querySelectorAll('#tabs .tab')) {
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
    new MutationObserver(mark).observe(document.documentElement,
                                       {childList: true, subtree: true, attributes: true,
                                        attributeFilter: ['class']});
    document.addEventListener('DOMContentLoaded', mark);
})();
