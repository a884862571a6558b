// The common end of every single sign-on (OIDC callback, SAML assertion consumer) once the provider's
// answer is verified: the account (found by the provider's subject; else an account with the e-mail
// address is linked; else a new active account without a password), the membership of the provider's
// organization (and workspace) when missing, a one-time ticket for the front end bound to the browser
// of the flow (the flow cookie's hash), and the audit. Every failure is audited as auth.sso.failed and
// answered without a ticket or a session.
import type { IncomingMessage } from 'node:http';
import type { Ctx } from '../../directory/context.ts';
import { record } from '../../platform/audit/service.ts';
import { accountSuspended, addressLimited, signIn, type SignInResult } from '../sessions/service.ts';
import { AppError, type ErrorCodeWithStatus } from '../../kernel/errors.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { frontendBase } from '../../http/request.ts';
import { newId, newToken, sha256Hex } from '../../kernel/ids.ts';
import { clearFlowCookie, clearingFlowCookie, fromFlowBrowser } from './flow-cookie.ts';
import { assertSeatsAvailable } from '../../directory/plan/seats.ts';
import { LOCKS } from '../../directory/locks.ts';
import { ORG_ROLES, type Role } from '../../directory/roles.ts';
import { grantRole } from '../../tenancy/service.ts';
import { membershipAt } from '../../directory/tenancy/store.ts';
import { insertUser, normalizeEmail, userByEmail, userById, type UserRow } from '../../directory/users/store.ts';
import { identityBySubject, insertIdentity, insertTicket, providerById, takeTicketRow, touchIdentity, type ProviderRow, type TicketRow } from './store.ts';

/** How long the front end has to redeem a ticket. */
export const TICKET_TTL_MS = 60_000;

/**
 * What a provider vouched for. `emailVerified`: the OIDC `email_verified` claim (true, false, or null
 * when absent or not a boolean); SAML has no such statement and passes null. Undefined is read as null.
 */
export interface VerifiedIdentity { subject: string; email: string | null; name: string | null; emailVerified?: boolean | null }

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/**
 * Audits auth.sso.failed (provider id and a reason; never a token, assertion or secret) and returns
 * the error for the caller to throw.
 */
export async function ssoFailure<S extends 400 | 401>(ctx: Ctx, provider: ProviderRow | null, status: S, code: ErrorCodeWithStatus<S>, reason: string): Promise<AppError> {
  await auditFailure(ctx, provider, code, reason);
  return new AppError(status, code, status === 400 ? `single sign-on request refused: ${reason}` : `single sign-on failed: ${reason}`);
}

async function auditFailure(ctx: Ctx, provider: ProviderRow | null, code: string, reason: string, extra: Record<string, unknown> = {}): Promise<void> {
  await record(ctx, {
    action: 'auth.sso.failed', targetType: 'identity_provider', targetId: provider?.id ?? null, result: 'failure',
    organizationId: provider?.organization_id ?? null, workspaceId: null, projectId: null,
    metadata: { providerId: provider?.id ?? null, providerKind: provider?.kind ?? null, code, reason: reason.slice(0, 500), ...extra },
  });
}

/** The actor of what single sign-on creates (accounts, memberships): the provider, not the anonymous caller. */
const providerCtx = (ctx: Ctx, p: ProviderRow): Ctx => ({
  ...ctx,
  actor: { type: 'system', userId: null, name: `single sign-on (${p.name})`, email: null, isSystemAdmin: false, sessionId: null, sessionKind: null },
});

const isOrgRole = (role: string) => (ORG_ROLES as readonly string[]).includes(role);

/**
 * Finds, links or creates the account the provider vouched for, gives it the provider's memberships
 * when missing, issues a one-time ticket (60 s, only its SHA-256 stored, bound to `browserHash`: the
 * SHA-256 of the flow cookie of the browser the flow belongs to, required again at redeem; null: not
 * bound) and answers the front-end URL `${frontendBase}/sso/complete#ticket=...` (a fragment: never
 * sent to a server).
 * Refused: a disabled provider or an unusable identity (401), a system administrator on any sign-in
 * and an account that may not be linked by e-mail (401 sso_link_refused, see linkRefusal), a
 * suspended account (403 account_suspended), a full organization (409 seat_limit_reached); each
 * audited as auth.sso.failed.
 */
