// The local approval page with passkeys: Approve first asks the
// authenticator to sign this call (the request options, challenge
// included, are the page's own, derived from the call), then posts the
// assertion with the form. Deny needs no passkey.
(function () {
  'use strict';
  document.addEventListener('submit', function (ev) {
    var form = ev.target;
    var opts = form.getAttribute('data-passkey');
    if (!opts || !ev.submitter || ev.submitter.value !== 'approve' || form.getAttribute('data-signed')) { return; }
    ev.preventDefault();
    var status = document.getElementById('passkey-status');
    status.textContent = 'Waiting for your passkey…';
    navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(JSON.parse(opts)) }).then(function (cred) {
      form.querySelector('input[name=assertion]').value = JSON.stringify(cred.toJSON());
      form.setAttribute('data-signed', '1');
      form.requestSubmit(ev.submitter);
    }, function (e) {
      status.textContent = 'Not approved: the passkey was not used (' + e.name + '). Try Approve again, or Deny.';
    });
  });
})();
