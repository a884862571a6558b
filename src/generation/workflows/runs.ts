// Workflow runs: instantiate a template in the current project (plan: what would be created and
// what blocks it, no jobs; queue: one generation job a step, chained through depends_on, in one
// transaction) and read runs. A run's status follows its jobs (store.ts derives it).
import { filterSeq, forEachSeq, mapSeq } from '../../kernel/seq.ts';
import { requireFeature } from '../../platform/flags/flags.ts';
import type { Ctx } from '../../directory/context.ts';
import { AppError, conflict, notFound, validationFailed } from '../../kernel/errors.ts';
import type { Infer } from '../../kernel/validate.ts';
import { newId } from '../../kernel/ids.ts';
import { record } from '../../platform/audit/service.ts';
import { projectById, type ProjectRow } from '../../directory/tenancy/store.ts';
import { episodeById, shotById, shotsOfProject, type EpisodeRow, type ShotRow } from '../../production/catalog/store.ts';
import { dialogueOfShot } from '../../production/scripts/dialogue.ts';
import { connectorById, type ConnectorRow } from '../connectors/store.ts';
import { chosenVideoOfShot } from '../media/store.ts';
import { COMPOSE_KIND } from '../jobs/compose-job.ts';
import { CLIP_KINDS, clipQuotaProblem, insertPrepared, pickConnector, prepareJob, type PreparedJob } from '../jobs/service.ts';
import { localRunnerOnly } from '../connectors/service.ts';
import { PROMPT_MAX, type JobCreateBody } from '../jobs/schema.ts';
import type { InstantiateBody, RunStatus } from './schema.ts';
import { capabilityOf, DEFAULT_PROMPT, renderPrompt, type PromptValues, type StoredGate, type StoredStep } from './steps.ts';
import {
  countRuns, decideGate, gatesOfRuns, insertRun, insertRunGate, insertRunStep, runInProject, runsOfProject, stepsOfRuns, versionOf, visibleTemplate,
  type RunGateRow, type RunStepWithJob, type RunWithStatus, type VersionRow,
} from './store.ts';

type Instantiate = Infer<typeof InstantiateBody>;
export interface Blocker { code: string; message: string }
export interface StepPreview {
  kind: string; connectorId: string | null; connectorLabel: string | null; costMode: string; shotId: string | null; episodeId: string | null;
  prompt: string | null; parameters: Record<string, unknown>; dependsOnStep: string | null; inputFromPrevious: boolean; priority: number;
}
export interface RunView { run: RunWithStatus; steps: RunStepWithJob[]; blockers: Blocker[][]; gates: RunGateRow[]; template?: VersionRow }

/** Values of the prompt placeholders for a run bound to a shot and/or an episode. */
async function promptValues(ctx: Ctx, project: ProjectRow, shot: ShotRow | undefined, episode: EpisodeRow | undefined): Promise<PromptValues> {
  const dialogue = shot ? (await dialogueOfShot(ctx.db, project.id, shot)).map((l) => l.text).join(' ') : '';
  return {
    'shot.prompt': shot?.prompt, 'shot.title': shot?.title, 'shot.description': shot?.description, 'shot.dialogue': dialogue,
    'episode.title': episode?.title, 'project.name': project.name,
  };
}

/** A step no connector can run: its key and label, the capability it needs, and why (no connector has it, the named one lacks it, ...). */
export interface MissingCapability { step: string; label: string; capability: string; reason: string }

interface Binding { shot: ShotRow | undefined; episode: EpisodeRow | undefined; connector: ConnectorRow | null }

/**
 * The shot, episode and connector of an instantiate, checked against every step (422 naming the field:
 * the connector comes from the reference's `adapter` field, else the template's `defaultAdapterId`).
 */
