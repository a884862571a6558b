// Templates and runs as the API shows them.
import { capabilitiesOf, capabilityOf, type StoredGate, type StoredStep } from './steps.ts';
import type { RunView, StepPreview } from './runs.ts';
import type { MergedTemplate } from './templates.ts';
import type { CurrentTemplate, VersionRow } from './store.ts';

/** A version's fields; every step names the connector capability it needs (null: a local compose step), the template all of them. */
function versionFields(v: Pick<VersionRow, 'name' | 'category' | 'status' | 'description' | 'default_adapter_id' | 'steps' | 'gates'>) {
  const steps = JSON.parse(v.steps) as StoredStep[];
  return {
    name: v.name, category: v.category, status: v.status, description: v.description, defaultAdapterId: v.default_adapter_id,
    capabilities: capabilitiesOf(steps), steps: steps.map((s) => ({ ...s, capability: capabilityOf(s) })), gates: JSON.parse(v.gates) as StoredGate[],
  };
}

export function presentTemplate(t: CurrentTemplate) {
  return {
    id: t.id, templateKey: t.template_key, scope: t.scope, builtIn: t.scope === 'global', readOnly: t.scope === 'global',
    organizationId: t.organization_id, workspaceId: t.workspace_id, version: t.version, ...versionFields(t),
    createdBy: t.created_by, createdAt: t.created_at, updatedAt: t.updated_at,
  };
}

/** A list entry: the template that wins its templateKey and the ones it shadows. */
export const presentMerged = (m: MergedTemplate) => ({
  ...presentTemplate(m.template),
  shadowed: m.shadowed.map((s) => ({ id: s.id, scope: s.scope, version: s.version, status: s.status, name: s.name })),
});

/** One version of a template, as a run used it. */
export const presentVersion = (v: VersionRow) => ({ templateId: v.template_id, version: v.version, ...versionFields(v), createdBy: v.created_by, createdAt: v.created_at });

/** A job error is stored as "code: message". */
function splitError(error: string | null): { code: string | null; message: string | null } {
  if (!error) return { code: null, message: null };
  const at = error.indexOf(': ');
  return at > 0 ? { code: error.slice(0, at), message: error.slice(at + 2) } : { code: null, message: error };
}

export function presentRun(view: RunView) {
  const { run, steps, gates } = view;
  const queued = run.mode === 'queue';
  // The step the status is about: a failed one first (blocked), else a cancelled one.
  const broken = steps.find((s) => s.job_status === 'failed') ?? steps.find((s) => s.job_status === 'cancelled');
  const current = queued ? steps.find((s) => s.job_status !== 'completed') : undefined;
  return {
    id: run.id, status: run.status, mode: run.mode, templateId: run.template_id, templateKey: run.template_key, templateName: run.template_name,
    templateVersion: run.template_version, projectId: run.project_id, shotId: run.shot_id, episodeId: run.episode_id,
    // The connector the run was bound to (instantiate's `adapter`, else the template's defaultAdapterId);
    // adapterId is its deprecated alias, answered for one more release.
    connectorId: run.adapter_id, adapterId: run.adapter_id,
    priority: run.priority, approveExternal: run.approve_external === 1,
    currentStep: current?.step_key ?? null,
    error: broken ? { stepKey: broken.step_key, jobId: broken.job_id, status: broken.job_status, ...splitError(broken.job_error) } : null,
    steps: steps.map((s, i) => ({
      key: s.step_key, label: s.label, position: s.position, jobKind: s.job_kind, status: queued ? s.job_status : 'planned',
      jobId: s.job_id, attempt: s.job_attempt, shotId: s.shot_id, connectorId: s.connector_id,
      job: JSON.parse(s.preview) as StepPreview, blockers: view.blockers[i],
    })),
    gates: gates.map((g) => ({ key: g.gate_key, label: g.label, blocking: g.blocking === 1, status: g.status, decidedBy: g.decided_by, decidedAt: g.decided_at, note: g.note, qaRunId: g.qa_run_id })),
    createdBy: run.created_by, createdAt: run.created_at,
    ...(view.template ? { template: presentVersion(view.template) } : {}),
  };
}
