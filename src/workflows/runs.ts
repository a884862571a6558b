// Workflow runs: instantiate a template in the current project (plan: what would be created and
// what blocks it, no jobs; queue: one generation job a step, chained through depends_on, in one
// transaction) and read runs. A run's status follows its jobs (store.ts derives it).
import type { Ctx } from '../context.ts';
import { conflict, notFound, permissionDenied, validationFailed } from '../http/errors.ts';
import type { Infer } from '../http/validate.ts';
import { newId } from '../lib/ids.ts';
import { record } from '../audit/service.ts';
import { hasPermission } from '../tenancy/roles.ts';
import { projectById, type ProjectRow } from '../tenancy/store.ts';
import { episodeById, shotById, shotsOfProject, type EpisodeRow, type ShotRow } from '../production/store.ts';
import { currentRevision } from '../scripts/store.ts';
import type { ScriptContent } from '../scripts/content.ts';
import { connectorById, type ConnectorRow } from '../connectors/store.ts';
import { connectorSpec } from '../connectors/present.ts';
import { supportsKind } from '../connectors/protocols/index.ts';
import { chosenVideoOfShot } from '../media/store.ts';
import { COMPOSE_KIND } from '../media/compose-job.ts';
import { CLIP_KINDS, clipQuotaProblem, insertPrepared, prepareJob, type PreparedJob } from '../jobs/service.ts';
import type { JobCreateBody } from '../jobs/schema.ts';
import type { InstantiateBody, RunStatus } from './schema.ts';
import { DEFAULT_PROMPT, renderPrompt, type PromptValues, type StoredGate, type StoredStep } from './steps.ts';
import {
  gatesOfRuns, insertRun, insertRunGate, insertRunStep, runInProject, runsOfProject, stepsOfRuns, versionOf, visibleTemplate,
  type RunGateRow, type RunStepWithJob, type RunWithStatus, type VersionRow,
} from './store.ts';

type Instantiate = Infer<typeof InstantiateBody>;
export interface Blocker { code: string; message: string }
export interface StepPreview {
  kind: string; connectorId: string | null; connectorLabel: string | null; costMode: string; shotId: string | null; episodeId: string | null;
  prompt: string | null; parameters: Record<string, unknown>; dependsOnStep: string | null; inputFromPrevious: boolean; priority: number;
}
export interface RunView { run: RunWithStatus; steps: RunStepWithJob[]; gates: RunGateRow[]; template?: VersionRow }

/** Values of the prompt placeholders for a run bound to a shot and/or an episode. */
function promptValues(ctx: Ctx, project: ProjectRow, shot: ShotRow | undefined, episode: EpisodeRow | undefined): PromptValues {
  let dialogue = '';
  if (shot?.scene_id) {
    const rev = currentRevision(ctx.db, 'script', project.id, shot.episode_id);
    const scene = rev ? (JSON.parse(rev.content) as ScriptContent).scenes.find((s) => s.id === shot.scene_id) : undefined;
    dialogue = (scene?.lines ?? []).filter((l) => l.kind === 'dialogue').map((l) => l.text).join(' ');
  }
  return {
    'shot.prompt': shot?.prompt, 'shot.title': shot?.title, 'shot.description': shot?.description, 'shot.dialogue': dialogue,
    'episode.title': episode?.title, 'project.name': project.name,
  };
}

interface Binding { shot: ShotRow | undefined; episode: EpisodeRow | undefined; adapter: ConnectorRow | null }

/** The shot, episode and adapter of an instantiate, checked against every step (422 naming the field). */
function bind(ctx: Ctx, project: ProjectRow, t: { default_adapter_id: string | null }, steps: StoredStep[], body: Instantiate): Binding {
  const problems: Record<string, string> = {};
  const shot = body.shotId ? shotById(ctx.db, project.id, body.shotId) : undefined;
  if (body.shotId && !shot) problems.shotId = 'names no shot of the current project';
  let episode = body.episodeId ? episodeById(ctx.db, project.id, body.episodeId) : undefined;
  if (body.episodeId && !episode) problems.episodeId = 'names no episode of the current project';
  if (shot && episode && shot.episode_id !== episode.id) problems.episodeId = 'the shot belongs to another episode';
  if (shot && !episode) episode = episodeById(ctx.db, project.id, shot.episode_id);
  const needShot = steps.filter((s) => s.requiresShot).map((s) => `"${s.key}"`);
  if (needShot.length && !body.shotId) problems.shotId = `step(s) ${needShot.join(', ')} require a shot of the current project`;
  const compose = steps.filter((s) => s.jobKind === COMPOSE_KIND).map((s) => `"${s.key}"`);
  if (compose.length && !episode && !problems.shotId && !problems.episodeId) problems.episodeId = `step(s) ${compose.join(', ')} join an episode: give episodeId or shotId`;
  const adapterId = body.adapter ?? t.default_adapter_id;
  let adapter: ConnectorRow | null = null;
  if (adapterId) {
    adapter = connectorById(ctx.db, project.organization_id, adapterId) ?? null;
    const field = body.adapter ? 'adapter' : 'defaultAdapterId';
    if (!adapter) problems[field] = 'names no connector of this organization';
    else if (adapter.status === 'disabled') problems[field] = `connector ${adapter.label} is disabled`;
    else {
      const cannot = steps.filter((s) => s.jobKind !== COMPOSE_KIND && !supportsKind(connectorSpec(adapter!), s.jobKind));
      if (cannot.length) problems[field] = `connector ${adapter.label} cannot do ${cannot.map((s) => `${s.jobKind} (step "${s.key}")`).join(', ')}`;
    }
  }
  if (Object.keys(problems).length) throw validationFailed(problems);
  return { shot, episode, adapter };
}

