// The common end of every SSO flow, finishSso: account provisioning (new user, link by e-mail, seats,
// suspension), failing closed, and the system administrator who never signs in through a provider.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { grant, makeOrg, makeUser, makeWorkspace, member } from '../helpers/factories.ts';
import { AppError } from '../../src/kernel/errors.ts';
import { finishSso, TICKET_TTL_MS, type VerifiedIdentity } from '../../src/identity/sso/finish.ts';
import { setUserStatus } from '../../src/identity/users/service.ts';
import { FRONTEND, world, oidcBody, samlBody, create, row, fakeReq, audits, ticketOf, FLOW, CLEAR_FLOW, expectAppError } from './sso-setup.ts';

test('finishSso provisions: a new passwordless user with the bound organization and workspace roles; the same subject finds it again; an existing e-mail is linked', async (t) => {
  const { s, admin, org, ws } = await world(t);
  const p = await create(s, admin, oidcBody(org.id, {}, { workspaceId: ws.id, defaultRole: 'writer' }));
  const ctx = s.operator();
  const url = await finishSso(ctx, fakeReq, await row(s, p.id), { subject: 'sub-1', email: 'New.Person@Example.test', name: 'New Person' }, '/after', FLOW.hash);
  assert.match(url, new RegExp(`^${FRONTEND}/sso/complete#ticket=[A-Za-z0-9_-]{43}$`));
  const user = (await s.db.get<any>("SELECT * FROM users WHERE email_normalized = 'new.person@example.test'"))!;
  assert.equal(user.status, 'active');
  assert.equal(user.password_hash, null);
  assert.equal(user.name, 'New Person');
  const ms = async () => (await s.db.all<any>('SELECT level, role, status, organization_id FROM memberships WHERE user_id = ? ORDER BY level', user.id))
    .map((m) => `${m.level}/${m.role}/${m.status}/${m.organization_id === org.id}`);
  assert.deepEqual(await ms(), ['organization/org_member/active/true', 'workspace/writer/active/true']);
  const ticket = (await s.db.get<any>('SELECT * FROM sso_tickets'))!;
  assert.equal(ticket.ticket_hash, crypto.hash('sha256', ticketOf(url), 'hex'), 'only the hash is stored');
  assert.equal(Date.parse(ticket.expires_at) - Date.parse(ticket.created_at), TICKET_TTL_MS);
  assert.equal(ticket.return_to, '/after');
  assert.deepEqual({ ...await s.db.get<any>('SELECT user_id, email FROM sso_identities WHERE provider_id = ? AND subject = ?', p.id, 'sub-1') },
    { user_id: user.id, email: 'New.Person@Example.test' });

  // The same subject again (even with another e-mail address) is the same account; nothing granted twice.
  await finishSso(ctx, fakeReq, await row(s, p.id), { subject: 'sub-1', email: 'renamed@example.test', name: null }, null, FLOW.hash);
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM users WHERE email_normalized = ?', 'renamed@example.test'))!.n, 0);
  assert.equal((await ms()).length, 2);

  // An existing account with the e-mail address (a member of the provider's organization only, the address
  // verified by the provider) is linked, keeps its roles, and gains the missing ones.
  const existing = await makeUser(s, { email: 'known@example.test' });
  await grant(s, existing.id, 'organization', org.id, 'org_member');
  await finishSso(ctx, fakeReq, await row(s, p.id), { subject: 'sub-known', email: 'KNOWN@example.test', name: 'Ignored', emailVerified: true }, null, FLOW.hash);
  assert.equal((await s.db.get<any>('SELECT user_id FROM sso_identities WHERE subject = ?', 'sub-known'))!.user_id, existing.id);
  assert.equal((await s.db.get<any>('SELECT name FROM users WHERE id = ?', existing.id))!.name, existing.name);
  const leader = await member(s, 'org_admin', { organizationId: org.id, workspaceId: ws.id, projectId: '' });
  const leaderEmail = (await s.db.get<any>('SELECT email FROM users WHERE id = ?', leader.user.id))!.email;
  await finishSso(ctx, fakeReq, await row(s, p.id), { subject: 'sub-leader', email: leaderEmail, name: null, emailVerified: true }, null, FLOW.hash);
  assert.equal((await s.db.get<any>("SELECT role FROM memberships WHERE user_id = ? AND level = 'organization'", leader.user.id))!.role, 'org_admin', 'an existing role is never changed');

  const verified = await audits(s, 'auth.sso.verified');
  assert.deepEqual(verified.map((a) => [a.metadata.subject, a.metadata.account, a.target_id === a.metadata.userId]), [
    ['sub-1', 'created', true], ['sub-1', 'identity', true], ['sub-known', 'email', true], ['sub-leader', 'email', true],
  ]);
  assert.deepEqual(verified[0].metadata.rolesGranted, ['org_member', 'writer']);
  assert.equal(verified[0].organization_id, org.id);
  assert.equal(verified[0].metadata.providerId, p.id);
  const auditText = JSON.stringify(await s.db.all('SELECT metadata FROM audit_log'));
  assert.ok(!auditText.includes(ticketOf(url)), 'the ticket is never audited');
  assert.equal((await audits(s, 'user.created')).filter((a) => a.metadata.via === 'sso').length, 1);
});

