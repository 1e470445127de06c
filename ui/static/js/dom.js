// Small DOM helpers: h() builds elements (text is always a text node, so
// nothing the API returns is ever parsed as HTML), and formatters.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k in el && typeof v !== 'string') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

const SVGNS = 'http://www.w3.org/2000/svg';

// s() builds an SVG element.
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// add appends children to el as h() does: arrays flattened, null, undefined
// and false left out, strings as text.
export function add(el, ...children) { append(el, children); return el; }

export function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); return el; }

// Status words shown with a symbol, so a state never depends on colour.
const SYMBOL = {
  pass: '✓', succeeded: '✓', fail: '✗', failed: '✗', error: '!', block: '✗', blocked_missing: '✗',
  running: '▶', queued: '…', pending: '…', approved: '✓', denied: '✗', expired: '⌛', cancelled: '■', superseded: '■', not_comparable: '≠', skipped: '–',
};

export function badge(state, label) {
  const st = String(state || 'unknown');
  return h('span', { class: `badge s-${st}` }, `${SYMBOL[st] || '·'} ${label || st}`);
}

export function ref(r) { return r && r.id ? `${r.id}@${r.version || '?'}` : '—'; }

export function pct(x, digits = 1) {
  return typeof x === 'number' && isFinite(x) ? `${(x * 100).toFixed(digits)}%` : '—';
}

export function num(x, digits = 3) {
  if (typeof x !== 'number' || !isFinite(x)) return '—';
  return Number.isInteger(x) ? String(x) : x.toFixed(digits);
}

export function signed(x, digits = 3) {
  if (typeof x !== 'number' || !isFinite(x)) return '—';
  return (x > 0 ? '+' : '') + x.toFixed(digits);
}

export function when(t) {
  if (!t) return '—';
  const d = new Date(t);
  return isNaN(d) ? String(t) : d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

export function ms(x) {
  if (typeof x !== 'number' || !isFinite(x)) return '—';
  return x < 1000 ? `${Math.round(x)} ms` : `${(x / 1000).toFixed(2)} s`;
}

export function usd(x) {
  return typeof x === 'number' && x > 0 ? `$${x.toFixed(x < 0.01 ? 5 : 3)}` : '—';
}

// announce speaks a short message to screen readers.
export function announce(msg) {
  const live = document.getElementById('live');
  if (live) live.textContent = msg;
}

// table builds a plain table from column definitions {label, num?} and rows
// of cells.
export function table(cols, rows, caption) {
  return h('table', {},
    caption ? h('caption', { class: 'visually-hidden' }, caption) : null,
    h('thead', {}, h('tr', {}, cols.map(c => h('th', { scope: 'col', class: c.num ? 'num' : '' }, c.label)))),
    h('tbody', {}, rows.map(r => h('tr', {}, r.map((cell, i) => h('td', { class: cols[i] && cols[i].num ? 'num' : '' }, cell))))));
}

export function enc(s) { return encodeURIComponent(s); }

// ago writes time t relative to now ("in 4 min", "3 h ago"); the
// absolute time goes in the element's title.
export function ago(t, now = Date.now()) {
  if (!t) return '—';
  const d = new Date(t);
  if (isNaN(d)) return String(t);
  const s = Math.round((d.getTime() - now) / 1000);
  const a = Math.abs(s);
  const n = a < 60 ? `${a} s` : a < 3600 ? `${Math.round(a / 60)} min` : a < 172800 ? `${Math.round(a / 3600)} h` : `${Math.round(a / 86400)} d`;
  return a < 5 ? 'now' : s > 0 ? `in ${n}` : `${n} ago`;
}

// relTime is a <time> showing ago(t), with the absolute time as its
// datetime and title.
export function relTime(t, attrs = {}) {
  const d = t ? new Date(t) : null;
  const iso = d && !isNaN(d) ? d.toISOString() : undefined;
  return h('time', { ...attrs, datetime: iso, title: iso ? when(t) : undefined }, ago(t));
}

// copyable is text in code with a Copy button beside it: the clipboard
// when the browser lets the page write it, else the text is selected for
// the user to copy.
export function copyable(text, label) {
  const code = h('code', { class: 'mono copy-text' }, text);
  const btn = h('button', { type: 'button', class: 'small copy', 'aria-label': `Copy ${label || text}`, dataset: { copy: text } }, 'Copy');
  btn.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text);
      btn.textContent = 'Copied';
      announce(`Copied ${label || text}`);
    } catch {
      const r = document.createRange();
      r.selectNodeContents(code);
      const sel = getSelection();
      sel.removeAllRanges();
      sel.addRange(r);
      btn.textContent = 'Selected: press Ctrl+C';
    }
    setTimeout(() => { btn.textContent = 'Copy'; }, 2000);
  });
  return h('span', { class: 'copyable' }, code, ' ', btn);
}