async function bind(ctx: Ctx, project: ProjectRow, t: { default_adapter_id: string | null }, steps: StoredStep[], body: Instantiate): Promise<Binding> {
  const problems: Record<string, string> = {};
  const shot = body.shotId ? await shotById(ctx.db, project.id, body.shotId) : undefined;
  if (body.shotId && !shot) problems.shotId = 'names no shot of the current project';
  let episode = body.episodeId ? await episodeById(ctx.db, project.id, body.episodeId) : undefined;
  if (body.episodeId && !episode) problems.episodeId = 'names no episode of the current project';
  if (shot && episode && shot.episode_id !== episode.id) problems.episodeId = 'the shot belongs to another episode';
  if (shot && !episode) episode = await episodeById(ctx.db, project.id, shot.episode_id);
  const needShot = steps.filter((s) => s.requiresShot).map((s) => `"${s.key}"`);
  if (needShot.length && !body.shotId) problems.shotId = `step(s) ${needShot.join(', ')} require a shot of the current project`;
  const compose = steps.filter((s) => s.jobKind === COMPOSE_KIND).map((s) => `"${s.key}"`);
  if (compose.length && !episode && !problems.shotId && !problems.episodeId) problems.episodeId = `step(s) ${compose.join(', ')} join an episode: give episodeId or shotId`;
  // The connector of each step, with the job creation's own checks (named: of the organization, not
  // disabled, able to do the kind; none named: the organization's best for the kind). Every step that
  // finds none is named with the capability it needs.
  const connectorId = body.adapter ?? t.default_adapter_id ?? undefined;
  const field = body.adapter ? 'adapter' : connectorId ? 'defaultAdapterId' : 'adapter';
  let connector: ConnectorRow | null = null;
  const missing: MissingCapability[] = [];
  for (const s of steps) {
    const capability = capabilityOf(s);
    if (capability === null) continue;
    try {
      const picked = await pickConnector(ctx, s.jobKind, connectorId);
      if (connectorId) connector = picked;
    } catch (err) {
      if (!(err instanceof AppError) || err.status !== 422) throw err;
      const reason = Object.values((err.details?.fields ?? {}) as Record<string, string>).join('; ');
      missing.push({ step: s.key, label: s.label, capability, reason });
    }
  }
  if (missing.length) {
    problems[field] = missing.map((m) => `step "${m.step}" (${m.label}) needs a connector with capability "${m.capability}": ${m.reason}`).join('; ');
  }
  if (Object.keys(problems).length) {
    const err = validationFailed(problems);
    if (!missing.length) throw err;
    throw new AppError(422, err.code, err.message, { ...err.details, missingCapabilities: missing });
  }
  return { shot, episode, connector };
}

interface BlockerFacts { waitsFor: string | null; connector: ConnectorRow | null; approveExternal: boolean; localOnly: boolean; missingShots: ShotRow[] }

/** What keeps a step's job waiting (at instantiate, and again whenever a queued run is read). */
function blockersOf(f: BlockerFacts): Blocker[] {
  const out: Blocker[] = [];
  if (f.waitsFor) out.push({ code: 'waits_for_step', message: `waits for step "${f.waitsFor}"` });
  const c = f.connector;
  if (c && c.status !== 'ready') out.push({ code: 'connector_not_ready', message: `connector ${c.label} is ${c.status}` });
  if (c && c.cost_mode !== 'local') {
    if (f.localOnly) out.push({ code: 'local_runner_only', message: `this organization runs local connectors only; ${c.label} is ${c.cost_mode}` });
    if (!c.approved_at) out.push({ code: 'connector_not_approved', message: `connector ${c.label} needs an administrator's approval` });
    if (!f.approveExternal) out.push({ code: 'external_approval_required', message: `connector ${c.label} is ${c.cost_mode}: instantiate with approveExternal` });
    out.push({ code: 'runs_by_person', message: `a ${c.cost_mode} job runs only when a person runs it (POST /api/jobs/:jobId/run with approveExternal)` });
  }
  if (f.missingShots.length) {
    out.push({ code: 'shot_videos_missing', message: `no video yet for shot(s) ${f.missingShots.map((s) => `S${s.position}`).join(', ')}, and this run makes none for them` });
  }
  return out;
}

