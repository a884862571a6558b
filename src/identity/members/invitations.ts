// Invitations: the token is returned once (with acceptUrl) and kept only as SHA-256 plus a short
// hint; 7-day expiry; role rules per level; a pending invitation holds a seat until it is accepted,
// revoked or expires.
import type { Ctx } from '../../directory/context.ts';
import { AppError, conflict, forbidden, validationFailed } from '../../kernel/errors.ts';
import { issueSecret, newId, sha256Hex } from '../../kernel/ids.ts';
import { record } from '../../platform/audit/service.ts';
import { grantRole } from '../../tenancy/service.ts';
import { membershipAt, projectById, workspaceById } from '../../directory/tenancy/store.ts';
import type { Role } from '../../directory/roles.ts';
import { normalizeEmail, userByEmail, userById, type UserRow } from '../../directory/users/store.ts';
import { createUser } from '../users/service.ts';
import { addressLimited, signIn, type SignInResult } from '../sessions/service.ts';
import { assertSeatsAvailable } from '../../directory/plan/seats.ts';
import { LOCKS } from '../../directory/locks.ts';
import type { RowRead } from '../../db/dialect.ts';
import {
  closeInvitation, insertInvitation, invitationById, invitationByTokenHash, pendingInvitationFor, setInvitationToken, type InvitationRow,
} from './store.ts';

export const INVITATION_DAYS = 7;

export const invitationNotFound = () => new AppError(404, 'invitation_not_found', 'no invitation with that token (it may have been resent, revoked or used)');
const invitationExpired = () => new AppError(410, 'invitation_expired', 'the invitation has expired; ask for a new one');

/** Which roles an invitation may carry, by the level its ids name. Ownership is never invited. */
const ROLES_BY_TARGET = {
  organization: ['org_member', 'org_admin'],
  workspace: ['producer', 'writer', 'art_director', 'voice_editor', 'reviewer'],
  project: ['project_editor', 'project_viewer'],
} as const;

export interface NewInvitation { email: string; role: string; workspaceId?: string; projectId?: string }
export interface IssuedInvitation { invitation: InvitationRow; inviteToken: string }

function expiry(ctx: Ctx): string {
  return new Date(ctx.now().getTime() + INVITATION_DAYS * 86_400_000).toISOString();
}

/** An invitation that is pending but past its expiry is marked expired (it holds no seat). */
async function expireIfDue(ctx: Ctx, inv: InvitationRow | undefined): Promise<InvitationRow | undefined> {
  if (inv?.status === 'pending' && inv.expires_at <= ctx.now().toISOString()) {
    await closeInvitation(ctx.db, inv.id, 'expired', null, ctx.now().toISOString());
    return { ...inv, status: 'expired' };
  }
  return inv;
}

async function isActiveMember(ctx: Ctx, organizationId: string, email: string): Promise<boolean> {
  const user = await userByEmail(ctx.db, email);
  return !!user && (await membershipAt(ctx.db, user.id, 'organization', organizationId))?.status === 'active';
}

