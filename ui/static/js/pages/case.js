// A case of a scorecard (its trials, each a run) or one run: the verdict
// and scores, the trace as a timeline (tool calls, LLM calls with tokens
// and cost, errors, spans), the event list, and the logs, live while the
// run runs.
import { add, h, s, clear, badge, ref, num, when, ms, usd, enc, table } from '../dom.js';
import { get, ApiError } from '../api.js';
import { notFound } from '../app.js';

export async function render(main, ctx) {
  if (ctx.params.runId) return renderRun(main, ctx, ctx.params.runId);
  const { id, caseId } = ctx.params;
  document.title = `${caseId} · ${id} · svc`;
  let rows;
  try {
    rows = await caseRows(id, caseId, ctx.signal);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return notFound(main, `Scorecard ${id}`);
    throw e;
  }
  add(main, 
    h('p', { class: 'small' }, h('a', { href: '#/scorecards' }, 'Scorecards'), ' / ', h('a', { href: `#/scorecards/${enc(id)}`, class: 'mono' }, id), ' / '),
    h('h1', {}, 'Case ', h('span', { class: 'mono' }, caseId)));
  if (!rows.length) return notFound(main, `Case ${caseId} of scorecard ${id}`);
  const want = Number(ctx.query.get('trial') || rows[0].trial);
  const row = rows.find(r => r.trial === want) || rows[0];
  add(main, 
    h('nav', { class: 'tabs', 'aria-label': 'Trials' }, rows.map(r =>
      h('a', { href: `#/scorecards/${enc(id)}/cases/${enc(caseId)}?trial=${r.trial}`, 'aria-current': r === row ? 'true' : 'false' },
        `Trial ${r.trial}: ${r.verdict}`))),
    h('dl', { class: 'facts' },
      h('dt', {}, 'Verdict'), h('dd', {}, badge(row.verdict), ` decided by ${row.verdictBasis || '—'}`, row.critical ? ' · critical case' : ''),
      h('dt', {}, 'Run'), h('dd', {}, row.runId ? h('a', { href: `#/runs/${enc(row.runId)}`, class: 'mono' }, row.runId) : '—', ' ', badge(row.status)),
      h('dt', {}, 'Duration'), h('dd', {}, ms(row.durationMs)),
      row.evidenceStatus ? [h('dt', {}, 'Evidence'), h('dd', {}, `trace ${row.evidenceStatus.trace}, snapshot ${row.evidenceStatus.snapshot}`)] : null,
      row.error ? [h('dt', {}, 'Error'), h('dd', { class: 'error' }, row.error.message || row.error.code)] : null));
  add(main, h('h2', {}, 'Scores'), scoresTable(row.scores || Object.values(row.outcomes || {})));
  if (row.runId) await runDetail(main, ctx, row.runId);
}

async function renderRun(main, ctx, runId) {
  document.title = `${runId} · svc`;
  let run;
  try {
    run = await get(`/runs/${enc(runId)}`, { signal: ctx.signal });
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return notFound(main, `Run ${runId}`);
    throw e;
  }
  add(main, 
    h('p', { class: 'small' }, run.parentScorecardId
      ? [h('a', { href: `#/scorecards/${enc(run.parentScorecardId)}`, class: 'mono' }, run.parentScorecardId), ' / ',
        h('a', { href: `#/scorecards/${enc(run.parentScorecardId)}/cases/${enc(run.caseId)}?trial=${run.trial || 0}` }, `case ${run.caseId}`)]
      : h('a', { href: '#/scorecards' }, 'Scorecards')),
    h('h1', {}, 'Run ', h('span', { class: 'mono' }, runId), ' ', badge(run.status)),
    h('dl', { class: 'facts' },
      h('dt', {}, 'Case'), h('dd', { class: 'mono' }, run.caseId || '—'),
      h('dt', {}, 'Harness'), h('dd', { class: 'mono' }, ref(run.harness)),
      h('dt', {}, 'Started'), h('dd', {}, when(run.startedAt || run.createdAt)),
      h('dt', {}, 'Finished'), h('dd', {}, when(run.finishedAt)),
      run.error ? [h('dt', {}, 'Error'), h('dd', { class: 'error' }, run.error.message || run.error.code)] : null));
  const scores = run.result && run.result.scores;
  if (scores) add(main, h('h2', {}, 'Scores'), scoresTable(scores));
  await runDetail(main, ctx, runId, run);
}