test('finishSso fails closed: full organization 409, suspended account 403, system administrator or another organization\'s member linked by e-mail 401, disabled provider 401, no subject or e-mail 401; audited, no ticket', async (t) => {
  const { s, admin, adminUser, org } = await world(t);
  const p = await create(s, admin, samlBody(org.id));
  const ctx = s.operator();
  const finish = (identity: { subject: string; email: string | null; name: string | null }) => async () => await finishSso(ctx, fakeReq, await row(s, p.id), identity, null, FLOW.hash);

  const used = (await s.db.get<any>("SELECT count(*) AS n FROM memberships WHERE organization_id = ? AND level = 'organization' AND status = 'active'", org.id))!.n;
  await s.db.run('UPDATE billing_accounts SET seat_limit = ? WHERE organization_id = ?', used, org.id);
  await expectAppError(finish({ subject: 'seatless', email: 'seatless@example.test', name: null }), 409, 'seat_limit_reached');
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM users WHERE email_normalized = ?', 'seatless@example.test'))!.n, 0, 'rolled back: no account');
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM sso_identities'))!.n, 0);
  await s.db.run('UPDATE billing_accounts SET seat_limit = 25 WHERE organization_id = ?', org.id);

  const suspended = await makeUser(s, { email: 'gone@example.test' });
  await grant(s, suspended.id, 'organization', org.id, 'org_member');
  await setUserStatus(s.operator(), suspended.id, 'suspended');
  await expectAppError(finish({ subject: 'gone', email: 'gone@example.test', name: null }), 403, 'account_suspended');
  // A linked account suspended later is refused too.
  const later = await makeUser(s, { email: 'later@example.test' });
  await grant(s, later.id, 'organization', org.id, 'org_member');
  await finish({ subject: 'later', email: 'later@example.test', name: null })();
  await setUserStatus(s.operator(), later.id, 'suspended');
  await expectAppError(finish({ subject: 'later', email: null, name: null }), 403, 'account_suspended');

  await expectAppError(finish({ subject: 'admin', email: adminUser.email, name: null }), 401, 'sso_link_refused');
  // Another tenant's member: this organization's provider cannot take the account over by asserting its e-mail.
  const elsewhere = await member(s, 'org_member');
  await expectAppError(finish({ subject: 'takeover', email: elsewhere.user.email, name: null }), 401, 'sso_link_refused');
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM sso_identities WHERE user_id = ?', elsewhere.user.id))!.n, 0);
  await expectAppError(finish({ subject: '', email: 'x@example.test', name: null }), 401, 'sso_failed');
  await expectAppError(finish({ subject: 'no-mail', email: null, name: null }), 401, 'sso_email_missing');
  await expectAppError(finish({ subject: 'bad-mail', email: 'not an address', name: null }), 401, 'sso_email_missing');
  await s.db.run("UPDATE identity_providers SET status = 'disabled' WHERE id = ?", p.id);
  await expectAppError(finish({ subject: 'late', email: 'late@example.test', name: null }), 401, 'sso_provider_disabled');

  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM sso_tickets'))!.n, 1, 'only the one successful sign-in got a ticket');
  const failed = await audits(s, 'auth.sso.failed');
  assert.deepEqual(failed.map((a) => [a.metadata.code, a.result, a.target_id]), [
    ['seat_limit_reached', 'failure', p.id], ['account_suspended', 'failure', p.id], ['account_suspended', 'failure', p.id],
    ['sso_link_refused', 'failure', p.id], ['sso_link_refused', 'failure', p.id], ['sso_failed', 'failure', p.id],
    ['sso_email_missing', 'failure', p.id], ['sso_email_missing', 'failure', p.id], ['sso_provider_disabled', 'failure', p.id],
  ]);
});