export async function createInvitation(ctx: Ctx, organizationId: string, input: NewInvitation): Promise<IssuedInvitation> {
  const target = input.projectId ? 'project' : input.workspaceId ? 'workspace' : 'organization';
  const fields: Record<string, string> = {};
  if (input.projectId && !input.workspaceId) fields.workspaceId = 'is required with projectId';
  if (!(ROLES_BY_TARGET[target] as readonly string[]).includes(input.role)) {
    fields.role = `must be one of ${ROLES_BY_TARGET[target].join(', ')} for ${target === 'organization' ? 'an organization' : `a ${target}`} invitation`;
  }
  const ws = input.workspaceId ? await workspaceById(ctx.db, input.workspaceId) : undefined;
  if (input.workspaceId && ws?.organization_id !== organizationId) fields.workspaceId = 'names no workspace of this organization';
  const project = input.projectId ? await projectById(ctx.db, input.projectId) : undefined;
  if (input.projectId && project?.workspace_id !== input.workspaceId) fields.projectId = 'names no project of that workspace';
  if (Object.keys(fields).length) throw validationFailed(fields);

  const emailKey = normalizeEmail(input.email);
  return await ctx.db.tx(async () => {
    // The seats key before the reads (src/directory/locks.ts): every write of a pending invitation
    // takes it (here and on resend), so the pending invitation check and the seat count below decide.
    await ctx.db.lock(LOCKS.seats(organizationId));
    const now = ctx.now().toISOString();
    if (await isActiveMember(ctx, organizationId, emailKey)) {
      throw conflict('invitation_recipient_already_member', 'that e-mail address already belongs to a member of this organization');
    }
    const pending = await expireIfDue(ctx, await pendingInvitationFor(ctx.db, organizationId, emailKey));
    if (pending?.status === 'pending') {
      throw conflict('invitation_already_pending', 'an invitation for that e-mail address is pending; resend or revoke it', { invitationId: pending.id });
    }
    await assertSeatsAvailable(ctx.db, organizationId, now);
    const t = issueSecret();
    const inv: InvitationRow = {
      id: newId('inv'), organization_id: organizationId, workspace_id: input.workspaceId ?? null, project_id: input.projectId ?? null,
      email: input.email.trim(), email_normalized: emailKey, role: input.role, status: 'pending', token_hash: t.hash, token_hint: t.hint,
      expires_at: expiry(ctx), invited_by: ctx.actor.userId, created_at: now, updated_at: now,
      accepted_at: null, accepted_by: null, revoked_at: null, revoked_by: null,
    };
    await insertInvitation(ctx.db, inv);
    await record(ctx, {
      action: 'invitation.created', targetType: 'invitation', targetId: inv.id, organizationId,
      workspaceId: inv.workspace_id, projectId: inv.project_id,
      metadata: { email: inv.email, role: inv.role, level: target, tokenHint: t.hint, expiresAt: inv.expires_at },
    });
    return { invitation: inv, inviteToken: t.token };
  });
}

/** The invitation, locked: its status is the one the caller's transition starts from (src/db/dialect.ts RowRead). */
async function loadInvitation(ctx: Ctx, organizationId: string, id: string): Promise<InvitationRow> {
  const inv = await expireIfDue(ctx, await invitationById(ctx.db, organizationId, id, { forUpdate: true }));
  if (!inv) throw new AppError(404, 'not_found', 'no such invitation in this organization');
  return inv;
}

/** A new token (the old link stops working) and a new expiry; an expired invitation takes a seat again. */
export async function resendInvitation(ctx: Ctx, organizationId: string, id: string): Promise<IssuedInvitation> {
  return await ctx.db.tx(async () => {
    await ctx.db.lock(LOCKS.seats(organizationId)); // before the reads (src/directory/locks.ts)
    const inv = await loadInvitation(ctx, organizationId, id);
    if (inv.status !== 'pending' && inv.status !== 'expired') {
      throw conflict('invitation_not_pending', `the invitation is ${inv.status}`, { status: inv.status });
    }
    const now = ctx.now().toISOString();
    if (await isActiveMember(ctx, organizationId, inv.email_normalized)) {
      throw conflict('invitation_recipient_already_member', 'that e-mail address already belongs to a member of this organization');
    }
    if (inv.status === 'expired') await assertSeatsAvailable(ctx.db, organizationId, now);
    const t = issueSecret();
    const expiresAt = expiry(ctx);
    await setInvitationToken(ctx.db, inv.id, t.hash, t.hint, expiresAt, now);
    await record(ctx, {
      action: 'invitation.resent', targetType: 'invitation', targetId: inv.id, organizationId,
      workspaceId: inv.workspace_id, projectId: inv.project_id, metadata: { email: inv.email, tokenHint: t.hint, expiresAt },
    });
    return { invitation: { ...inv, status: 'pending', token_hash: t.hash, token_hint: t.hint, expires_at: expiresAt, updated_at: now }, inviteToken: t.token };
  });
}

