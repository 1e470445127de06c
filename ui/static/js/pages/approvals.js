// The approvals inbox (docs/approvals.md): agents' calls that a workspace
// policy parked until a person decides. GET /approvals?status= lists them
// (pending by default; approved, denied, expired or all by the tabs),
// GET /approvals/:id is one, and POST /approvals/:id/decide
// {decision: approve | deny, reason?} settles one, once. Each approval
// shows who asked (the agent, its conversation, the member whose
// credential it used), the call (tool, method and path), when it expires,
// and the arguments exactly as the agent sent them: the stored body,
// re-indented token by token from the response text (key order, numbers
// and duplicate keys as sent), always as text, never as HTML (it is
// attacker-written). The workspace root with ?conversation= (where an
// agent_approval_requested notification leads, spec §6) is this list
// narrowed to that conversation.
import { add, h, clear, badge, when, enc, relTime, announce } from '../dom.js';
import { call, post, ApiError } from '../api.js';
import { notFound } from '../app.js';
import { rawBodies, pretty } from '../rawjson.js';

const STATUSES = [['pending', 'Pending'], ['approved', 'Approved'], ['denied', 'Denied'], ['expired', 'Expired'], ['', 'All']];

export async function render(main, ctx) {
  if (ctx.params.id) return detail(main, ctx, ctx.params.id);
  const conversation = ctx.query.get('conversation') || '';
  const status = ctx.query.has('status') ? ctx.query.get('status') : 'pending';
  document.title = `${conversation ? `Conversation ${conversation} · ` : ''}Approvals · svc`;
  const qs = s => {
    const q = new URLSearchParams();
    if (conversation) q.set('conversation', conversation);
    q.set('status', s);
    return `#/${conversation ? '' : 'approvals'}?${q}`;
  };
  const note = h('p', { class: 'muted small', 'aria-live': 'polite', id: 'approvals-note' });
  const list = h('div', { id: 'approvals' });
  add(main, h('h1', {}, 'Approvals'),
    conversation
      ? h('p', { id: 'approvals-conversation' }, 'The approvals of agent conversation ', h('code', { class: 'mono' }, conversation), '. ',
        h('a', { href: '#/approvals' }, 'Every approval'), ' · ', h('a', { href: '#/scorecards' }, 'Scorecards'))
      : h('p', { class: 'muted' }, 'An agent\'s call that a workspace policy names waits here until a person approves or denies it (deletes, moves, cancels, key and member changes by default). ',
        'Approved, it runs once, as the member whose credential the agent used.'),
    h('nav', { class: 'tabs', 'aria-label': 'Approvals by status' },
      STATUSES.map(([s, label]) => h('a', { href: qs(s), 'aria-current': s === status ? 'true' : undefined, dataset: { status: s } }, label))),
    note, list);
  const cards = new Map(); // id -> {el, key}
  // A card decided here stays on this page, showing how it settled, even
  // when the tab's status no longer lists it.
  const decidedHere = new Set();
  // make draws an approval's card; a decision made on it redraws it in
  // place.
  const make = (a, body) => card(a, body, ctx, fresh => {
    const c = cards.get(a.id);
    if (!c) return;
    decidedHere.add(a.id);
    const n = make(fresh.a, fresh.body);
    c.el.replaceWith(n);
    c.el = n;
    c.key = cardKey(fresh.a);
  });
  const load = async () => {
    const path = `/approvals${status ? `?status=${enc(status)}` : ''}`;
    const res = await call('GET', path, undefined, { signal: ctx.signal });
    await ctx.whoami().catch(() => {}); // who may decide
    const items = Array.isArray(res.data) ? res.data : [];
    const bodies = rawBodies(res.text);
    const shown = [];
    items.forEach((a, i) => {
      if (!conversation || (a.agent && a.agent.conversation) === conversation || (a.origin && a.origin.conversationId) === conversation) shown.push([a, bodies[i]]);
    });
    // A card is kept while its approval is unchanged, so a reason being
    // typed survives the poll.
    const keep = new Set();
    const els = shown.map(([a, body]) => {
      keep.add(a.id);
      const k = cardKey(a);
      const had = cards.get(a.id);
      if (had && had.key === k) return had.el;
      const el = make(a, body);
      cards.set(a.id, { el, key: k });
      return el;
    });
    for (const id of [...cards.keys()]) {
      if (keep.has(id)) continue;
      if (decidedHere.has(id)) els.unshift(cards.get(id).el); else cards.delete(id);
    }
    const same = list.children.length === els.length && els.every((e, i) => list.children[i] === e);
    if (!els.length) {
      if (!list.querySelector('#approvals-empty')) {
        add(clear(list), h('p', { class: 'panel muted', id: 'approvals-empty' },
          `No ${status ? `${status} ` : ''}approvals${conversation ? ` in conversation ${conversation}` : ''}.`,
          status === 'pending' ? ' An agent\'s call parks here when a policy names its tool (GET /approval-policies shows which).' : ''));
      }
    } else if (!same) {
      clear(list);
      add(list, els);
    }
    const pending = items.filter(a => a.status === 'pending').length;
    if (status === 'pending' || status === '') {
      const count = document.getElementById('pending-approvals');
      if (count) count.textContent = pending ? String(pending) : '';
    }
    note.textContent = `${els.length} shown${conversation ? ` of ${items.length} in the workspace` : ''}${status === '' ? `; ${pending} pending` : ''} (the newest 100).`;
    return true;
  };
  await load();
  let first = true; // every() runs at once: the read above was that run
  ctx.every(10000, () => (first ? (first = false, true) : load())).catch(() => {});
}

