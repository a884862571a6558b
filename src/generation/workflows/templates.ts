// Workflow templates: the merged list (workspace over organization over global, per templateKey),
// create, update (each a new immutable version) and status transitions. Global built-ins are
// read-only; organization templates are written by org owners and admins; workspace templates by
// workflow:manage holders of that workspace.
import type { Ctx } from '../../directory/context.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { conflict, forbidden, notFound, validationFailed } from '../../kernel/errors.ts';
import type { Infer } from '../../kernel/validate.ts';
import { newId } from '../../kernel/ids.ts';
import { record } from '../../platform/audit/service.ts';
import { isOrgAdmin } from '../../directory/tenancy/scope.ts';
import { connectorById } from '../connectors/store.ts';
import type { TemplateCreateBody, TemplatePatchBody, TemplateStatus } from './schema.ts';
import { normalizeGates, normalizeSteps } from './steps.ts';
import {
  advanceTemplate, insertTemplate, insertVersion, templateWithKey, visibleTemplate, visibleTemplates, type CurrentTemplate, type VersionRow,
} from './store.ts';

type Create = Infer<typeof TemplateCreateBody>;
type Patch = Infer<typeof TemplatePatchBody>;

/** Status transitions: draft -> active | archived, active -> archived, archived -> active. */
const TRANSITIONS: Record<TemplateStatus, TemplateStatus[]> = { draft: ['active', 'archived'], active: ['archived'], archived: ['active'] };
const SCOPE_RANK = { workspace: 0, organization: 1, global: 2 } as const;

export interface MergedTemplate { template: CurrentTemplate; shadowed: CurrentTemplate[] }

/** One entry per templateKey: the workspace's, else the organization's, else the global one; archived ones only on request. */
export async function listTemplates(ctx: Ctx, includeArchived: boolean): Promise<MergedTemplate[]> {
  const rows = (await visibleTemplates(ctx.db, ctx.scope.organizationId!, ctx.scope.workspaceId))
    .filter((t) => includeArchived || t.status !== 'archived');
  const byKey = new Map<string, CurrentTemplate[]>();
  for (const t of rows) byKey.set(t.template_key, [...(byKey.get(t.template_key) ?? []), t]);
  return [...byKey.values()].map((same) => {
    const [template, ...shadowed] = same.sort((a, b) => SCOPE_RANK[a.scope] - SCOPE_RANK[b.scope]);
    return { template, shadowed };
  });
}

/** A template visible from the current organization and workspace; 404 for any other. */
export async function getTemplate(ctx: Ctx, id: string): Promise<CurrentTemplate> {
  const t = await visibleTemplate(ctx.db, ctx.scope.organizationId!, ctx.scope.workspaceId, id);
  if (!t) throw notFound('no such workflow template here');
  return t;
}

function requireOrgAdmin(ctx: Ctx): void {
  if (!isOrgAdmin(ctx.actor, ctx.memberships, ctx.scope.organizationId!)) {
    throw forbidden('permission_denied', 'organization templates are written by the organization\'s owners and admins (org_owner, org_admin)');
  }
}

/** A template's default connector (the reference's defaultAdapterId) is one of the organization's. */
async function checkDefaultConnector(ctx: Ctx, connectorId: string | null | undefined): Promise<void> {
  if (connectorId && !await connectorById(ctx.db, ctx.scope.organizationId!, connectorId)) {
    throw validationFailed({ defaultAdapterId: 'names no connector of this organization' });
  }
}

