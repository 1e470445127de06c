// A virtualised, sortable <table>: only the rows in view (plus a margin)
// are in the DOM, between two spacer rows, so a 10,000-case table scrolls
// as fast as a 50-row one. Headers are buttons (keyboard sortable, with
// aria-sort); focus stays on the same link while the window moves.
import { add, h, clear } from './dom.js';

export function vtable({ id, columns, caption, empty = 'Nothing to show.', initialSort }) {
  let rows = [];
  let view = [];
  let sort = initialSort || null; // {key, dir: 1|-1}
  let filter = () => true;
  let pending = ''; // what is still loading, shown with the row count
  let rowH = 0;
  const OVERSCAN = 12;

  const ths = columns.map(c => {
    const th = h('th', { scope: 'col', class: c.num ? 'num' : '' });
    if (c.sort) {
      const b = h('button', { type: 'button', class: 'sort', dataset: { key: c.key } }, c.label, h('span', { 'aria-hidden': 'true', class: 'arrow' }));
      b.addEventListener('click', () => {
        sort = sort && sort.key === c.key ? { key: c.key, dir: -sort.dir } : { key: c.key, dir: 1 };
        apply();
      });
      add(th, b);
    } else add(th, c.label);
    return th;
  });
  const tbody = h('tbody');
  const tbl = h('table', { id }, caption ? h('caption', { class: 'visually-hidden' }, caption) : null, h('thead', {}, h('tr', {}, ths)), tbody);
  const box = h('div', { class: 'vscroll', tabindex: '0', role: 'region', 'aria-label': caption || 'table' }, tbl);
  const status = h('p', { class: 'muted small', 'aria-live': 'polite', id: `${id}-status` });
  const el = h('div', {}, box, status);
  let start = -1;
  let end = -1;

  function apply() {
    view = rows.filter(filter);
    if (sort) {
      const c = columns.find(c => c.key === sort.key);
      if (c && c.sort) {
        const dir = sort.dir;
        view.sort((a, b) => dir * c.sort(a, b));
      }
    }
    for (let i = 0; i < columns.length; i++) {
      const c = columns[i];
      if (!c.sort) continue;
      const on = sort && sort.key === c.key;
      ths[i].setAttribute('aria-sort', on ? (sort.dir > 0 ? 'ascending' : 'descending') : 'none');
      ths[i].querySelector('.arrow').textContent = on ? (sort.dir > 0 ? ' ▲' : ' ▼') : '';
    }
    status.textContent = (view.length === rows.length ? `${rows.length} rows` : `${view.length} of ${rows.length} rows`) +
      (pending ? ` (${pending}; sort and filter are applied again as rows arrive)` : '');
    if (pending) tbl.setAttribute('aria-busy', 'true'); else tbl.removeAttribute('aria-busy');
    start = end = -1;
    draw(true);
  }

  function draw(force) {
    const n = view.length;
    if (!rowH) rowH = 30;
    const top = box.scrollTop;
    const height = box.clientHeight || 600;
    const s = Math.max(0, Math.floor(top / rowH) - OVERSCAN);
    const e = Math.min(n, Math.ceil((top + height) / rowH) + OVERSCAN);
    if (!force && s === start && e === end) return;
    start = s; end = e;
    // Keep focus on the same row's same element across the redraw.
    const act = document.activeElement;
    let focusKey = null;
    if (act && tbody.contains(act)) {
      const tr = act.closest('tr');
      const i = [...tr.querySelectorAll('a,button,input')].indexOf(act);
      focusKey = tr && tr.dataset.key ? [tr.dataset.key, i] : null;
    }
    clear(tbody);
    if (!n) {
      add(tbody, h('tr', {}, h('td', { colspan: columns.length, class: 'muted' }, pending ? `${empty} More rows are loading.` : empty)));
      return;
    }
    const padTop = h('tr', { class: 'spacer', 'aria-hidden': 'true' }, h('td', { colspan: columns.length }));
    padTop.style.height = `${s * rowH}px`;
    add(tbody, padTop);
    for (let i = s; i < e; i++) {
      const r = view[i];
      const tr = h('tr', { dataset: { key: r.key } }, columns.map(c => h('td', { class: c.num ? 'num' : '' }, c.cell(r))));
      tr.setAttribute('aria-rowindex', String(i + 2));
      add(tbody, tr);
    }
    const padBottom = h('tr', { class: 'spacer', 'aria-hidden': 'true' }, h('td', { colspan: columns.length }));
    padBottom.style.height = `${(n - e) * rowH}px`;
    add(tbody, padBottom);
    tbl.setAttribute('aria-rowcount', String(n + 1));
    if (!rowH || rowH === 30) {
      const first = tbody.children[1];
      if (first && first.offsetHeight) {
        const measured = first.offsetHeight;
        if (Math.abs(measured - rowH) > 1) { rowH = measured; start = end = -1; draw(true); return; }
      }
    }
    if (focusKey) {
      const tr = [...tbody.children].find(t => t.dataset.key === focusKey[0]);
      const f = tr && tr.querySelectorAll('a,button,input')[focusKey[1]];
      if (f) f.focus({ preventScroll: true });
    }
  }

  let raf = 0;
  box.addEventListener('scroll', () => {
    if (raf) return;
    raf = requestAnimationFrame(() => { raf = 0; draw(false); });
  });

  return {
    el,
    // setRows replaces the rows and re-applies the sort and filter;
    // loading, when set, says the rows are not all there yet.
    setRows(r, loading = '') { rows = r; pending = loading; apply(); },
    setFilter(fn) { filter = fn; box.scrollTop = 0; apply(); },
    get size() { return view.length; },
    setNote(t) { status.textContent = t; },
  };
}
