// A QA run: pick the artifacts of the target, measure them (at most MEASURE_PARALLEL files at once in
// the whole process, whatever the number of runs, outside any transaction), then write the run and
// all its checks in ONE transaction, decide the blocking gates of the workflow runs it covers
// (gates.ts), move the shots whose chosen video it checked (src/generation/media/shot-status.ts) and audit
// qa.run_completed. When the client goes away (the request's signal aborts),
// measuring stops (ffmpeg is killed, waiting files are dropped) and nothing is written.
import { flatMapSeq, forEachSeq } from '../../kernel/seq.ts';
import type { ServerResponse } from 'node:http';
import type { Ctx } from '../../directory/context.ts';
import { clientClosed, validationFailed } from '../../kernel/errors.ts';
import type { Infer } from '../../kernel/validate.ts';
import { newId } from '../../kernel/ids.ts';
import { record } from '../../platform/audit/service.ts';
import { assertProjectWritable } from '../../directory/tenancy/guard.ts';
import { projectById } from '../../directory/tenancy/store.ts';
import { episodeById, episodesOfProject, shotById, shotsOfProject } from '../../production/catalog/store.ts';
import { artifactInProject, artifactsOfProject, chosenVideoOfShot, chosenVoiceOfShot, newestCutOfEpisode, type ArtifactRow } from '../../generation/media/store.ts';
import { MediaToolError } from '../../media-tools/ffmpeg.ts';
import { withoutPaths } from '../../generation/media/register.ts';
import { inspectArtifact, type CheckDraft } from './inspect.ts';
import { decideGatesAfterQa, type GateDecided } from './gates.ts';
import { shotsAfterQa } from '../../generation/media/shot-status.ts';
import { specOf } from '../../production/projects/spec.ts';
import { insertCheck, insertRun, type QaRunRow } from './store.ts';
import { worstOf } from './verdict.ts';
import type { QaRunBody } from './schema.ts';

/** Most artifacts one QA run measures (a project larger than this is checked episode by episode). */
export const MAX_ARTIFACTS = 200;
/** Files measured at once by the whole process (all QA runs together): each measure is an ffmpeg process. */
export const MEASURE_PARALLEL = 2;

/** At most `limit` holders at once; the others wait in order, and a waiter whose signal aborts leaves the line. */
class Slots {
  private free: number;
  private readonly waiting: Array<() => void> = [];
  constructor(limit: number) {
    this.free = limit;
  }

  async run<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    await this.acquire(signal);
    try {
      return await fn();
    } finally {
      this.release();
    }
  }

  private acquire(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    if (this.free > 0) {
      this.free--;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const i = this.waiting.indexOf(grant);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal!.reason as Error); // as throwIfAborted() throws it: the AbortError, or the aborter's reason
      };
      const grant = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      this.waiting.push(grant);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Hands the slot to the first waiter, else frees it. */
  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}

/** The one limiter of every QA run of this process. */
const measureSlots = new Slots(MEASURE_PARALLEL);

const clientGone = () => clientClosed('the client closed the connection before the QA run finished; nothing was written');

/** Aborts when the connection closes before the response was sent (the client went away). */
export function closedSignal(res: ServerResponse): AbortSignal {
  const ac = new AbortController();
  if (res.destroyed) ac.abort(clientGone());
  else res.once('close', () => { if (!res.writableFinished) ac.abort(clientGone()); });
  return ac.signal;
}

type Target = Pick<QaRunRow, 'target_kind' | 'target_id'>;

/** A shot's newest generated video, voice line and image. */
async function artifactsOfShot(ctx: Ctx, projectId: string, shotId: string): Promise<ArtifactRow[]> {
  const image = (await artifactsOfProject(ctx.db, projectId, { shotId, jobId: null, episodeId: null, kind: 'image', limit: 1 }))[0];
  return [await chosenVideoOfShot(ctx.db, projectId, shotId), await chosenVoiceOfShot(ctx.db, projectId, shotId), image].filter((a) => a !== undefined);
}

async function artifactsOfEpisode(ctx: Ctx, projectId: string, episodeId: string): Promise<ArtifactRow[]> {
  const cut = await newestCutOfEpisode(ctx.db, projectId, episodeId);
  return [...await flatMapSeq(await shotsOfProject(ctx.db, projectId, episodeId), (s) => artifactsOfShot(ctx, projectId, s.id)), ...(cut ? [cut] : [])];
}

