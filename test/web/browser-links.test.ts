// Every link the service writes for a person opens a console page that shows its object, in a real
// browser (test/helpers/browser.ts). The notification types are enumerated from the code: the
// registry src/platform/notifications/types.ts, and a scan of every notify() call in src/ (a type that is
// not registered, or whose link is not built by consoleLinks for its registered page, fails here).
// For each registered type the owner gets a notification (task.assigned and review.requested by the
// real flows, the others through notify() with a link built by consoleLinks for a real object), and
// its link is opened from another project of the session: the page names the object, shows its id
// and is not a 404 or a blank page. Work items' links, a signed-out opening (sign in, then the page)
// and a person of another organization (a clear "not available") too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { makeProject, member } from '../helpers/factories.ts';
import { mediaWorld, shotVideo } from '../helpers/media.ts';
import { notify } from '../../src/platform/notifications/service.ts';
import { NOTIFICATION_TYPES, type NotificationType } from '../../src/platform/notifications/types.ts';
import { consoleLinks, OBJECT_PAGES, pageOfLink, type ObjectPage } from '../../src/kernel/links.ts';
import {
  expectedFailure, field, heading, launchBrowser, onPath, openPage, problemsOf, section, shots, signIn, waitFor,
  type Browser, type Page,
} from '../helpers/browser.ts';
import { serversRunTheWorker } from '../helpers/server.ts';

serversRunTheWorker();

