// The store's health in the banner (radtrack/frontend/health.py): every 5 s the page asks
// /_radtrack/health; '' clears the banner, anything else is shown. When the page's own
// server does not answer, the banner says that.
(function () {
    const PERIOD_MS = 5000;
    let shown = null;
    function show(text) {
        if (text === shown || !window.dash_clientside || !window.dash_clientside.set_props) { return; }
        if (!document.getElementById('store-banner')) { return; }
        shown = text;
        window.dash_clientside.set_props('store-banner', {children: text, hidden: !text});
    }
    async function check() {
        try {
            const answer = await fetch('_radtrack/health', {cache: 'no-store'});
            show(answer.ok ? await answer.text() : 'radtrack ui answered ' + answer.status);
        } catch (err) {
            show('The radtrack ui server at ' + window.location.host + ' does not answer.');
        }
    }
    setInterval(check, PERIOD_MS);
})();
