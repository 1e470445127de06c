// The diff of two scorecards (metric deltas with their intervals, case
// transitions, the experiment's axes) and the gate's decision under the
// default policy.
import { add, h, badge, ref, num, pct, signed, enc, table } from '../dom.js';
import { get, post, ApiError } from '../api.js';
import { go, notFound } from '../app.js';

export async function render(main, ctx) {
  document.title = 'Diff · svc';
  const baseline = ctx.query.get('baseline') || '';
  const candidate = ctx.query.get('candidate') || '';
  const b = h('input', { id: 'baseline', name: 'baseline', value: baseline, required: true, size: 28, class: 'mono' });
  const c = h('input', { id: 'candidate', name: 'candidate', value: candidate, required: true, size: 28, class: 'mono' });
  const form = h('form', { class: 'filters', 'aria-label': 'Scorecards to compare' },
    h('label', {}, 'Baseline scorecard', b), h('label', {}, 'Candidate scorecard', c), h('button', { type: 'submit', class: 'primary' }, 'Compare'));
  form.addEventListener('submit', e => {
    e.preventDefault();
    go(`#/diff?baseline=${enc(b.value.trim())}&candidate=${enc(c.value.trim())}`);
  });
  add(main, h('h1', {}, 'Diff and gate'), form);
  if (!baseline || !candidate) {
    add(main, h('p', { class: 'muted' }, 'Name a baseline and a candidate scorecard, or pick two on the scorecards list.'));
    return;
  }
  let d; let gate;
  try {
    [d, gate] = await Promise.all([
      get(`/scorecards/diff?baseline=${enc(baseline)}&candidate=${enc(candidate)}`, { signal: ctx.signal }),
      post('/scorecards/gate', { baseline, candidate, policy: {} }, { signal: ctx.signal }),
    ]);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return notFound(main, `Scorecard ${baseline} or ${candidate}`);
    if (e instanceof ApiError && e.status === 400) { add(main, h('p', { class: 'error', role: 'alert' }, e.message)); return; }
    throw e;
  }
  const side = (name, r) => [h('dt', {}, name), h('dd', {},
    h('a', { href: `#/scorecards/${enc(r.id)}`, class: 'mono' }, r.id), ' ', badge(r.status),
    ` dataset ${ref(r.dataset)}, harness ${ref(r.harness)}, ${r.cases} cases, scoring revision ${r.scoring ? r.scoring.revision : '—'}`)];
  add(main, 
    h('dl', { class: 'facts' }, side('Baseline', d.baseline), side('Candidate', d.candidate),
      h('dt', {}, 'Comparability'), h('dd', {}, d.comparability || '—'),
      (d.policyUnresolvable || []).length ? [h('dt', {}, 'Policy unresolvable'), h('dd', { class: 'error' }, d.policyUnresolvable.join(', '))] : null));

  // The gate.
  const outcome = gate.outcome;
  add(main, h('h2', {}, 'Gate decision'),
    h('div', { id: 'gate', class: `banner s-${outcome}`, role: 'status' },
      `${outcome === 'pass' ? '✓ PASS' : outcome === 'block' ? '✗ BLOCK' : outcome.toUpperCase().replace('_', ' ')}: ` +
      `${gate.regressions} significant case regression(s)` +
      (gate.metric ? `, ${gate.metric.metric} ${signed(gate.metric.pairedDelta ?? gate.metric.delta)}` : '')),
    gate.reasons && gate.reasons.length
      ? h('ul', { id: 'gate-reasons' }, gate.reasons.map(r => h('li', {}, h('code', {}, r.code), ` ${r.message}`)))
      : h('p', { class: 'muted' }, 'No reason blocks the candidate.'),
    gate.notes && gate.notes.length ? h('details', {}, h('summary', {}, `${gate.notes.length} notes`),
      h('ul', {}, gate.notes.map(r => h('li', {}, h('code', {}, r.code), ` ${r.message}`)))) : null);

  // Metric deltas.
  add(main, h('h2', {}, 'Metrics'), table(
    [{ label: 'Metric' }, { label: 'Baseline', num: true }, { label: 'Candidate', num: true }, { label: 'Delta', num: true },
      { label: 'Paired delta [interval]', num: true }, { label: 'Change' }],
    (d.metrics || []).map(m => {
      const rate = m.basis === 'passRate';
      const fmt = rate ? pct : num;
      const bv = rate ? m.baselinePassRate : m.baseline;
      const cv = rate ? m.candidatePassRate : m.candidate;
      const dv = rate ? m.passRateDelta : m.delta;
      return [h('span', { class: 'mono' }, m.metric), fmt(bv), fmt(cv), signed(dv),
        m.pairedDelta !== undefined && m.pairedDelta !== null
          ? `${signed(m.pairedDelta)} [${signed(m.ci ? m.ci.lo : NaN)}, ${signed(m.ci ? m.ci.hi : NaN)}]${m.ci ? ` at ${Math.round(m.ci.level * 100)}%` : ''}` : '—',
        changeText(m.change)];
    }), 'Metric deltas'));

  // Transitions.
  const tr = d.caseTransitions || [];
  const counts = {};
  for (const t of tr) counts[t.change] = (counts[t.change] || 0) + 1;
  add(main, h('h2', {}, 'Case transitions'),
    h('p', { id: 'transition-counts' }, Object.entries(counts).map(([k, v]) => `${v} ${k.replace('_', ' ')}`).join(', ') || 'No case decided on either side.'));
  const interesting = tr.filter(t => t.change !== 'still_passing');
  if (interesting.length) {
    add(main, table([{ label: 'Case' }, { label: 'Change' }, { label: 'Baseline passes', num: true }, { label: 'Candidate passes', num: true }, { label: 'Notes' }],
      interesting.slice(0, 2000).map(t => [h('a', { class: 'mono', href: `#/scorecards/${enc(d.candidate.id)}/cases/${enc(t.caseId)}` }, t.caseId),
        changeText(t.change), `${t.baselinePasses}/${t.baselineTrials}`, `${t.candidatePasses}/${t.candidateTrials}`,
        [t.critical ? 'critical' : '', t.caseChanged ? 'case changed' : ''].filter(Boolean).join(', ')]), 'Cases that changed'));
  }

  // The experiment's axes.
  const ax = Object.entries(d.experiment || {}).sort();
  add(main, h('h2', {}, 'Experiment axes'),
    ax.length ? table([{ label: 'Axis' }, { label: 'Reading' }], ax.map(([k, v]) => [k, v]), 'Experiment axes') : h('p', { class: 'muted' }, 'No axes.'));
}

function changeText(c) {
  const sym = { broke: '✗ ', regressed: '✗ ', fixed: '✓ ', improved: '✓ ', still_failing: '· ', still_passing: '· ' }[c] || '';
  return h('span', { class: ['broke', 'regressed'].includes(c) ? 's-fail' : ['fixed', 'improved'].includes(c) ? 's-pass' : '' }, `${sym}${String(c || '—').replace('_', ' ')}`);
}
