// One scorecard: facts, a live progress bar while it runs, the summary per
// metric, cancel and re-score for those allowed, and the per-case table
// with a verdict per trial. The table is read page by page (the first page
// small, for a fast first paint) and virtualised, so 10,000 cases stay
// usable; sort and filter are re-applied as each page arrives, so they
// cover the whole scorecard once it is loaded (and say so until then).
import { add, h, clear, badge, ref, pct, num, when, ms, enc, announce, table } from '../dom.js';
import { call, get, post, ApiError } from '../api.js';
import { notFound } from '../app.js';
import { vtable } from '../vtable.js';

const FIRST_PAGE = 100;
const PAGE = 5000;

export async function render(main, ctx) {
  const id = ctx.params.id;
  document.title = `${id} · svc`;
  // One read paints the page: the first page of the table carries the
  // whole record (summary, progress, steps) too.
  let sc;
  let firstPage;
  try {
    firstPage = (await call('GET', `/scorecards/${enc(id)}?limit=${FIRST_PAGE}`, undefined, { signal: ctx.signal })).data;
    sc = { ...firstPage, scorecard: undefined };
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return notFound(main, `Scorecard ${id}`);
    throw e;
  }
  const head = h('div');
  const progress = h('div', { class: 'progress', id: 'progress' });
  const actions = h('div', { class: 'actions', id: 'actions' });
  const summary = h('div', { id: 'summary' });
  const steps = h('details', { id: 'steps' });
  const casesNote = h('p', { class: 'muted small', id: 'cases-note', 'aria-live': 'polite' });
  add(main, head, progress, actions, h('h2', {}, 'Summary per metric'), summary);

  // The per-case table.
  let metrics = [];
  const filterText = h('input', { type: 'search', id: 'case-filter', placeholder: 'case id contains…', 'aria-label': 'Filter cases by id' });
  const filterVerdict = h('select', { id: 'verdict-filter', 'aria-label': 'Filter cases by verdict' },
    [['', 'any verdict'], ['pass', 'passed every trial'], ['fail', 'failed'], ['error', 'error'], ['mixed', 'flaky (mixed trials)'], ['pending', 'pending']]
      .map(([v, l]) => h('option', { value: v }, l)));
  const applyFilter = () => {
    const t = filterText.value.trim().toLowerCase();
    const v = filterVerdict.value;
    vt.setFilter(r => (!t || r.key.toLowerCase().includes(t)) && (!v || r.verdict === v || (v === 'mixed' && r.mixed)));
  };
  filterText.addEventListener('input', applyFilter);
  filterVerdict.addEventListener('change', applyFilter);

  const metricCols = () => metrics.slice(0, 4).map(m => ({
    key: `m:${m}`, label: m, num: true,
    sort: (a, b) => (a.metrics[m] ?? -Infinity) - (b.metrics[m] ?? -Infinity),
    cell: r => num(r.metrics[m]),
  }));
  let vt;
  const caseSection = h('section', { 'aria-labelledby': 'cases-title' });
  const buildTable = () => {
    vt = vtable({
      id: 'cases', caption: 'Cases with a verdict per trial', empty: 'No case matches.',
      initialSort: { key: 'case', dir: 1 },
      columns: [
        { key: 'case', label: 'Case', sort: (a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0),
          cell: r => h('a', { href: `#/scorecards/${enc(id)}/cases/${enc(r.key)}`, class: 'mono' }, r.key, r.critical ? ' (critical)' : '') },
        { key: 'verdict', label: 'Verdict', sort: (a, b) => a.rate - b.rate || (a.key < b.key ? -1 : 1),
          cell: r => [badge(r.verdict), ` ${r.passes}/${r.trials.length}`] },
        { key: 'trials', label: 'Trials', cell: r => h('span', { class: 'chips' }, r.trials.map(t =>
          h('a', { class: `chip s-${t.verdict}`, href: `#/scorecards/${enc(id)}/cases/${enc(r.key)}?trial=${t.trial}`,
            title: `trial ${t.trial}: ${t.verdict} (${t.verdictBasis || ''})` }, `T${t.trial} ${sym(t.verdict)} ${t.verdict}`))) },
        { key: 'duration', label: 'Duration', num: true, sort: (a, b) => a.duration - b.duration, cell: r => ms(r.duration) },
        ...metricCols(),
      ],
    });
    add(clear(caseSection), h('h2', { id: 'cases-title' }, 'Cases'),
      h('div', { class: 'filters' }, filterText, filterVerdict), casesNote, vt.el);
  };

  // The first load shows each page as it arrives and re-applies the sort
  // and filter to everything loaded so far, saying so while pages are
  // missing, so the final view is the whole scorecard sorted and filtered.
  // A refresh of a running batch swaps the table only once it has every
  // page, so the view never shrinks back to the first page.
  let loading = null;
  let complete = false;
  const loadTable = async (given) => {
    const incremental = !complete;
    // Cases are built as their trials arrive: each page touches only its
    // own cases, so re-applying per page costs the new rows plus one sort.
    const agg = new Map();
    let loaded = 0;
    let after = '';
    let total = 0;
    let first = true;
    do {
      const p = new URLSearchParams({ limit: String(first ? FIRST_PAGE : PAGE) });
      if (after) p.set('casesAfter', after);
      const d = first && given ? given : (await call('GET', `/scorecards/${enc(id)}?${p}`, undefined, { signal: ctx.signal })).data;
      const t0 = performance.now();
      const page = d.scorecard || [];
      addTrials(agg, page);
      loaded += page.length;
      total = d.scorecardPage ? d.scorecardPage.total : loaded;
      after = d.scorecardPage && d.scorecardPage.next ? d.scorecardPage.next : '';
      if (incremental || !after) {
        setRows(agg, loaded, total, d);
        // What re-applying costs per page, for the browser test to report.
        performance.measure(`cases:setRows ${loaded}`, { start: t0 });
      }
      first = false;
    } while (after && ctx.alive);
    complete = true;
    casesNote.textContent = `${total} case-trials loaded.`;
  };
  const setRows = (agg, loaded, total, d) => {
    const ms2 = Object.keys((d && d.summary) || sc.summary || {}).filter(m => m !== 'casePass').sort();
    if (!vt || ms2.join() !== metrics.join()) { metrics = ms2; buildTable(); }
    const partial = loaded < total;
    vt.setRows([...agg.values()], partial ? `loading: ${loaded} of ${total} case-trials so far` : '');
    if (partial) casesNote.textContent = `Loading: ${loaded} of ${total} case-trials so far. Sorting and filtering cover the loaded rows and are applied again as each page arrives.`;
  };
  const reloadTable = (given) => {
    if (!loading) loading = loadTable(given).catch(e => { if (ctx.alive) casesNote.textContent = `Could not load the cases: ${e.message}`; }).finally(() => { loading = null; });
    return loading;
  };

  // The actions are redrawn only when the status changes, so a poll never
  // closes an open confirmation or re-score form.
  let actionsFor = null;
  const drawAll = () => {
    drawHead(head, sc, id);
    drawProgress(progress, sc);
    if (actionsFor !== sc.status) {
      actionsFor = sc.status;
      ctx.whoami().then(() => drawActions(actions, sc, ctx, fresh => { sc = { ...sc, ...fresh }; drawAll(); }), () => {});
    }
    drawSummary(summary, sc);
    drawSteps(steps, sc);
  };
  drawAll();
  add(main, caseSection, h('h2', {}, 'Timeline'), steps);
  buildTable();
  // The first page paints now; the rest loads behind it.
  reloadTable(firstPage);
  firstPage = null;

  // While the batch runs: the light read every second for the progress
  // bar, the table every few seconds (less often for big batches).
  let lastTable = Date.now();
  ctx.every(1000, async () => {
    if (terminal(sc.status)) return false;
    const fresh = await get(`/scorecards/${enc(id)}?view=summary`, { signal: ctx.signal });
    const was = sc.status;
    sc = fresh;
    drawAll();
    const big = (sc.progress && sc.progress.total) > 2000;
    if (terminal(sc.status)) {
      announce(`Scorecard ${id} ${sc.status}`);
      await reloadTable();
      return false;
    }
    if (was !== sc.status || Date.now() - lastTable > (big ? 20000 : 3000)) {
      lastTable = Date.now();
      reloadTable();
    }
    return true;
  });
}