// caseRows reads the rows of one case from the paged detail read: the
// table is ordered by case id then trial, so the read starts just before
// the case (a cursor one code point below its id) instead of at the top.
async function caseRows(id, caseId, signal) {
  let after = seek(caseId);
  const rows = [];
  for (let page = 0; page < 100; page++) {
    const p = new URLSearchParams({ limit: page ? '1000' : '200' });
    if (after) p.set('casesAfter', after);
    const d = await get(`/scorecards/${enc(id)}?${p}`, { signal });
    for (const r of d.scorecard || []) {
      if (r.caseId === caseId) rows.push(r);
      else if (rows.length) return rows;
    }
    after = d.scorecardPage && d.scorecardPage.next;
    if (!after) break;
  }
  return rows;
}

function seek(caseId) {
  const last = caseId.charCodeAt(caseId.length - 1);
  if (!caseId || last <= 0x20 || last >= 0x7f) return '';
  return `${caseId.slice(0, -1)}${String.fromCharCode(last - 1)}#999999999`;
}

function scoresTable(scores) {
  if (!scores || !scores.length) return h('p', { class: 'muted' }, 'No scores.');
  return table([{ label: 'Metric' }, { label: 'Grader' }, { label: 'Value', num: true }, { label: 'Pass' }, { label: 'Detail' }],
    scores.map(x => [h('span', { class: 'mono' }, x.metric || '—'), x.graderId || '—', num(x.value),
      x.pass === undefined || x.pass === null ? '—' : badge(x.pass ? 'pass' : 'fail'), x.detail || '']), 'Scores');
}

async function runDetail(main, ctx, runId, run) {
  const traceBox = h('section', { id: 'trace', 'aria-labelledby': 'trace-title' }, h('h2', { id: 'trace-title' }, 'Trace'));
  const logsPre = h('pre', { class: 'logs', id: 'logs', tabindex: '0', 'aria-label': 'Logs' });
  const logsNote = h('p', { class: 'muted small', 'aria-live': 'polite' });
  add(main, traceBox, h('h2', {}, 'Logs'), logsNote, logsPre);
  try {
    const t = await get(`/runs/${enc(runId)}/trajectory`, { signal: ctx.signal });
    const ev = t.events || [];
    add(traceBox, h('p', { class: 'muted small' },
      `${ev.length} events from ${t.meta && t.meta.source ? t.meta.source : 'the run'}${t.meta && t.meta.sealed ? ', sealed' : ''}.`));
    drawTrace(traceBox, ev);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) add(traceBox, h('p', { class: 'muted', id: 'no-trace' }, 'No trace yet: the run has not ended.'));
    else add(traceBox, h('p', { class: 'error' }, `Could not read the trace: ${e.message}`));
  }
  let after = 0;
  ctx.every(2000, async () => {
    const l = await get(`/runs/${enc(runId)}/logs?after=${after}&limit=5000`, { signal: ctx.signal });
    for (const c of l.chunks || []) add(logsPre, `${c.stream === 'stderr' ? '[stderr] ' : c.stream === 'system' ? '[system] ' : ''}${c.data}${c.data.endsWith('\n') ? '' : '\n'}`);
    after = l.lastSeq || after;
    logsNote.textContent = l.live ? 'Live: the run is still going.' : `${after} log chunks.`;
    if (!l.live && !logsPre.childNodes.length) add(logsPre, '(no logs)');
    return l.live;
  }).catch(() => {});
  void run;
}

const KINDS = ['tool_call', 'llm_call', 'error', 'span', 'message', 'artifact'];

function times(ev) {
  const start = Date.parse(ev.startTime || ev.ts || '');
  let end = Date.parse(ev.endTime || '');
  if (isNaN(end) && !isNaN(start)) end = start + (ev.durationMs || 0);
  return { start, end };
}

function label(e) {
  const what = e.kind === 'llm_call' ? (e.model || 'LLM') : e.kind === 'error' ? (e.code || e.message || '') :
    e.kind === 'message' ? (e.role || '') : (e.name || '');
  return `${e.kind}: ${what}`.slice(0, 60);
}