export async function finishSso(ctx: Ctx, req: IncomingMessage, provider: ProviderRow, identity: VerifiedIdentity, returnTo: string | null,
  browserHash: string | null): Promise<string> {
  const subject = typeof identity.subject === 'string' ? identity.subject : '';
  if (subject === '' || subject.length > 1024) throw await ssoFailure(ctx, provider, 401, 'sso_failed', 'the provider gave no usable subject');
  const email = typeof identity.email === 'string' && EMAIL.test(identity.email.trim()) && identity.email.length <= 320 ? identity.email.trim() : null;
  const name = typeof identity.name === 'string' && identity.name.trim() !== '' ? identity.name.trim().slice(0, 200) : null;
  const pctx = providerCtx(ctx, provider);
  const ticket = newToken();
  let outcome: { user: UserRow; how: 'identity' | 'email' | 'created'; rolesGranted: string[] };
  // Why a link was refused, for the audit record only (the answer does not tell the caller about the account).
  let linkReason = null as string | null;
  // Two first sign-ins of one person at once (two tabs, a repeated callback) on PostgreSQL: the later
  // one's account or link meets the earlier one's unique key once that commits. Running it again finds
  // the account the earlier one made (SQLite's writers take turns, so it never gets there).
  const provision = async () => await ctx.db.tx(async () => {
    const current = await currentProvider(ctx, provider.id);
    if (current.status !== 'active') throw new AppError(401, 'sso_provider_disabled', 'single sign-on failed: the provider is disabled');
    const at = ctx.now();
    const now = at.toISOString();
    // The account by e-mail is read before the link: a concurrent first sign-in commits both at once,
    // so when this read already sees its account, the next one sees its link too (PostgreSQL reads
    // each statement's latest commits), and the account is never taken for one to link by e-mail.
    const byEmail = email ? await userByEmail(ctx.db, email) : undefined;
    const linked = await identityBySubject(ctx.db, provider.id, subject);
    let user: UserRow | undefined;
    let how: 'identity' | 'email' | 'created';
    if (linked) {
      user = await userById(ctx.db, linked.user_id);
      how = 'identity';
      await touchIdentity(ctx.db, provider.id, subject, email, now);
    } else {
      if (!email) throw new AppError(401, 'sso_email_missing', 'single sign-on failed: the provider gave no e-mail address for a new sign-in');
      user = byEmail;
      how = user ? 'email' : 'created';
      if (user) {
        linkReason = await linkRefusal(ctx.db, user, provider, identity.emailVerified ?? null);
        if (linkReason) throw new AppError(401, 'sso_link_refused', 'single sign-on failed: this account cannot be linked to a sign-in provider');
      }
      if (!user) {
        // The seats key grantProviderMemberships takes, before the account's audit record (src/directory/locks.ts).
        await ctx.db.lock(LOCKS.seats(provider.organization_id));
        user = await createAccount(pctx, provider, email, name ?? email.split('@')[0], now);
      }
      await insertIdentity(ctx.db, { provider_id: provider.id, subject, user_id: user.id, email, created_at: now, last_login_at: now });
    }
    if (!user) throw new AppError(401, 'sso_failed', 'single sign-on failed: the linked account no longer exists');
    // Also through an existing link: the account may have been made a service administrator since.
    if (user.is_system_admin) throw systemAdminRefused();
    if (user.status !== 'active') throw accountSuspended();
    const rolesGranted = await grantProviderMemberships(pctx, provider, user.id, now);
    await insertTicket(ctx.db, {
      ticket_hash: sha256Hex(ticket), user_id: user.id, provider_id: provider.id, return_to: returnTo,
      created_at: now, expires_at: new Date(at.getTime() + TICKET_TTL_MS).toISOString(), used_at: null, browser_hash: browserHash,
    });
    await record(ctx, {
      action: 'auth.sso.verified', targetType: 'user', targetId: user.id, actorUserId: user.id, actorName: user.name,
      organizationId: provider.organization_id, workspaceId: null, projectId: null,
      metadata: { providerId: provider.id, providerKind: provider.kind, subject, userId: user.id, account: how, rolesGranted },
    });
    return { user, how, rolesGranted };
  });
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        outcome = await provision();
        break;
      } catch (err) {
        if (attempt >= 3 || !isUniqueViolation(err)) throw err;
        linkReason = null;
      }
    }
  } catch (err) {
    if (err instanceof AppError) await auditFailure(ctx, provider, err.code, linkReason && err.code === 'sso_link_refused' ? linkReason : err.message, { subject });
    throw err;
  }
  ctx.log.info('single sign-on verified', { providerId: provider.id, userId: outcome.user.id, account: outcome.how });
  return `${frontendBase(req, ctx.config)}/sso/complete#ticket=${encodeURIComponent(ticket)}`;
}