/** Blockers of a run's steps: a plan keeps the ones it was made with; a queued run's waiting steps are looked at now. */
async function currentBlockers(ctx: Ctx, run: RunWithStatus, steps: RunStepWithJob[], connectors: Map<string, ConnectorRow | undefined>): Promise<Blocker[][]> {
  if (run.mode === 'plan') return steps.map((s) => JSON.parse(s.blockers) as Blocker[]);
  const videoShots = new Set(steps.filter((s) => CLIP_KINDS.has(s.job_kind) && s.shot_id).map((s) => s.shot_id!));
  return await mapSeq(steps, async (s, i) => {
    if (s.job_status !== 'queued' && s.job_status !== 'blocked') return [];
    const preview = JSON.parse(s.preview) as StepPreview;
    if (s.connector_id && !connectors.has(s.connector_id)) connectors.set(s.connector_id, await connectorById(ctx.db, run.organization_id, s.connector_id));
    return blockersOf({
      waitsFor: preview.dependsOnStep && steps[i - 1]?.job_status !== 'completed' ? preview.dependsOnStep : null,
      connector: s.connector_id ? connectors.get(s.connector_id) ?? null : null, approveExternal: run.approve_external === 1,
      localOnly: await localRunnerOnly(ctx.db, run.organization_id),
      missingShots: s.job_kind === COMPOSE_KIND && run.episode_id ? await shotsWithoutVideo(ctx, run.project_id, run.episode_id, videoShots) : [],
    });
  });
}

/** Shots of the episode that have no video and get none from this run (a compose step would fail). */
async function shotsWithoutVideo(ctx: Ctx, projectId: string, episodeId: string, producedFor: Set<string>): Promise<ShotRow[]> {
  return await filterSeq(await shotsOfProject(ctx.db, projectId, episodeId), async (s) => !producedFor.has(s.id) && !await chosenVideoOfShot(ctx.db, projectId, s.id));
}