export async function createTemplate(ctx: Ctx, input: Create): Promise<CurrentTemplate> {
  const scope = input.scope ?? 'workspace';
  const orgId = ctx.scope.organizationId!;
  const workspaceId = scope === 'workspace' ? ctx.scope.workspaceId : null;
  if (scope === 'workspace' && !workspaceId) throw validationFailed({ scope: 'no workspace is current: choose one (PATCH /api/context) or give scope organization' });
  if (scope === 'organization') requireOrgAdmin(ctx);
  const steps = normalizeSteps(input.steps);
  const gates = normalizeGates(input.gates ?? []);
  await checkDefaultConnector(ctx, input.defaultAdapterId);
  const now = ctx.now().toISOString();
  const id = newId('wft');
  return await ctx.db.tx(async () => {
    if (await templateWithKey(ctx.db, scope, orgId, workspaceId, input.templateKey)) {
      throw conflict('template_key_taken', `this ${scope} already has a template with key "${input.templateKey}"; change that one instead`);
    }
    try {
      await insertTemplate(ctx.db, { id, scope, organization_id: orgId, workspace_id: workspaceId, template_key: input.templateKey, version: 1, created_by: ctx.actor.userId, created_at: now, updated_at: now });
    } catch (err) {
      // Created by another transaction after the check (PostgreSQL: it commits in between).
      if (isUniqueViolation(err)) throw conflict('template_key_taken', `this ${scope} already has a template with key "${input.templateKey}"; change that one instead`);
      throw err;
    }
    await insertVersion(ctx.db, {
      template_id: id, version: 1, name: input.name, category: input.category ?? 'general', status: input.status ?? 'draft',
      description: input.description ?? '', default_adapter_id: input.defaultAdapterId ?? null, steps: JSON.stringify(steps), gates: JSON.stringify(gates),
      created_by: ctx.actor.userId, created_at: now,
    });
    await record(ctx, {
      action: 'workflow_template.created', targetType: 'workflow_template', targetId: id,
      metadata: { templateKey: input.templateKey, scope, version: 1, status: input.status ?? 'draft', steps: steps.length, gates: gates.length },
    });
    return (await visibleTemplate(ctx.db, orgId, ctx.scope.workspaceId, id))!;
  });
}

/** A change writes version n+1 (a PATCH that changes nothing writes none); global built-ins are read-only. */
export async function updateTemplate(ctx: Ctx, id: string, patch: Patch): Promise<CurrentTemplate> {
  const t = await getTemplate(ctx, id);
  if (t.scope === 'global') throw conflict('template_read_only', 'built-in templates are read-only; create a workspace or organization template with the same templateKey to replace it');
  if (t.scope === 'organization') requireOrgAdmin(ctx);
  const next: Omit<VersionRow, 'template_id' | 'version' | 'created_by' | 'created_at'> = {
    name: patch.name ?? t.name, category: patch.category ?? t.category, status: patch.status ?? t.status,
    description: patch.description ?? t.description,
    default_adapter_id: patch.defaultAdapterId !== undefined ? patch.defaultAdapterId : t.default_adapter_id,
    steps: patch.steps ? JSON.stringify(normalizeSteps(patch.steps)) : t.steps,
    gates: patch.gates ? JSON.stringify(normalizeGates(patch.gates)) : t.gates,
  };
  if (next.status !== t.status && !TRANSITIONS[t.status].includes(next.status)) {
    throw conflict('invalid_transition', `a ${t.status} template cannot become ${next.status} (allowed: ${TRANSITIONS[t.status].join(', ')})`);
  }
  if (patch.defaultAdapterId !== undefined) await checkDefaultConnector(ctx, patch.defaultAdapterId);
  const changed = (Object.keys(next) as Array<keyof typeof next>).filter((k) => next[k] !== t[k]);
  if (changed.length === 0) return t;
  const now = ctx.now().toISOString();
  return await ctx.db.tx(async () => {
    if (!await advanceTemplate(ctx.db, t.id, t.version, now)) throw conflict('template_changed', 'the template changed meanwhile; read it again');
    await insertVersion(ctx.db, { ...next, template_id: t.id, version: t.version + 1, created_by: ctx.actor.userId, created_at: now });
    await record(ctx, {
      action: 'workflow_template.updated', targetType: 'workflow_template', targetId: t.id,
      metadata: { templateKey: t.template_key, fromVersion: t.version, toVersion: t.version + 1, changed, ...(next.status !== t.status ? { status: { from: t.status, to: next.status } } : {}) },
    });
    return (await visibleTemplate(ctx.db, ctx.scope.organizationId!, ctx.scope.workspaceId, t.id))!;
  });
}
