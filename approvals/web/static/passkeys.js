// Passkeys: registering one, and approving a call with one. The ceremony
// options come from the server (go-webauthn); for an approval the
// challenge is derived from the call, so the authenticator signs this exact
// call and the gate can check it. Loaded before app.js so that its submit
// handler (capture phase) takes approvals of cards that need a passkey.
(function () {
  'use strict';
  function csrf() { return document.body.getAttribute('data-csrf'); }
  function post(path, body) {
    return fetch(path, {
      method: 'POST', credentials: 'same-origin',
      headers: { 'X-CSRF-Token': csrf(), 'Accept': 'application/json', 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body)
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (j) {
        if (!r.ok) { throw new Error(j.error || ('HTTP ' + r.status)); }
        return j;
      });
    });
  }
  function say(msg, bad) {
    var t = document.getElementById('toast');
    if (t) { t.textContent = msg; t.className = bad ? 'show error' : 'show'; }
  }
  function register() {
    return post('/passkeys/register/begin').then(function (o) {
      return navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(o.publicKey) });
    }).then(function (cred) {
      return post('/passkeys/register/finish', cred.toJSON());
    });
  }
  function approve(id) {
    var base = '/passkeys/approve/' + encodeURIComponent(id);
    return post(base + '/begin').then(function (o) {
      return navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(o.publicKey) });
    }).then(function (cred) {
      return post(base + '/finish', cred.toJSON());
    });
  }
  window.mcpsafePasskey = { register: register, approve: approve };

  document.addEventListener('DOMContentLoaded', function () {
    var b = document.getElementById('register-passkey');
    if (b) {
      b.addEventListener('click', function () {
        register().then(function () { say('Passkey registered', false); },
          function (e) { say('Passkey not registered: ' + e.message, true); });
      });
    }
  });
  document.addEventListener('submit', function (ev) {
    var form = ev.target;
    var card = form.closest('article[data-passkey]');
    if (!card || !form.action.endsWith('/approve')) { return; }
    ev.preventDefault();
    ev.stopImmediatePropagation();
    approve(card.getAttribute('data-id')).then(function (j) {
      say((j.status === 'approved' ? 'Approved with a passkey: ' : 'Passkey approval recorded: ') + (j.tool || ''), false);
    }, function (e) { say('Not approved: ' + e.message, true); });
  }, true);
})();