// cardKey changes when an approval's card must be redrawn.
function cardKey(a) { return `${a.status}|${a.result ? a.result.status : ''}|${a.delivered}|${a.resumed}`; }

async function detail(main, ctx, id) {
  document.title = `${id} · Approvals · svc`;
  const get1 = async () => {
    const res = await call('GET', `/approvals/${enc(id)}`, undefined, { signal: ctx.signal });
    return { a: res.data, body: rawBodies(res.text)[0] };
  };
  let cur;
  try {
    [cur] = await Promise.all([get1(), ctx.whoami().catch(() => {})]);
  } catch (e) {
    if (e instanceof ApiError && (e.status === 404 || e.status === 400)) return notFound(main, `Approval ${id}`);
    throw e;
  }
  add(main, h('p', { class: 'small' }, h('a', { href: '#/approvals' }, 'Approvals'), ' / '), h('h1', {}, 'Approval ', h('span', { class: 'mono' }, id)));
  let el = null;
  let key = '';
  const draw = fresh => {
    const k = cardKey(fresh.a);
    if (el && k === key) return;
    const n = card(fresh.a, fresh.body, ctx, draw, true);
    if (el) el.replaceWith(n); else add(main, n);
    el = n;
    key = k;
  };
  draw(cur);
  // Poll while something may still change: a pending approval (a decision
  // elsewhere, the expiry) or an approved one whose call has not run yet.
  ctx.every(3000, async () => {
    if (!(cur.a.status === 'pending' || (cur.a.status === 'approved' && !cur.a.result))) return false;
    cur = await get1();
    draw(cur);
    return true;
  }).catch(() => {});
}

// card shows one approval; onDecided({a, body}) redraws it after a
// decision made here.
function card(a, body, ctx, onDecided, single = false) {
  const agent = a.agent || {};
  const origin = a.origin || {};
  const fact = (k, v) => [h('dt', {}, k), h('dd', {}, v === undefined || v === null || v === '' ? '—' : v)];
  const call = a.method ? `${a.method} ${a.path || ''}` : null;
  const el = h('article', { class: 'panel approval', dataset: { id: a.id, status: a.status }, 'aria-labelledby': `ap-${a.id}` },
    h('h2', { id: `ap-${a.id}` },
      single ? null : h('a', { class: 'mono', href: `#/approvals/${enc(a.id)}` }, a.id), single ? null : ' ',
      badge(a.status), ' ',
      h('span', {}, `${agent.name || agent.id || 'An agent'} wants to `), h('code', { class: 'mono' }, a.tool || call || 'act')),
    h('dl', { class: 'facts' },
      fact('Agent', agent.id ? [h('span', { class: 'agent-name' }, agent.name || agent.id), ' ', h('span', { class: 'mono small' }, `(id ${agent.id})`)] : null),
      fact('Conversation', agent.conversation ? h('a', { class: 'mono', href: `#/?conversation=${enc(agent.conversation)}` }, agent.conversation) : null),
      fact('Member', a.member),
      fact('Call', call ? h('code', { class: 'mono call' }, call) : null),
      fact('Tool', a.tool ? h('code', { class: 'mono' }, a.tool) : null),
      fact('Through', origin.source ? `${origin.source === 'mcp' ? 'MCP' : 'the HTTP API'}${a.source === 'agent-run-events' ? ' (reported by the agent runtime)' : ''}` : null),
      fact('Policy', a.policy),
      a.team ? fact('Team', a.team) : null,
      a.runId ? fact('Agent run', h('span', { class: 'mono' }, a.runId)) : null,
      fact('Asked', relTime(a.createdAt)),
      fact('Expires', a.status === 'pending'
        ? [relTime(a.expiresAt, { class: 'expires' }), ` (${when(a.expiresAt)}); then ${a.onExpiry === 'halt' ? 'refused, and the agent\'s conversation is halted' : 'refused'}`]
        : when(a.expiresAt))),
    h('h3', { class: 'small' }, 'Arguments, as the agent sent them'),
    body ? h('pre', { class: 'mono args' }, pretty(body))
      : h('p', { class: 'muted small args-none' }, a.method ? 'No body: the call is its method and path above.' : 'None.'));
  if (a.status === 'pending') add(el, decideForm(a, ctx, onDecided));
  else add(el, settled(a));
  return el;
}

