// Browser test of the web view: Debian's Chromium driven by playwright-core
// (no browser download). e2e/ui_test.go starts `svc dev`, seeds two
// workspaces and batches, and runs this with:
//   SVC_UI_URL, SVC_UI_KEY (an admin key of SVC_UI_WORKSPACE), SVC_UI_RUNNING
//   (a batch that runs for minutes), SVC_UI_BASELINE and SVC_UI_CANDIDATE
//   (two finished batches of SVC_UI_DATASET), SVC_UI_CASE (a case of them),
//   SVC_UI_FOREIGN (another workspace's batch), SVC_UI_SHOTS (screenshot
//   folder), SVC_UI_CHROMIUM, SVC_UI_MODULES (the node_modules holding
//   playwright-core, from ui/test/install.sh); SVC_UI_OIDC_USER and
//   SVC_UI_OIDC_ISSUER (a loopback issuer that approves that user, a member
//   of SVC_UI_WORKSPACE, for the service's SVC_UI_OIDC_CLIENT_ID);
//   SVC_UI_BIG_ID and SVC_UI_BIG_N (a finished batch of that many cases);
//   SVC_UI_IMAGE_TAR (a busybox image's tar, imported to open sandbox
//   sessions and a world from; without it those steps are skipped).
// It also parks an agent's call through HTTP itself (the X-Svc-Agent-*
// headers with SVC_UI_KEY) and approves it in the approvals inbox.
// It exits non-zero on the first failed step, naming it.
import { createRequire } from 'node:module';
import { mkdirSync, readdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';

const env = name => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const base = env('SVC_UI_URL');
const key = env('SVC_UI_KEY');
const ws = env('SVC_UI_WORKSPACE');
const running = env('SVC_UI_RUNNING');
const baseline = env('SVC_UI_BASELINE');
const candidate = env('SVC_UI_CANDIDATE');
const foreign = env('SVC_UI_FOREIGN');
const caseId = env('SVC_UI_CASE');
const dataset = env('SVC_UI_DATASET');
const shots = env('SVC_UI_SHOTS');
const require = createRequire(join(env('SVC_UI_MODULES'), 'noop.js'));
const { chromium } = require('playwright-core');

mkdirSync(shots, { recursive: true });
// Only this run's screenshots stay in the folder.
for (const f of readdirSync(shots)) if (f.endsWith('.png')) unlinkSync(join(shots, f));
const browser = await chromium.launch({
  executablePath: process.env.SVC_UI_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
});
const pageErrors = [];
const requested = [];
// newPage opens a tab in a fresh browser context (its own sessionStorage)
// whose errors and requests are recorded.
async function newPage() {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'light' });
  const p = await context.newPage();
  p.setDefaultTimeout(20000);
  p.on('pageerror', e => pageErrors.push(String(e)));
  p.on('console', m => { if (m.type() === 'error') pageErrors.push(`console: ${m.text()}`); });
  p.on('request', r => requested.push(r.url()));
  return p;
}
let page = await newPage();

let n = 0;
// cleanups run before the script exits, passed or failed (sessions it
// opened are closed, so no container outlives the test).
const cleanups = [];
async function cleanup() {
  for (const fn of cleanups.splice(0).reverse()) await fn().catch(e => console.error(`cleanup: ${e}`));
}
// step runs fn and saves a screenshot numbered in order, or named shot.
async function step(name, fn, shot) {
  const t0 = Date.now();
  try {
    await fn();
  } catch (e) {
    await page.screenshot({ path: join(shots, `FAILED-${name}.png`), fullPage: true }).catch(() => {});
    console.error(`FAIL ${name}: ${e.stack || e}`);
    await cleanup();
    await browser.close();
    process.exit(1);
  }
  if (!shot) n++;
  const file = join(shots, shot ? `${shot}.png` : `${String(n).padStart(2, '0')}-${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  console.log(`ok   ${name} (${Date.now() - t0} ms) -> ${file}`);
}
const expect = (cond, msg) => { if (!cond) throw new Error(msg); };
const hash = h => page.evaluate(x => { location.hash = x; }, h);

await step('signin', async () => {
  const t0 = Date.now();
  await page.goto(`${base}/ui/`);
  await page.locator('#key').waitFor();
  const ready = Date.now() - t0;
  const fcp = await page.evaluate(() => {
    const e = performance.getEntriesByName('first-contentful-paint')[0];
    return e ? Math.round(e.startTime) : -1;
  });
  console.log(`     first contentful paint of the sign-in page ${fcp} ms; form ready ${ready} ms`);
  expect(page.url().includes('#/signin'), `an unsigned visit lands on ${page.url()}, want the sign-in page`);
  await page.fill('#key', 'ak_wrong');
  await page.click('button[type=submit]');
  await page.locator('#signin-error', { hasText: 'did not accept' }).waitFor();
  await page.screenshot({ path: join(shots, '00-signin-form.png'), fullPage: true });
  await page.fill('#key', key);
  await page.click('button[type=submit]');
  await page.locator('#principal', { hasText: ws }).waitFor();
  expect(!page.url().includes(key) && !requested.some(u => u.includes(key)), 'the key appeared in a URL');
  const stored = await page.evaluate(() => sessionStorage.getItem('svc.token'));
  expect(stored === key, 'the key is not kept in sessionStorage');
});

await step('scorecards', async () => {
  await hash('#/scorecards');
  await page.locator(`#scorecards tr[data-id="${running}"]`).waitFor();
  await page.locator(`#scorecards tr[data-id="${baseline}"]`, { hasText: 'succeeded' }).waitFor();
  const row = await page.locator(`#scorecards tr[data-id="${running}"]`).innerText();
  expect(/running/.test(row) && /\d+\/200 done/.test(row), `the running row reads ${JSON.stringify(row)}`);
  // Keyboard: Tab from the filters reaches the rows' links.
  // status, kind, dataset, harness, Filter, then the first row's checkbox
  // and link.
  await page.focus('select[name=status]');
  for (let i = 0; i < 6; i++) await page.keyboard.press('Tab');
  const focused = await page.evaluate(() => {
    const a = document.activeElement;
    return a && a.closest('#scorecards') ? `${a.tagName} ${a.textContent}` : String(a && a.tagName);
  });
  expect(/^A sc_/.test(focused), `six Tabs from the status filter land on ${focused}, want the first row's link`);
});