async function currentProvider(ctx: Ctx, id: string): Promise<ProviderRow> {
  const p = await providerById(ctx.db, id);
  if (!p) throw new AppError(401, 'sso_failed', 'single sign-on failed: unknown provider');
  return p;
}

/** A new active account without a password (the person signs in through the provider). */
async function createAccount(ctx: Ctx, provider: ProviderRow, email: string, name: string, now: string): Promise<UserRow> {
  const user: UserRow = {
    id: newId('usr'), email, email_normalized: normalizeEmail(email), name, status: 'active', is_system_admin: 0,
    password_hash: null, password_must_change: 0, password_changed_at: null, mfa_enabled: 0, last_login_at: null,
    created_at: now, updated_at: now,
  };
  await insertUser(ctx.db, user);
  await record(ctx, {
    action: 'user.created', targetType: 'user', targetId: user.id, organizationId: provider.organization_id, workspaceId: null, projectId: null,
    metadata: { email, systemAdmin: false, initialPassword: 'none', via: 'sso', providerId: provider.id },
  });
  return user;
}

/**
 * The organization membership (the provider's role when it is an organization role, else
 * org_member) when the user has none there, taking a seat (409 seat_limit_reached when full); and
 * the workspace role when the provider names a workspace and the user has no membership there.
 * Existing memberships are never changed: an inactive one (deactivated by an administrator or a
 * directory) stays inactive, and no workspace role is added under it.
 */
async function grantProviderMemberships(ctx: Ctx, p: ProviderRow, userId: string, now: string): Promise<string[]> {
  const granted: string[] = [];
  const org = await membershipAt(ctx.db, userId, 'organization', p.organization_id);
  if (!org) {
    await assertSeatsAvailable(ctx.db, p.organization_id, now);
    const role = (isOrgRole(p.default_role) ? p.default_role : 'org_member') as Role;
    await grantRole(ctx, { userId, level: 'organization', scopeId: p.organization_id, role });
    granted.push(role);
  } else if (org.status !== 'active') {
    return granted;
  }
  if (p.workspace_id && !isOrgRole(p.default_role) && !await membershipAt(ctx.db, userId, 'workspace', p.workspace_id)) {
    await grantRole(ctx, { userId, level: 'workspace', scopeId: p.workspace_id, role: p.default_role as Role });
    granted.push(p.default_role);
  }
  return granted;
}

const systemAdminRefused = () =>
  new AppError(401, 'sso_link_refused', 'single sign-on failed: a service administrator cannot sign in through a sign-in provider');

export const invalidTicket = () => new AppError(401, 'invalid_ticket', 'the sign-in ticket is unknown, used or expired; sign in again');

export const browserMismatch = () =>
  new AppError(401, 'sso_browser_mismatch', 'single sign-on failed: this sign-in was not started in this browser; sign in again');

/**
 * Redeems a ticket once (atomically marked used, even when what follows fails) and decides the
 * sign-in: a session, or an MFA challenge or enrollment challenge (signIn). Unknown, used or expired:
 * 401 invalid_ticket; a ticket bound to a browser redeemed without that browser's flow cookie (missing
 * or another one; compared in constant time): 401 sso_browser_mismatch, the ticket used up all the same
 * (login CSRF: a ticket passed to someone else signs nobody in); a suspended account: 403
 * account_suspended; a provider disabled meanwhile: 401; an account made a service administrator
 * meanwhile: 401 sso_link_refused. Once the browser is known to be the ticket's, `clearCookie` (and any
 * refusal's Set-Cookie header) removes the flow cookie, whose flow has ended; null for an unbound ticket.
 */
