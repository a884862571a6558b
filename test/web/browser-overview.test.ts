// The web console in a real browser (test/helpers/browser.ts), the overview: the scope switcher, the
// catalog with a generated shot's real first and last frames side by side, the jobs polled live (a new
// job follows the worker to completed without a reload), notifications with the unread count, work
// items, and switching the project (also while the catalog is still loading); a screenshot (acceptance 2).
import { mapSeq } from '../../src/kernel/seq.ts';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeProject } from '../helpers/factories.ts';
import { mediaWorld, shotVideo } from '../helpers/media.ts';
import { createJob } from '../helpers/jobs.ts';
import { notify } from '../../src/platform/notifications/service.ts';
import {
  field, heading, launchBrowser, noStoredToken, onPath, openPage, problemsOf, section, shots, signIn, waitFor,
  type Browser,
} from '../helpers/browser.ts';
import type { Request } from 'playwright-core';
import { serversRunTheWorker } from '../helpers/server.ts';

serversRunTheWorker();

// What the functions evaluated inside the page use (this project type-checks for Node, without the DOM library).
declare const document: any;
declare const requestAnimationFrame: (f: () => void) => number;

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

test('the overview: scope switcher, catalog with a generated shot\'s real first and last frames, jobs polled live, notifications, work items', async (t) => {
  const browser: Browser = await launchBrowser(t);
  const w = await mediaWorld(t, { shots: 2 });
  const title = async (id: string) => (await w.s.db.get<{ title: string }>('SELECT title FROM shots WHERE id = ?', id))!.title;
  const [shot1, shot2] = await mapSeq(w.shotIds, title);
  const video = await shotVideo(w, w.shotIds[0], 'a red lantern in the rain', { seconds: 1, size: '320x180' });
  const second = await makeProject(w.s, w.tree.workspaceId, 'Second project');
  for (const subject of ['Cut approved', 'Budget at 80 %']) {
    await notify(w.s.operator(), { category: 'system_notices', type: 'console.test', organizationId: w.tree.organizationId, subject });
  }
  const page = await openPage(browser, t);
  const jobPolls: number[] = [];
  page.on('request', (r) => { if (new URL(r.url()).pathname.startsWith('/api/jobs')) jobPolls.push(Date.now()); });

  await page.goto(w.s.url + '/login');
  await signIn(page, w.user.email, w.user.password);
  await onPath(page, '/overview');
  await heading(page, 'Overview').waitFor();

  // The scope switcher shows the session's scope.
  const ctx = (await w.s.call('GET', '/api/context', { token: w.token })).body;
  for (const [label, want] of [['Organization', ctx.organization.id], ['Workspace', ctx.workspace.id], ['Project', ctx.project.id]]) {
    await waitFor(async () => (await field(page, label).inputValue()) === want, `${label} shows the current scope (${want})`);
  }

  // The catalog: both shots, the first with its newest video's real first and last frames side by side.
  const catalog = section(page, 'Catalog');
  const article1 = catalog.getByRole('article', { name: `Shot ${shot1}`, exact: true });
  await article1.waitFor();
  await catalog.getByRole('article', { name: `Shot ${shot2}`, exact: true }).waitFor();
  const first = article1.getByRole('img', { name: `First frame of ${shot1}`, exact: true });
  const last = article1.getByRole('img', { name: `Last frame of ${shot1}`, exact: true });
  await first.waitFor();
  await last.waitFor();
  for (const [img, which] of [[first, 'first'], [last, 'last']] as const) {
    const src = new URL((await img.getAttribute('src'))!, w.s.url);
    assert.equal(src.pathname, `/api/production/media-artifacts/${video.id}/content`);
    assert.equal(src.searchParams.get('frame'), which);
  }
  const frames = await page.waitForFunction(([a, b]) => {
    const imgs: any[] = [...document.images];
    const f = imgs.find((i) => i.alt === a);
    const l = imgs.find((i) => i.alt === b);
    if (!f || !l || !f.complete || !l.complete || !f.naturalWidth || !l.naturalWidth) return null;
    const pixels = (img: any) => {
      const c = document.createElement('canvas');
      c.width = img.naturalWidth;
      c.height = img.naturalHeight;
      const g = c.getContext('2d')!;
      g.drawImage(img, 0, 0);
      return g.getImageData(0, 0, c.width, c.height).data;
    };
    const pf = pixels(f);
    const pl = pixels(l);
    let differ = 0;
    for (let i = 0; i < Math.min(pf.length, pl.length); i += 4) if (Math.abs(pf[i] - pl[i]) + Math.abs(pf[i + 1] - pl[i + 1]) + Math.abs(pf[i + 2] - pl[i + 2]) > 24) differ++;
    const fb = f.getBoundingClientRect();
    const lb = l.getBoundingClientRect();
    return { width: [f.naturalWidth, l.naturalWidth], differ, total: pf.length / 4, sideBySide: Math.abs(fb.top - lb.top) < 2 && lb.left >= fb.right - 1 };
  }, [`First frame of ${shot1}`, `Last frame of ${shot1}`]).then((h) => h.jsonValue() as Promise<{ width: number[]; differ: number; total: number; sideBySide: boolean }>);
  assert.ok(frames.width[0] > 0 && frames.width[1] > 0, 'both frames loaded');
  assert.ok(frames.differ > frames.total / 100, `the first and last frames differ (${frames.differ} of ${frames.total} pixels)`);
  assert.ok(frames.sideBySide, 'first and last frame side by side at desktop width');
  assert.equal(await catalog.getByRole('article', { name: `Shot ${shot2}`, exact: true }).getByRole('img', { name: `First frame of ${shot2}` }).count(), 0, 'a shot without video shows no frames');

  // Notifications with the unread count; work items.
  const unread = (await w.s.call('GET', '/api/notifications?limit=1', { token: w.token })).body.unreadCount;
  assert.ok(unread >= 2, `the owner has unread notifications (${unread})`);
  await heading(page, new RegExp(`^Notifications \\(${unread} unread\\)$`)).waitFor();
  await section(page, 'Work items').waitFor();
  await shots(page, 'overview');

  // Jobs: polled every 2 s while visible; a job made elsewhere appears without a reload.
  const jobs = section(page, 'Jobs');
  await jobs.waitFor();
  const polled = jobPolls.length;
  // The row of the job for the second shot (named by the shot's title), and its status badge.
  const job2 = jobs.getByRole('listitem').filter({ has: page.locator('.job-title', { hasText: new RegExp(` for ${escapeRe(shot2)}$`) }) });
  assert.equal(await job2.count(), 0, `no job for ${shot2} yet`);
  await createJob(w.s, w.token, { kind: 'video', connectorId: w.id, shotId: w.shotIds[1], prompt: 'a pier at night', parameters: { seconds: 1, size: '320x180' } });
  await waitFor(async () => (await job2.count()) === 1, `the new job for ${shot2} shows up in Jobs without a reload`, 8_000);
  await waitFor(async () => (await job2.locator('.badge').innerText()).trim() === 'completed',
    `the row of ${shot2}'s job follows the worker to completed without a reload`, 20_000);
  await waitFor(async () => jobPolls.length >= polled + 3, 'the page keeps polling the jobs', 8_000);

  // Switching the project moves the session's scope and shows that project's (empty) catalog.
  await field(page, 'Project').selectOption(second.id);
  // (A new project starts with its own "Shot 1", without media; it has no "Shot 2".)
  await waitFor(async () => (await catalog.getByRole('img', { name: `First frame of ${shot1}`, exact: true }).count()) === 0
    && (await catalog.getByRole('article', { name: `Shot ${shot2}`, exact: true }).count()) === 0, 'the catalog follows the project');
  for (const label of ['Organization', 'Workspace', 'Project']) {
    await waitFor(async () => (await field(page, label).getAttribute('aria-busy')) === null, `${label} is no longer aria-busy after the switch`);
  }
  const moved = await (await page.request.get(w.s.url + '/api/context')).json();
  assert.equal(moved.project.id, second.id, 'PATCH /api/context moved the session\'s scope');
  await field(page, 'Project').selectOption(w.tree.projectId);
  await first.waitFor();
  await noStoredToken(page);
  assert.deepEqual(problemsOf(page, w.s.url), []);

  // A switch while the catalog is still loading (another browser, whose cache holds no frame): the
  // list of videos, answered in the first project, reaches the page only once the scope has moved.
  // The first project's catalog has stopped: it asks for none of its frames, which the service would
  // answer in the second project (a 404 each).
  const late = await openPage(browser, t);
  const frameRequests: string[] = [];
  late.on('request', (r) => { if (new URL(r.url()).searchParams.has('frame')) frameRequests.push(r.url()); });
  let release!: () => void;
  const released = new Promise<void>((resolve) => { release = resolve; });
  let listed!: (r: Request) => void;
  const held = new Promise<Request>((resolve) => { listed = resolve; });
  let holding = true;
  await late.route((url) => url.pathname === '/api/production/media-artifacts', async (route) => {
    if (!holding) return route.continue();
    holding = false;
    const answer = await route.fetch();
    listed(route.request());
    await released;
    await route.fulfill({ response: answer }).catch(() => { /* the page no longer waits for it */ });
  });
  const settled = held.then((request) => new Promise<void>((resolve) => {
    const done = (r: Request) => { if (r === request) resolve(); };
    late.on('requestfinished', done);
    late.on('requestfailed', done);
  }));
  await late.goto(w.s.url + '/login');
  await signIn(late, w.user.email, w.user.password);
  await onPath(late, '/overview');
  await held;
  assert.equal((await (await late.request.get(w.s.url + '/api/context')).json()).project.id, w.tree.projectId, 'the new session starts in the first project');
  await field(late, 'Project').selectOption(second.id);
  await waitFor(async () => (await (await late.request.get(w.s.url + '/api/context')).json()).project.id === second.id, 'the scope moved');
  release();
  await settled;
  await late.evaluate(() => new Promise<void>((resolve) => { requestAnimationFrame(() => requestAnimationFrame(() => resolve())); }));
  await waitFor(async () => (await section(late, 'Catalog').getByRole('article', { name: `Shot ${shot2}`, exact: true }).count()) === 0, 'the catalog follows the project');
  assert.deepEqual(frameRequests, [], 'no frame of the previous project asked for after the switch');
  assert.deepEqual(problemsOf(late, w.s.url), []);
});
