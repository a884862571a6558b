// The invitation's acceptUrl in a real browser (test/helpers/browser.ts): it opens the console page
// /invitations/accept, which previews the invitation (organization, workspace, project, role, who
// invited, expiry); a new person creates an account there and lands in the invited project; a person
// with an account signs in and accepts; a used, revoked or expired link says so in words.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeProject, makeUser, member } from '../helpers/factories.ts';
import { startTestServer } from '../helpers/server.ts';
import {
  button, expectedFailure, field, heading, launchBrowser, noStoredToken, onPath, openPage, problemsOf, shots, signIn, waitFor,
  type Browser,
} from '../helpers/browser.ts';

test('the invitation link: preview, register and join; sign in and accept; used, revoked and expired links explained', async (t) => {
  const browser: Browser = await launchBrowser(t);
  const s = await startTestServer(t);
  const owner = await member(s, 'org_owner');
  const { tree } = owner;
  const org = (await s.db.get<{ name: string }>('SELECT name FROM organizations WHERE id = ?', tree.organizationId))!.name;
  const ws = (await s.db.get<{ name: string }>('SELECT name FROM workspaces WHERE id = ?', tree.workspaceId))!.name;
  const second = await makeProject(s, tree.workspaceId, 'Invited project');
  const invite = async (body: Record<string, unknown>) => {
    const r = await s.call('POST', `/api/organizations/${tree.organizationId}/invitations`, { token: owner.token, body });
    assert.equal(r.status, 201, r.text);
    return r.body as { acceptUrl: string; inviteToken: string; invitation: { id: string } };
  };
  const preview = '/api/invitations/preview';
  // Provoked on purpose: used, revoked and expired tokens; and the page's signed-out probe of the session
  // (it asks, as "/" does, to offer "Accept invitation" to a signed-in person).
  const allowed = [expectedFailure(404, preview), expectedFailure(410, preview), expectedFailure(401, '/api/auth/session')];

  // 1. A new person: the link opens the preview, "Create account and join" signs them in, in the invited project.
  const newcomer = await invite({ email: 'New.Person@example.test', role: 'project_editor', workspaceId: tree.workspaceId, projectId: second.id });
  const link = new URL(newcomer.acceptUrl);
  assert.equal(link.origin, s.url);
  assert.equal(link.pathname, '/invitations/accept');
  const page = await openPage(browser, t);
  await page.goto(newcomer.acceptUrl);
  await heading(page, `Join ${org}`).waitFor();
  const card = page.locator('.card');
  for (const [term, value] of [['Organization', org], ['Workspace', ws], ['Project', 'Invited project'], ['Role', 'Project editor'],
    ['Invited address', 'new.person@example.test'], ['Invited by', owner.user.name]]) {
    const dd = card.locator('dt', { hasText: new RegExp(`^${term}$`) }).locator('xpath=following-sibling::dd[1]');
    assert.equal((await dd.innerText()).trim().toLowerCase(), value.toLowerCase(), term);
  }
  await card.locator('dt', { hasText: /^Expires$/ }).waitFor();
  assert.equal(await field(page, 'E-mail').inputValue(), 'New.Person@example.test');
  await shots(page, 'invitation');
  await button(page, 'Create account and join').click();
  assert.match(await page.getByRole('alert').innerText(), /Enter your name and a password/);
  await field(page, 'Your name').fill('New Person');
  await field(page, 'Password').fill('a long test password');
  await button(page, 'Create account and join').click();
  await onPath(page, '/overview');
  await waitFor(async () => (await field(page, 'Project').inputValue()) === second.id, 'the overview is in the invited project');
  await noStoredToken(page);
  const joined = await s.db.get<{ role: string }>(
    "SELECT m.role FROM memberships m JOIN users u ON u.id = m.user_id WHERE u.email_normalized = 'new.person@example.test' AND m.level = 'project' AND m.project_id = ?", second.id);
  assert.equal(joined?.role, 'project_editor');

  // 2. The same link again: used.
  await page.goto(newcomer.acceptUrl);
  await heading(page, 'Invitation not valid').waitFor();
  assert.match(await page.getByRole('alert').innerText(), /already used, revoked, or replaced by a newer invitation/);
  assert.deepEqual(problemsOf(page, s.url, allowed), []);

  // 3. A person with an account: "Sign in to accept" comes back to the invitation, "Accept invitation" joins.
  const existing = await makeUser(s, { name: 'Existing Person' });
  const theirs = await invite({ email: existing.email, role: 'reviewer', workspaceId: tree.workspaceId });
  const other = await openPage(browser, t);
  await other.goto(theirs.acceptUrl);
  await heading(other, `Join ${org}`).waitFor();
  await other.getByRole('link', { name: 'Sign in to accept' }).click();
  await onPath(other, '/login');
  await signIn(other, existing.email, existing.password);
  await onPath(other, '/invitations/accept');
  await button(other, 'Accept invitation').waitFor();
  await shots(other, 'invitation-signed-in');
  await button(other, 'Accept invitation').click();
  await onPath(other, '/overview');
  await waitFor(async () => (await field(other, 'Workspace').inputValue()) === tree.workspaceId, 'the overview is in the invited workspace');
  assert.ok(await s.db.get("SELECT 1 FROM memberships WHERE user_id = ? AND level = 'workspace' AND role = 'reviewer'", existing.id), 'the reviewer role was granted');

  // 4. Signed in as someone else: told so, with a way to sign out.
  const mismatch = await invite({ email: 'someone.else@example.test', role: 'org_member' });
  await other.goto(mismatch.acceptUrl);
  await heading(other, `Join ${org}`).waitFor();
  assert.match(await other.getByRole('alert').innerText(), /This invitation is for someone\.else@example\.test, but you are signed in as/);
  await button(other, 'Sign out and use this invitation').click();
  await button(other, 'Create account and join').waitFor();
  assert.deepEqual(problemsOf(other, s.url, allowed), []);

  // 5. Revoked and expired links, and a link without its token.
  const revoked = await invite({ email: 'revoked@example.test', role: 'org_member' });
  assert.equal((await s.call('POST', `/api/organizations/${tree.organizationId}/invitations/${revoked.invitation.id}/revoke`, { token: owner.token })).status, 200);
  const expired = await invite({ email: 'late@example.test', role: 'org_member' });
  await s.db.run('UPDATE invitations SET expires_at = ? WHERE id = ?', new Date(Date.now() - 1000).toISOString(), expired.invitation.id);
  const third = await openPage(browser, t);
  await third.goto(revoked.acceptUrl);
  await heading(third, 'Invitation not valid').waitFor();
  await third.goto(expired.acceptUrl);
  await heading(third, 'Invitation expired').waitFor();
  assert.match(await third.getByRole('alert').innerText(), /This invitation has expired\. Ask the person who invited you to send a new one\./);
  await shots(third, 'invitation-expired');
  await third.goto(`${s.url}/invitations/accept`);
  await heading(third, 'Invitation').waitFor();
  assert.match(await third.getByRole('alert').innerText(), /needs the link from your invitation e-mail/);
  // A link that cannot be used does not even ask for the session.
  assert.deepEqual(problemsOf(third, s.url, [expectedFailure(404, preview), expectedFailure(410, preview)]), []);
});
