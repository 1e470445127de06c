// The shell: routes on the URL fragment (#/scorecards/sc_1), keeps the
// signed-in principal, and gives each page a context whose polls and
// requests stop when the user navigates away.
import { session, get, ApiError, setUnauthorizedHandler } from './api.js';
import { add, h, clear, announce } from './dom.js';

const routes = [
  ['/signin', () => import('./pages/signin.js'), 'signin', true],
  // The workspace root: the scorecards, or, where a notification about an
  // agent's conversation leads (#/?conversation=c_1, spec §6), that
  // conversation's approvals.
  ['/', () => import('./pages/root.js'), 'root'],
  ['/scorecards', () => import('./pages/scorecards.js'), 'scorecards'],
  ['/scorecards/:id', () => import('./pages/scorecard.js'), 'scorecards'],
  ['/scorecards/:id/cases/:caseId', () => import('./pages/case.js'), 'scorecards'],
  ['/runs/:runId', () => import('./pages/case.js'), 'scorecards'],
  ['/diff', () => import('./pages/diff.js'), 'diff'],
  ['/trend', () => import('./pages/trend.js'), 'trend'],
  ['/datasets', () => import('./pages/registries.js'), 'datasets'],
  ['/datasets/:id', () => import('./pages/registries.js'), 'datasets'],
  ['/harnesses', () => import('./pages/registries.js'), 'harnesses'],
  ['/harnesses/:id', () => import('./pages/registries.js'), 'harnesses'],
  ['/judges', () => import('./pages/registries.js'), 'judges'],
  ['/judges/:id', () => import('./pages/registries.js'), 'judges'],
  ['/runtimes', () => import('./pages/registries.js'), 'runtimes'],
  ['/runtimes/:id', () => import('./pages/registries.js'), 'runtimes'],
  ['/sandboxes', () => import('./pages/sandboxes.js'), 'sandboxes'],
  ['/sandboxes/:id', () => import('./pages/sandboxes.js'), 'sandboxes'],
  ['/worlds', () => import('./pages/worlds.js'), 'worlds'],
  ['/worlds/:id', () => import('./pages/worlds.js'), 'worlds'],
  ['/notifications', () => import('./pages/notifications.js'), 'notifications'],
  ['/approvals', () => import('./pages/approvals.js'), 'approvals'],
  ['/approvals/:id', () => import('./pages/approvals.js'), 'approvals'],
  // Resources of the tools around svc that a notification may name (spec
  // §6): the page says what it is and that svc does not keep it.
  ['/views/:id', () => import('./pages/elsewhere.js'), 'notifications'],
  ['/schedules/:id', () => import('./pages/elsewhere.js'), 'notifications'],
  ['/issues/:id', () => import('./pages/elsewhere.js'), 'notifications'],
  ['/cycles/:id', () => import('./pages/elsewhere.js'), 'notifications'],
  ['/projects/:id', () => import('./pages/elsewhere.js'), 'notifications'],
  ['/initiatives/:id', () => import('./pages/elsewhere.js'), 'notifications'],
];

function match(path) {
  const parts = path.split('/').filter(Boolean);
  for (const [pattern, load, nav, pub] of routes) {
    const want = pattern.split('/').filter(Boolean);
    if (want.length !== parts.length) continue;
    const params = {};
    let ok = true;
    for (let i = 0; i < want.length; i++) {
      if (want[i].startsWith(':')) {
        try { params[want[i].slice(1)] = decodeURIComponent(parts[i]); } catch { ok = false; }
      } else if (want[i] !== parts[i]) ok = false;
    }
    if (ok) return { load, nav, params, pub, kind: pattern.split('/')[1] || 'scorecards' };
  }
  return null;
}

let current = null; // the context of the page on screen
let me = null;

// Context is what a page gets: params, query, the principal, and timers and
// an abort signal that die with the page.
class Context {
  constructor(route, query) {
    this.params = route.params;
    this.query = query;
    this.kind = route.kind;
    this.alive = true;
    this.ctl = new AbortController();
    this.signal = this.ctl.signal;
    this.timers = new Set();
  }
  // every runs fn now and then again delay ms after each run ends, while
  // the page is shown and fn does not return false.
  every(delay, fn) {
    const tick = async () => {
      if (!this.alive) return;
      let again = true;
      try { again = (await fn()) !== false; } catch (e) { if (!this.alive) return; console.warn(e); }
      if (again && this.alive) {
        const t = setTimeout(() => { this.timers.delete(t); tick(); }, delay);
        this.timers.add(t);
      }
    };
    return tick();
  }
  // whoami resolves the signed-in principal (read once per sign-in).
  whoami() { return me ? Promise.resolve(me) : this.mePromise || loadMe(); }
  close() {
    this.alive = false;
    this.ctl.abort();
    for (const t of this.timers) clearTimeout(t);
  }
  // can reports whether the principal may do an action of this weight:
  // run (member+, write scope) or admin.
  can(what) {
    const p = me;
    if (!p) return false;
    const roles = p.roles || [];
    const scopes = p.scopes || [];
    const scoped = scopes.length > 0;
    if (what === 'run') return (roles.includes('member') || roles.includes('admin')) && (!scoped || scopes.includes('write') || scopes.includes('admin'));
    if (what === 'admin') return roles.includes('admin') && (!scoped || scopes.includes('admin'));
    return true;
  }
}

export function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/scorecards';
  const [path, qs] = raw.split('?', 2);
  return { path, query: new URLSearchParams(qs || '') };
}

export function go(hash) { if (location.hash !== hash) location.hash = hash; else render(); }

