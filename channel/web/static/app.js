// Live updates for the approvals page: a server-sent event on any change
// re-renders the lists (server-side, escaped), so a request decided
// elsewhere loses its buttons at once; a timer counts down time left.
(function () {
  'use strict';
  var csrf = document.body.dataset.csrf;
  var lists = document.getElementById('lists');
  var toast = document.getElementById('toast');
  var live = document.getElementById('live');
  var toastTimer;

  function show(msg, isError) {
    toast.textContent = msg;
    toast.className = 'show' + (isError ? ' error' : '');
    clearTimeout(toastTimer);
    toastTimer = setTimeout(function () { toast.className = ''; }, 4000);
  }

  function fmt(ms) {
    var s = Math.floor(ms / 1000), h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
    s = s % 60;
    var pad = function (n) { return (n < 10 ? '0' : '') + n; };
    return (h > 0 ? h + ':' + pad(m) : m) + ':' + pad(s) + ' left';
  }

  function tick() {
    var now = Date.now();
    document.querySelectorAll('article[data-deadline]').forEach(function (el) {
      var left = Number(el.dataset.deadline) - now;
      var t = el.querySelector('.timeleft');
      if (left <= 0) {
        t.textContent = 'expired';
        el.classList.add('stale');
        el.querySelectorAll('button').forEach(function (b) { b.disabled = true; });
      } else {
        t.textContent = fmt(left);
        t.classList.toggle('soon', left < 60000);
      }
    });
  }

  var refreshing = null;
  function refresh() {
    if (refreshing) { refreshing.again = true; return; }
    refreshing = { again: false };
    fetch('/ui/fragment', { credentials: 'same-origin', headers: { 'Accept': 'text/html' } })
      .then(function (r) {
        if (r.status === 401) { location.href = '/login'; return null; }
        return r.ok ? r.text() : null;
      })
      .then(function (html) {
        if (html !== null && html !== undefined) { lists.innerHTML = html; tick(); }
      })
      .catch(function () {})
      .then(function () {
        var again = refreshing.again;
        refreshing = null;
        if (again) { refresh(); }
      });
  }

  lists.addEventListener('submit', function (ev) {
    var form = ev.target;
    ev.preventDefault();
    var card = form.closest('article');
    if (card) { card.querySelectorAll('button').forEach(function (b) { b.disabled = true; }); }
    var deny = form.action.endsWith('/deny');
    fetch(form.action, {
      method: 'POST', credentials: 'same-origin',
      headers: { 'X-CSRF-Token': csrf, 'Accept': 'application/json' }
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (j) {
        if (r.ok) {
          var what = deny ? 'Denied' : (j.status === 'approved' ? 'Approved' : 'Approval recorded; more approvers needed');
          show(what + ': ' + (j.tool || ''), false);
        } else {
          show(j.error || ('Failed: HTTP ' + r.status), true);
        }
      });
    }).catch(function () { show('Network error: nothing was recorded', true); })
      .then(refresh);
  });

  if (window.EventSource) {
    var es = new EventSource('/ui/events');
    es.onopen = function () { live.textContent = 'live'; live.className = 'live'; };
    es.onmessage = refresh;
    es.onerror = function () { live.textContent = 'reconnecting…'; live.className = 'live off'; };
  }
  setInterval(tick, 1000);
  setInterval(refresh, 15000); // a safety net if the event stream is cut
  tick();
})();