function decideForm(a, ctx, onDecided) {
  const box = h('div', { class: 'decide' });
  if (!ctx.can('run')) {
    add(box, h('p', { class: 'muted small' }, 'Deciding needs the member role and a write scope.'));
    return box;
  }
  const reason = h('input', { type: 'text', name: 'reason', maxlength: '2000', size: '48', placeholder: 'optional' });
  const approve = h('button', { type: 'button', class: 'primary', dataset: { decision: 'approve' } }, 'Approve');
  const deny = h('button', { type: 'button', class: 'danger', dataset: { decision: 'deny' } }, 'Deny');
  const msg = h('p', { role: 'status', class: 'small' });
  const decide = async decision => {
    approve.disabled = deny.disabled = true;
    msg.className = 'small';
    msg.textContent = decision === 'approve' ? 'Approving…' : 'Denying…';
    try {
      const res = await call('POST', `/approvals/${enc(a.id)}/decide`, { decision, ...(reason.value.trim() ? { reason: reason.value.trim() } : {}) });
      announce(`Approval ${a.id} ${res.data.status}`);
      onDecided({ a: res.data, body: rawBodies(res.text)[0] });
    } catch (e) {
      // 409: someone decided it first, or it expired; the message says how.
      msg.className = 'error small';
      msg.setAttribute('role', 'alert');
      msg.textContent = `${decision === 'approve' ? 'Approve' : 'Deny'} failed: ${e.message}`;
      approve.disabled = deny.disabled = e instanceof ApiError && e.status === 409;
    }
  };
  approve.addEventListener('click', () => decide('approve'));
  deny.addEventListener('click', () => decide('deny'));
  add(box, h('div', { class: 'actions' }, h('label', {}, 'Reason', reason), approve, deny), msg);
  return box;
}

function settled(a) {
  const fact = (k, v) => [h('dt', {}, k), h('dd', {}, v === undefined || v === null || v === '' ? '—' : v)];
  const r = a.result;
  const ran = a.status !== 'approved' ? 'no: it did not run'
    : r ? [h('span', { class: r.status < 400 ? 's-pass' : 's-fail' }, `${r.status < 400 ? '✓' : '✗'} ${r.status}`),
      a.executedAt ? [' ', relTime(a.executedAt)] : null]
      : 'running…';
  return h('dl', { class: 'facts settled' },
    a.status === 'expired'
      ? fact('Decision', `expired at ${when(a.decidedAt || a.expiresAt)} with nobody deciding${a.halted ? '; the agent\'s conversation is halted' : ''}`)
      : fact('Decision', [h('strong', {}, a.status), ' by ', h('span', { class: 'decided-by' }, a.decidedBy || '?'), ' ', relTime(a.decidedAt), ` (${when(a.decidedAt)})`]),
    a.reason ? fact('Reason', a.reason) : null,
    fact('Ran', ran),
    a.status === 'approved' ? fact('Delivered', a.delivered ? 'yes: the waiting call got the answer' : 'no') : null,
    a.status === 'approved' ? fact('Resumed', a.resumed ? 'yes: the caller had stopped waiting, so the service ran it' : 'no') : null,
    r && r.body !== undefined ? fact('Answer', h('details', {}, h('summary', {}, `${r.contentType || 'body'}`),
      h('pre', { class: 'mono result' }, typeof r.body === 'string' ? r.body : JSON.stringify(r.body, null, 2)))) : null);
}