// addTrials adds a page of case-trials to the cases in agg (by case id)
// and recomputes the cases it touched: verdict over the trials, pass rate,
// mean duration and mean metric values.
function addTrials(agg, trials) {
  const touched = new Set();
  for (const r of trials) {
    let c = agg.get(r.caseId);
    if (!c) { c = { key: r.caseId, trials: [], critical: false, sums: {}, counts: {} }; agg.set(r.caseId, c); }
    c.trials.push(r);
    c.critical = c.critical || !!r.critical;
    for (const [m, s] of Object.entries(r.outcomes || {})) {
      if (typeof s.value === 'number') { c.sums[m] = (c.sums[m] || 0) + s.value; c.counts[m] = (c.counts[m] || 0) + 1; }
    }
    touched.add(c);
  }
  for (const c of touched) {
    const n = c.trials.length;
    let passes = 0;
    let pending = false;
    let error = false;
    let duration = 0;
    for (const t of c.trials) {
      if (t.casePass) passes++;
      if (t.verdict === 'pending') pending = true;
      if (t.verdict === 'error') error = true;
      duration += t.durationMs || 0;
    }
    c.passes = passes;
    c.verdict = pending ? 'pending' : passes === n ? 'pass' : error && passes === 0 ? 'error' : 'fail';
    c.mixed = passes > 0 && passes < n;
    c.rate = n ? passes / n : 0;
    c.duration = n ? duration / n : 0;
    c.metrics = {};
    for (const m of Object.keys(c.sums)) c.metrics[m] = c.sums[m] / c.counts[m];
  }
}