// drawTrace draws the events as a timeline (bars on a time axis when the
// events carry times, else one step each in order) and as a table.
export function drawTrace(box, events) {
  const totals = { tool_call: 0, llm_call: 0, error: 0, span: 0, inTok: 0, outTok: 0, cost: 0 };
  for (const e of events) {
    if (e.kind in totals) totals[e.kind]++;
    totals.inTok += e.inputTokens || 0;
    totals.outTok += e.outputTokens || 0;
    totals.cost += e.costUsd || 0;
  }
  add(box, h('p', { id: 'trace-totals' },
    `${totals.tool_call} tool calls · ${totals.llm_call} LLM calls · ${totals.inTok} input and ${totals.outTok} output tokens · cost ${usd(totals.cost)} · ${totals.error} errors · ${totals.span} spans`));
  if (!events.length) { add(box, h('p', { class: 'muted' }, 'The trace is empty.')); return; }
  const shown = events.slice(0, 400);
  const ts = shown.map(times);
  const timed = ts.some(t => !isNaN(t.start));
  let t0 = Infinity; let t1 = -Infinity;
  for (const t of ts) if (!isNaN(t.start)) { t0 = Math.min(t0, t.start); t1 = Math.max(t1, isNaN(t.end) ? t.start : t.end); }
  const span = timed ? Math.max(t1 - t0, 1) : shown.length;
  const W = 1000; const L = 260; const R = 20; const RH = 22; const top = 24;
  const H = top + shown.length * RH + 10;
  const x = v => L + ((W - L - R) * v) / span;
  const detail = h('pre', { id: 'event-detail', hidden: true });
  const svg = s('svg', { class: 'timeline', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': `Timeline of ${shown.length} trace events` },
    s('line', { class: 'axis', x1: L, y1: top - 4, x2: W - R, y2: top - 4 }),
    s('text', { x: L, y: 14 }, timed ? '0 ms' : 'step 1'),
    s('text', { x: W - R, y: 14, 'text-anchor': 'end' }, timed ? ms(t1 - t0) : `step ${shown.length}`),
    shown.map((e, i) => {
      const t = ts[i];
      let a; let b;
      if (timed && !isNaN(t.start)) { a = t.start - t0; b = Math.max((isNaN(t.end) ? t.start : t.end) - t0, a); } else { a = timed ? 0 : i; b = timed ? 0 : i + 1; }
      const bx = x(a); const bw = Math.max(x(b) - bx, 4);
      const y = top + i * RH;
      const tip = `${label(e)}${e.durationMs ? `, ${ms(e.durationMs)}` : ''}${e.inputTokens || e.outputTokens ? `, ${e.inputTokens || 0}/${e.outputTokens || 0} tokens` : ''}${e.costUsd ? `, ${usd(e.costUsd)}` : ''}${e.message ? `, ${e.message}` : ''}`;
      const g = s('g', { class: 'ev', tabindex: '0', role: 'button', 'aria-label': tip, 'data-kind': e.kind },
        s('title', {}, tip),
        s('text', { x: 4, y: y + 15 }, label(e).slice(0, 38)),
        s('rect', { class: `k-${KINDS.includes(e.kind) ? e.kind : 'span'}`, x: bx, y: y + 3, width: bw, height: RH - 6, rx: 3 }),
        e.kind === 'error' ? (bx + bw + 60 > W
          ? s('text', { x: bx - 4, y: y + 15, 'text-anchor': 'end' }, '! error')
          : s('text', { x: bx + bw + 4, y: y + 15 }, '! error')) : null);
      const show = () => { detail.hidden = false; detail.textContent = JSON.stringify(e, null, 2); };
      g.addEventListener('click', show);
      g.addEventListener('keydown', ev => { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); show(); } });
      return g;
    }));
  add(box, 
    h('div', { class: 'legend', 'aria-hidden': 'true' }, KINDS.map(k => h('span', {}, `■ ${k}`))),
    svg,
    events.length > shown.length ? h('p', { class: 'muted small' }, `The timeline shows the first ${shown.length} of ${events.length} events; the table lists them all.`) : null,
    detail,
    h('details', { open: events.length <= 50 }, h('summary', {}, `All ${events.length} events`),
      table([{ label: '#', num: true }, { label: 'Kind' }, { label: 'Name' }, { label: 'At', num: true }, { label: 'Duration', num: true },
        { label: 'Tokens in/out', num: true }, { label: 'Cost', num: true }, { label: 'Detail' }],
      events.map((e, i) => {
        const t = times(e);
        return [i + 1, e.kind, e.name || e.model || e.role || '', timed && !isNaN(t.start) ? ms(t.start - t0) : '—', ms(e.durationMs),
          e.inputTokens || e.outputTokens ? `${e.inputTokens || 0}/${e.outputTokens || 0}` : '—', usd(e.costUsd),
          (e.message || e.content || (e.output ? JSON.stringify(e.output) : '') || '').slice(0, 200)];
      }), 'Trace events')));
}
