// Sandbox sessions (docs/sandboxes.md): the member's live sessions
// (GET /sandboxes) and recently ended ones (the sandbox runs among their
// latest runs, GET /runs), and one session: its record and live meta
// (GET /sandboxes/:id), the world versions it published, and the exec
// events of its trajectory (live from the run's log stream `event`,
// sealed at close on GET /runs/:id/trajectory). Sessions are personal:
// another member's is "not found", as the API answers.
import { add, h, clear, badge, when, enc, relTime, copyable, table } from '../dom.js';
import { get, ApiError } from '../api.js';
import { notFound } from '../app.js';

// RECENT is how many of the member's latest runs are searched for ended
// sessions.
const RECENT = 100;

export async function render(main, ctx) {
  if (ctx.params.id) return detail(main, ctx, ctx.params.id);
  document.title = 'Sandboxes · svc';
  const note = h('p', { class: 'muted small', 'aria-live': 'polite' });
  const box = h('div', { id: 'sandboxes-box' });
  add(main, h('h1', {}, 'Sandboxes'),
    h('p', { class: 'muted' }, 'Your sandbox sessions: long-lived containers you run commands in. Only you see them. ',
      h('a', { href: '#/worlds' }, 'Worlds'), ' are their saved file systems.'),
    box, note);
  const load = async () => {
    const [live, runs] = await Promise.all([
      get('/sandboxes', { signal: ctx.signal }),
      get(`/runs?limit=${RECENT}`, { signal: ctx.signal }).catch(e => { if (e.name === 'AbortError') throw e; return []; }),
    ]);
    const seen = new Set(live.map(s => s.id));
    const ended = (Array.isArray(runs) ? runs : []).filter(r => r.kind === 'sandbox' && r.session && !seen.has(r.id));
    const rows = [...live, ...ended];
    clear(box);
    if (!rows.length) {
      add(box, h('div', { class: 'panel', id: 'sandboxes-empty' },
        h('p', {}, 'No sandbox sessions yet. Create one from an image in the workspace\'s image store:'),
        h('pre', { class: 'mono' }, 'svc image import ./busybox.tar --as busybox:1\nsvc sandbox create --image busybox:1 --ttl 30m\nsvc sandbox exec SESSION_ID -- echo hello'),
        h('p', { class: 'small muted' }, 'Or POST /sandboxes {"image": "busybox:1"}; with --world ID the session starts from a world and saves into it.')));
      note.textContent = '';
      return;
    }
    add(box, h('table', { id: 'sandboxes' },
      h('caption', { class: 'visually-hidden' }, 'Sandbox sessions: live first, then recently ended'),
      h('thead', {}, h('tr', {}, ['Session', 'Runs', 'Status', 'Expires', 'Busy', 'Closed reason', 'Created']
        .map(c => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows.map(row))));
    note.textContent = `${live.length} live, ${ended.length} ended among your latest ${RECENT} runs.`;
    return true;
  };
  await load();
  ctx.every(10000, load).catch(() => {});
}

// runsWhat is what a session runs: world@v<n> (the version it started
// from, which its image reference pins), a new world's first image, or
// its image.
function runsWhat(r) {
  const s = r.session || {};
  const w = s.world && s.world.id;
  if (!w) return h('span', { class: 'mono' }, s.image || '—');
  const link = text => h('a', { class: 'mono', href: `#/worlds/${enc(w)}` }, text);
  const m = /^[^:@]+:v(\d+)@/.exec(s.image || '');
  if (s.image && s.image.startsWith(`${w}:v`) && m) return link(`${w}@v${m[1]}`);
  if (s.world.version) return link(`${w}@v${s.world.version}`);
  return h('span', {}, link(w), h('span', { class: 'muted small' }, ' (new world from '), h('span', { class: 'mono small' }, s.image || '?'), h('span', { class: 'muted small' }, ')'));
}

function open(r) { return r.live ? r.live.open : !['succeeded', 'failed', 'cancelled'].includes(r.status); }

function row(r) {
  const s = r.session || {};
  const live = open(r);
  return h('tr', { dataset: { id: r.id, open: String(live) } },
    h('td', {}, h('a', { class: 'mono', href: `#/sandboxes/${enc(r.id)}` }, r.id)),
    h('td', {}, runsWhat(r)),
    h('td', {}, badge(r.status)),
    h('td', {}, live ? relTime((r.live && r.live.expiresAt) || s.expiresAt, { class: 'expires' }) : h('span', { class: 'muted' }, 'ended ', relTime(s.closedAt || r.finishedAt))),
    h('td', {}, !live ? '—' : (r.live ? r.live.busy : s.busy) ? 'busy' : 'idle'),
    h('td', {}, s.closedReason || '—'),
    h('td', {}, relTime(r.createdAt)));
}

async function detail(main, ctx, id) {
  document.title = `${id} · Sandboxes · svc`;
  let v;
  try {
    v = await get(`/sandboxes/${enc(id)}`, { signal: ctx.signal });
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return notFound(main, `Sandbox session ${id}`);
    throw e;
  }
  const head = h('h1', {});
  const meta = h('dl', { class: 'facts', id: 'sandbox-meta' });
  const snaps = h('section', { id: 'sandbox-snapshots', 'aria-labelledby': 'snaps-title' });
  const execs = h('section', { id: 'sandbox-execs', 'aria-labelledby': 'execs-title' });
  add(main, h('p', { class: 'small' }, h('a', { href: '#/sandboxes' }, 'Sandboxes'), ' / '), head, meta, snaps, execs);

  const show = view => {
    const s = view.session || {};
    const l = view.live || {};
    add(clear(head), 'Sandbox ', h('span', { class: 'mono' }, view.id), ' ', badge(view.status));
    const fact = (k, val) => [h('dt', {}, k), h('dd', {}, val === undefined || val === null || val === '' ? '—' : val)];
    add(clear(meta),
      fact('Runs', runsWhat(view)),
      fact('Image digest', s.imageDigest ? h('span', { class: 'mono' }, s.imageDigest) : null),
      fact('Open', l.open ? 'yes' : 'no'),
      fact('Expires', l.open ? [relTime(l.expiresAt, { id: 'sandbox-expires' }), ` (${when(l.expiresAt)}, ttl ${s.ttlSeconds || '?'} s)`] : null),
      fact('Busy', l.busy ? 'busy: a task is running' : 'idle'),
      fact('Closed', s.closedReason ? [s.closedReason, ' ', relTime(s.closedAt)] : null),
      fact('Hibernate', s.world ? (s.hibernate ? 'close and expiry save it into its world' : 'no') : null),
      fact('Harness', l.harness ? h('span', { class: 'mono' }, typeof l.harness === 'string' ? l.harness : JSON.stringify(l.harness)) : 'none booted'),
      fact('Tasks', (l.tasks || []).length ? h('ul', { class: 'plain' }, l.tasks.map(t => h('li', { class: 'mono small' }, typeof t === 'string' ? t : JSON.stringify(t)))) : 'none'),
      fact('Agent', s.agent ? `${s.agent.id}${s.agent.conversation ? ` (conversation ${s.agent.conversation})` : ''}` : null),
      fact('Created', [relTime(view.createdAt), view.createdBy ? ` by ${view.createdBy}` : '']),
      fact('Container', s.computeId ? h('span', { class: 'mono' }, `${s.computeId}${s.host ? ` on ${s.host}` : ''}`) : null),
      fact('Placement', view.placement ? view.placement.where : null));
    const list = s.snapshots || [];
    add(clear(snaps), h('h2', { id: 'snaps-title' }, 'Snapshots'),
      list.length ? table([{ label: 'Version' }, { label: 'Reference' }, { label: 'When' }, { label: 'Why' }],
        list.slice().reverse().map(x => [`v${x.version}`, copyable(x.ref, `the reference of v${x.version}`), relTime(x.at), x.reason || '—']), 'Snapshots')
        : h('p', { class: 'muted' }, s.world
          ? `None yet: svc sandbox snapshot ${view.id} publishes the next version of ${s.world.id}${s.hibernate ? '; closing does too' : ''}.`
          : 'None: only a session created with a world (svc sandbox create --world ID) saves snapshots.'));
  };
  show(v);

  add(execs, h('h2', { id: 'execs-title' }, 'Commands'));
  const note = h('p', { class: 'muted small', 'aria-live': 'polite' });
  const body = h('tbody');
  add(execs, note, h('table', { id: 'sandbox-exec-events' },
    h('caption', { class: 'visually-hidden' }, 'The commands run in the session, in order'),
    h('thead', {}, h('tr', {}, ['#', 'When', 'Command', 'Exit', 'Duration', 'Output', 'By'].map(c => h('th', { scope: 'col' }, c)))),
    body));
  const events = [];
  let after = 0;
  let sealed = false;
  const draw = () => {
    clear(body);
    const ex = events.filter(e => e.kind === 'tool_call' && e.name === 'exec');
    ex.forEach((e, i) => add(body, execRow(e, i + 1)));
    const other = events.filter(e => !(e.kind === 'tool_call' && e.name === 'exec')).map(e => e.kind);
    if (!ex.length) add(body, h('tr', {}, h('td', { colspan: 7, class: 'muted' }, `No command yet: svc sandbox exec ${id} -- COMMAND runs one.`)));
    note.textContent = `${ex.length} command${ex.length === 1 ? '' : 's'}${other.length ? `; other events: ${other.join(', ')}` : ''}${sealed ? ' (the sealed trajectory).' : ' (live).'}`;
  };
  const poll = async () => {
    try {
      return await readEvents();
    } catch (e) {
      if (e.name === 'AbortError') return false;
      note.textContent = '';
      add(note, h('span', { class: 'error', role: 'alert' }, `Could not read the session's commands: ${e.message}`));
      return true;
    }
  };
  const readEvents = async () => {
    if (!v.live || !v.live.open) {
      try {
        const t = await get(`/runs/${enc(id)}/trajectory`, { signal: ctx.signal });
        events.length = 0;
        events.push(...(t.events || []));
        sealed = true;
        draw();
        return false;
      } catch (e) {
        if (!(e instanceof ApiError && e.status === 404)) throw e;
        // Not sealed yet (teardown under way): the live stream has them.
      }
    }
    const l = await get(`/runs/${enc(id)}/logs?after=${after}&limit=5000`, { signal: ctx.signal });
    for (const c of l.chunks || []) {
      if (c.stream !== 'event') continue;
      try { events.push(JSON.parse(c.data)); } catch { /* not an event */ }
    }
    after = l.lastSeq || after;
    draw();
    const was = v.live && v.live.open;
    v = await get(`/sandboxes/${enc(id)}`, { signal: ctx.signal });
    show(v);
    if (was && !(v.live && v.live.open)) { events.length = 0; after = 0; }
    return true;
  };
  await ctx.every(3000, poll);
}

function execRow(e, n) {
  let input = {};
  let output = {};
  try { input = typeof e.input === 'string' ? JSON.parse(e.input) : e.input || {}; } catch { input = {}; }
  try { output = typeof e.output === 'string' ? JSON.parse(e.output) : e.output || {}; } catch { output = {}; }
  const out = `${output.stdout || ''}${output.stderr ? `${output.stdout ? '\n' : ''}[stderr] ${output.stderr}` : ''}`;
  const code = output.exitCode;
  return h('tr', { class: 'exec', dataset: { exit: String(code) } },
    h('td', { class: 'num' }, String(n)),
    h('td', {}, relTime(e.ts)),
    h('td', {}, h('code', { class: 'mono' }, input.command || '—')),
    h('td', { class: 'num' }, code === undefined ? '—' : h('span', { class: code === 0 ? 's-pass' : 's-fail' }, `${code === 0 ? '✓' : '✗'} ${code}${output.timedOut ? ' (timed out)' : ''}`)),
    h('td', { class: 'num' }, typeof e.durationMs === 'number' ? `${e.durationMs.toFixed(1)} ms` : '—'),
    h('td', {}, out ? h('pre', { class: 'mono exec-output' }, out.length > 4000 ? `${out.slice(0, 4000)}…` : out) : h('span', { class: 'muted' }, '(none)')),
    h('td', { class: 'small' }, input.by || '—'));
}