/** Revokes: the token hash is cleared and the seat released. */
export async function revokeInvitation(ctx: Ctx, organizationId: string, id: string): Promise<InvitationRow> {
  return await ctx.db.tx(async () => {
    const inv = await loadInvitation(ctx, organizationId, id);
    if (inv.status === 'revoked') return inv;
    if (inv.status === 'accepted') throw conflict('invitation_not_pending', 'the invitation was already accepted', { status: inv.status });
    await closeInvitation(ctx.db, inv.id, 'revoked', ctx.actor.userId, ctx.now().toISOString());
    await record(ctx, {
      action: 'invitation.revoked', targetType: 'invitation', targetId: inv.id, organizationId,
      workspaceId: inv.workspace_id, projectId: inv.project_id, metadata: { email: inv.email },
    });
    return (await invitationById(ctx.db, organizationId, id))!;
  });
}

/**
 * The invitation a token stands for, checked: unknown or used 404, expired 410. `read` { forUpdate }
 * in the transaction that accepts it: a revocation or a resend waits, or is waited for.
 */
export async function invitationForToken(ctx: Ctx, token: string, read?: RowRead): Promise<InvitationRow> {
  const inv = await expireIfDue(ctx, await invitationByTokenHash(ctx.db, sha256Hex(token), read));
  if (!inv || (inv.status !== 'pending' && inv.status !== 'expired')) throw invitationNotFound();
  if (inv.status === 'expired') throw invitationExpired();
  return inv;
}

function levelOf(inv: InvitationRow): { level: 'organization' | 'workspace' | 'project'; scopeId: string } {
  if (inv.project_id) return { level: 'project', scopeId: inv.project_id };
  if (inv.workspace_id) return { level: 'workspace', scopeId: inv.workspace_id };
  return { level: 'organization', scopeId: inv.organization_id };
}

/** Gives the invited roles to `user` and closes the invitation; inside the caller's transaction. */
async function fulfil(ctx: Ctx, inv: InvitationRow, user: UserRow): Promise<void> {
  if ((await membershipAt(ctx.db, user.id, 'organization', inv.organization_id))?.status === 'active') {
    throw conflict('invitation_recipient_already_member', 'you already belong to this organization');
  }
  const { level, scopeId } = levelOf(inv);
  await grantRole(ctx, { userId: user.id, level, scopeId, role: inv.role as Role });
  await closeInvitation(ctx.db, inv.id, 'accepted', user.id, ctx.now().toISOString());
  await record(ctx, {
    action: 'invitation.accepted', targetType: 'invitation', targetId: inv.id, organizationId: inv.organization_id,
    workspaceId: inv.workspace_id, projectId: inv.project_id, actorUserId: user.id, actorName: user.name,
    metadata: { email: inv.email, role: inv.role, level },
  });
}

export interface Registration { token: string; email: string; name: string; password: string }

/**
 * Creates an account from an invitation: token, e-mail and expiry are checked again, then the
 * account, its memberships and the invitation's acceptance are written in one transaction.
 */
export async function registerWithInvitation(ctx: Ctx, input: Registration, kind: 'bearer' | 'browser'): Promise<{ user: UserRow; result: SignInResult }> {
  const check = async (read?: RowRead) => {
    const inv = await invitationForToken(ctx, input.token, read);
    if (inv.email_normalized !== normalizeEmail(input.email)) {
      throw forbidden('invitation_email_mismatch', 'the invitation was sent to another e-mail address');
    }
    return inv;
  };
  await addressLimited(ctx, () => check());
  return createUser(ctx, { email: input.email, name: input.name, password: input.password }, async (user) => {
    const inv = await check({ forUpdate: true });
    await fulfil(ctx, inv, user);
    // A session, or an enrollment challenge when the identity policy requires MFA of the new account.
    return await signIn(ctx, user, kind, 'registration');
  }).then(({ user, extra }) => ({ user, result: extra! }));
}

/** An existing account accepts with its own session; the invitation's e-mail must be the account's. */
export async function acceptInvitation(ctx: Ctx, token: string): Promise<InvitationRow> {
  return await ctx.db.tx(async () => {
    const inv = await invitationForToken(ctx, token, { forUpdate: true });
    const user = (await userById(ctx.db, ctx.actor.userId!))!;
    if (inv.email_normalized !== user.email_normalized) {
      throw forbidden('invitation_email_mismatch', 'the invitation was sent to another e-mail address');
    }
    await fulfil(ctx, inv, user);
    return (await invitationById(ctx.db, inv.organization_id, inv.id))!;
  });
}
