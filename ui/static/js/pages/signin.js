// Sign-in: "Sign in with <issuer>" (the OIDC redirect, oidc.js) when the
// service has a client id for the view, an API key (ak_...), or a pasted
// OIDC access token, checked with GET /me and kept in sessionStorage only.
// A service that does not require sign-in (svc dev) also offers to go on
// as its dev principal.
import { add, h } from '../dom.js';
import { get, session, ApiError } from '../api.js';
import { go, signedIn } from '../app.js';
import * as oidc from '../oidc.js';

export async function render(main, ctx) {
  document.title = 'Sign in · svc';
  const next = safeNext(ctx.query.get('next'));
  const msg = h('p', { id: 'signin-error', class: 'error', role: 'alert' });
  const input = h('input', {
    id: 'key', name: 'key', type: 'password', autocomplete: 'off', spellcheck: 'false', required: true,
    'aria-describedby': 'key-help signin-error', placeholder: 'ak_…',
  });
  const oidcNote = h('p', { id: 'oidc', class: 'muted', hidden: true });
  const oidcBox = h('div', { id: 'oidc-box', hidden: true });
  const oidcMsg = h('p', { id: 'oidc-error', class: 'error', role: 'alert' }, oidc.takeError());
  const devBox = h('div', { id: 'dev', hidden: true });
  const form = h('form', { method: 'post', novalidate: true },
    h('label', { for: 'key' }, 'API key or access token', input),
    h('p', { id: 'key-help', class: 'muted small' },
      'Kept in this browser tab only (session storage) and sent as an Authorization header; never put in a URL.'),
    oidcNote,
    h('div', {}, h('button', { class: 'primary', type: 'submit' }, 'Sign in')),
    msg);
  form.addEventListener('submit', async e => {
    e.preventDefault();
    msg.textContent = '';
    const token = input.value.trim();
    if (!token) { msg.textContent = 'Enter an API key (it starts with ak_) or an access token.'; input.focus(); return; }
    try {
      const me = await get('/me', { token });
      session.setWorkspace('');
      session.signIn(token, token.startsWith('ak_') ? 'api-key' : 'token');
      input.value = '';
      signedIn(me);
      go(next);
    } catch (err) {
      msg.textContent = err instanceof ApiError && err.status === 401
        ? 'The service did not accept this key or token (unknown, revoked or expired).'
        : `Sign-in failed: ${err.message}`;
      input.focus();
    }
  });
  add(main, h('section', { class: 'signin', 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title' }, 'Sign in to svc'), oidcMsg, oidcBox, form, devBox));
  input.focus();

  // What the service offers: an OIDC issuer (RFC 9728 metadata), and
  // whether it answers without a credential at all.
  // A public OIDC client registered for the view (SVC_UI_OIDC_CLIENT_ID):
  // the redirect sign-in, above the paste field.
  oidc.config().then(cfg => {
    if (!cfg) return;
    const b = h('button', { type: 'button', class: 'primary', id: 'oidc-signin' }, `Sign in with ${cfg.issuer}`);
    b.addEventListener('click', async () => {
      b.disabled = true;
      oidcMsg.textContent = '';
      try { await oidc.startSignIn(cfg, next); } catch (err) { oidcMsg.textContent = err.message; b.disabled = false; }
    });
    add(oidcBox, b, h('p', { class: 'muted small' }, 'You are sent to the issuer and back here; the token it gives is kept in this tab only.'),
      h('p', { class: 'muted' }, 'Or use an API key or a pasted access token:'));
    oidcBox.hidden = false;
  }, err => {
    oidcMsg.textContent = `OIDC sign-in is unavailable: ${err.message}`;
  });
  get('/.well-known/oauth-protected-resource', { token: '' }).then(m => {
    const issuers = (m && m.authorization_servers) || [];
    if (issuers.length) {
      oidcNote.hidden = false;
      oidcNote.textContent = `This service also accepts OIDC access tokens issued by ${issuers.join(', ')}: paste one above.`;
    }
  }).catch(() => {});
  get('/me', { token: '' }).then(me => {
    devBox.hidden = false;
    add(devBox, h('p', { class: 'muted' }, `This service does not require sign-in (development mode): you can continue as ${me.subject} in workspace ${me.workspace}.`),
      h('button', { type: 'button', id: 'dev-continue', onclick: () => { session.signIn('', 'dev'); signedIn(me); go(next); } }, 'Continue without a key'));
  }).catch(() => {});
}

// safeNext keeps the redirect inside the app.
function safeNext(n) {
  return n && n.startsWith('#/') && !n.startsWith('#/signin') ? n : '#/scorecards';
}
