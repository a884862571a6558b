// SCIM directories, managed by the system administrator: each is bound to one organization for
// good, provisions users with its default role, and authenticates with a bearer token that is
// answered once (at creation and at each rotation) and stored as SHA-256 with a short hint. A
// rotation replaces the hash, so the old token fails from the next request on. Audited as
// system.identity.directory_* with the hint, never the token.
import type { Ctx } from '../../directory/context.ts';
import { notFound, requireSystemAdmin, validationFailed } from '../../kernel/errors.ts';
import { issueSecret, newId } from '../../kernel/ids.ts';
import { record } from '../../platform/audit/service.ts';
import type { RowRead } from '../../db/dialect.ts';
import { organizationById, workspaceById } from '../../directory/tenancy/store.ts';
import { ORG_ROLES } from '../../directory/roles.ts';
import type { DirectoryRole } from './schema.ts';
import { directoryById, insertDirectory, listDirectories, updateDirectory, type DirectoryRow } from './store.ts';

const isOrgRole = (role: string): boolean => (ORG_ROLES as readonly string[]).includes(role);

/** An organization role stands alone; a workspace role needs a workspace of the directory's organization. */
async function checkDefaults(ctx: Ctx, organizationId: string, role: string, workspaceId: string | null): Promise<void> {
  if (isOrgRole(role)) {
    if (workspaceId) throw validationFailed({ defaultWorkspaceId: `goes with a workspace defaultRole, not ${role}` });
    return;
  }
  if (!workspaceId) throw validationFailed({ defaultWorkspaceId: `is required with the workspace role ${role}` });
  if ((await workspaceById(ctx.db, workspaceId))?.organization_id !== organizationId) {
    throw validationFailed({ defaultWorkspaceId: 'names no workspace of the organization' });
  }
}

export interface DirectoryInput { name: string; organizationId: string; defaultRole?: DirectoryRole; defaultWorkspaceId?: string | null }

export async function createDirectory(ctx: Ctx, input: DirectoryInput): Promise<{ directory: DirectoryRow; token: string }> {
  requireSystemAdmin(ctx);
  if (!await organizationById(ctx.db, input.organizationId)) throw validationFailed({ organizationId: 'names no organization' });
  const role = input.defaultRole ?? 'org_member';
  const workspaceId = input.defaultWorkspaceId ?? null;
  await checkDefaults(ctx, input.organizationId, role, workspaceId);
  const t = issueSecret('scim_');
  const now = ctx.now().toISOString();
  const d: DirectoryRow = {
    id: newId('dir'), organization_id: input.organizationId, name: input.name, default_workspace_id: workspaceId, default_role: role,
    status: 'active', token_hash: t.hash, token_hint: t.hint, token_rotated_at: null, created_by: ctx.actor.userId,
    created_at: now, updated_at: now,
  };
  await ctx.db.tx(async () => {
    await insertDirectory(ctx.db, d);
    await record(ctx, {
      action: 'system.identity.directory_created', targetType: 'scim_directory', targetId: d.id,
      organizationId: d.organization_id, workspaceId: null, projectId: null,
      metadata: { name: d.name, defaultRole: role, defaultWorkspaceId: workspaceId, tokenHint: t.hint },
    });
  });
  return { directory: d, token: t.token };
}

/** The directory (system administrators only); `read` { forUpdate } for the change computed from it (src/db/dialect.ts RowRead). */
export async function directoryOrFail(ctx: Ctx, directoryId: string, read?: RowRead): Promise<DirectoryRow> {
  requireSystemAdmin(ctx);
  const d = await directoryById(ctx.db, directoryId, read);
  if (!d) throw notFound('no such directory');
  return d;
}

export async function listDirectoriesOf(ctx: Ctx, organizationId: string | null): Promise<DirectoryRow[]> {
  requireSystemAdmin(ctx);
  return await listDirectories(ctx.db, organizationId);
}

export interface DirectoryPatch { name?: string; defaultRole?: DirectoryRole; defaultWorkspaceId?: string | null; status?: 'active' | 'disabled' }

/**
 * Renames, changes the default role and workspace (for users provisioned from now on; existing
 * memberships stay as they are) or disables and re-enables the directory.
 */
export async function updateDirectoryFields(ctx: Ctx, directoryId: string, patch: DirectoryPatch): Promise<DirectoryRow> {
  if (Object.values(patch).every((x) => x === undefined)) throw validationFailed({ body: 'name name, defaultRole, defaultWorkspaceId or status' });
  return await ctx.db.tx(async () => {
    const d = await directoryOrFail(ctx, directoryId, { forUpdate: true });
    const roleChanged = patch.defaultRole !== undefined && patch.defaultRole !== d.default_role;
    const next: DirectoryRow = {
      ...d,
      name: patch.name ?? d.name,
      default_role: patch.defaultRole ?? d.default_role,
      // A new organization role without a workspace named drops the default workspace.
      default_workspace_id: patch.defaultWorkspaceId !== undefined ? patch.defaultWorkspaceId
        : roleChanged && isOrgRole(patch.defaultRole!) ? null : d.default_workspace_id,
      status: patch.status ?? d.status,
      updated_at: ctx.now().toISOString(),
    };
    await checkDefaults(ctx, d.organization_id, next.default_role, next.default_workspace_id);
    const changes: Record<string, { from: unknown; to: unknown }> = {};
    for (const [key, col] of [['name', 'name'], ['defaultRole', 'default_role'], ['defaultWorkspaceId', 'default_workspace_id'], ['status', 'status']] as const) {
      if (next[col] !== d[col]) changes[key] = { from: d[col], to: next[col] };
    }
    if (Object.keys(changes).length === 0) return d;
    await updateDirectory(ctx.db, next);
    await record(ctx, {
      action: 'system.identity.directory_updated', targetType: 'scim_directory', targetId: d.id,
      organizationId: d.organization_id, workspaceId: null, projectId: null, metadata: { changes },
    });
    return next;
  });
}

/** A new token, answered once; the old one is refused from now on. */
export async function rotateDirectoryToken(ctx: Ctx, directoryId: string): Promise<{ directory: DirectoryRow; token: string }> {
  const t = issueSecret('scim_');
  const directory = await ctx.db.tx(async () => {
    const d = await directoryOrFail(ctx, directoryId, { forUpdate: true });
    const now = ctx.now().toISOString();
    const next: DirectoryRow = { ...d, token_hash: t.hash, token_hint: t.hint, token_rotated_at: now, updated_at: now };
    await updateDirectory(ctx.db, next);
    await record(ctx, {
      action: 'system.identity.directory_token_rotated', targetType: 'scim_directory', targetId: d.id,
      organizationId: d.organization_id, workspaceId: null, projectId: null,
      metadata: { previousTokenHint: d.token_hint, tokenHint: t.hint },
    });
    return next;
  });
  return { directory, token: t.token };
}
