// The scorecards list: status, progress while running, pass rate, dataset
// and harness versions, with filters kept in the URL's fragment (never a
// credential there). Running batches refresh themselves.
import { add, h, clear, badge, ref, pct, when, enc } from '../dom.js';
import { call, NEXT_CURSOR } from '../api.js';
import { go } from '../app.js';

const PAGE = 50;
const STATUSES = ['', 'queued', 'running', 'succeeded', 'failed', 'cancelled', 'superseded'];

export async function render(main, ctx) {
  document.title = 'Scorecards · svc';
  const q = ctx.query;
  const f = {
    status: q.get('status') || '', kind: q.get('kind') || '',
    datasetId: q.get('datasetId') || '', harnessId: q.get('harnessId') || '',
  };
  const status = h('select', { name: 'status' }, STATUSES.map(s => h('option', { value: s, selected: s === f.status }, s || 'any')));
  const kind = h('select', { name: 'kind' }, ['', 'scorecard', 'experiment'].map(s => h('option', { value: s, selected: s === f.kind }, s || 'any')));
  const dataset = h('input', { name: 'datasetId', value: f.datasetId, size: 14 });
  const harness = h('input', { name: 'harnessId', value: f.harnessId, size: 14 });
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter scorecards' },
    h('label', {}, 'Status', status), h('label', {}, 'Kind', kind),
    h('label', {}, 'Dataset id', dataset), h('label', {}, 'Harness id', harness),
    h('button', { type: 'submit' }, 'Filter'));
  form.addEventListener('submit', e => {
    e.preventDefault();
    const p = new URLSearchParams();
    for (const [k, v] of [['status', status.value], ['kind', kind.value], ['datasetId', dataset.value.trim()], ['harnessId', harness.value.trim()]]) if (v) p.set(k, v);
    go(`#/scorecards${p.toString() ? '?' + p : ''}`);
  });

  const selected = new Set();
  const diffBtn = h('button', { type: 'button', id: 'diff-selected', disabled: true }, 'Diff the two selected');
  diffBtn.addEventListener('click', () => {
    const [a, b] = [...selected];
    go(`#/diff?baseline=${enc(a)}&candidate=${enc(b)}`);
  });
  const body = h('tbody');
  const more = h('button', { type: 'button', hidden: true }, 'Load more');
  const note = h('p', { class: 'muted small', 'aria-live': 'polite' });
  add(main, 
    h('h1', {}, 'Scorecards'), form,
    h('div', { class: 'actions' }, diffBtn, h('span', { class: 'muted small' }, 'Select a baseline, then a candidate.')),
    h('table', { id: 'scorecards' },
      h('caption', { class: 'visually-hidden' }, 'Scorecards, newest first'),
      h('thead', {}, h('tr', {}, ['', 'Scorecard', 'Status', 'Progress', 'Pass rate', 'Dataset', 'Harness', 'Created']
        .map((c, i) => h('th', { scope: 'col', class: i === 4 ? 'num' : '' }, c === '' ? h('span', { class: 'visually-hidden' }, 'Select') : c)))),
      body),
    more, note);

  let rows = [];
  let cursor = '';
  const params = () => {
    const p = new URLSearchParams({ limit: String(PAGE) });
    for (const [k, v] of Object.entries(f)) if (v) p.set(k, v);
    return p;
  };
  const load = async (after) => {
    const p = params();
    if (after) p.set('cursor', after);
    const res = await call('GET', `/scorecards?${p}`, undefined, { signal: ctx.signal });
    return { list: res.data || [], next: res.headers.get(NEXT_CURSOR) || '' };
  };
  const draw = () => {
    // A refresh keeps keyboard focus on the same control of the same row.
    const act = document.activeElement;
    const tr = act && body.contains(act) ? act.closest('tr') : null;
    const focus = tr ? [tr.dataset.id, [...tr.querySelectorAll('a,input')].indexOf(act)] : null;
    clear(body);
    if (!rows.length) add(body, h('tr', {}, h('td', { colspan: 8, class: 'muted' }, 'No scorecards match.')));
    for (const sc of rows) add(body, row(sc, selected, () => {
      diffBtn.disabled = selected.size !== 2;
    }));
    diffBtn.disabled = selected.size !== 2;
    if (focus) {
      const again = [...body.children].find(r => r.dataset.id === focus[0]);
      const el = again && again.querySelectorAll('a,input')[focus[1]];
      if (el) el.focus({ preventScroll: true });
    }
  };
  const first = await load('');
  rows = first.list;
  cursor = first.list.length < PAGE ? '' : first.next;
  more.hidden = !cursor;
  draw();
  more.addEventListener('click', async () => {
    const page = await load(cursor);
    rows = rows.concat(page.list);
    cursor = page.list.length < PAGE ? '' : page.next;
    more.hidden = !cursor;
    draw();
  });
  // Refresh the rows on screen while any of them is live.
  ctx.every(2000, async () => {
    if (!rows.some(sc => sc.status === 'running' || sc.status === 'queued')) return true;
    const fresh = await load('');
    const byId = new Map(fresh.list.map(sc => [sc.id, sc]));
    rows = rows.map(sc => byId.get(sc.id) || sc);
    for (const sc of fresh.list) if (!rows.some(r => r.id === sc.id)) rows.unshift(sc);
    draw();
    note.textContent = `Updated ${new Date().toLocaleTimeString()}`;
    return true;
  });
}

function passRate(sc) {
  const m = sc.summary && sc.summary.casePass;
  if (m && typeof m.passRate === 'number') return m.passRate;
  const p = sc.progress;
  return p && p.done ? p.passed / p.done : undefined;
}

function row(sc, selected, changed) {
  const p = sc.progress || {};
  const live = sc.status === 'running' || sc.status === 'queued';
  const box = h('input', { type: 'checkbox', 'aria-label': `Select ${sc.id} for a diff`, checked: selected.has(sc.id) });
  box.addEventListener('change', () => {
    if (box.checked) selected.add(sc.id); else selected.delete(sc.id);
    changed();
  });
  const total = p.total || 0;
  return h('tr', { dataset: { id: sc.id } },
    h('td', {}, box),
    h('td', {}, h('a', { href: `#/scorecards/${enc(sc.id)}`, class: 'mono' }, sc.id), sc.kind === 'experiment' ? h('span', { class: 'muted small' }, ' experiment') : null),
    h('td', {}, badge(sc.status)),
    h('td', {}, total ? [
      h('progress', { max: total, value: p.done || 0, 'aria-label': `${sc.id} progress` }),
      h('div', { class: 'small muted' }, `${p.done || 0}/${total} done${live && p.running ? `, ${p.running} running` : ''}`),
    ] : h('span', { class: 'muted' }, '—')),
    h('td', { class: 'num' }, pct(passRate(sc))),
    h('td', { class: 'mono small' }, ref(sc.dataset)),
    h('td', { class: 'mono small' }, ref(sc.harness)),
    h('td', { class: 'small' }, when(sc.createdAt)));
}
