// A metric's trend across the scorecards of a dataset, read from
// POST /scorecards/query (line, by day, one series per harness version),
// drawn as SVG with the same numbers in a table.
import { add, h, s, num, pct, enc, table } from '../dom.js';
import { get, post } from '../api.js';
import { go } from '../app.js';

export async function render(main, ctx) {
  document.title = 'Trend · svc';
  const dataset = ctx.query.get('dataset') || '';
  const metric = ctx.query.get('metric') || 'casePass';
  const measure = ctx.query.get('measure') || 'passRate';
  const by = ctx.query.get('by') === 'week' ? 'week' : 'day';
  const datasets = await get('/datasets', { signal: ctx.signal }).catch(() => []);
  const ids = [...new Set((datasets || []).map(d => d.id).filter(Boolean))];
  const ds = h('select', { id: 'trend-dataset', name: 'dataset' }, h('option', { value: '' }, 'choose…'),
    ids.map(i => h('option', { value: i, selected: i === dataset }, i)));
  if (dataset && !ids.includes(dataset)) add(ds, h('option', { value: dataset, selected: true }, dataset));
  const m = h('input', { id: 'trend-metric', name: 'metric', value: metric, size: 18, class: 'mono' });
  const me = h('select', { id: 'trend-measure', name: 'measure' }, ['passRate', 'mean', 'latest', 'count'].map(x => h('option', { value: x, selected: x === measure }, x)));
  const per = h('select', { id: 'trend-by', name: 'by' }, ['day', 'week'].map(x => h('option', { value: x, selected: x === by }, x)));
  const form = h('form', { class: 'filters', 'aria-label': 'Trend' },
    h('label', {}, 'Dataset', ds), h('label', {}, 'Metric', m), h('label', {}, 'Measure', me), h('label', {}, 'Per', per),
    h('button', { type: 'submit', class: 'primary' }, 'Show'));
  form.addEventListener('submit', e => {
    e.preventDefault();
    go(`#/trend?dataset=${enc(ds.value)}&metric=${enc(m.value.trim() || 'casePass')}&measure=${enc(me.value)}&by=${per.value}`);
  });
  add(main, h('h1', {}, 'Trend'), form);
  if (!dataset) { add(main, h('p', { class: 'muted' }, 'Choose a dataset.')); return; }
  const res = await post('/scorecards/query', {
    filters: { datasetId: [dataset] }, groupBy: [by], pivotBy: 'harnessVersion', metric, measure, viz: 'line', limit: 1000,
  }, { signal: ctx.signal });
  const series = res.series || [];
  const fmt = measure === 'passRate' ? pct : num;
  add(main, h('p', { class: 'muted small' }, `${res.matched} scorecards of ${dataset} (succeeded only), ${res.groups} ${by}${res.groups === 1 ? "" : "s"}; ${metric} ${measure} per ${by}, one line per harness version.`));
  if (!series.length || !series.some(x => x.points.some(p => p.y !== null))) {
    add(main, h('p', { id: 'trend-empty' }, 'No finished scorecard of this dataset has this metric yet.'));
    return;
  }
  add(main, chart(series, measure, by), table(
    [{ label: by === 'week' ? 'Week' : 'Day' }, ...series.map(x => ({ label: x.name, num: true }))],
    series[0].points.map((p, i) => [p.x, ...series.map(x => fmt(x.points[i] ? x.points[i].y : null))]), 'Trend values'));
}

const DASH = ['', '6 4', '2 3', '8 3 2 3', '1 5'];
const MARK = ['circle', 'rect', 'diamond', 'triangle', 'cross'];

function chart(series, measure, by) {
  const W = 900; const H = 320; const L = 56; const R = 170; const T = 16; const B = 40;
  const xs = series[0].points.map(p => p.x);
  let lo = Infinity; let hi = -Infinity;
  for (const x of series) for (const p of x.points) if (p.y !== null) { lo = Math.min(lo, p.y); hi = Math.max(hi, p.y); }
  if (measure === 'passRate') { lo = 0; hi = 1; }
  if (hi - lo < 1e-9) { hi = lo + 1; }
  const X = i => L + (xs.length < 2 ? (W - L - R) / 2 : ((W - L - R) * i) / (xs.length - 1));
  const Y = v => T + (H - T - B) * (1 - (v - lo) / (hi - lo));
  const ticks = [0, 0.25, 0.5, 0.75, 1].map(f => lo + f * (hi - lo));
  const label = v => (measure === 'passRate' ? `${Math.round(v * 100)}%` : num(v, 2));
  const marker = (kind, x, y, cls) => {
    if (kind === 'rect') return s('rect', { x: x - 4, y: y - 4, width: 8, height: 8, class: cls });
    if (kind === 'diamond') return s('path', { d: `M${x} ${y - 5}L${x + 5} ${y}L${x} ${y + 5}L${x - 5} ${y}Z`, class: cls });
    if (kind === 'triangle') return s('path', { d: `M${x} ${y - 5}L${x + 5} ${y + 4}L${x - 5} ${y + 4}Z`, class: cls });
    if (kind === 'cross') return s('path', { d: `M${x - 4} ${y - 4}L${x + 4} ${y + 4}M${x + 4} ${y - 4}L${x - 4} ${y + 4}`, class: cls, 'stroke-width': 2 });
    return s('circle', { cx: x, cy: y, r: 4, class: cls });
  };
  const colors = ['var(--llm)', 'var(--tool)', 'var(--warn)', 'var(--pass)', 'var(--fail)'];
  return s('svg', { class: 'chart', id: 'trend-chart', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': `Trend chart of ${series.length} series over ${xs.length} ${by}s; the table below has the values` },
    ticks.map(v => [s('line', { class: 'grid', x1: L, x2: W - R, y1: Y(v), y2: Y(v) }), s('text', { x: L - 6, y: Y(v) + 4, 'text-anchor': 'end' }, label(v))]),
    s('line', { class: 'axis', x1: L, x2: W - R, y1: H - B, y2: H - B }),
    xs.map((x, i) => (xs.length <= 12 || i % Math.ceil(xs.length / 12) === 0) ? s('text', { x: X(i), y: H - B + 16, 'text-anchor': 'middle' }, x) : null),
    series.map((se, k) => {
      const col = colors[k % colors.length];
      const pts = se.points.map((p, i) => (p.y === null ? null : [X(i), Y(p.y)]));
      let d = ''; let pen = false;
      for (const p of pts) { if (!p) { pen = false; continue; } d += `${pen ? 'L' : 'M'}${p[0].toFixed(1)} ${p[1].toFixed(1)}`; pen = true; }
      const line = s('path', { d, class: 'series', 'stroke-dasharray': DASH[k % DASH.length] });
      line.style.stroke = col;
      const marks = pts.map(p => (p ? marker(MARK[k % MARK.length], p[0], p[1], '') : null)).filter(Boolean);
      for (const el of marks) { el.style.fill = col; el.style.stroke = col; }
      const g = s('g', {}, line, marks,
        s('text', { x: W - R + 8, y: T + 14 + k * 18 }, `${['●', '■', '◆', '▲', '✕'][k % 5]} ${se.name}`));
      return g;
    }));
}