function terminal(s) { return ['succeeded', 'failed', 'cancelled', 'superseded'].includes(s); }

function sym(v) { return { pass: '✓', fail: '✗', error: '!', pending: '…' }[v] || '·'; }

function drawHead(el, sc, id) {
  const m = sc.manifest || {};
  add(clear(el), 
    h('p', { class: 'small' }, h('a', { href: '#/scorecards' }, 'Scorecards'), ' / '),
    h('h1', {}, `${sc.kind === 'experiment' ? 'Experiment' : 'Scorecard'} `, h('span', { class: 'mono' }, id), ' ', badge(sc.status)),
    h('dl', { class: 'facts' },
      h('dt', {}, 'Dataset'), h('dd', { class: 'mono' }, ref(sc.dataset), ' ', h('a', { href: `#/trend?dataset=${enc((sc.dataset || {}).id || '')}` }, 'trend')),
      h('dt', {}, 'Harness'), h('dd', { class: 'mono' }, ref(sc.harness)),
      h('dt', {}, 'Plan'), h('dd', {}, `${sc.trials || 1} trial(s), concurrency ${sc.concurrency || '—'}${sc.runtime ? `, runtime ${sc.runtime}` : ''}`),
      h('dt', {}, 'Created'), h('dd', {}, when(sc.createdAt), sc.createdBy ? ` by ${sc.createdBy}` : ''),
      sc.finishedAt ? [h('dt', {}, 'Finished'), h('dd', {}, when(sc.finishedAt))] : null,
      sc.verdictPolicy ? [h('dt', {}, 'Verdict policy'), h('dd', { class: 'mono' }, `${sc.verdictPolicy.id}@${sc.verdictPolicy.version}`)] : null,
      m.dataset ? [h('dt', {}, 'Manifest'), h('dd', { class: 'mono small' }, `dataset ${short(m.dataset)}, harness ${short(m.harness)}`)] : null,
      sc.error ? [h('dt', {}, 'Error'), h('dd', { class: 'error' }, `${sc.error.phase ? `[${sc.error.phase}] ` : ''}${sc.error.message || sc.error.code || ''}`)] : null,
    ),
    h('p', {}, h('a', { href: `#/diff?candidate=${enc(id)}` }, 'Compare with another scorecard…')));
}

function short(d) { return d ? String(d).replace(/^sha256:/, '').slice(0, 12) : '—'; }

function drawProgress(el, sc) {
  const p = sc.progress || {};
  const total = p.total || 0;
  const done = p.done || 0;
  const live = !terminal(sc.status);
  add(clear(el), 
    h('label', { for: 'progress-bar', class: 'visually-hidden' }, 'Progress'),
    h('progress', { id: 'progress-bar', max: total || 1, value: done }),
    h('div', { class: 'counts', id: 'progress-text' },
      h('strong', {}, `${done} of ${total} done (${total ? Math.floor((100 * done) / total) : 0}%)`),
      h('span', { class: 's-pass' }, `✓ ${p.passed || 0} passed`),
      h('span', { class: 's-fail' }, `✗ ${p.failed || 0} failed`),
      p.cancelled ? h('span', { class: 's-cancelled' }, `■ ${p.cancelled} cancelled`) : null,
      live ? h('span', { class: 's-running' }, `▶ ${p.running || 0} running`) : null,
      live ? h('span', { class: 's-queued' }, `… ${p.queued || 0} queued`) : null,
      p.casesPerSecond ? h('span', { class: 'muted' }, `${p.casesPerSecond.toFixed(2)} cases/s`) : null));
}

