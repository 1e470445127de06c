// A resource of the tools around svc (a view, schedule, issue, cycle,
// project or initiative) that a notification names: svc keeps none of
// them, so the page says what the notification is about and where to look.
import { add, h } from '../dom.js';

const NOUN = { views: 'View', schedules: 'Schedule', issues: 'Issue', cycles: 'Cycle', projects: 'Project', initiatives: 'Initiative' };

export async function render(main, ctx) {
  const noun = NOUN[ctx.kind] || ctx.kind;
  document.title = `${noun} ${ctx.params.id} · svc`;
  add(main,
    h('h1', {}, `${noun} `, h('span', { class: 'mono', id: 'resource-id' }, ctx.params.id)),
    h('p', { class: 'muted', id: 'elsewhere' },
      `A notification names this ${noun.toLowerCase()}. This service keeps scorecards, runs, datasets, harnesses, judges and runtimes; `
      + `${ctx.kind} live in the tool that sent the notification.`),
    h('p', {}, h('a', { href: '#/notifications' }, 'Back to the notifications')));
}