export async function instantiate(ctx: Ctx, templateId: string, body: Instantiate): Promise<RunView> {
  const project = (await projectById(ctx.db, ctx.scope.projectId!))!;
  const t = await visibleTemplate(ctx.db, project.organization_id, project.workspace_id, templateId);
  if (!t) throw notFound('no such workflow template here');
  if (t.status !== 'active') throw conflict('template_not_active', `the template is ${t.status}; only active templates can be instantiated`);
  const mode = body.mode ?? 'plan';
  if (mode === 'queue') await requireFeature(ctx.db, 'workflow_queue_mode', project.organization_id);
  const steps = JSON.parse(t.steps) as StoredStep[];
  const gates = JSON.parse(t.gates) as StoredGate[];
  const { shot, episode, connector: bound } = await bind(ctx, project, t, steps, body);
  const values = await promptValues(ctx, project, shot, episode);
  const runId = newId('wfr');
  const priority = body.priority ?? 0;
  const prepared: PreparedJob[] = [];
  const blockers: Blocker[][] = [];
  const previews: StepPreview[] = [];
  const external: string[] = [];
  const videoShots = new Set<string>();
  const localOnly = await localRunnerOnly(ctx.db, project.organization_id);
  let clips = 0;
  await forEachSeq(steps, async (step, i) => {
    const compose = step.jobKind === COMPOSE_KIND;
    const prompt = compose ? undefined : renderPrompt(step.prompt ?? DEFAULT_PROMPT, values);
    if (prompt === '') throw validationFailed({ [`steps.${step.key}.prompt`]: 'renders empty for this shot; fill in the shot or change the step\'s prompt' });
    if (prompt && prompt.length > PROMPT_MAX) throw validationFailed({ [`steps.${step.key}.prompt`]: `renders ${prompt.length} characters for this shot; a job prompt takes at most ${PROMPT_MAX}` });
    const input: Infer<typeof JobCreateBody> = {
      kind: step.jobKind, connectorId: compose ? undefined : bound?.id, shotId: step.requiresShot ? shot!.id : null,
      episodeId: step.requiresShot ? null : episode?.id ?? null, prompt, negativePrompt: step.requiresShot ? shot!.negative_prompt || null : null,
      parameters: step.parameters, priority, useDependencyOutputs: step.inputFromPrevious || undefined,
    };
    const previous = i > 0 && step.dependsOnPrevious ? prepared[i - 1] : undefined;
    const job = await prepareJob(ctx, input, {
      id: newId('job'), dependsOnNew: previous?.job.id, clipsBefore: mode === 'queue' ? clips : null, policy: mode === 'queue',
      workflow: { templateId: t.id, templateVersion: t.version, runId, stepKey: step.key },
    });
    const connector = job.job.connector_id ? (await connectorById(ctx.db, project.organization_id, job.job.connector_id))! : null;
    if (connector && connector.cost_mode !== 'local') external.push(`${connector.label} (${connector.cost_mode}, step "${step.key}")`);
    if (CLIP_KINDS.has(step.jobKind) && job.job.shot_id) videoShots.add(job.job.shot_id);
    const own = blockersOf({
      waitsFor: previous ? steps[i - 1].key : null, connector, approveExternal: body.approveExternal ?? false, localOnly,
      missingShots: compose && episode ? await shotsWithoutVideo(ctx, project.id, episode.id, videoShots) : [],
    });
    if (CLIP_KINDS.has(step.jobKind)) {
      const quota = mode === 'plan' ? await clipQuotaProblem(ctx.db, project.organization_id, clips, project.workspace_id, ctx.now()) : null;
      if (quota) own.push({ code: 'clip_quota_exceeded', message: quota.message });
      clips++;
    }
    prepared.push(job);
    blockers.push(own);
    previews.push({
      kind: step.jobKind, connectorId: connector?.id ?? null, connectorLabel: connector?.label ?? null, costMode: job.costMode,
      shotId: job.job.shot_id, episodeId: job.job.episode_id, prompt: prompt ?? null, parameters: (JSON.parse(job.job.input) as { parameters: Record<string, unknown> }).parameters,
      dependsOnStep: previous ? steps[i - 1].key : null, inputFromPrevious: step.inputFromPrevious, priority,
    });
  });
  if (mode === 'queue' && external.length && !body.approveExternal) {
    throw conflict('external_approval_required', `the run would queue jobs on connectors that may cost money: ${external.join(', ')}; send approveExternal: true`);
  }
  const now = ctx.now().toISOString();
  return await ctx.db.tx(async () => {
    await insertRun(ctx.db, {
      id: runId, organization_id: project.organization_id, workspace_id: project.workspace_id, project_id: project.id, template_id: t.id,
      template_version: t.version, mode, shot_id: shot?.id ?? null, episode_id: episode?.id ?? null, adapter_id: bound?.id ?? null, priority,
      approve_external: body.approveExternal ? 1 : 0, created_by: ctx.actor.userId, created_at: now,
    });
    if (mode === 'queue') await insertPrepared(ctx, prepared);
    // Gates first: the steps' insert trigger derives the run status from them.
    for (const g of gates) {
      await insertRunGate(ctx.db, {
        run_id: runId, gate_key: g.key, label: g.label, blocking: g.blocking ? 1 : 0, status: 'pending', decided_by: null, decided_at: null, note: null, qa_run_id: null,
      });
    }
    await forEachSeq(steps, (step, i) => insertRunStep(ctx.db, {
      run_id: runId, position: i + 1, step_key: step.key, label: step.label, job_kind: step.jobKind, shot_id: prepared[i].job.shot_id,
      connector_id: prepared[i].job.connector_id, job_id: mode === 'queue' ? prepared[i].job.id : null,
      preview: JSON.stringify(previews[i]), blockers: JSON.stringify(blockers[i]),
    }));
    await record(ctx, {
      action: 'workflow.instantiated', targetType: 'workflow_run', targetId: runId,
      metadata: {
        templateId: t.id, templateKey: t.template_key, templateVersion: t.version, mode, shotId: shot?.id ?? null, episodeId: episode?.id ?? null,
        connectorId: bound?.id ?? null, approveExternal: body.approveExternal ?? false, priority,
        jobIds: mode === 'queue' ? prepared.map((p) => p.job.id) : [],
      },
    });
    return await runView(ctx, runId, false);
  });
}