test('linking by e-mail: only an account whose memberships are all in the provider\'s organization, one of them active, never a system administrator; OIDC needs email_verified true, SAML may say nothing; a new account needs no verification', async (t) => {
  const { s, admin, org, ws } = await world(t);
  const other = await makeOrg(s);
  const otherWs = await makeWorkspace(s, other.id);
  const saml = await create(s, admin, samlBody(org.id));
  const oidc = await create(s, admin, oidcBody(org.id));
  const ctx = s.operator();
  const finish = async (providerId: string, identity: VerifiedIdentity) => await finishSso(ctx, fakeReq, await row(s, providerId), identity, null, FLOW.hash);
  const links = async (userId: string) => (await s.db.get<any>('SELECT count(*) AS n FROM sso_identities WHERE user_id = ?', userId))!.n;
  const roles = async (userId: string) => (await s.db.all<any>('SELECT level, role, status FROM memberships WHERE user_id = ? ORDER BY level, role', userId))
    .map((m) => `${m.level}/${m.role}/${m.status}`);
  const NOT_HERE = 'the account has no active membership in the provider\'s organization';
  const ELSEWHERE = 'the account is a member of another organization';
  const UNVERIFIED = 'the provider did not confirm that the e-mail address is verified';
  /** Refused with the one generic answer (the caller learns nothing about the account); the precise reason only in the audit. */
  const refused = async (providerId: string, identity: VerifiedIdentity, userId: string, reason: string) => {
    const before = (await audits(s, 'auth.sso.failed')).length;
    const memberships = await roles(userId);
    await assert.rejects(async () => await finish(providerId, identity), (err: unknown) => err instanceof AppError && err.status === 401 && err.code === 'sso_link_refused'
      && err.message === 'single sign-on failed: this account cannot be linked to a sign-in provider', `${identity.subject}: ${reason}`);
    assert.equal(await links(userId), 0, `${identity.subject}: not linked`);
    assert.deepEqual(await roles(userId), memberships, `${identity.subject}: no membership given`);
    assert.deepEqual((await audits(s, 'auth.sso.failed')).slice(before).map((a) => [a.metadata.code, a.metadata.reason, a.target_id]),
      [['sso_link_refused', reason, providerId]], identity.subject);
  };

  // The consultant: owner of another organization and a member of this one. This organization's provider
  // asserting their address must not get a session that carries the owner's rights over the other one.
  const dual = await makeUser(s);
  await grant(s, dual.id, 'organization', org.id, 'org_member');
  await grant(s, dual.id, 'organization', other.id, 'org_owner');
  await refused(saml.id, { subject: 'dual', email: dual.email, name: null }, dual.id, ELSEWHERE);
  await refused(oidc.id, { subject: 'dual', email: dual.email, name: null, emailVerified: true }, dual.id, ELSEWHERE);
  // A workspace role elsewhere counts as another organization just the same.
  const wsElsewhere = await makeUser(s);
  await grant(s, wsElsewhere.id, 'organization', org.id, 'org_member');
  await grant(s, wsElsewhere.id, 'workspace', otherWs.id, 'writer');
  await refused(saml.id, { subject: 'ws-elsewhere', email: wsElsewhere.email, name: null }, wsElsewhere.id, ELSEWHERE);
  // Deactivated here, active elsewhere.
  const moved = await makeUser(s);
  await grant(s, moved.id, 'organization', org.id, 'org_member');
  await s.db.run("UPDATE memberships SET status = 'inactive' WHERE user_id = ? AND organization_id = ?", moved.id, org.id);
  await grant(s, moved.id, 'organization', other.id, 'org_member');
  await refused(saml.id, { subject: 'moved', email: moved.email, name: null }, moved.id, ELSEWHERE);
  // Deactivated here and nowhere else: no active membership to vouch for.
  const deactivated = await makeUser(s);
  await grant(s, deactivated.id, 'organization', org.id, 'org_member');
  await s.db.run("UPDATE memberships SET status = 'inactive' WHERE user_id = ?", deactivated.id);
  await refused(saml.id, { subject: 'deactivated', email: deactivated.email, name: null }, deactivated.id, NOT_HERE);
  // No membership at all (an account of no organization is not this provider's to claim).
  const loner = await makeUser(s);
  await refused(saml.id, { subject: 'loner', email: loner.email, name: null }, loner.id, NOT_HERE);
  await refused(oidc.id, { subject: 'loner', email: loner.email, name: null, emailVerified: true }, loner.id, NOT_HERE);
  // A system administrator, even one who is a member of this organization only.
  const sysadmin = await makeUser(s, { systemAdmin: true });
  await grant(s, sysadmin.id, 'organization', org.id, 'org_member');
  await refused(saml.id, { subject: 'sysadmin', email: sysadmin.email, name: null }, sysadmin.id, 'a service administrator is never linked');

  // A member of this organization only (an active workspace role here is fine): linked through SAML,
  // which makes no statement about verification (null), keeps its roles and gains the missing ones.
  const here = await makeUser(s);
  await grant(s, here.id, 'workspace', ws.id, 'reviewer');
  await finish(saml.id, { subject: 'here', email: here.email, name: null });
  assert.equal(await links(here.id), 1);
  assert.deepEqual(await roles(here.id), ['organization/org_member/active', 'workspace/reviewer/active']);
  // SAML saying "not verified" (false) is refused all the same.
  const samlFalse = await makeUser(s);
  await grant(s, samlFalse.id, 'organization', org.id, 'org_member');
  await refused(saml.id, { subject: 'saml-false', email: samlFalse.email, name: null, emailVerified: false }, samlFalse.id, UNVERIFIED);

  // OIDC: linking needs email_verified true; false, null (claim absent) and undefined (not passed) are refused.
  const oidcMember = await makeUser(s);
  await grant(s, oidcMember.id, 'organization', org.id, 'org_member');
  await refused(oidc.id, { subject: 'oidc-member', email: oidcMember.email, name: null, emailVerified: false }, oidcMember.id, UNVERIFIED);
  await refused(oidc.id, { subject: 'oidc-member', email: oidcMember.email, name: null, emailVerified: null }, oidcMember.id, UNVERIFIED);
  await refused(oidc.id, { subject: 'oidc-member', email: oidcMember.email, name: null }, oidcMember.id, UNVERIFIED);
  await finish(oidc.id, { subject: 'oidc-member', email: oidcMember.email, name: null, emailVerified: true });
  assert.equal((await s.db.get<any>('SELECT user_id FROM sso_identities WHERE provider_id = ? AND subject = ?', oidc.id, 'oidc-member'))!.user_id, oidcMember.id);

  // A new account (no account with the address) needs no verification: it takes nobody over.
  await finish(oidc.id, { subject: 'newcomer', email: 'newcomer@example.test', name: null, emailVerified: null });
  const newcomer = (await s.db.get<any>("SELECT id FROM users WHERE email_normalized = 'newcomer@example.test'"))!;
  assert.deepEqual(await roles(newcomer.id), ['organization/org_member/active']);

  assert.deepEqual((await audits(s, 'auth.sso.verified')).map((a) => [a.metadata.subject, a.metadata.account]),
    [['here', 'email'], ['oidc-member', 'email'], ['newcomer', 'created']]);
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM sso_tickets'))!.n, 3, 'a ticket for each accepted sign-in only');
});

