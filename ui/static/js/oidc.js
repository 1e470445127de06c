// OIDC sign-in in the browser: an authorization code flow with PKCE (S256)
// for a public client. startSignIn sends the tab to the issuer with a fresh
// state, nonce and code verifier kept in sessionStorage; finishSignIn runs
// when the issuer sends the tab back to /ui/?code=…&state=…: it removes
// code and state from the address at once (history.replaceState), checks
// the state, and has the service redeem the code (POST /ui/oidc/token,
// which checks the ID token and its nonce). The access token is then kept
// like an API key: sessionStorage only, an Authorization header on every
// call, never in a URL.
import { get, post, session } from './api.js';

const PENDING = 'svc.oidc';

// lastError is the reason the last return from the issuer did not sign
// in; the sign-in page shows it once.
export let lastError = '';
export function takeError() { const e = lastError; lastError = ''; return e; }

function b64url(bytes) {
  let s = '';
  for (const b of new Uint8Array(bytes)) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function random() { return b64url(crypto.getRandomValues(new Uint8Array(32))); }

// redirectUri is where the issuer sends the tab back: this origin's /ui/,
// which must be registered for the client at the issuer.
export function redirectUri() { return `${location.origin}/ui/`; }

// config reads the service's OIDC client settings; null when the service
// offers no OIDC sign-in (404).
export async function config() {
  try {
    return await get('/ui/oidc/config', { token: '' });
  } catch (e) {
    if (e.status === 404) return null;
    throw e;
  }
}

// startSignIn leaves for the issuer's authorization endpoint; next is the
// page to show after signing in.
export async function startSignIn(cfg, next) {
  if (!crypto.subtle) throw new Error('OIDC sign-in needs a secure context: open the view over HTTPS (or on localhost).');
  const state = random();
  const nonce = random();
  const verifier = random();
  const challenge = b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
  sessionStorage.setItem(PENDING, JSON.stringify({ state, nonce, verifier, next, issuer: cfg.issuer, redirectUri: redirectUri() }));
  const u = new URL(cfg.authorizationEndpoint);
  for (const [k, v] of Object.entries({
    response_type: 'code', client_id: cfg.clientId, redirect_uri: redirectUri(), scope: cfg.scopes.join(' '),
    state, nonce, code_challenge: challenge, code_challenge_method: 'S256',
  })) u.searchParams.set(k, v);
  location.assign(u.href);
}

// returning reports whether the address is the issuer's answer.
export function returning() {
  const q = new URLSearchParams(location.search);
  return q.has('state') && (q.has('code') || q.has('error'));
}

// finishSignIn handles the issuer's answer. It resolves {me, next} once
// signed in, or {next} with lastError set.
export async function finishSignIn() {
  const q = new URLSearchParams(location.search);
  // Nothing of the answer stays in the address, the history or a Referer.
  history.replaceState(null, '', location.pathname);
  let pending = null;
  try { pending = JSON.parse(sessionStorage.getItem(PENDING) || 'null'); } catch { pending = null; }
  sessionStorage.removeItem(PENDING); // one answer per sign-in
  const next = (pending && pending.next) || '#/scorecards';
  const fail = msg => { lastError = msg; return { next }; };
  if (!pending || !pending.state || q.get('state') !== pending.state) {
    return fail('This sign-in answer was not started from this tab (its state does not match), so it was ignored. Sign in again.');
  }
  if (q.has('iss') && q.get('iss') !== pending.issuer) {
    return fail(`The sign-in answer names issuer ${q.get('iss')}, not ${pending.issuer}; it was ignored.`);
  }
  if (q.has('error')) {
    return fail(`The issuer did not sign you in: ${q.get('error')}${q.get('error_description') ? ` (${q.get('error_description')})` : ''}.`);
  }
  try {
    const tok = await post('/ui/oidc/token',
      { code: q.get('code'), codeVerifier: pending.verifier, redirectUri: pending.redirectUri, nonce: pending.nonce }, { token: '' });
    const me = await get('/me', { token: tok.accessToken });
    session.setWorkspace('');
    session.signIn(tok.accessToken, 'oidc');
    return { me, next };
  } catch (e) {
    return fail(e.status === 401
      ? `The service did not accept the issuer's token: ${e.message}`
      : `Sign-in failed: ${e.message}`);
  }
}