const doneOf = async () => {
  const t = await page.locator('#progress-text').innerText();
  const m = /(\d+) of (\d+) done/.exec(t);
  expect(m, `progress reads ${JSON.stringify(t)}`);
  return Number(m[1]);
};

await step('running-scorecard', async () => {
  await hash(`#/scorecards/${running}`);
  await page.locator('#progress-bar').waitFor();
  const first = await doneOf();
  const deadline = Date.now() + 30000;
  let now = first;
  while (now <= first && Date.now() < deadline) {
    await page.waitForTimeout(500);
    now = await doneOf();
  }
  expect(now > first, `the progress did not move in 30 s (still ${first} done)`);
  const value = await page.locator('#progress-bar').evaluate(el => el.value);
  expect(value === now, `the progress bar holds ${value}, the text says ${now}`);
  console.log(`     progress moved from ${first} to ${now} done without a reload`);
  await page.locator('#cases tbody tr[data-key]').first().waitFor();
});

await step('case-trace', async () => {
  await hash(`#/scorecards/${candidate}/cases/${caseId}`);
  await page.locator('svg.timeline').waitFor();
  const totals = await page.locator('#trace-totals').innerText();
  expect(/1 tool calls/.test(totals) && /1 LLM calls/.test(totals) && /120 input and 30 output tokens/.test(totals) && /1 errors/.test(totals),
    `trace totals read ${JSON.stringify(totals)}`);
  expect(await page.locator('svg.timeline g.ev').count() === 4, 'the timeline does not show the 4 events');
  await page.locator('svg.timeline g.ev[data-kind="error"]').focus();
  await page.keyboard.press('Enter');
  await page.locator('#event-detail', { hasText: 'tool failed' }).waitFor();
  await page.locator('#logs', { hasText: `working on ${caseId}` }).waitFor();
  await page.locator('.tabs a', { hasText: 'Trial 1' }).waitFor();
});

await step('diff-and-gate', async () => {
  await hash(`#/diff?baseline=${baseline}&candidate=${candidate}`);
  const gate = await page.locator('#gate').innerText();
  expect(/BLOCK|PASS|NOT COMPARABLE|BLOCKED/.test(gate), `the gate banner reads ${JSON.stringify(gate)}`);
  const counts = await page.locator('#transition-counts').innerText();
  expect(/2 broke/.test(counts), `the transitions read ${JSON.stringify(counts)}, want 2 broke`);
  await page.locator('h2', { hasText: 'Experiment axes' }).waitFor();
  await page.locator('td', { hasText: 'harness' }).first().waitFor();
});

await step('trend', async () => {
  await hash(`#/trend?dataset=${dataset}`);
  await page.locator('#trend-chart').waitFor();
  expect(await page.locator('#trend-chart path.series').count() === 2, 'want one line per harness version (2)');
});

await step('datasets', async () => {
  await hash(`#/datasets/${dataset}`);
  await page.locator('td', { hasText: 'c00006' }).waitFor();
});

await step('harnesses', async () => {
  await hash('#/harnesses/agent');
  await page.locator('text=Compare two versions').waitFor();
  await page.click('form button[type=submit]');
  await page.locator('#version-diff details').waitFor();
});

