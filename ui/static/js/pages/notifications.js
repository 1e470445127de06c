// My notifications (docs/notifications.md), newest first, unread ones
// marked, each linked to what it is about; mark one or all read
// (POST /notifications/read). An agent's approval request leads to the
// approvals inbox; it leaves the feed when the approval is decided or
// expires (deleted, not marked read).
import { add, h, clear, when, relTime, announce } from '../dom.js';
import { get, post } from '../api.js';

// LABEL is what the link of a kind says.
const LABEL = {
  agent_approval_requested: 'Review in the approvals inbox',
  run_completed: 'Open the run', run_failed: 'Open the run',
  scorecard_completed: 'Open the scorecard', scorecard_failed: 'Open the scorecard',
  schedule_completed: 'Open the scorecard', schedule_failed: 'Open the scorecard',
};

export async function render(main, ctx) {
  document.title = 'Notifications · svc';
  const only = ctx.query.get('unread') === '1';
  const list = h('ul', { id: 'notifications', class: 'plain' });
  const all = h('button', { type: 'button', id: 'read-all' }, 'Mark all read');
  const msg = h('p', { role: 'status', class: 'small', id: 'notifications-msg' });
  add(main, h('h1', {}, 'Notifications'),
    h('div', { class: 'actions' }, all,
      h('a', { href: only ? '#/notifications' : '#/notifications?unread=1' }, only ? 'Show all' : 'Show unread only'),
      h('a', { href: '#/approvals' }, 'Approvals inbox')),
    msg, list);
  const failed = (what, e) => {
    if (e && e.name === 'AbortError') return;
    msg.className = 'error small';
    msg.textContent = `${what} failed: ${e && e.message ? e.message : e}`;
  };
  const markRead = async body => {
    msg.className = 'small';
    msg.textContent = '';
    try {
      const r = await post('/notifications/read', body);
      announce(`${r && typeof r.marked === 'number' ? r.marked : 0} marked read`);
    } catch (e) { failed('Marking read', e); return; }
    await load().catch(e => failed('Reading the notifications', e));
  };
  const load = async () => {
    const items = await get(`/notifications?limit=100${only ? '&unread=1' : ''}`, { signal: ctx.signal });
    clear(list);
    if (!items.length) add(list, h('li', { class: 'muted', id: 'notifications-empty' }, only ? 'No unread notifications.' : 'No notifications.'));
    for (const n of items) {
      // The service resolves each link (eval.NotificationLink.Href, spec
      // §6), so the web view, the CLI and agents open the same page.
      const link = n.href || '';
      const read = h('button', { type: 'button', class: 'small', hidden: !!n.readAt }, 'Mark read');
      read.addEventListener('click', () => markRead({ ids: [n.id] }));
      add(list, h('li', { class: `panel notification${n.readAt ? '' : ' unread'}`, dataset: { id: n.id, kind: n.kind } },
        h('strong', {}, n.readAt ? '' : h('span', { class: 'unread-mark' }, '● unread · '), n.title), ' ',
        h('span', { class: 'muted small' }, `${n.kind} · `, relTime(n.createdAt), ` (${when(n.createdAt)})`),
        n.body ? h('p', {}, n.body) : null,
        h('div', { class: 'actions' }, link ? h('a', { href: link, class: 'open' }, LABEL[n.kind] || 'Open') : null, read)));
    }
    const unread = items.filter(x => !x.readAt).length;
    if (!only || items.length < 100) document.getElementById('unread').textContent = unread ? String(unread) : '';
  };
  all.addEventListener('click', () => markRead({ all: true }));
  await load();
  let first = true; // every() runs at once: the read above was that run
  ctx.every(25000, async () => { if (first) { first = false; return true; } await load(); return true; }).catch(() => {});
}