const SRC = path.resolve(import.meta.dirname, '../../src');

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sourceFiles(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Each notify(...) call of src/: the event types its `type:` names and the consoleLinks page its link uses. */
function notifyCalls(): { file: string; types: string[]; pages: string[] }[] {
  const calls = [];
  for (const file of sourceFiles(SRC)) {
    const text = fs.readFileSync(file, 'utf8');
    for (const m of text.matchAll(/\bnotify\(ctx, \{([\s\S]*?)\n\s*\}\);/g)) {
      const block = m[1];
      const typeExpr = /\btype: ([^\n]*?)(?:, organizationId|,?\n)/.exec(block)?.[1] ?? '';
      const types = [...typeExpr.matchAll(/'([a-z_]+(?:\.[a-z_]+)+)'/g)].map((x) => x[1]);
      const pages = [...block.matchAll(/\bconsoleLinks\.(\w+)\(/g)].map((x) => x[1]);
      calls.push({ file: path.relative(SRC, file), types, pages });
    }
  }
  return calls;
}

test('every notify() call in src/ writes a registered type, its link built by consoleLinks for the registered page', () => {
  const calls = notifyCalls();
  assert.ok(calls.length >= 8, `the scan finds the notify() calls (${calls.length})`);
  const seen = new Set<string>();
  for (const c of calls) {
    assert.ok(c.types.length > 0, `${c.file}: a notify() call whose type the scan cannot read`);
    for (const type of c.types) {
      seen.add(type);
      const info = (NOTIFICATION_TYPES as Record<string, { page: string | null }>)[type];
      assert.ok(info, `${c.file}: notification type ${type} is not in src/platform/notifications/types.ts (register it with its console page)`);
      assert.deepEqual(c.pages, info.page ? [info.page] : [], `${c.file}: ${type}'s link is consoleLinks.${info.page}(...)`);
    }
  }
  const withPage = Object.entries(NOTIFICATION_TYPES).filter(([, i]) => i.page).map(([k]) => k);
  assert.deepEqual(withPage.filter((k) => !seen.has(k)), [], 'every registered type with a page is written by some notify() call');
  for (const [name, pattern] of Object.entries(OBJECT_PAGES)) {
    const link = name === 'commercial' ? consoleLinks.commercial({ organizationId: 'org_1' }) : consoleLinks[name as Exclude<ObjectPage, 'commercial'>]({ id: 'x_1', projectId: 'prj_1' });
    assert.equal(pageOfLink(link), name, `${pattern}: ${link} opens the ${name} page`);
  }
  for (const bad of ['https://evil.example/jobs/job_1', '//evil.example/jobs/job_1', '/\\evil.example/jobs/job_1', 'jobs/job_1',
    '/jobs/job 1', '/jobs/job_1\n', '/jobs/job_1/extra', '/nowhere', '']) {
    assert.equal(pageOfLink(bad), null, `${JSON.stringify(bad)} opens no console page`);
  }
});

/** The object page's heading and the id shown in its Details. */
async function showsObject(page: Page, title: string | RegExp, id: string, what: string): Promise<void> {
  await heading(page, title).waitFor();
  const h1 = (await page.locator('h1').innerText()).trim();
  assert.ok(!/not available|not found/i.test(h1), `${what}: ${h1}`);
  const details = section(page, /^(Details|Plan and usage)$/);
  await waitFor(async () => (await details.innerText()).includes(id), `${what}: the page shows the id ${id}`);
  const text = await page.locator('main').innerText();
  assert.ok(!/\b(undefined|null|NaN|\[object Object\])\b/.test(text), `${what}: no placeholder value on the page:\n${text}`);
}

test('the link of every notification type opens a console page showing its object (and work items, signed out, another organization)', async (t) => {
  const browser: Browser = await launchBrowser(t);
  const w = await mediaWorld(t);
  const { s } = w;
  const projectId = w.tree.projectId;
  const video = await shotVideo(w, w.shotIds[0], 'a pier at dawn');
  const producer = await member(s, 'producer', w.tree);
  const org = (await s.db.get<{ name: string }>('SELECT name FROM organizations WHERE id = ?', w.tree.organizationId))!.name;

  // Real flows: a task assigned to the owner by the producer; a review requested by the producer (qa:review holders are told).
  const task = await s.call('POST', '/api/tasks', {
    token: producer.token, body: { title: 'Grade the pier shot', assigneeUserId: w.user.id, linkedPage: '//evil.example/production/shots/sht_1' },
  });
  assert.equal(task.status, 201, task.text);
  const review = await s.call('POST', '/api/production/reviews', { token: producer.token, body: { artifactId: video.id, title: 'Pier shot, first look' } });
  assert.equal(review.status, 201, review.text);
  const delivery = await s.call('POST', '/api/production/deliveries', { token: w.token, body: { title: 'Pier delivery', artifactIds: [video.id] } });
  assert.equal(delivery.status, 201, delivery.text);

  /** The object of each page: its link (built as the service builds it), the page's heading and the id it shows. */
  const objects: Record<ObjectPage, { link: string; title: string | RegExp; id: string }> = {
    job: { link: consoleLinks.job({ id: video.jobId, projectId }), title: 'Generation job: video', id: video.jobId },
    review: { link: consoleLinks.review({ id: review.body.id, projectId }), title: 'Review: Pier shot, first look', id: review.body.id },
    task: { link: consoleLinks.task({ id: task.body.id, projectId }), title: 'Task: Grade the pier shot', id: task.body.id },
    delivery: { link: consoleLinks.delivery({ id: delivery.body.id, projectId }), title: 'Delivery: Pier delivery', id: delivery.body.id },
    shot: { link: consoleLinks.shot({ id: w.shotIds[0], projectId }), title: /^Shot: /, id: w.shotIds[0] },
    commercial: { link: consoleLinks.commercial({ organizationId: w.tree.organizationId }), title: `Usage and quotas: ${org}`, id: w.tree.organizationId },
  };
  const real = new Set<NotificationType>(['task.assigned', 'review.requested']);
  const types = (Object.keys(NOTIFICATION_TYPES) as NotificationType[]).filter((k) => NOTIFICATION_TYPES[k].page);
  for (const type of types) {
    if (real.has(type)) continue;
    const { category, page } = NOTIFICATION_TYPES[type];
    await notify(s.operator(), {
      category, type, organizationId: w.tree.organizationId, workspaceId: w.tree.workspaceId, projectId,
      subject: `Check ${type}`, link: objects[page!].link, recipients: [w.user.id],
    });
  }
  const inbox = (await s.call('GET', '/api/notifications?limit=200', { token: w.token })).body.items as { type: string; link: string | null; subject: string }[];
  const linkOf = new Map(inbox.map((n) => [n.type, n]));
  for (const type of types) {
    const n = linkOf.get(type);
    assert.ok(n, `the owner has a ${type} notification`);
    assert.equal(n.link, objects[NOTIFICATION_TYPES[type].page!].link, `${type}: the link the service wrote`);
  }

  // Signed in, and in another project: each link opens its object (read in the link's project).
  const page = await openPage(browser, t);
  await page.goto(s.url + '/login');
  await signIn(page, w.user.email, w.user.password);
  await onPath(page, '/overview');
  const second = await makeProject(s, w.tree.workspaceId, 'Another project');
  await field(page, 'Project').waitFor();
  await waitFor(async () => (await field(page, 'Project').locator('option').count()) >= 2, 'the project list is filled');
  await field(page, 'Project').selectOption(second.id);
  await waitFor(async () => (await (await page.request.get(s.url + '/api/context')).json()).project.id === second.id, 'the session is in the other project');

  // From the overview: the notification's subject is a link that opens its page in place.
  await section(page, /^Notifications/).getByRole('link', { name: 'Task assigned to you: Grade the pier shot' }).click();
  await onPath(page, `/tasks/${task.body.id}`);
  await showsObject(page, objects.task.title, objects.task.id, 'task.assigned from the overview');
  // A linkedPage that is not a plain console path is shown as text, never as a link (nor as the work item's link).
  await page.getByText('//evil.example/production/shots/sht_1', { exact: true }).waitFor();
  assert.equal(await page.locator('a[href*="evil.example"]').count(), 0);

  const shotOnce = new Set<string>();
  for (const type of types) {
    const pageName = NOTIFICATION_TYPES[type].page!;
    const o = objects[pageName];
    const res = await page.goto(s.url + linkOf.get(type)!.link!);
    assert.equal(res?.status(), 200, `${type}: ${o.link} answers the console`);
    await showsObject(page, o.title, o.id, type);
    if (!shotOnce.has(pageName)) {
      shotOnce.add(pageName);
      await shots(page, `link-${pageName}`);
    }
  }

  // Work items: each item's link opens a page that shows it (a shot to generate, the assigned task).
  const items = (await s.call('GET', '/api/work-items', { token: w.token })).body.items as { kind: string; id: string; link: string }[];
  assert.ok(items.some((i) => i.kind === 'shot_without_media'), 'a shot to generate is a work item');
  for (const item of items) {
    await page.goto(s.url + item.link);
    const want = item.kind === 'task' ? objects.task : item.kind === 'shot_without_media' ? { title: /^Shot: /, id: item.id } : { title: /^Generation job: /, id: item.id };
    await showsObject(page, want.title, want.id, `work item ${item.kind}`);
  }
  const ctx = await (await page.request.get(s.url + '/api/context')).json();
  assert.equal(ctx.project.id, second.id, 'opening the links did not move the session\'s scope');
  assert.deepEqual(problemsOf(page, s.url), []);

  // Signed out: the link goes to sign-in, then to its page.
  const out = await openPage(browser, t);
  await out.goto(s.url + objects.job.link);
  await onPath(out, '/login');
  assert.equal(new URL(out.url()).searchParams.get('returnTo'), objects.job.link);
  await signIn(out, w.user.email, w.user.password);
  await onPath(out, `/jobs/${video.jobId}`);
  await showsObject(out, objects.job.title, objects.job.id, 'job after sign-in');
  // (The signed-out probe of the session that sends a signed-in page to /login.)
  assert.deepEqual(problemsOf(out, s.url, [expectedFailure(401, '/api/auth/session')]), []);

  // A person of another organization: a clear "not available", no 5xx, nothing of the object.
  const stranger = await member(s, 'org_owner');
  const theirs = await openPage(browser, t);
  await theirs.goto(s.url + '/login');
  await signIn(theirs, stranger.user.email, stranger.user.password);
  await onPath(theirs, '/overview');
  await theirs.goto(s.url + objects.delivery.link);
  await heading(theirs, 'Delivery not available').waitFor();
  assert.ok(!(await theirs.locator('main').innerText()).includes('Pier delivery'), 'nothing of the delivery is shown');
  await shots(theirs, 'link-not-available');
  assert.deepEqual(problemsOf(theirs, s.url, [expectedFailure(403, `/api/production/deliveries/${delivery.body.id}`)]), []);
});