/** The target and its artifacts, or 422 naming the field (nothing is measured before this passes). */
export async function pickArtifacts(ctx: Ctx, body: Infer<typeof QaRunBody>): Promise<{ target: Target; artifacts: ArtifactRow[]; field: string }> {
  const projectId = ctx.scope.projectId!;
  const given = (['shotId', 'episodeId', 'project', 'artifactIds'] as const).filter((k) => body[k] !== undefined);
  if (given.length !== 1) throw validationFailed({ body: 'give exactly one of shotId, episodeId, project: true, artifactIds' });
  let target: Target;
  let artifacts: ArtifactRow[];
  const field = given[0];
  if (body.shotId !== undefined) {
    if (!await shotById(ctx.db, projectId, body.shotId)) throw validationFailed({ shotId: 'names no shot of the current project' });
    target = { target_kind: 'shot', target_id: body.shotId };
    artifacts = await artifactsOfShot(ctx, projectId, body.shotId);
  } else if (body.episodeId !== undefined) {
    if (!await episodeById(ctx.db, projectId, body.episodeId)) throw validationFailed({ episodeId: 'names no episode of the current project' });
    target = { target_kind: 'episode', target_id: body.episodeId };
    artifacts = await artifactsOfEpisode(ctx, projectId, body.episodeId);
  } else if (body.project !== undefined) {
    if (body.project !== true) throw validationFailed({ project: 'must be true' });
    target = { target_kind: 'project', target_id: projectId };
    artifacts = await flatMapSeq(await episodesOfProject(ctx.db, projectId), (e) => artifactsOfEpisode(ctx, projectId, e.id));
  } else {
    const problems: Record<string, string> = {};
    artifacts = [];
    await forEachSeq(body.artifactIds!, async (id, i) => {
      const a = await artifactInProject(ctx.db, projectId, id);
      if (!a) problems[`artifactIds[${i}]`] = 'names no media artifact of the current project';
      else artifacts.push(a);
    });
    if (Object.keys(problems).length) throw validationFailed(problems);
    target = { target_kind: 'artifacts', target_id: null };
  }
  artifacts = [...new Map(artifacts.map((a) => [a.id, a])).values()];
  if (artifacts.length === 0) throw validationFailed({ [field]: 'has no media artifacts to check yet' });
  if (artifacts.length > MAX_ARTIFACTS) {
    throw validationFailed({ [field]: `picks ${artifacts.length} artifacts; a QA run checks at most ${MAX_ARTIFACTS} (check episode by episode)` });
  }
  return { target, artifacts, field };
}

/** `fn` over `items`, at most `limit` at once, answers in order. */
async function mapLimit<T, U>(items: readonly T[], limit: number, fn: (item: T) => Promise<U>): Promise<U[]> {
  const out = new Array<U>(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return out;
}

/** A measurement that could not run (ffmpeg refused the file): the evidence is not usable. */
function unmeasurable(err: unknown, signal?: AbortSignal): CheckDraft[] {
  // Stopped because the client went away: not a finding about the file.
  if (signal?.aborted) throw clientGone();
  // No ffmpeg on this server is the server's problem, not the file's.
  if (err instanceof MediaToolError && err.reason === 'missing') throw err;
  const reason = withoutPaths(err instanceof Error ? err.message : String(err));
  return [{ key: 'evidence', blocking: true, result: 'fail', measured: { measurable: false }, expected: { measurable: true }, message: `could not be measured: ${reason.slice(0, 300)}`, timeCodeMs: null }];
}

export interface QaRunResult { run: QaRunRow; gates: GateDecided[] }

/** Measures and records a QA run; with `signal` (closedSignal of the request), a client that goes away stops it (499, nothing written). */
export async function runQa(ctx: Ctx, body: Infer<typeof QaRunBody>, signal?: AbortSignal): Promise<QaRunResult> {
  const projectId = ctx.scope.projectId!;
  const { target, artifacts } = await pickArtifacts(ctx, body);
  const { spec } = await specOf(ctx.db, projectId);
  const startedAt = ctx.now().toISOString();
  const drafts = await mapLimit(artifacts, MEASURE_PARALLEL,
    (a) => measureSlots.run(() => inspectArtifact(ctx, a, spec, signal), signal).catch((err) => unmeasurable(err, signal)));
  if (signal?.aborted) throw clientGone();
  const project = (await projectById(ctx.db, projectId))!;
  const runId = newId('qar');
  const all = drafts.flat();
  const failed = new Set(artifacts.filter((_, i) => drafts[i].some((c) => c.blocking && c.result === 'fail')).map((a) => a.id));
  const count = (r: string) => all.filter((c) => c.result === r).length;
  const summary = {
    checks: all.length, pass: count('pass'), warn: count('warn'), fail: count('fail'), blockingFailed: all.filter((c) => c.blocking && c.result === 'fail').length,
    failing: artifacts.flatMap((a, i) => drafts[i].filter((c) => c.result === 'fail').map((c) => ({ artifactId: a.id, check: c.key }))),
  };
  return await ctx.db.tx(async () => {
    // The project may have been archived while the files were measured.
    await assertProjectWritable(ctx.db, projectId);
    const run: QaRunRow = {
      id: runId, organization_id: project.organization_id, workspace_id: project.workspace_id, project_id: projectId, ...target,
      result: worstOf(all), spec: JSON.stringify(spec), summary: JSON.stringify(summary), artifact_count: artifacts.length,
      created_by: ctx.actor.userId, started_at: startedAt, created_at: ctx.now().toISOString(),
    };
    await insertRun(ctx.db, run);
    let position = 0;
    await forEachSeq(artifacts, async (a, i) => {
      for (const c of drafts[i]) {
        await insertCheck(ctx.db, {
          run_id: runId, position: ++position, artifact_id: a.id, artifact_sha256: a.content_sha256, check_key: c.key, blocking: c.blocking ? 1 : 0,
          result: c.result, measured: JSON.stringify(c.measured), expected: c.expected === undefined ? null : JSON.stringify(c.expected),
          message: c.message, time_code_ms: c.timeCodeMs,
        });
      }
    });
    const gates = await decideGatesAfterQa(ctx, projectId, runId, new Set(artifacts.map((a) => a.id)), failed);
    await shotsAfterQa(ctx, runId, artifacts, failed);
    await record(ctx, {
      action: 'qa.run_completed', targetType: 'qa_run', targetId: runId,
      metadata: { target: { kind: target.target_kind, id: target.target_id }, result: run.result, artifactCount: artifacts.length, ...summary, gates },
    });
    return { run, gates };
  });
}