async function loadMe() {
  try {
    me = await get('/me');
  } catch (e) {
    me = null;
    throw e;
  }
  return me;
}

function renderWho() {
  const who = clear(document.getElementById('who'));
  const nav = document.getElementById('nav');
  if (!me) { nav.hidden = true; pollUnread(); return; }
  nav.hidden = false;
  pollUnread();
  add(who, 
    h('span', { class: 'small', id: 'principal' }, `${me.subject} · `, h('strong', {}, me.workspace), ` · ${(me.roles || []).join(', ')}`),
  );
  get('/workspaces').then(list => {
    const names = (Array.isArray(list) ? list : (list && list.workspaces) || [])
      .map(w => (typeof w === 'string' ? w : w.workspace || w.id || w.name)).filter(Boolean);
    if (names.length > 1) {
      const sel = h('select', { 'aria-label': 'Workspace', id: 'workspace' },
        names.map(n => h('option', { value: n, selected: n === me.workspace }, n)));
      sel.addEventListener('change', () => { session.setWorkspace(sel.value); me = null; boot(); });
      who.prepend(sel);
    }
  }).catch(() => {});
  add(who, h('button', { type: 'button', id: 'signout', onclick: () => { session.clear(); me = null; renderWho(); go('#/signin'); } }, 'Sign out'));
}

// pollUnread keeps the header's unread count, about every 25 s as the
// spec's web client does, and the count of pending approvals beside it.
let unreadTimer = 0;
function pollUnread() {
  clearTimeout(unreadTimer);
  if (!me) { document.getElementById('unread').textContent = ''; document.getElementById('pending-approvals').textContent = ''; return; }
  const count = (id, items) => {
    const n = Array.isArray(items) ? items.length : 0;
    document.getElementById(id).textContent = n ? String(n) : '';
  };
  Promise.all([
    get('/notifications?unread=1&limit=100').then(items => count('unread', items)).catch(() => {}),
    get('/approvals?status=pending').then(items => count('pending-approvals', items)).catch(() => {}),
  ]).finally(() => { if (me) unreadTimer = setTimeout(pollUnread, 25000); });
}

function markNav(nav) {
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (a.dataset.nav === nav) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
}

export function notFound(main, what) {
  add(clear(main), 
    h('h1', {}, 'Not found'),
    h('p', { class: 'notfound', role: 'alert' }, `${what || 'This page'} was not found in this workspace.`),
    h('p', {}, h('a', { href: '#/scorecards' }, 'Back to the scorecards')));
  document.title = 'Not found · svc';
}

export function showError(main, e) {
  if (e instanceof ApiError && e.status === 404) return notFound(main);
  if (e && e.name === 'AbortError') return;
  add(clear(main), 
    h('h1', {}, 'Something went wrong'),
    h('p', { class: 'error', role: 'alert' }, e && e.message ? e.message : String(e)),
    e && e.requestId ? h('p', { class: 'muted' }, `Request id ${e.requestId}`) : null);
}

let renderSeq = 0;
async function render() {
  const seq = ++renderSeq;
  const { path, query } = parseHash();
  const route = match(path);
  const main = document.getElementById('main');
  if (current) { current.close(); current = null; }
  if (!route) { markNav(''); notFound(main); return; }
  if (!route.pub && !session.signedIn()) {
    go(`#/signin?next=${encodeURIComponent(location.hash || '#/scorecards')}`);
    return;
  }
  // The page's module and its first read start while /me is read; the
  // page awaits ctx.whoami() only where it needs the principal.
  const loading = route.load();
  loading.catch(() => {});
  markNav(route.nav === 'root' ? (query.get('conversation') ? 'approvals' : 'scorecards') : route.nav);
  const ctx = new Context(route, query);
  current = ctx;
  if (!route.pub && !me) {
    ctx.mePromise = loadMe();
    ctx.mePromise.then(() => { if (seq === renderSeq) renderWho(); }, e => {
      if (ctx.alive && !(e instanceof ApiError && e.status === 401)) { ctx.close(); showError(main, e); }
    });
  }
  try {
    const mod = await loading;
    if (seq !== renderSeq) return;
    clear(main);
    await mod.render(main, ctx);
  } catch (e) {
    if (ctx.alive) showError(main, e);
  }
  if (ctx.alive && document.activeElement === document.body) main.focus({ preventScroll: true });
}

async function boot() {
  // Back from the OIDC issuer (/ui/?code=…&state=…): finish signing in
  // before any page renders, so the code never reaches a page or the
  // history.
  if (!bootedOIDC && location.search) {
    bootedOIDC = true;
    const oidc = await import('./oidc.js');
    if (oidc.returning()) {
      add(clear(document.getElementById('main')), h('p', { class: 'muted', id: 'oidc-finishing' }, 'Signing in…'));
      const r = await oidc.finishSignIn();
      if (r.me) {
        signedIn(r.me);
        location.hash = r.next;
        return; // hashchange renders
      }
      location.hash = `#/signin?next=${encodeURIComponent(r.next)}`;
      return;
    }
  }
  render();
}
let bootedOIDC = false;

export function signedIn(principal) {
  me = principal;
  renderWho();
  announce(`Signed in as ${principal.subject} in workspace ${principal.workspace}`);
}

setUnauthorizedHandler(() => {
  session.clear();
  me = null;
  renderWho();
  go(`#/signin?next=${encodeURIComponent(location.hash || '#/scorecards')}`);
});

window.addEventListener('hashchange', render);
document.getElementById('skip').addEventListener('click', e => { e.preventDefault(); document.getElementById('main').focus(); });
boot();