export async function redeemTicket(ctx: Ctx, req: IncomingMessage, ticket: string, kind: 'bearer' | 'browser'): Promise<{ result: SignInResult; returnTo: string | null; clearCookie: string | null }> {
  // Guessed tickets count against the client address's failed-attempt limit: over it, the ticket is not looked at.
  const { row, provider } = await addressLimited(ctx, async () => {
    const row = await takeTicketRow(ctx.db, sha256Hex(ticket), ctx.now().toISOString());
    if (!row) {
      await auditFailure(ctx, null, 'invalid_ticket', 'the ticket is unknown, used or expired');
      throw invalidTicket();
    }
    const provider = await providerById(ctx.db, row.provider_id) ?? null;
    if (row.browser_hash !== null && !fromFlowBrowser(req, row.browser_hash)) {
      await auditFailure(ctx, provider, 'sso_browser_mismatch', 'the ticket was redeemed by a browser that did not start this sign-in (flow cookie missing or different)',
        { userId: row.user_id });
      throw browserMismatch();
    }
    return { row, provider };
  });
  const clearCookie = row.browser_hash === null ? null : clearFlowCookie(req, ctx.config, provider?.kind ?? 'oidc');
  try {
    return { ...await decideRedeemed(ctx, row, provider, kind), clearCookie };
  } catch (err) {
    throw clearCookie ? clearingFlowCookie(err, clearCookie) : err;
  }
}

/** The sign-in a used-up ticket gives, its account and provider checked again. */
async function decideRedeemed(ctx: Ctx, row: TicketRow, provider: ProviderRow | null, kind: 'bearer' | 'browser'): Promise<{ result: SignInResult; returnTo: string | null }> {
  const user = await userById(ctx.db, row.user_id);
  if (!provider || provider.status !== 'active' || !user) {
    await auditFailure(ctx, provider, 'invalid_ticket', 'the provider was disabled or the account removed after the ticket was issued');
    throw invalidTicket();
  }
  if (user.is_system_admin) {
    await auditFailure(ctx, provider, 'sso_link_refused', 'the account became a service administrator after the ticket was issued', { userId: user.id });
    throw systemAdminRefused();
  }
  if (user.status !== 'active') {
    await auditFailure(ctx, provider, 'account_suspended', 'the account is suspended', { userId: user.id });
    throw accountSuspended();
  }
  const result = await signIn(ctx, user, kind, provider.kind, { providerId: provider.id });
  return { result, returnTo: row.return_to };
}

/**
 * Why an existing account found by the asserted e-mail address may not be linked to the provider, or
 * null when it may. A provider vouches for people of its own organization only, so the account must
 * - not be a service administrator;
 * - hold at least one ACTIVE membership in the provider's organization and NO membership (of any
 *   status) in any other organization: otherwise one tenant's provider, asserting the address of a
 *   person who also works for another tenant (or of an account with no memberships at all), would get
 *   a session carrying that person's roles elsewhere;
 * - have its address verified by the provider: an OIDC provider must say `email_verified: true`; a
 *   SAML provider makes no such statement (null), which is accepted.
 * A NEW account needs none of this (it has nothing to take over).
 */
async function linkRefusal(db: Ctx['db'], user: UserRow, provider: ProviderRow, emailVerified: boolean | null): Promise<string | null> {
  if (user.is_system_admin) return 'a service administrator is never linked';
  if (!(emailVerified === true || (provider.kind === 'saml' && emailVerified === null))) {
    return 'the provider did not confirm that the e-mail address is verified';
  }
  const r = (await db.get<{ here: number; elsewhere: number }>(
    `SELECT count(*) FILTER (WHERE organization_id = ?2 AND status = 'active') AS here,
            count(*) FILTER (WHERE organization_id <> ?2) AS elsewhere
       FROM memberships WHERE user_id = ?1`, user.id, provider.organization_id))!;
  if (r.elsewhere > 0) return 'the account is a member of another organization';
  if (r.here === 0) return 'the account has no active membership in the provider\'s organization';
  return null;
}
