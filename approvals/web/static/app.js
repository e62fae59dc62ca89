// Live updates for the approvals page: a server-sent event on any change
// fetches the lists (rendered and escaped by the server) and merges them
// in. Cards never move under the pointer: a request decided elsewhere stays
// where it is with its buttons disabled and the outcome written on it, and
// new requests are added at the end. A timer counts down time left.
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
    document.querySelectorAll('article[data-deadline]:not(.stale):not(.overdue)').forEach(function (el) {
      var left = Number(el.dataset.deadline) - now;
      var t = el.querySelector('.timeleft');
      if (left <= 0) {
        t.textContent = 'expired';
        el.classList.add('overdue');
        el.querySelectorAll('button').forEach(function (b) { b.disabled = true; });
      } else {
        t.textContent = fmt(left);
        t.classList.toggle('soon', left < 60000);
      }
    });
  }

  function markStale(card, fresh) {
    card.classList.add('stale');
    card.querySelectorAll('.actions button').forEach(function (b) { b.disabled = true; });
    var row = fresh.querySelector('#hist-' + CSS.escape(card.dataset.id));
    // No history row: it still waits, on another page of the list (the
    // window moved: requests before it were decided, or it is newer).
    var text = 'Moved to another page of the list, still waiting';
    if (row && row.dataset.decision) {
      text = row.dataset.decision;
    } else if (row) {
      var outcome = row.querySelector('.outcome');
      var by = row.querySelector('td.by');
      var why = row.querySelector('.withdrawn-note');
      text = (outcome ? outcome.textContent : 'decided') + (why ? ' ' + why.textContent : '') +
        (by && by.textContent.trim() ? ' by ' + by.textContent.trim() : '');
      text = text.charAt(0).toUpperCase() + text.slice(1);
    }
    var note = document.createElement('div');
    note.className = 'stale-note';
    note.setAttribute('role', 'status');
    var label = document.createElement('span');
    label.textContent = text + (row ? ' \u2014 no longer waiting.' : '.');
    var dismiss = document.createElement('button');
    dismiss.type = 'button';
    dismiss.className = 'link dismiss';
    dismiss.textContent = 'Dismiss';
    dismiss.addEventListener('click', function () { card.remove(); });
    note.appendChild(label);
    note.appendChild(dismiss);
    var actions = card.querySelector('.actions');
    card.insertBefore(note, actions);
    var t = card.querySelector('.timeleft');
    if (t) { t.textContent = row ? (row.querySelector('.outcome') || {}).textContent || '' : 'moved'; }
  }

  // decided rewrites a card that left the queue with what the history says
  // about it: the decision (who, when) in place of "N of M needed", and
  // what became of the call. It runs again on every update, so an outcome
  // the gate journals later shows up on the card too.
  function decided(card, fresh) {
    var row = fresh.querySelector('#hist-' + CSS.escape(card.dataset.id));
    if (!row) { return; }
    var dd = card.querySelector('dd.approvals');
    if (dd && row.dataset.decision) { dd.textContent = row.dataset.decision; dd.classList.add('decided'); }
    var out = card.querySelector('.call-outcome');
    if (!out) {
      out = document.createElement('p');
      out.className = 'call-outcome';
      out.setAttribute('role', 'status');
      var note = card.querySelector('.stale-note');
      card.insertBefore(out, note ? note.nextSibling : card.querySelector('.actions'));
    }
    out.textContent = row.dataset.outcome || '';
  }

  function apply(html) {
    var tpl = document.createElement('template');
    tpl.innerHTML = html;
    var fresh = tpl.content;
    var cur = lists.querySelector('section.pending');
    var next = fresh.querySelector('section.pending');
    var curHist = lists.querySelector('section.history');
    var nextHist = fresh.querySelector('section.history');
    if (!cur || !next || !curHist || !nextHist) { lists.innerHTML = html; return; }
    // An update carries only what changed: a card the tab has as it is
    // comes as an empty stub (data-same), the history only if it changed.
    var histSame = nextHist.dataset.same === '1';
    var hist = histSame ? curHist : nextHist;
    cur.querySelectorAll('article.req').forEach(function (card) {
      var repl = next.querySelector('#' + CSS.escape(card.id));
      if (repl && repl.dataset.same === '1') { repl.remove(); return; }
      if (repl) {
        // Keep what the approver unfolded (arguments, long values).
        var open = {};
        card.querySelectorAll('details[data-k]').forEach(function (d) { open[d.dataset.k] = d.open; });
        repl.querySelectorAll('details[data-k]').forEach(function (d) {
          if (Object.prototype.hasOwnProperty.call(open, d.dataset.k)) { d.open = open[d.dataset.k]; }
        });
        // Keep what the approver chose (a grant offered with this request):
        // a live update must never quietly put a choice back to its default.
        card.querySelectorAll('select[name]').forEach(function (sel) {
          var twin = repl.querySelector('select[name="' + CSS.escape(sel.name) + '"]');
          if (twin && twin.querySelector('option[value="' + CSS.escape(sel.value) + '"]')) { twin.value = sel.value; }
        });
        card.replaceWith(repl); // same place; the server's newer state
      } else {
        if (!card.classList.contains('stale')) { markStale(card, hist); }
        decided(card, hist);
      }
    });
    next.querySelectorAll('article.req:not([data-same])').forEach(function (card) { cur.appendChild(card); });
    cur.querySelector('h1').replaceWith(next.querySelector('h1'));
    // The page's window: which page, how many, the links.
    var curNav = cur.querySelector('nav.pages');
    var nextNav = next.querySelector('nav.pages');
    if (curNav) { curNav.remove(); }
    if (nextNav) { cur.querySelector('h1').after(nextNav); }
    var empty = cur.querySelector('.empty');
    if (empty) { empty.remove(); }
    var nextEmpty = next.querySelector('.empty');
    if (nextEmpty && !cur.querySelector('article.req')) { cur.appendChild(nextEmpty); }
    if (!histSame) { curHist.replaceWith(nextHist); }
  }

  var refreshing = null;
  function refresh() {
    if (refreshing) { refreshing.again = true; return; }
    refreshing = { again: false };
    // Only this tab's page of the pending list (PageSize requests), and
    // only what changed: the cards and the history the tab has, by rev.
    var have = [];
    lists.querySelectorAll('section.pending article.req[data-rev]:not(.stale)').forEach(function (c) {
      have.push(c.dataset.id + '.' + c.dataset.rev);
    });
    var hs = lists.querySelector('section.history');
    var q = '?page=' + encodeURIComponent(lists.dataset.page || '1') + '&have=' + encodeURIComponent(have.join(' ')) +
      '&h=' + encodeURIComponent(hs && hs.dataset.rev ? hs.dataset.rev : '');
    fetch('/ui/fragment' + q, { credentials: 'same-origin', headers: { 'Accept': 'text/html' } })
      .then(function (r) {
        if (r.status === 401) { location.href = '/login'; return null; }
        return r.ok ? r.text() : null;
      })
      .then(function (html) {
        if (html !== null && html !== undefined) { apply(html); tick(); }
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
    if (card) {
      card.querySelectorAll('button').forEach(function (b) { b.disabled = true; });
      delete card.dataset.rev; // not "as it is" any more: the next update sends it whole
    }
    var deny = form.action.endsWith('/deny');
    fetch(form.action, {
      method: 'POST', credentials: 'same-origin',
      headers: { 'X-CSRF-Token': csrf, 'Accept': 'application/json' },
      body: new URLSearchParams(new FormData(form))
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
