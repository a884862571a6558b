// Workflow templates and runs.
import { json, type Router } from '../../http/router.ts';
import { notFound } from '../../kernel/errors.ts';
import { GateDecisionBody, InstantiateBody, RunListQuery, TemplateCreateBody, TemplateGetQuery, TemplateListQuery, TemplatePatchBody } from './schema.ts';
import * as o from '../../kernel/view.ts';
import {
  WorkflowRunView, WorkflowTemplateEntryView, WorkflowTemplateVersionView, WorkflowTemplateView, presentMerged, presentRun, presentTemplate, presentVersion,
} from './present.ts';
import { TEMPLATE_STATUSES } from './schema.ts';
import { createTemplate, getTemplate, listTemplates, updateTemplate } from './templates.ts';
import { decideRunGate, getRun, instantiate, listRuns, runCount } from './runs.ts';
import { versionOf, versionsOf } from './store.ts';

const READ = ['script:read', 'job:create', 'project:create'] as const;

const versions = o.array(o.object({ version: o.int(), status: o.oneOf(TEMPLATE_STATUSES), name: o.text(), createdBy: o.nullable(o.text()), createdAt: o.time() }), 'every version of the template');
const TemplateWithVersionsView = o.named('WorkflowTemplateWithVersions', o.extend(WorkflowTemplateView, { versions }));
const OlderTemplateVersionView = o.named('WorkflowTemplateOlderVersion', o.extend(WorkflowTemplateVersionView, {
  templateKey: o.text(), scope: o.oneOf(['global', 'organization', 'workspace'] as const), currentVersion: o.int(), versions,
}));

export function bindWorkflowRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const tags = ['workflows'];
  r.get('/api/workflows/templates', {
    summary: 'Templates one per templateKey: the current workspace\'s, else the organization\'s, else the global built-in (shadowed ones named); archived only with includeArchived=1.',
    tags, scope: 'organization', permission: [...READ], query: TemplateListQuery,
    response: { description: 'the templates', schema: o.object({ items: o.array(WorkflowTemplateEntryView) }) },
  }, async ({ ctx, query }) => {
    const all = query.includeArchived === '1' || query.includeArchived === 'true';
    return json(200, { items: (await listTemplates(ctx, all)).map(presentMerged) });
  });

  r.post('/api/workflows/templates', {
    summary: 'Create a workspace (default) or organization template as version 1 (status draft unless given).',
    tags, scope: 'organization', permission: 'workflow:manage', body: TemplateCreateBody, response: { status: 201, description: 'the template', schema: WorkflowTemplateView },
  }, async ({ ctx, body }) => json(201, presentTemplate(await createTemplate(ctx, body))));

  r.get('/api/workflows/templates/:templateId', {
    summary: 'A template (current version, or ?version=n) with the list of its versions.',
    tags, scope: 'organization', permission: [...READ], query: TemplateGetQuery,
    response: { description: 'the template with its versions (an older ?version: that version, with currentVersion)', schema: o.anyOf([TemplateWithVersionsView, OlderTemplateVersionView]) },
  }, async ({ ctx, params, query }) => {
    const t = await getTemplate(ctx, params.templateId);
    const versions = (await versionsOf(ctx.db, t.id)).map((v) => ({ version: v.version, status: v.status, name: v.name, createdBy: v.created_by, createdAt: v.created_at }));
    if (query.version === undefined || query.version === t.version) return json(200, { ...presentTemplate(t), versions });
    const v = await versionOf(ctx.db, t.id, query.version);
    if (!v) throw notFound(`the template has no version ${query.version}`);
    return json(200, { ...presentVersion(v), templateKey: t.template_key, scope: t.scope, currentVersion: t.version, versions });
  });

  r.patch('/api/workflows/templates/:templateId', {
    summary: 'Change a template: every change writes version n+1 (runs keep theirs). Built-ins are read-only (409 template_read_only).',
    tags, scope: 'organization', permission: 'workflow:manage', body: TemplatePatchBody,
    response: { description: 'the template at its new version', schema: WorkflowTemplateView },
  }, async ({ ctx, params, body }) => json(200, presentTemplate(await updateTemplate(ctx, params.templateId, body))));

  r.post('/api/workflows/templates/:templateId/instantiate', {
    summary: 'Run an active template in the current project: mode plan (default; no jobs) or queue (one job a step, chained). Both need script:read, job:create or project:create; the queued jobs still meet the clip quota (409 clip_quota_exceeded), local_runner_only and the external-cost approval (409 external_approval_required).',
    tags, scope: 'project', permission: [...READ], body: InstantiateBody, response: { status: 201, description: 'the run', schema: WorkflowRunView },
  }, async ({ ctx, params, body }) => json(201, presentRun(await instantiate(ctx, params.templateId, body))));

  r.get('/api/workflows/runs', {
    summary: 'Runs of the current project, newest first: { items, pagination: { limit, total } }; status filter; limit default 50, clamped 1..200.',
    tags, scope: 'project', permission: [...READ], query: RunListQuery,
    response: { description: 'the runs', schema: o.object({ items: o.array(WorkflowRunView), pagination: o.object({ limit: o.int(), total: o.int() }) }) },
  }, async ({ ctx, query }) => {
    const limit = Math.min(200, Math.max(1, query.limit ?? 50));
    const status = query.status ?? null;
    return json(200, { items: (await listRuns(ctx, status, limit)).map(presentRun), pagination: { limit, total: await runCount(ctx, status) } });
  });

  r.get('/api/workflows/runs/:runId', {
    summary: 'A run: per-step status and job, current step, error, gates, and the template version it used.',
    tags, scope: 'project', permission: [...READ], response: { description: 'the run', schema: WorkflowRunView },
  }, async ({ ctx, params }) => json(200, presentRun(await getRun(ctx, params.runId))));

  r.post('/api/workflows/runs/:runId/gates/:gateKey', {
    summary: 'QA decides a gate of a run whose jobs have completed: passed, failed or pending (audited); a blocking gate holds the run in awaiting_qa until it passes.',
    tags, scope: 'project', permission: 'qa:review', body: GateDecisionBody, response: { description: 'the run', schema: WorkflowRunView },
  }, async ({ ctx, params, body }) => json(200, presentRun(await decideRunGate(ctx, params.runId, params.gateKey, body.status, body.note ?? null))));
}
