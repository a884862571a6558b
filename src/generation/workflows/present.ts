// Templates and runs as the API shows them.
import { capabilitiesOf, capabilityOf, type StoredGate, type StoredStep } from './steps.ts';
import type { RunView, StepPreview } from './runs.ts';
import type { MergedTemplate } from './templates.ts';
import type { CurrentTemplate, VersionRow } from './store.ts';
import * as o from '../../kernel/view.ts';
import { RUN_STATUSES, STEP_KINDS, TEMPLATE_STATUSES, type RunStatus } from './schema.ts';
import { JOB_STATUSES, type JobStatus } from '../jobs/store.ts';
import { WORK_KINDS, type WorkKind } from '../connectors/protocols/types.ts';

const TEMPLATE_SCOPES = ['global', 'organization', 'workspace'] as const;
const GATE_STATUSES = ['pending', 'passed', 'failed'] as const;

export const WorkflowStepView = o.named('WorkflowStep', o.object({
  key: o.text(), label: o.text(), jobKind: o.oneOf(STEP_KINDS), requiresShot: o.bool(), dependsOnPrevious: o.bool(),
  prompt: o.nullable(o.text({ description: 'the prompt template with {{placeholders}} (null: the default)' })),
  parameters: o.anyObject('the job parameters of the step'), inputFromPrevious: o.bool(),
  capability: o.nullable(o.oneOf(WORK_KINDS, 'the connector capability the step needs (null: a local compose step)')),
}));

export const WorkflowGateView = o.named('WorkflowGate', o.object({ key: o.text(), label: o.text(), blocking: o.bool() }));

const versionShape = {
  name: o.text(), category: o.text(), status: o.oneOf(TEMPLATE_STATUSES), description: o.text(),
  defaultAdapterId: o.nullable(o.text({ description: 'the connector the steps use unless a run names one' })),
  capabilities: o.array(o.oneOf(WORK_KINDS), 'the distinct connector capabilities the steps need, in step order'),
  steps: o.array(WorkflowStepView), gates: o.array(WorkflowGateView),
};

export const WorkflowTemplateView = o.named('WorkflowTemplate', o.object({
  id: o.text(), templateKey: o.text(), scope: o.oneOf(TEMPLATE_SCOPES), builtIn: o.bool(), readOnly: o.bool(),
  organizationId: o.nullable(o.text()), workspaceId: o.nullable(o.text()), version: o.int('the current version'), ...versionShape,
  createdBy: o.nullable(o.text()), createdAt: o.time(), updatedAt: o.time(),
}));

export const WorkflowTemplateEntryView = o.named('WorkflowTemplateEntry', o.extend(WorkflowTemplateView, {
  shadowed: o.array(o.object({ id: o.text(), scope: o.oneOf(TEMPLATE_SCOPES), version: o.int(), status: o.oneOf(TEMPLATE_STATUSES), name: o.text() }),
    'templates of the same templateKey this one hides'),
}));

export const WorkflowTemplateVersionView = o.named('WorkflowTemplateVersion', o.object({
  templateId: o.text(), version: o.int(), ...versionShape, createdBy: o.nullable(o.text()), createdAt: o.time(),
}));

const blocker = o.object({ code: o.text(), message: o.text() });

export const WorkflowRunView = o.named('WorkflowRun', o.object({
  id: o.text(), status: o.oneOf(RUN_STATUSES), mode: o.oneOf(['plan', 'queue'] as const), templateId: o.text(), templateKey: o.text(), templateName: o.text(),
  templateVersion: o.int(), projectId: o.text(), shotId: o.nullable(o.text()), episodeId: o.nullable(o.text()),
  connectorId: o.nullable(o.text({ description: 'the connector the run was bound to (instantiate\'s `adapter`, else the template\'s `defaultAdapterId`)' })),
  adapterId: o.deprecated(o.nullable(o.text({ description: 'deprecated alias of connectorId, answered for one more release' }))),
  priority: o.int(), approveExternal: o.bool(),
  currentStep: o.nullable(o.text({ description: 'the key of the first step whose job has not completed (queued runs)' })),
  error: o.nullable(o.object({
    stepKey: o.text(), jobId: o.nullable(o.text()), status: o.nullable(o.oneOf(JOB_STATUSES)), code: o.nullable(o.text()), message: o.nullable(o.text()),
  }, 'the failed (else cancelled) step')),
  steps: o.array(o.object({
    key: o.text(), label: o.text(), position: o.int(), jobKind: o.text(),
    status: o.nullable(o.oneOf([...JOB_STATUSES, 'planned'] as const, 'the job\'s status; planned in a plan')),
    jobId: o.nullable(o.text()), attempt: o.nullable(o.int()), shotId: o.nullable(o.text()), connectorId: o.nullable(o.text()),
    job: o.object({
      kind: o.text(), connectorId: o.nullable(o.text()), connectorLabel: o.nullable(o.text()), costMode: o.text(),
      shotId: o.nullable(o.text()), episodeId: o.nullable(o.text()), prompt: o.nullable(o.text()), parameters: o.anyObject(),
      dependsOnStep: o.nullable(o.text()), inputFromPrevious: o.bool(), priority: o.int(),
    }, 'the job the step makes (or made)'),
    blockers: o.array(blocker, 'what keeps the step\'s job waiting'),
  })),
  gates: o.array(o.object({
    key: o.text(), label: o.text(), blocking: o.bool(), status: o.oneOf(GATE_STATUSES),
    decidedBy: o.nullable(o.text()), decidedAt: o.nullable(o.time()), note: o.nullable(o.text()),
    qaRunId: o.nullable(o.text({ description: 'the QA run that decided the gate (null: pending, or decided by a person)' })),
  })),
  createdBy: o.nullable(o.text()), createdAt: o.time(),
  template: o.optional(WorkflowTemplateVersionView),
}));