test('a system administrator never signs in through a provider: an account linked before and made administrator afterwards is refused (401 sso_link_refused) at the next sign-in and at redemption of a ticket issued before', async (t) => {
  const { s, admin, org } = await world(t);
  const p = await create(s, admin, samlBody(org.id));
  const person = await makeUser(s);
  await grant(s, person.id, 'organization', org.id, 'org_member');
  const before = await finishSso(s.operator(), fakeReq, await row(s, p.id), { subject: 'person', email: person.email, name: null }, null, FLOW.hash);
  assert.equal((await s.db.get<any>('SELECT user_id FROM sso_identities WHERE subject = ?', 'person'))!.user_id, person.id, 'linked');

  await s.db.run('UPDATE users SET is_system_admin = 1 WHERE id = ?', person.id);
  const tickets = (await s.db.get<any>('SELECT count(*) AS n FROM sso_tickets'))!.n;
  await expectAppError(async () => await finishSso(s.operator(), fakeReq, await row(s, p.id), { subject: 'person', email: null, name: null }, null, FLOW.hash), 401, 'sso_link_refused');
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM sso_tickets'))!.n, tickets, 'no ticket');

  const r = await s.call('POST', '/api/auth/sso/redeem', { body: { ticket: ticketOf(before) }, headers: { cookie: FLOW.cookie } });
  assert.equal(r.status, 401, r.text);
  assert.equal(r.body.error.code, 'sso_link_refused');
  assert.deepEqual(r.headers.getSetCookie(), [CLEAR_FLOW], 'the flow ended: its cookie is cleared with the refusal');
  assert.equal(r.body.token, undefined);
  assert.equal((await s.db.get<any>('SELECT count(*) AS n FROM sessions WHERE user_id = ?', person.id))!.n, 0, 'no session');
  assert.equal((await s.call('POST', '/api/auth/sso/redeem', { body: { ticket: ticketOf(before) }, headers: { cookie: FLOW.cookie } })).body.error.code, 'invalid_ticket', 'the ticket is used up');

  assert.deepEqual((await audits(s, 'auth.sso.failed')).map((a) => [a.metadata.code, a.metadata.reason, a.target_id]), [
    ['sso_link_refused', 'single sign-on failed: a service administrator cannot sign in through a sign-in provider', p.id],
    ['sso_link_refused', 'the account became a service administrator after the ticket was issued', p.id],
    ['invalid_ticket', 'the ticket is unknown, used or expired', null],
  ]);
});