function drawActions(el, sc, ctx, update) {
  clear(el);
  const id = sc.id;
  const msg = h('span', { role: 'status', class: 'small' });
  if (!terminal(sc.status)) {
    if (!ctx.can('run')) {
      add(el, h('span', { class: 'muted small' }, 'Cancelling needs the member role and a write scope.'));
      return;
    }
    const cancel = h('button', { type: 'button', class: 'danger', id: 'cancel' }, 'Cancel batch');
    cancel.addEventListener('click', () => {
      const yes = h('button', { type: 'button', class: 'danger', id: 'cancel-confirm' }, 'Yes, cancel the batch');
      const no = h('button', { type: 'button', id: 'cancel-keep' }, 'Keep it running');
      add(clear(el), h('span', {}, `Cancel ${id}? Running cases are stopped and no further case starts.`), yes, no, msg);
      no.addEventListener('click', () => drawActions(el, sc, ctx, update));
      yes.addEventListener('click', async () => {
        yes.disabled = true;
        try {
          const rec = await post(`/scorecards/${enc(id)}/cancel`);
          announce(`Scorecard ${id} cancelled`);
          update(rec);
        } catch (e) {
          msg.textContent = `Cancel failed: ${e.message}`;
          msg.className = 'error small';
          yes.disabled = false;
        }
      });
      yes.focus();
    });
    add(el, cancel, msg);
    return;
  }
  if (sc.status !== 'succeeded') return;
  if (!ctx.can('run')) return;
  const box = h('details', { id: 'rescore' }, h('summary', {}, 'Re-score with judges…'));
  add(el, box, msg);
  let loaded = false;
  box.addEventListener('toggle', async () => {
    if (!box.open || loaded) return;
    loaded = true;
    const judges = await get('/judges').catch(() => []);
    const used = new Map(((sc.orchestration && sc.orchestration.judges) || []).map(j => [j.id, j.resolved || j.version]));
    if (!judges.length) { add(box, h('p', { class: 'muted' }, 'No judges are registered in this workspace.')); return; }
    const checks = judges.map(j => {
      const versions = j.versions || (j.version ? [j.version] : []);
      const v = used.get(j.id) || j.latest || versions[versions.length - 1] || 'latest';
      return { id: j.id, version: v, el: h('input', { type: 'checkbox', value: j.id, checked: used.has(j.id) }) };
    });
    const go = h('button', { type: 'button', id: 'rescore-go' }, 'Re-score');
    go.addEventListener('click', async () => {
      const sel = checks.filter(c => c.el.checked).map(c => ({ id: c.id, version: c.version }));
      if (!sel.length) { msg.textContent = 'Pick at least one judge.'; return; }
      go.disabled = true;
      try {
        const rec = await post(`/scorecards/${enc(id)}/score`, { judges: sel });
        msg.textContent = `Re-scoring started${rec.scoringInFlight ? ` (${rec.scoringInFlight})` : ''}.`;
        announce(msg.textContent);
      } catch (e) {
        msg.textContent = `Re-score failed: ${e.message}`;
      } finally { go.disabled = false; }
    });
    add(box, h('fieldset', {}, h('legend', {}, 'Judges whose verdicts the pass replaces'),
      checks.map(c => h('label', { class: 'row' }, h('span', {}, c.el, ` ${c.id}@${c.version}`)))), go);
  });
}

function drawSummary(el, sc) {
  const s = sc.summary || {};
  const names = Object.keys(s).sort((a, b) => (a === 'casePass' ? -1 : b === 'casePass' ? 1 : a < b ? -1 : 1));
  clear(el);
  if (!names.length) { add(el, h('p', { class: 'muted' }, 'No scores yet.')); return; }
  add(el, table(
    [{ label: 'Metric' }, { label: 'Count', num: true }, { label: 'Skipped', num: true }, { label: 'Mean', num: true },
      { label: 'Pass rate', num: true }, { label: 'p50', num: true }, { label: 'p95', num: true }],
    names.map(n => [h('span', { class: 'mono' }, n), s[n].count, s[n].skipped || 0, num(s[n].mean), pct(s[n].passRate), num(s[n].p50), num(s[n].p95)]),
    'Summary per metric'));
}

function drawSteps(el, sc) {
  const st = sc.steps || [];
  add(clear(el), h('summary', {}, `${st.length} timeline entries`),
    st.length ? table([{ label: 'Time' }, { label: 'Phase' }, { label: 'Status' }, { label: 'Message' }],
      st.slice(-200).map(x => [when(x.ts), x.phase, x.status, `${x.caseId ? `[${x.caseId}] ` : ''}${x.message || ''}`]), 'Timeline') : null);
}