/** A version's fields; every step names the connector capability it needs (null: a local compose step), the template all of them. */
function versionFields(v: Pick<VersionRow, 'name' | 'category' | 'status' | 'description' | 'default_adapter_id' | 'steps' | 'gates'>) {
  const steps = JSON.parse(v.steps) as Array<StoredStep & { jobKind: (typeof STEP_KINDS)[number] }>;
  return {
    name: v.name, category: v.category, status: v.status, description: v.description, defaultAdapterId: v.default_adapter_id,
    capabilities: capabilitiesOf(steps) as WorkKind[], steps: steps.map((s) => ({ ...s, capability: capabilityOf(s) as WorkKind | null })), gates: JSON.parse(v.gates) as StoredGate[],
  };
}

export function presentTemplate(t: CurrentTemplate): o.Out<typeof WorkflowTemplateView> {
  return {
    id: t.id, templateKey: t.template_key, scope: t.scope, builtIn: t.scope === 'global', readOnly: t.scope === 'global',
    organizationId: t.organization_id, workspaceId: t.workspace_id, version: t.version, ...versionFields(t),
    createdBy: t.created_by, createdAt: t.created_at, updatedAt: t.updated_at,
  };
}

/** A list entry: the template that wins its templateKey and the ones it shadows. */
export const presentMerged = (m: MergedTemplate): o.Out<typeof WorkflowTemplateEntryView> => ({
  ...presentTemplate(m.template),
  shadowed: m.shadowed.map((s) => ({ id: s.id, scope: s.scope, version: s.version, status: s.status, name: s.name })),
});

/** One version of a template, as a run used it. */
export const presentVersion = (v: VersionRow): o.Out<typeof WorkflowTemplateVersionView> => ({ templateId: v.template_id, version: v.version, ...versionFields(v), createdBy: v.created_by, createdAt: v.created_at });

/** A job error is stored as "code: message". */
function splitError(error: string | null): { code: string | null; message: string | null } {
  if (!error) return { code: null, message: null };
  const at = error.indexOf(': ');
  return at > 0 ? { code: error.slice(0, at), message: error.slice(at + 2) } : { code: null, message: error };
}

export function presentRun(view: RunView): o.Out<typeof WorkflowRunView> {
  const { run, steps, gates } = view;
  const queued = run.mode === 'queue';
  // The step the status is about: a failed one first (blocked), else a cancelled one.
  const broken = steps.find((s) => s.job_status === 'failed') ?? steps.find((s) => s.job_status === 'cancelled');
  const current = queued ? steps.find((s) => s.job_status !== 'completed') : undefined;
  return {
    id: run.id, status: run.status as RunStatus, mode: run.mode, templateId: run.template_id, templateKey: run.template_key, templateName: run.template_name,
    templateVersion: run.template_version, projectId: run.project_id, shotId: run.shot_id, episodeId: run.episode_id,
    // The connector the run was bound to (instantiate's `adapter`, else the template's defaultAdapterId);
    // adapterId is its deprecated alias, answered for one more release.
    connectorId: run.adapter_id, adapterId: run.adapter_id,
    priority: run.priority, approveExternal: run.approve_external === 1,
    currentStep: current?.step_key ?? null,
    error: broken ? { stepKey: broken.step_key, jobId: broken.job_id, status: broken.job_status as JobStatus | null, ...splitError(broken.job_error) } : null,
    steps: steps.map((s, i) => ({
      key: s.step_key, label: s.label, position: s.position, jobKind: s.job_kind, status: queued ? s.job_status as JobStatus | null : 'planned',
      jobId: s.job_id, attempt: s.job_attempt, shotId: s.shot_id, connectorId: s.connector_id,
      job: JSON.parse(s.preview) as StepPreview, blockers: view.blockers[i],
    })),
    gates: gates.map((g) => ({ key: g.gate_key, label: g.label, blocking: g.blocking === 1, status: g.status, decidedBy: g.decided_by, decidedAt: g.decided_at, note: g.note, qaRunId: g.qa_run_id })),
    createdBy: run.created_by, createdAt: run.created_at,
    ...(view.template ? { template: presentVersion(view.template) } : {}),
  };
}
