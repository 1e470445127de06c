// My notifications, newest first, with links to what they are about;
// mark one or all read.
import { add, h, clear, when, enc } from '../dom.js';
import { get, post } from '../api.js';

export async function render(main, ctx) {
  document.title = 'Notifications · svc';
  const only = ctx.query.get('unread') === '1';
  const list = h('ul', { id: 'notifications', class: 'plain' });
  const all = h('button', { type: 'button', id: 'read-all' }, 'Mark all read');
  add(main, h('h1', {}, 'Notifications'),
    h('div', { class: 'actions' }, all,
      h('a', { href: only ? '#/notifications' : '#/notifications?unread=1' }, only ? 'Show all' : 'Show unread only')),
    list);
  const load = async () => {
    const items = await get(`/notifications?limit=100${only ? '&unread=1' : ''}`, { signal: ctx.signal });
    clear(list);
    if (!items.length) add(list, h('li', { class: 'muted' }, 'No notifications.'));
    for (const n of items) {
      // The service resolves each link (eval.NotificationLink.Href), so
      // the web view, the CLI and agents open the same page.
      const link = n.href || '';
      const read = h('button', { type: 'button', class: 'small', hidden: !!n.readAt }, 'Mark read');
      read.addEventListener('click', async () => { await post('/notifications/read', { ids: [n.id] }); load(); });
      add(list, h('li', { class: 'panel' },
        h('strong', {}, n.readAt ? '' : '● unread · ', n.title), ' ',
        h('span', { class: 'muted small' }, `${n.kind} · ${when(n.createdAt)}`),
        n.body ? h('p', {}, n.body) : null,
        h('div', { class: 'actions' }, link ? h('a', { href: link }, 'Open') : null, read)));
    }
    const unread = items.filter(n => !n.readAt).length;
    document.getElementById('unread').textContent = unread ? String(unread) : '';
  };
  all.addEventListener('click', async () => { await post('/notifications/read', { all: true }); load(); });
  await load();
  ctx.every(25000, async () => { await load(); return true; });
}
