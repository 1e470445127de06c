// Worlds (docs/sandboxes.md, "Worlds"): a sandbox session's file system
// kept as versions v1, v2, ... in the workspace's image store, each pinned
// by digest. The list is GET /worlds (each world with its latest version);
// a world's page is GET /worlds/:id (every version, oldest first, shown
// newest first) with the pinned references to copy.
import { add, h, enc, relTime, copyable, table } from '../dom.js';
import { get, ApiError } from '../api.js';
import { notFound } from '../app.js';

export async function render(main, ctx) {
  if (ctx.params.id) return detail(main, ctx, ctx.params.id);
  document.title = 'Worlds · svc';
  const list = await get('/worlds', { signal: ctx.signal });
  add(main, h('h1', {}, 'Worlds'),
    h('p', { class: 'muted' }, 'A world is a sandbox session\'s file system saved as numbered versions in this workspace\'s image store; ',
      'a session created with the world starts from its latest version. ', h('a', { href: '#/sandboxes' }, 'Sandboxes'), ' lists your sessions.'));
  if (!list.length) {
    add(main, h('div', { class: 'panel', id: 'worlds-empty' },
      h('p', {}, 'No worlds in this workspace yet. A world gets its first version when a session created with it is snapshotted or closed:'),
      h('pre', { class: 'mono' }, 'svc sandbox create --world shop --image busybox:1\nsvc sandbox exec SESSION_ID -- sh -c \'echo hi > /root/hello\'\nsvc sandbox snapshot SESSION_ID    # publishes shop:v1')));
    return;
  }
  add(main, h('table', { id: 'worlds' },
    h('caption', { class: 'visually-hidden' }, 'Worlds with their latest version'),
    h('thead', {}, h('tr', {}, ['World', 'Latest', 'Published by', 'When', 'Pinned reference'].map(c => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, list.map(w => {
      const l = w.latest || {};
      return h('tr', { dataset: { id: w.id } },
        h('td', {}, h('a', { class: 'mono', href: `#/worlds/${enc(w.id)}` }, w.id)),
        h('td', { class: 'mono' }, l.version ? `v${l.version}` : '—'),
        h('td', {}, l.publishedBy || '—'),
        h('td', {}, relTime(l.created)),
        h('td', {}, l.ref ? copyable(l.ref, `the reference of ${w.id} v${l.version}`) : '—'));
    }))));
}

async function detail(main, ctx, id) {
  document.title = `${id} · Worlds · svc`;
  let w;
  try {
    w = await get(`/worlds/${enc(id)}`, { signal: ctx.signal });
  } catch (e) {
    // A malformed id is a 400 naming the rule; it is not a world here.
    if (e instanceof ApiError && (e.status === 404 || e.status === 400)) return notFound(main, `World ${id}`);
    throw e;
  }
  const versions = (w.versions || []).slice().reverse();
  const latest = w.latest || versions[0] || {};
  add(main,
    h('p', { class: 'small' }, h('a', { href: '#/worlds' }, 'Worlds'), ' / '),
    h('h1', {}, 'World ', h('span', { class: 'mono' }, w.id)),
    h('p', {}, `${versions.length} version${versions.length === 1 ? '' : 's'}; the latest is v${latest.version}. Start a session from it${versions.length > 1 ? ', or from an older one' : ''}:`),
    h('pre', { class: 'mono', id: 'world-start' }, `svc sandbox create --world ${w.id}${versions.length > 1 ? `\nsvc sandbox create --world ${w.id} --world-version v${versions[1].version}` : ''}`),
    h('h2', {}, 'Versions'),
    table([{ label: 'Version' }, { label: 'Digest' }, { label: 'Published by' }, { label: 'When' }, { label: 'Pinned reference' }],
      versions.map(v => [
        h('span', { class: 'mono' }, `v${v.version}`, v.version === latest.version ? h('span', { class: 'muted small' }, ' (latest)') : null),
        h('span', { class: 'mono', title: v.digest }, short(v.digest)),
        v.publishedBy || '—',
        relTime(v.created),
        copyable(v.ref, `the reference of ${w.id} v${v.version}`)]), `Versions of ${w.id}, newest first`));
  const tbl = main.querySelector('table');
  if (tbl) tbl.id = 'world-versions';
}

function short(d) {
  const m = /^(sha256:)([0-9a-f]{12})[0-9a-f]*$/.exec(d || '');
  return m ? `${m[1]}${m[2]}…` : d || '—';
}