await step('judges', async () => {
  await hash('#/judges');
  await page.locator('h1', { hasText: 'Judges' }).waitFor();
});

// api calls the JSON API with the signed-in key, as a client would.
async function api(method, path, body, type = 'application/json') {
  const headers = { Authorization: `Bearer ${key}` };
  if (body !== undefined) headers['Content-Type'] = type;
  const res = await fetch(`${base}${path}`, { method, headers, body: body === undefined || type !== 'application/json' ? body : JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path} = ${res.status}: ${text.slice(0, 400)}`);
  return text ? JSON.parse(text) : null;
}

const imageTar = process.env.SVC_UI_IMAGE_TAR;
if (imageTar) {
  // Seed through the API: the image imported into the workspace's store;
  // a world session that writes a file and closes (hibernating into
  // world v1); a second session from the world, live, that reads it.
  const { readFileSync } = await import('node:fs');
  let first, second, me;
  await step('sandboxes', async () => {
    me = await api('GET', '/me');
    await page.goto(`${base}/ui/#/sandboxes`);
    // Before any session: the empty state says how to create one.
    const before = await api('GET', '/sandboxes');
    if (!before.length) await page.locator('#sandboxes-empty', { hasText: 'svc sandbox create' }).waitFor();
    await page.goto(`${base}/ui/#/worlds`);
    await page.locator('#worlds-empty', { hasText: 'svc sandbox create --world' }).waitFor();

    const im = await api('POST', '/images?as=busybox:1', readFileSync(imageTar), 'application/x-tar');
    expect(/^busybox:1@sha256:/.test(im.ref), `POST /images answered ${JSON.stringify(im)}`);
    first = await api('POST', '/sandboxes', { image: 'busybox:1', world: { id: 'shop' }, ttl: 600 });
    cleanups.push(() => api('POST', `/sandboxes/${first.id}/close`, { snapshot: false }));
    const wrote = await api('POST', `/sandboxes/${first.id}/exec`, { command: 'echo hello world > /root/hello && cat /root/hello' });
    expect(wrote.exitCode === 0 && wrote.stdout === 'hello world\n', `the first exec answered ${JSON.stringify(wrote)}`);
    const closed = await api('POST', `/sandboxes/${first.id}/close`, {});
    expect(closed.session.closedReason === 'closed' && (closed.session.snapshots || []).length === 1,
      `closing the world session answered ${JSON.stringify(closed.session)}, want closed with one snapshot`);
    second = await api('POST', '/sandboxes', { world: { id: 'shop' }, ttl: 900 });
    cleanups.push(() => api('POST', `/sandboxes/${second.id}/close`, { snapshot: false }));
    const read = await api('POST', `/sandboxes/${second.id}/exec`, { command: 'cat /root/hello' });
    expect(read.stdout === 'hello world\n', `the session from shop v1 reads ${JSON.stringify(read)}`);
    await api('POST', `/sandboxes/${second.id}/exec`, { command: 'echo oops >&2; exit 3' });

    await page.click('a[data-nav="sandboxes"]');
    const live = page.locator(`#sandboxes tr[data-id="${second.id}"]`);
    await live.waitFor();
    const liveRow = await live.innerText();
    expect(/shop@v1/.test(liveRow) && /running/.test(liveRow) && /in 1[45] min/.test(liveRow) && /idle/.test(liveRow),
      `the live session's row reads ${JSON.stringify(liveRow)}`);
    const endedRow = await page.locator(`#sandboxes tr[data-id="${first.id}"]`).innerText();
    expect(/succeeded/.test(endedRow) && /closed/.test(endedRow) && /ended/.test(endedRow) && /shop \(new world from busybox:1\)/.test(endedRow),
      `the closed session's row reads ${JSON.stringify(endedRow)}`);
    const order = await page.locator('#sandboxes tbody tr').evaluateAll(rows => rows.map(r => r.dataset.id));
    expect(order.indexOf(second.id) < order.indexOf(first.id), `live sessions come first: ${order}`);
  }, '08-sandboxes');

  await step('sandbox-session', async () => {
    await page.locator(`#sandboxes tr[data-id="${second.id}"] a[href^="#/sandboxes/"]`).click();
    await page.locator('#sandbox-meta', { hasText: 'idle' }).waitFor();
    const meta = await page.locator('#sandbox-meta').innerText();
    expect(/shop@v1/.test(meta) && /in 1[45] min/.test(meta) && /none booted/.test(meta), `the session's meta reads ${JSON.stringify(meta)}`);
    await page.locator('#sandbox-exec-events tr.exec').nth(1).waitFor();
    const execs = await page.locator('#sandbox-exec-events tbody').innerText();
    expect(/cat \/root\/hello/.test(execs) && /hello world/.test(execs) && /✗ 3/.test(execs) && /\[stderr\] oops/.test(execs),
      `the exec events read ${JSON.stringify(execs)}`);
    await page.locator('#sandbox-snapshots', { hasText: 'svc sandbox snapshot' }).waitFor();
    // The closed session: its sealed trajectory and the version it saved.
    await hash(`#/sandboxes/${first.id}`);
    await page.locator('#sandbox-exec-events', { hasText: 'echo hello world' }).waitFor();
    await page.locator('#sandbox-snapshots', { hasText: 'shop:v1@sha256:' }).waitFor();
    const note = await page.locator('#sandbox-execs p').first().innerText();
    expect(/1 command; other events: session.closed \(the sealed trajectory\)/.test(note), `the closed session's note reads ${JSON.stringify(note)}`);
    await hash(`#/sandboxes/${second.id}`);
    await page.locator('#sandbox-exec-events tr.exec').nth(1).waitFor();
  }, '08a-sandbox-session');

  await step('worlds', async () => {
    // Closing the live session hibernates it: shop v2.
    const closed = await api('POST', `/sandboxes/${second.id}/close`, {});
    expect((closed.session.snapshots || []).length === 1, `closing the second session answered ${JSON.stringify(closed.session)}`);
    await page.click('a[data-nav="worlds"]');
    const row = await page.locator('#worlds tr[data-id="shop"]').innerText();
    expect(/v2/.test(row) && row.includes(me.subject) && /ago|now/.test(row) && /shop:v2@sha256:[0-9a-f]{64}/.test(row),
      `the world's row reads ${JSON.stringify(row)}`);
    await page.locator('#worlds tr[data-id="shop"] a[href^="#/worlds/"]').click();
    await page.locator('#world-versions').waitFor();
    const w = await api('GET', '/worlds/shop');
    const rows = await page.locator('#world-versions tbody tr').allInnerTexts();
    expect(rows.length === 2 && /^v2/.test(rows[0]) && /^v1/.test(rows[1]), `the versions read ${JSON.stringify(rows)}`);
    for (const [i, v] of w.versions.slice().reverse().entries()) {
      expect(rows[i].includes(v.ref) && rows[i].includes(v.digest.slice(0, 19)) && rows[i].includes(me.subject),
        `version row ${i} reads ${JSON.stringify(rows[i])}, want ${v.ref} published by ${me.subject}`);
    }
    await page.locator('#world-start', { hasText: '--world-version v1' }).waitFor();
    // Copy puts the pinned reference on the clipboard.
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    await page.locator('#world-versions tbody tr').nth(1).locator('button.copy').click();
    await page.locator('#world-versions button.copy', { hasText: 'Copied' }).waitFor();
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    expect(copied === w.versions[0].ref, `Copy put ${JSON.stringify(copied)} on the clipboard, want ${w.versions[0].ref}`);
    // Another world, or a malformed id, is not found.
    await hash('#/worlds/nope');
    await page.locator('h1', { hasText: 'Not found' }).waitFor();
    await hash('#/worlds/shop');
    await page.locator('#world-versions').waitFor();
  }, '09-worlds');
}