async function runView(ctx: Ctx, runId: string, withTemplate: boolean): Promise<RunView> {
  const run = await runInProject(ctx.db, ctx.scope.projectId!, runId);
  if (!run) throw notFound('no such workflow run in this project');
  const steps = await stepsOfRuns(ctx.db, [run.id]);
  return {
    run, steps, blockers: await currentBlockers(ctx, run, steps, new Map()), gates: await gatesOfRuns(ctx.db, [run.id]),
    ...(withTemplate ? { template: await versionOf(ctx.db, run.template_id, run.template_version) } : {}),
  };
}

/** A run of the current project with the template version it used. */
export const getRun = (ctx: Ctx, runId: string): Promise<RunView> => runView(ctx, runId, true);

export async function listRuns(ctx: Ctx, status: RunStatus | null, limit: number): Promise<RunView[]> {
  const runs = await runsOfProject(ctx.db, ctx.scope.projectId!, status, limit);
  const ids = runs.map((r) => r.id);
  const steps = Map.groupBy(await stepsOfRuns(ctx.db, ids), (s) => s.run_id);
  const gates = Map.groupBy(await gatesOfRuns(ctx.db, ids), (g) => g.run_id);
  const connectors = new Map<string, ConnectorRow | undefined>();
  return await mapSeq(runs, async (run) => {
    const own = steps.get(run.id) ?? [];
    return { run, steps: own, blockers: await currentBlockers(ctx, run, own, connectors), gates: gates.get(run.id) ?? [] };
  });
}

/** QA's decision on a gate of a run whose jobs have all completed (a blocking gate holds the run until it passes). */
export async function decideRunGate(ctx: Ctx, runId: string, gateKey: string, status: 'passed' | 'failed' | 'pending', note: string | null): Promise<RunView> {
  const run = await runInProject(ctx.db, ctx.scope.projectId!, runId);
  if (!run) throw notFound('no such workflow run in this project');
  const gate = (await gatesOfRuns(ctx.db, [run.id])).find((g) => g.gate_key === gateKey);
  if (!gate) throw notFound(`the run has no gate "${gateKey}"`);
  if (!GATE_READY.includes(run.status)) {
    throw conflict('run_not_ready', `the run is ${run.status}: gates are decided once every step's job has completed`);
  }
  return await applyGateDecision(ctx, run, gate, status, note);
}

/** Run statuses in which every step's job has completed, so that gates can be decided. */
export const GATE_READY: readonly string[] = ['awaiting_qa', 'completed', 'failed'];

/**
 * Records a gate decision with its audit (workflow.gate_decided, with `qaRunId` when a QA run decided
 * it: QA re-decides such a gate on its next run, never one a person decided) and answers the run
 * after it; nests inside the caller's transaction.
 */
export async function applyGateDecision(
  ctx: Ctx, run: RunWithStatus, gate: RunGateRow, status: 'passed' | 'failed' | 'pending', note: string | null, qaRunId: string | null = null,
): Promise<RunView> {
  return await ctx.db.tx(async () => {
    await decideGate(ctx.db, run.id, gate.gate_key, status, ctx.actor.userId, ctx.now().toISOString(), note, qaRunId);
    const after = await runView(ctx, run.id, false);
    await record(ctx, {
      action: 'workflow.gate_decided', targetType: 'workflow_run', targetId: run.id,
      metadata: {
        gate: gate.gate_key, blocking: gate.blocking === 1, from: gate.status, to: status, runStatus: { from: run.status, to: after.run.status },
        ...(qaRunId ? { qaRunId, ...(gate.qa_run_id ? { previousQaRunId: gate.qa_run_id } : {}) } : {}),
      },
    });
    return after;
  });
}

export const runCount = (ctx: Ctx, status: RunStatus | null): Promise<number> => countRuns(ctx.db, ctx.scope.projectId!, status);
