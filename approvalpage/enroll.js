// Registering a passkey for the local approval page: the options come from
// the server (go-webauthn), user verification required.
(function () {
  'use strict';
  function post(path, body) {
    return fetch(path, {
      method: 'POST', credentials: 'same-origin',
      headers: { 'Accept': 'application/json', 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body)
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (j) {
        if (!r.ok) { throw new Error(j.error || ('HTTP ' + r.status)); }
        return j;
      });
    });
  }
  document.addEventListener('DOMContentLoaded', function () {
    var b = document.getElementById('register');
    if (!b) { return; }
    var status = document.getElementById('status');
    b.addEventListener('click', function () {
      var base = location.pathname;
      post(base + '/begin').then(function (o) {
        return navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(o.publicKey) });
      }).then(function (cred) {
        return post(base + '/finish', cred.toJSON());
      }).then(function () {
        status.textContent = 'Passkey registered. Restart the server to use it; you can close this page.';
        status.hidden = false;
        b.hidden = true;
      }, function (e) {
        status.textContent = 'Not registered: ' + e.message;
        status.hidden = false;
      });
    });
  });
})();