// An agent's call parked for approval (docs/approvals.md): an agent using
// the signed-in member's key (the X-Svc-Agent-* headers) asks to delete a
// dataset version, a destructive call the default policy parks; with
// Prefer: wait=0 it answers 202 at once. Its arguments carry markup, a key
// that a parsed copy would move ("2") and a number a parsed copy would
// round: the inbox shows them as sent, as text.
const agentArgs = '{"id":"scratch","version":"1.0.0","reason":"<script>window.pwned=1</script><img src=x onerror=\\"window.pwned=2\\">","2":"kept in place","limit":12345678901234567891}';
const agentArgsShown = [
  '{',
  '  "id": "scratch",',
  '  "version": "1.0.0",',
  '  "reason": "<script>window.pwned=1</script><img src=x onerror=\\"window.pwned=2\\">",',
  '  "2": "kept in place",',
  '  "limit": 12345678901234567891',
  '}'].join('\n');
// status answers a request's status with the signed-in key.
async function status(method, path, body) {
  const res = await fetch(`${base}${path}`, { method, headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  await res.arrayBuffer();
  return res.status;
}
let approvalId;
await step('approvals', async () => {
  const me = await api('GET', '/me');
  await api('POST', '/datasets', { id: 'scratch', version: '1.0.0', cases: [{ id: 'c1', task: 'say ok', expected: 'ok', graders: [{ id: 'exact' }] }] });
  const res = await fetch(`${base}/datasets/scratch/versions/1.0.0`, {
    method: 'DELETE', body: agentArgs,
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', Prefer: 'wait=0',
      'X-Svc-Agent-Id': 'ui-agent', 'X-Svc-Agent-Name': 'UI Agent', 'X-Svc-Conversation-Id': 'c1' },
  });
  const parked = await res.json();
  approvalId = parked.error && parked.error.details && parked.error.details.approval;
  expect(res.status === 202 && parked.error.code === 'APPROVAL_PENDING' && approvalId && res.headers.get('location') === `/approvals/${approvalId}`,
    `the agent's delete answered ${res.status} ${JSON.stringify(parked)}, want 202 APPROVAL_PENDING with the approval to poll`);
  expect(await status('GET', '/datasets/scratch/versions/1.0.0') === 200, 'the parked delete ran before anybody approved it');

  // The feed has the request, unread; its link (spec §6: the conversation,
  // the workspace root with ?conversation=) leads to the inbox narrowed to
  // that conversation.
  await hash('#/notifications');
  const item = page.locator('#notifications li[data-kind="agent_approval_requested"]', { hasText: 'UI Agent' });
  await item.waitFor();
  expect(await item.locator('.unread-mark').count() === 1, 'the approval request is not shown unread');
  await page.screenshot({ path: join(shots, '10a-approval-requested.png'), fullPage: true });
  await item.locator('a.open').click();
  await page.locator('#approvals-conversation', { hasText: 'c1' }).waitFor();
  expect(new URL(page.url()).hash === '#/?conversation=c1', `the notification led to ${page.url()}, want #/?conversation=c1`);
  expect(await page.locator('a[data-nav="approvals"][aria-current="page"]').count() === 1, 'the nav does not mark Approvals');
  const card = page.locator(`#approvals article.approval[data-id="${approvalId}"]`);
  await card.waitFor();
  const text = await card.innerText();
  for (const want of ['UI Agent', '(id ui-agent)', 'c1', me.subject, 'delete_dataset_version', 'DELETE /datasets/scratch/versions/1.0.0', 'then refused']) {
    expect(text.includes(want), `the pending approval's card lacks ${JSON.stringify(want)}: ${JSON.stringify(text)}`);
  }
  expect(/in (1 h|\d+ min)/.test(text), `the card does not say when it expires: ${JSON.stringify(text)}`);
  const shown = await card.locator('pre.args').innerText();
  expect(shown === agentArgsShown, `the arguments read\n${shown}\nwant, as sent,\n${agentArgsShown}`);
  const injected = await page.evaluate(() => [document.querySelectorAll('main script, main img').length, window.pwned]);
  expect(injected[0] === 0 && injected[1] === undefined, `the arguments' markup became elements: ${JSON.stringify(injected)}`);

  // Approve it in the page, with a reason.
  await card.locator('input[name=reason]').fill('scratch data, fine to delete');
  await card.locator('button[data-decision="approve"]').click();
  const decided = page.locator(`#approvals article.approval[data-id="${approvalId}"][data-status="approved"]`);
  await decided.waitFor();
  const d = await decided.locator('dl.settled').innerText();
  expect(d.includes(`approved by ${me.subject}`) && d.includes('scratch data, fine to delete'), `the decided card reads ${JSON.stringify(d)}`);
  expect(await decided.locator('button[data-decision]').count() === 0, 'the decided card still offers Approve and Deny');

  // Its page: the caller had stopped waiting (202), so the service ran the
  // call once on approval (resumed), and its answer is shown.
  await decided.locator('h2 a').click();
  await page.locator('article.approval dl.settled', { hasText: 'yes: the caller had stopped waiting' }).waitFor({ timeout: 60000 });
  const s = await page.locator('article.approval dl.settled').innerText();
  expect(/✓ 204/.test(s) && /Delivered\s+no/.test(s), `the approval's page reads ${JSON.stringify(s)}, want ran 204, not delivered`);
  expect(await page.locator('article.approval pre.args').innerText() === agentArgsShown, 'the approval\'s page shows other arguments');
  const a = await api('GET', `/approvals/${approvalId}`);
  expect(a.status === 'approved' && a.resumed === true && a.delivered === false && a.decidedBy === me.subject && a.result && a.result.status === 204,
    `GET /approvals/${approvalId} = ${JSON.stringify({ ...a, body: undefined })}`);
  expect(await status('GET', '/datasets/scratch/versions/1.0.0') === 404, 'the approved delete did not run');
  expect(await status('POST', `/approvals/${approvalId}/decide`, { decision: 'deny' }) === 409, 'a second decision was not refused');

  // The tabs: gone from Pending, listed under Approved.
  await hash('#/approvals');
  await page.locator('#approvals-empty', { hasText: 'No pending approvals' }).waitFor();
  await page.click('nav.tabs a[data-status="approved"]');
  await page.locator(`#approvals article.approval[data-id="${approvalId}"][data-status="approved"]`).waitFor();
  await hash(`#/approvals/${approvalId}`);
  await page.locator('article.approval dl.settled').waitFor();
}, '10-approvals');

await step('notifications', async () => {
  await hash('#/notifications');
  await page.locator('#notifications li', { hasText: 'completed' }).first().waitFor();
  // The decision deleted the approval's notification (not marked read).
  expect(await page.locator('#notifications li[data-kind="agent_approval_requested"]').count() === 0, 'the decided approval\'s notification is still in the feed');
  expect(/\d/.test(await page.locator('#unread').innerText()), 'the header shows no unread count');
  await page.screenshot({ path: join(shots, '11a-notifications-unread.png'), fullPage: true });
  await page.click('#read-all');
  await page.locator('#notifications li', { hasText: 'unread' }).first().waitFor({ state: 'detached' });
  expect((await page.locator('#unread').innerText()) === '', 'the unread count stays after marking all read');
  // Open follows the link the service resolved (spec §6): a scorecard's
  // notification leads to its page.
  await page.locator('#notifications li', { hasText: baseline }).first().locator('a', { hasText: 'Open' }).click();
  await page.locator('h1', { hasText: baseline }).waitFor();
  expect(new URL(page.url()).hash === `#/scorecards/${baseline}`, `Open led to ${page.url()}, want #/scorecards/${baseline}`);
  // The feed itself, for the screenshot.
  await hash('#/notifications');
  await page.locator('#notifications li').first().waitFor();
}, '11-notifications');

await step('notification-links', async () => {
  // Every resource type a link may name has a page: a runtime's is a
  // registry page, a conversation's the workspace root narrowed to that
  // conversation's approvals, and a resource svc does not keep (an issue,
  // say) a page that names it.
  await hash('#/runtimes');
  await page.locator('h1', { hasText: 'Runtimes' }).waitFor();
  await hash('#/?conversation=c_1');
  await page.locator('#approvals-conversation', { hasText: 'c_1' }).waitFor();
  await page.locator('#approvals-empty', { hasText: 'No pending approvals in conversation c_1' }).waitFor();
  await hash('#/');
  await page.locator('h1', { hasText: 'Scorecards' }).waitFor();
  await hash('#/issues/ISS-7');
  await page.locator('#resource-id', { hasText: 'ISS-7' }).waitFor();
  await page.locator('#elsewhere').waitFor();
});

await step('cross-tenant', async () => {
  await hash(`#/scorecards/${foreign}`);
  await page.locator('h1', { hasText: 'Not found' }).waitFor();
  const text = await page.locator('main').innerText();
  expect(/not found/i.test(text) && !text.includes('secret@'), `another workspace's scorecard shows ${JSON.stringify(text.slice(0, 200))}`);
});

const big = process.env.SVC_UI_BIG_ID;
if (big) {
  await step('big-scorecard', async () => {
    await hash('#/scorecards');
    await page.locator(`#scorecards tr[data-id="${big}"]`).waitFor();
    // A fresh load of the page, as a user opening a link would.
    await page.goto(`${base}/ui/#/scorecards/${big}`);
    await page.reload({ waitUntil: 'commit' });
    // Times from the start of the navigation (performance.now()), taken in
    // the page when the first case rows and then every row are there.
    const at = async fn => Math.round(await (await page.waitForFunction(fn, null, { polling: 'raf', timeout: 120000 })).jsonValue());
    const rows = await at(() => document.querySelector('#cases tbody tr[data-key]') && performance.now());
    const fcp = await page.evaluate(() => {
      const e = performance.getEntriesByName('first-contentful-paint')[0];
      return e ? Math.round(e.startTime) : -1;
    });
    const all = await at(() => /case-trials loaded\./.test((document.getElementById('cases-note') || {}).textContent || '') && performance.now());
    const reads = await page.evaluate(() => performance.getEntriesByType('resource')
      .filter(e => !/\.(js|css)$/.test(new URL(e.name).pathname))
      .map(e => `${new URL(e.name).pathname}${new URL(e.name).search} ${Math.round(e.startTime)}+${Math.round(e.responseEnd - e.startTime)} ms`));
    console.log(`     requests (start+duration): ${reads.join('; ')}`);
    const applies = await page.evaluate(() => performance.getEntriesByType('measure')
      .filter(e => e.name.startsWith('cases:setRows')).map(e => `${e.name.slice(14)} rows ${Math.round(e.duration)} ms`));
    console.log(`     building, sorting and filtering the table as pages arrived: ${applies.join('; ')}`);
    // What the reads cost the service, warm, three times each.
    const cost = await page.evaluate(async ({ id }) => {
      const h = { Authorization: `Bearer ${sessionStorage.getItem('svc.token')}` };
      const out = {};
      for (const q of ['view=summary', 'limit=100', 'limit=5000&casesAfter=c00100%230']) {
        const t = [];
        for (let i = 0; i < 3; i++) {
          const t0 = performance.now();
          await (await fetch(`/scorecards/${id}?${q}`, { headers: h })).arrayBuffer();
          t.push(Math.round(performance.now() - t0));
        }
        out[q] = t.join('/');
      }
      return out;
    }, { id: big });
    console.log(`     warm read times (ms): ${JSON.stringify(cost)}`);
    const inDom = await page.locator('#cases tbody tr[data-key]').count();
    const total = await page.locator('#cases-note').innerText();
    console.log(`     ${total} first contentful paint ${fcp} ms, first case rows at ${rows} ms, every row at ${all} ms after navigation start; ${inDom} rows in the DOM`);
    expect(inDom < 200, `${inDom} rows in the DOM: the table is not virtualised`);
    await page.locator('#cases').evaluate(el => { el.closest('.vscroll').scrollTop = 1e9; });
    await page.waitForTimeout(300);
    const last = await page.locator('#cases tbody tr[data-key]').last().getAttribute('data-key');
    console.log(`     scrolled to the end: last row ${last}`);
    await page.fill('#case-filter', last);
    await page.locator(`#cases tbody tr[data-key="${last}"]`).waitFor();
    expect(await page.locator('#cases tbody tr[data-key]').count() === 1, `filtering on ${last} leaves other rows`);
  });

  // Sorting and filtering while the table loads: the pages after the
  // first are held back until the user has sorted and filtered the first
  // 100 rows, then let through; the final view must be the whole
  // scorecard, sorted and filtered.
  await step('big-sort-while-loading', async () => {
    const n = Number(env('SVC_UI_BIG_N'));
    const lastId = `c${String(n).padStart(5, '0')}`;
    let release;
    const gate = new Promise(r => { release = r; });
    const held = u => u.pathname === `/scorecards/${big}` && u.searchParams.has('casesAfter');
    await page.route(held, async route => { await gate; await route.continue().catch(() => {}); });
    await hash('#/scorecards');
    await page.goto(`${base}/ui/#/scorecards/${big}`);
    await page.reload();
    await page.locator('#cases tbody tr[data-key]').first().waitFor();
    await page.locator('#cases-status', { hasText: `loading: 100 of ${n} case-trials` }).waitFor();
    expect(await page.locator('#cases').getAttribute('aria-busy') === 'true', 'a partly loaded table is not marked busy');
    await page.click('#cases th button[data-key="case"]'); // ascending -> descending
    let first = await page.locator('#cases tbody tr[data-key]').first().getAttribute('data-key');
    expect(first === 'c00100', `sorted descending on the first page, the first row is ${first}, want c00100`);
    await page.fill('#case-filter', lastId);
    await page.locator('#cases tbody td', { hasText: 'No case matches.' }).waitFor();
    const partial = await page.locator('#cases-status').innerText();
    expect(/0 of 100 rows \(loading/.test(partial), `the partial state reads ${JSON.stringify(partial)}`);
    await page.screenshot({ path: join(shots, '11a-big-sorted-while-loading.png'), fullPage: true });
    release();
    await page.locator('#cases-note', { hasText: 'case-trials loaded.' }).waitFor({ timeout: 60000 });
    await page.locator(`#cases tbody tr[data-key="${lastId}"]`).waitFor();
    const done = await page.locator('#cases-status').innerText();
    expect(done === `1 of ${n} rows`, `filtered after loading, the table says ${JSON.stringify(done)}, want "1 of ${n} rows"`);
    expect(await page.locator('#cases').getAttribute('aria-busy') === null, 'the loaded table is still marked busy');
    await page.fill('#case-filter', '');
    await page.locator('#cases-status', { hasText: new RegExp(`^${n} rows$`) }).waitFor();
    first = await page.locator('#cases tbody tr[data-key]').first().getAttribute('data-key');
    expect(first === lastId, `sorted descending over the whole scorecard, the first row is ${first}, want ${lastId}`);
    const sortState = await page.locator('#cases th:has(button[data-key="case"])').getAttribute('aria-sort');
    expect(sortState === 'descending', `the case column's aria-sort is ${sortState}`);
    await page.unroute(held);
    console.log(`     sorted and filtered 100 of ${n} rows while loading; after loading: ${done}, first row ${first}`);
  });
}

await step('cancel', async () => {
  await hash(`#/scorecards/${running}`);
  await page.locator('#cancel').click();
  await page.locator('#cancel-confirm').click();
  await page.locator('h1 .badge', { hasText: 'cancelled' }).waitFor();
  expect(await page.locator('#cancel').count() === 0, 'the cancel button is still there');
});

await step('dark-scorecard', async () => {
  await page.emulateMedia({ colorScheme: 'dark' });
  await hash(`#/scorecards/${candidate}`);
  await page.locator('#cases tbody tr[data-key]').first().waitFor();
  // No judge is registered: the re-score form says so instead of failing.
  await page.click('#rescore summary');
  await page.locator('#rescore', { hasText: 'No judges are registered' }).waitFor();
  const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  expect(bg !== 'rgb(255, 255, 255)', `the dark scheme has a white background (${bg})`);
});

await step('signout', async () => {
  await page.emulateMedia({ colorScheme: 'light' });
  await page.click('#signout');
  await page.locator('#key').waitFor();
  expect(await page.evaluate(() => sessionStorage.getItem('svc.token')) === null, 'sign-out left the key in sessionStorage');
});

// OIDC sign-in through the issuer's redirect, in a fresh tab.
const oidcUser = process.env.SVC_UI_OIDC_USER;
if (oidcUser) {
  const issuer = env('SVC_UI_OIDC_ISSUER');
  page = await newPage();
  const navigated = [];
  // Every navigation request of the tab, redirects included (the issuer's
  // answer is a 302 that never becomes a page).
  page.on('request', r => { if (r.isNavigationRequest()) navigated.push(r.url()); });

  await step('oidc-forged-answer', async () => {
    // An answer this tab never asked for (a code planted in a link): it is
    // ignored, and gone from the address.
    await page.goto(`${base}/ui/?code=planted&state=forged`);
    await page.locator('#oidc-error', { hasText: 'state does not match' }).waitFor();
    const u = new URL(page.url());
    expect(!u.search, `the address still holds ${u.search}`);
    expect(await page.evaluate(() => sessionStorage.getItem('svc.token')) === null, 'a forged answer signed the tab in');
  });

  await step('oidc-signin', async () => {
    await page.goto(`${base}/ui/`);
    const button = page.locator('#oidc-signin');
    await button.waitFor();
    const label = await button.innerText();
    expect(label === `Sign in with ${issuer}`, `the button reads ${JSON.stringify(label)}`);
    await page.screenshot({ path: join(shots, '14a-oidc-signin-button.png'), fullPage: true });
    navigated.length = 0;
    await button.click();
    await page.locator('#principal', { hasText: oidcUser }).waitFor();
    await page.locator('#principal', { hasText: ws }).waitFor();
    const authorize = navigated.map(x => new URL(x)).find(x => x.origin === new URL(issuer).origin && x.pathname === '/authorize');
    expect(authorize, `the tab never went to the issuer: ${navigated.join(', ')}`);
    const q = authorize.searchParams;
    expect(q.get('code_challenge_method') === 'S256' && q.get('code_challenge').length === 43 && q.get('state') && q.get('nonce') &&
      q.get('redirect_uri') === `${base}/ui/` && q.get('response_type') === 'code' && !q.has('code_verifier'),
    `the authorization request is ${authorize.search}`);
    expect(navigated.some(x => new URL(x).searchParams.has('code')), 'the issuer did not redirect back with a code');
    const u = new URL(page.url());
    expect(!u.search && u.hash.startsWith('#/scorecards'), `after sign-in the address is ${page.url()}`);
    const stored = await page.evaluate(() => [sessionStorage.getItem('svc.token'), sessionStorage.getItem('svc.mode'), sessionStorage.getItem('svc.oidc')]);
    expect(stored[0] && stored[0].split('.').length === 3 && stored[1] === 'oidc', `sessionStorage holds ${JSON.stringify(stored.slice(1))}`);
    expect(stored[2] === null, 'the pending state, nonce and verifier stay in sessionStorage');
    expect(!requested.some(x => x.includes(stored[0])), 'the access token appeared in a URL');
    await page.locator(`#scorecards tr[data-id="${baseline}"]`).waitFor();
    await page.locator(`#scorecards tr[data-id="${candidate}"]`).waitFor();
    expect(await page.locator(`#scorecards tr[data-id="${foreign}"]`).count() === 0, 'the list shows another workspace\'s scorecard');
  });

  await step('oidc-cross-tenant', async () => {
    await hash(`#/scorecards/${foreign}`);
    await page.locator('h1', { hasText: 'Not found' }).waitFor();
    const text = await page.locator('main').innerText();
    expect(/not found/i.test(text) && !text.includes('secret@'), `another workspace's scorecard shows ${JSON.stringify(text.slice(0, 200))}`);
    await hash(`#/scorecards/${baseline}`);
    await page.locator('#cases tbody tr[data-key]').first().waitFor();
  });
}

await cleanup();
await browser.close();
if (pageErrors.length) {
  // A 401 for the wrong key and 404s for the cross-tenant read are the
  // resource loads the steps asked for; anything else is a defect.
  const real = pageErrors.filter(e => !/status of (401|404)/.test(e));
  if (real.length) {
    console.error(`FAIL page errors:\n${real.join('\n')}`);
    process.exit(1);
  }
}
console.log(`all steps passed; screenshots in ${shots}`);