/** Shots of the episode that have no video and get none from this run (a compose step would fail). */
function shotsWithoutVideo(ctx: Ctx, projectId: string, episodeId: string, producedFor: Set<string>): ShotRow[] {
  return shotsOfProject(ctx.db, projectId, episodeId).filter((s) => !producedFor.has(s.id) && !chosenVideoOfShot(ctx.db, projectId, s.id));
}

export function instantiate(ctx: Ctx, templateId: string, body: Instantiate): RunView {
  const project = projectById(ctx.db, ctx.scope.projectId!)!;
  const t = visibleTemplate(ctx.db, project.organization_id, project.workspace_id, templateId);
  if (!t) throw notFound('no such workflow template here');
  if (t.status !== 'active') throw conflict('template_not_active', `the template is ${t.status}; only active templates can be instantiated`);
  const mode = body.mode ?? 'plan';
  if (mode === 'queue' && !hasPermission(ctx.permissions, 'job:create')) throw permissionDenied('job:create');
  const steps = JSON.parse(t.steps) as StoredStep[];
  const gates = JSON.parse(t.gates) as StoredGate[];
  const { shot, episode, adapter } = bind(ctx, project, t, steps, body);
  const values = promptValues(ctx, project, shot, episode);
  const runId = newId('wfr');
  const priority = body.priority ?? 0;
  const prepared: PreparedJob[] = [];
  const blockers: Blocker[][] = [];
  const previews: StepPreview[] = [];
  const external: string[] = [];
  const videoShots = new Set<string>();
  let clips = 0;
  steps.forEach((step, i) => {
    const compose = step.jobKind === COMPOSE_KIND;
    const prompt = compose ? undefined : renderPrompt(step.prompt ?? DEFAULT_PROMPT, values);
    if (prompt === '') throw validationFailed({ [`steps.${step.key}.prompt`]: 'renders empty for this shot; fill in the shot or change the step\'s prompt' });
    const input: Infer<typeof JobCreateBody> = {
      kind: step.jobKind, connectorId: compose ? undefined : adapter?.id, shotId: step.requiresShot ? shot!.id : null,
      episodeId: step.requiresShot ? null : episode?.id ?? null, prompt, negativePrompt: step.requiresShot ? shot!.negative_prompt || null : null,
      parameters: step.parameters, priority, useDependencyOutputs: step.inputFromPrevious || undefined,
    };
    const previous = i > 0 && step.dependsOnPrevious ? prepared[i - 1] : undefined;
    const job = prepareJob(ctx, input, {
      id: newId('job'), dependsOnNew: previous?.job.id, clipsBefore: mode === 'queue' ? clips : null,
      workflow: { templateId: t.id, templateVersion: t.version, runId, stepKey: step.key },
    });
    const own: Blocker[] = [];
    if (previous) own.push({ code: 'waits_for_step', message: `waits for step "${steps[i - 1].key}"` });
    if (CLIP_KINDS.has(step.jobKind)) {
      const quota = mode === 'plan' ? clipQuotaProblem(ctx, project.organization_id, clips) : null;
      if (quota) own.push({ code: 'clip_quota_exceeded', message: quota.message });
      clips++;
      if (job.job.shot_id) videoShots.add(job.job.shot_id);
    }
    const connector = job.job.connector_id ? connectorById(ctx.db, project.organization_id, job.job.connector_id)! : null;
    if (connector) {
      if (connector.status !== 'ready') own.push({ code: 'connector_not_ready', message: `connector ${connector.label} is ${connector.status}` });
      if (connector.cost_mode !== 'local') {
        external.push(`${connector.label} (${connector.cost_mode}, step "${step.key}")`);
        if (!connector.approved_at) own.push({ code: 'connector_not_approved', message: `connector ${connector.label} needs an administrator's approval` });
        if (!body.approveExternal) own.push({ code: 'external_approval_required', message: `connector ${connector.label} is ${connector.cost_mode}: instantiate with approveExternal` });
        own.push({ code: 'runs_by_person', message: `a ${connector.cost_mode} job runs only when a person runs it (POST /api/jobs/:jobId/run with approveExternal)` });
      }
    }
    if (compose && episode) {
      const missing = shotsWithoutVideo(ctx, project.id, episode.id, videoShots);
      if (missing.length) {
        own.push({ code: 'shot_videos_missing', message: `no video yet for shot(s) ${missing.map((s) => `S${s.position}`).join(', ')}, and this run makes none for them` });
      }
    }
    prepared.push(job);
    blockers.push(own);
    previews.push({
      kind: step.jobKind, connectorId: connector?.id ?? null, connectorLabel: connector?.label ?? null, costMode: job.costMode,
      shotId: job.job.shot_id, episodeId: job.job.episode_id, prompt: prompt ?? null, parameters: JSON.parse(job.job.input).parameters,
      dependsOnStep: previous ? steps[i - 1].key : null, inputFromPrevious: step.inputFromPrevious, priority,
    });
  });
  if (mode === 'queue' && external.length && !body.approveExternal) {
    throw conflict('external_approval_required', `the run would queue jobs on connectors that may cost money: ${external.join(', ')}; send approveExternal: true`);
  }
  const now = ctx.now().toISOString();
  return ctx.db.tx(() => {
    insertRun(ctx.db, {
      id: runId, organization_id: project.organization_id, workspace_id: project.workspace_id, project_id: project.id, template_id: t.id,
      template_version: t.version, mode, shot_id: shot?.id ?? null, episode_id: episode?.id ?? null, adapter_id: adapter?.id ?? null, priority,
      approve_external: body.approveExternal ? 1 : 0, created_by: ctx.actor.userId, created_at: now,
    });
    if (mode === 'queue') insertPrepared(ctx, prepared);
    steps.forEach((step, i) => insertRunStep(ctx.db, {
      run_id: runId, position: i + 1, step_key: step.key, label: step.label, job_kind: step.jobKind, shot_id: prepared[i].job.shot_id,
      connector_id: prepared[i].job.connector_id, job_id: mode === 'queue' ? prepared[i].job.id : null,
      preview: JSON.stringify(previews[i]), blockers: JSON.stringify(blockers[i]),
    }));
    for (const g of gates) {
      insertRunGate(ctx.db, { run_id: runId, gate_key: g.key, label: g.label, blocking: g.blocking ? 1 : 0, status: 'pending', decided_by: null, decided_at: null, note: null });
    }
    record(ctx, {
      action: 'workflow.instantiated', targetType: 'workflow_run', targetId: runId,
      metadata: {
        templateId: t.id, templateKey: t.template_key, templateVersion: t.version, mode, shotId: shot?.id ?? null, episodeId: episode?.id ?? null,
        adapter: adapter?.id ?? null, approveExternal: body.approveExternal ?? false, priority,
        jobIds: mode === 'queue' ? prepared.map((p) => p.job.id) : [],
      },
    });
    return runView(ctx, runId, false);
  });
}

function runView(ctx: Ctx, runId: string, withTemplate: boolean): RunView {
  const run = runInProject(ctx.db, ctx.scope.projectId!, runId);
  if (!run) throw notFound('no such workflow run in this project');
  return {
    run, steps: stepsOfRuns(ctx.db, [run.id]), gates: gatesOfRuns(ctx.db, [run.id]),
    ...(withTemplate ? { template: versionOf(ctx.db, run.template_id, run.template_version) } : {}),
  };
}

/** A run of the current project with the template version it used. */
export const getRun = (ctx: Ctx, runId: string): RunView => runView(ctx, runId, true);

export function listRuns(ctx: Ctx, status: RunStatus | null, limit: number): RunView[] {
  const runs = runsOfProject(ctx.db, ctx.scope.projectId!, status, limit);
  const ids = runs.map((r) => r.id);
  const steps = Map.groupBy(stepsOfRuns(ctx.db, ids), (s) => s.run_id);
  const gates = Map.groupBy(gatesOfRuns(ctx.db, ids), (g) => g.run_id);
  return runs.map((run) => ({ run, steps: steps.get(run.id) ?? [], gates: gates.get(run.id) ?? [] }));
}
