// Registries: datasets (versions, a paged case browser, version diff),
// harnesses (versions, version diff), judges and runtimes (versions, spec).
import { add, h, clear, when, enc, table } from '../dom.js';
import { call, get, ApiError } from '../api.js';
import { go, notFound } from '../app.js';

const TITLES = { datasets: 'Datasets', harnesses: 'Harnesses', judges: 'Judges', runtimes: 'Runtimes' };
const NOUN = { datasets: 'Dataset', harnesses: 'Harness', judges: 'Judge', runtimes: 'Runtime' };

export async function render(main, ctx) {
  const kind = ctx.kind;
  if (ctx.params.id) return detail(main, ctx, kind, ctx.params.id);
  document.title = `${TITLES[kind]} · svc`;
  const list = await get(`/${kind}`, { signal: ctx.signal });
  add(main, h('h1', {}, TITLES[kind]));
  if (!list.length) { add(main, h('p', { class: 'muted' }, `No ${kind} are registered in this workspace.`)); return; }
  add(main, table([{ label: 'Id' }, { label: 'Owner' }, { label: 'Latest' }, { label: 'Versions', num: true }, { label: 'Registered' }],
    list.map(e => [h('a', { href: `#/${kind}/${enc(e.id)}`, class: 'mono' }, e.id), e.owner, h('span', { class: 'mono' }, e.latest || '—'),
      (e.versions || []).length, when(e.createdAt)]), TITLES[kind]));
}

async function entity(kind, id, signal) {
  if (kind === 'harnesses') return get(`/harnesses/${enc(id)}`, { signal });
  const list = await get(`/${kind}`, { signal });
  const e = list.find(x => x.id === id);
  if (!e) throw new ApiError(404, 'NOT_FOUND', `${id} not found`);
  return e;
}

async function detail(main, ctx, kind, id) {
  document.title = `${id} · ${TITLES[kind]} · svc`;
  let e;
  try {
    e = await entity(kind, id, ctx.signal);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return notFound(main, `${NOUN[kind]} ${id}`);
    throw err;
  }
  const versions = e.versions || [];
  const version = ctx.query.get('version') || e.latest || versions[versions.length - 1];
  add(main, 
    h('p', { class: 'small' }, h('a', { href: `#/${kind}` }, TITLES[kind]), ' / '),
    h('h1', {}, `${NOUN[kind]} `, h('span', { class: 'mono' }, id)),
    h('p', { class: 'muted' }, `Owner ${e.owner}${e.teamId ? `, team ${e.teamId}` : ''}${e.createdBy ? `, registered by ${e.createdBy}` : ''}.`),
    h('h2', {}, 'Versions'),
    table([{ label: 'Version' }, { label: 'Tags' }, { label: 'Registered' }],
      versions.slice().reverse().map(v => [
        v === version ? h('strong', { class: 'mono' }, `${v} (shown)`) : h('a', { class: 'mono', href: `#/${kind}/${enc(id)}?version=${enc(v)}` }, v),
        ((e.versionTags || {})[v] || []).join(', ') || '—', when((e.versionDates || {})[v])]), 'Versions'));

  // Datasets and harnesses have a diff route; judges and runtimes do not.
  if (versions.length > 1 && (kind === 'datasets' || kind === 'harnesses')) add(main, versionDiff(ctx, kind, id, versions));
  if (kind === 'datasets') return caseBrowser(main, ctx, id, version);
  if (kind === 'judges' || kind === 'runtimes') {
    const spec = await get(`/${kind}/${enc(id)}/versions/${enc(version)}`, { signal: ctx.signal });
    add(main, h('h2', {}, `Spec of ${version}`), h('pre', { class: 'mono' }, JSON.stringify(spec, null, 2)));
  }
  if (kind === 'harnesses') {
    try {
      const inst = await get(`/harnesses/${enc(id)}/${enc(version)}/instance`, { signal: ctx.signal });
      add(main, h('h2', {}, `Instance of ${version}`), h('pre', { class: 'mono' }, JSON.stringify(inst, null, 2)));
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 404)) throw err;
      add(main, h('p', { class: 'muted' }, `Version ${version} is self-contained (not an instance of a template).`));
    }
  }
}

function versionDiff(ctx, kind, id, versions) {
  const base = h('select', { 'aria-label': 'Base version', id: 'diff-base' }, versions.map((v, i) => h('option', { value: v, selected: i === versions.length - 2 }, v)));
  const cand = h('select', { 'aria-label': 'Candidate version', id: 'diff-candidate' }, versions.map((v, i) => h('option', { value: v, selected: i === versions.length - 1 }, v)));
  const out = h('div', { id: 'version-diff' });
  const btn = h('button', { type: 'submit' }, 'Compare versions');
  const form = h('form', { class: 'filters' }, h('label', {}, 'Base', base), h('label', {}, 'Candidate', cand), btn);
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    clear(out);
    try {
      const d = await get(`/${kind}/${enc(id)}/diff?base=${enc(base.value)}&candidate=${enc(cand.value)}`, { signal: ctx.signal });
      if (kind === 'datasets') {
        const n = x => (Array.isArray(x) ? x.length : 0);
        add(out, h('p', {}, `${n(d.added)} added, ${n(d.removed)} removed, ${n(d.changed)} changed cases.`));
        for (const k of ['added', 'removed', 'changed']) {
          const ids = (d[k] || []).map(c => (typeof c === 'string' ? c : c.id || c.caseId));
          if (ids.length) add(out, h('p', {}, h('strong', {}, `${k}: `), h('span', { class: 'mono' }, ids.slice(0, 200).join(', '))));
        }
      }
      add(out, h('details', {}, h('summary', {}, 'The full difference'), h('pre', { class: 'mono' }, JSON.stringify(d, null, 2))));
    } catch (err) {
      add(out, h('p', { class: 'error' }, err.message));
    }
  });
  return h('section', {}, h('h2', {}, 'Compare two versions'), form, out);
}

async function caseBrowser(main, ctx, id, version) {
  const from = Math.max(0, Number(ctx.query.get('from') || 0));
  const limit = 100;
  const res = await call('GET', `/datasets/${enc(id)}/versions/${enc(version)}?from=${from}&limit=${limit}`, undefined, { signal: ctx.signal });
  const spec = res.data || {};
  const count = Number(res.headers.get('X-Svc-Case-Count') || (spec.cases || []).length);
  const next = res.headers.get('X-Svc-Next-From');
  const cases = spec.cases || [];
  const nav = h('div', { class: 'actions' },
    h('button', { type: 'button', disabled: from === 0, onclick: () => go(`#/datasets/${enc(id)}?version=${enc(version)}&from=${Math.max(0, from - limit)}`) }, 'Previous cases'),
    h('span', {}, `Cases ${count ? from + 1 : 0}–${from + cases.length} of ${count}`),
    h('button', { type: 'button', disabled: !next, onclick: () => go(`#/datasets/${enc(id)}?version=${enc(version)}&from=${next}`) }, 'Next cases'));
  add(main, h('h2', {}, `Cases of ${version}`), nav,
    table([{ label: 'Case' }, { label: 'Task' }, { label: 'Graders' }, { label: 'Tags' }, { label: 'Expected' }],
      cases.map(c => [h('span', { class: 'mono' }, c.id), String(c.task || '').slice(0, 160), (c.graders || []).map(g => g.id).join(', '),
        (c.tags || []).join(', '), typeof c.expected === 'string' ? c.expected.slice(0, 80) : c.expected ? JSON.stringify(c.expected).slice(0, 80) : '—']), 'Cases'));
}