test('first sign-ins of one person at once make one account: the others find it through its link', async (t) => {
  const { s, admin, org } = await world(t);
  const p = await create(s, admin, oidcBody(org.id, {}, {}));
  const provider = await row(s, p.id);
  // On PostgreSQL these run at once, and all but one meet the first one's unique keys; on SQLite they take turns.
  const urls = await Promise.all([1, 2, 3, 4].map(() =>
    finishSso(s.operator(), fakeReq, provider, { subject: 'sub-twice', email: 'twice@example.test', name: 'Twice' }, null, FLOW.hash)));
  for (const url of urls) assert.match(url, new RegExp(`^${FRONTEND}/sso/complete#ticket=`));
  assert.equal(new Set(urls).size, 4, 'a ticket each');
  const users = await s.db.all<{ id: string }>("SELECT id FROM users WHERE email_normalized = 'twice@example.test'");
  assert.equal(users.length, 1);
  assert.deepEqual((await s.db.all<{ user_id: string }>('SELECT user_id FROM sso_identities WHERE provider_id = ?', p.id)).map((r) => r.user_id), [users[0].id]);
  const verified = await audits(s, 'auth.sso.verified');
  assert.deepEqual(verified.map((a) => a.metadata.account).sort(), ['created', 'identity', 'identity', 'identity']);
  assert.ok(verified.every((a) => a.metadata.userId === users[0].id));
  assert.equal((await audits(s, 'user.created')).filter((a) => a.metadata.via === 'sso').length, 1);
  assert.equal((await s.db.get<{ n: number }>("SELECT count(*) AS n FROM memberships WHERE user_id = ? AND level = 'organization'", users[0].id))!.n, 1);
});
