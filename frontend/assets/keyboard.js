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
