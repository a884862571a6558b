// Output files become media artifacts. Before the job's completing transaction, every file is
// examined (gatherEvidence: ffprobe, the real first and last frames written under frames/, their
// signatures; the first frame of a generated video goes through the composite check like an
// image). Inside that transaction, registerArtifacts writes one row per file with its provenance,
// the composition row of an episode cut, and the continuity between a shot's video and its
// neighbours'. A crash between the two leaves files without rows: no artifact is half-registered,
// the job's lease expires, the next attempt writes the same file names again, and until then the
// files are what `storage reclaim` finds unreferenced.
import path from 'node:path';
import type { Ctx } from '../../directory/context.ts';
import { newId } from '../../kernel/ids.ts';
import { AppError } from '../../kernel/errors.ts';
import { sniffMime } from '../../kernel/files.ts';
import { readHeadOf } from '../../kernel/storage/head.ts';
import { ConnectorError, type ContractInput, type OutputFile } from '../connectors/protocols/types.ts';
import { shotById, shotsOfProject } from '../../production/catalog/store.ts';
import { analyzeMedia, MediaError, type MediaEvidence } from '../../media-tools/evidence.ts';
import { compareSignatures } from '../../media-tools/signature.ts';
import type { QuotaContext } from '../../commercial/quotas/service.ts';
import { storageQuotaWarnings } from '../../commercial/quotas/warnings.ts';
import { detectComposite } from '../../media-tools/collage.ts';
import { MediaToolError, withoutUrls } from '../../media-tools/ffmpeg.ts';
import {
  chosenVideoOfShot, insertArtifact, insertComposition, insertContinuity, type ArtifactRow, type CompositionRow,
} from './store.ts';

export interface PreparedArtifact { file: OutputFile; evidence: MediaEvidence | null }

/** What an episode cut was made of (the composition row without its ids). */
export interface CompositionDraft {
  episodeId: string; width: number; height: number; frameRate: string; durationMs: number;
  inputs: Array<{
    position: number; shotId: string; artifactId: string; path: string; contentSha256: string; startMs: number; durationMs: number; frames: number;
    /** The voice line mixed over the segment, or null. */
    audioArtifactId: string | null; audioPath: string | null; audioContentSha256: string | null;
  }>;
}

/**
 * Server paths never reach a job's error (it is shown to project members, audited and notified):
 * an absolute path keeps only its last segment; a URL (a store's signed URL) is left out.
 */
export const withoutPaths = (message: string): string =>
  withoutUrls(message).replace(/(?<![\w.])\/(?:[^\s:'"()/]+\/)+([^\s:'"()/]*)/g, '$1').slice(0, 500);

/**
 * A media failure as the job records it: a missing tool fails for good; an unreadable or vanished
 * file is retried (the model may answer properly next time); bad composition arguments fail for good.
 */
export function mediaFailure(err: unknown): ConnectorError | null {
  if (err instanceof MediaToolError) {
    if (err.reason === 'missing') return new ConnectorError('media_tools_missing', withoutPaths(err.message), false);
    if (err.reason === 'aborted') return new ConnectorError('connector_aborted', withoutPaths(err.message), true);
    return new ConnectorError('media_analysis_failed', withoutPaths(err.message), true);
  }
  if (err instanceof MediaError) return new ConnectorError(err.code, withoutPaths(err.message), true);
  if (err instanceof AppError) return new ConnectorError('media_file_missing', `an output file cannot be read: ${withoutPaths(err.message)}`, true);
  return null;
}

/** Examines every output file (text outputs: their sniffed type only); throws a ConnectorError. */
/** The job whose outputs are registered: the fields of its row this module reads (jobs/store.ts JobRow has them). */
export interface RegisteringJob {
  id: string; organization_id: string; workspace_id: string; project_id: string; shot_id: string | null; episode_id: string | null; kind: string;
}

export async function gatherEvidence(ctx: Ctx, job: RegisteringJob, files: OutputFile[], signal?: AbortSignal): Promise<PreparedArtifact[]> {
  const store = ctx.storage;
  const prepared: PreparedArtifact[] = [];
  try {
    for (const file of files) {
      if (file.role === 'text') {
        prepared.push({ file: { ...file, mimeType: sniffMime(await readHeadOf(store, file.path)) }, evidence: null });
        continue;
      }
      const framesPrefix = `frames/${job.id}/${path.basename(file.path, path.extname(file.path))}`;
      const evidence = await analyzeMedia({ store, relPath: file.path, framesPrefix, signal, timeoutMs: ctx.config.jobTimeoutMs });
      // A video job answered with an error page saved as video-1.mp4 has not produced a video.
      if (evidence.kind !== file.role) {
        throw new ConnectorError('media_unexpected_kind', `the ${file.role} output is ${evidence.kind === 'other' ? `not media (${evidence.mimeType})` : `an ${evidence.kind} file`}`, true);
      }
      // A generated video whose opening picture is a grid is a collage too ("a first frame used as an image").
      if (job.kind !== 'compose' && evidence.kind === 'video' && evidence.firstFrame) {
        const verdict = await detectComposite(await store.mediaInput(evidence.firstFrame.path), { signal });
        if (verdict.composite) {
          throw new ConnectorError('image_composite_detected', `the video's first frame is a ${verdict.composite}; exactly one single picture is required`, false);
        }
      }
      prepared.push({ file, evidence });
    }
  } catch (err) {
    throw mediaFailure(err) ?? err;
  }
  return prepared;
}

/** The provenance of a call's inputs: each asset version, or dependency artifact, with its SHA-256. */
export function inputProvenance(inputs: ContractInput[]): Array<Record<string, string>> {
  return inputs.map((i): Record<string, string> => ('artifactId' in i
    ? { artifactId: i.artifactId, jobId: i.jobId, contentSha256: i.contentSha256 }
    : { assetId: i.assetId, versionId: i.versionId, contentSha256: i.contentSha256 }));
}

const toBlob = (b: Buffer | null) => (b ? new Uint8Array(b.buffer, b.byteOffset, b.byteLength) : null);

/** The rows of a job's artifacts (ids fixed before the transaction, so that the job's output can name them). */
export function artifactRows(job: RegisteringJob, prepared: PreparedArtifact[], provenance: Record<string, unknown>, at: string): ArtifactRow[] {
  return prepared.map((p) => artifactRow(job, p, provenance, at));
}

function artifactRow(job: RegisteringJob, p: PreparedArtifact, provenance: Record<string, unknown>, at: string): ArtifactRow {
  const e = p.evidence;
  return {
    id: newId('art'), organization_id: job.organization_id, workspace_id: job.workspace_id, project_id: job.project_id,
    episode_id: job.episode_id, shot_id: job.shot_id, job_id: job.id, kind: e?.kind ?? 'other',
    source: job.kind === 'compose' ? 'composition' : 'generation', storage_path: p.file.path, file_name: path.basename(p.file.path),
    mime_type: e?.mimeType ?? p.file.mimeType, file_size: e?.fileSize ?? p.file.fileSize, content_sha256: e?.sha256 ?? p.file.sha256,
    duration_ms: e?.durationMs ?? null, width: e?.width ?? null, height: e?.height ?? null, frame_rate: e?.frameRate ?? null,
    frame_count: e?.frameCount ?? null, video_codec: e?.videoCodec ?? null, audio_codec: e?.audioCodec ?? null,
    has_video: e?.hasVideo ? 1 : 0, has_audio: e?.hasAudio ? 1 : 0,
    first_frame_path: e?.firstFrame?.path ?? null, first_frame_sha256: e?.firstFrame?.sha256 ?? null, first_frame_size: e?.firstFrame?.size ?? null,
    last_frame_path: e?.lastFrame?.path ?? null, last_frame_sha256: e?.lastFrame?.sha256 ?? null, last_frame_size: e?.lastFrame?.size ?? null,
    first_signature: toBlob(e?.firstSignature ?? null), last_signature: toBlob(e?.lastSignature ?? null),
    provenance: JSON.stringify(provenance), created_at: at,
  };
}

/** Continuity of two artifacts (last frame of `from`, first frame of `to`), or null without signatures. */
export function measureContinuity(from: ArtifactRow, to: ArtifactRow): { score: number; metrics: Record<string, number> } | null {
  if (!from.last_signature || !to.first_signature) return null;
  const m = compareSignatures(Buffer.from(from.last_signature), Buffer.from(to.first_signature));
  return { score: m.score, metrics: { meanAbsDiff: m.meanAbsDiff, histogramSimilarity: m.histogramSimilarity } };
}

/** The shots before and after `shotId` in its episode, in shot order. */
export async function neighbourShots(ctx: Ctx, projectId: string, shotId: string): Promise<{ previous: string | null; next: string | null }> {
  const shot = await shotById(ctx.db, projectId, shotId);
  if (!shot) return { previous: null, next: null };
  const ids = (await shotsOfProject(ctx.db, projectId, shot.episode_id)).map((s) => s.id);
  const at = ids.indexOf(shotId);
  return { previous: ids[at - 1] ?? null, next: ids[at + 1] ?? null };
}

/** Continuity rows between a newly registered shot video and the chosen videos of its neighbouring shots. */
async function recordContinuity(ctx: Ctx, art: ArtifactRow, at: string): Promise<void> {
  if (art.kind !== 'video' || !art.shot_id || !art.episode_id) return;
  const { previous, next } = await neighbourShots(ctx, art.project_id, art.shot_id);
  const pairs: Array<[ArtifactRow, ArtifactRow]> = [];
  const before = previous ? await chosenVideoOfShot(ctx.db, art.project_id, previous) : undefined;
  const after = next ? await chosenVideoOfShot(ctx.db, art.project_id, next) : undefined;
  if (before) pairs.push([before, art]);
  if (after) pairs.push([art, after]);
  for (const [from, to] of pairs) {
    const m = measureContinuity(from, to);
    if (!m) continue;
    await insertContinuity(ctx.db, {
      id: newId('cnt'), organization_id: art.organization_id, workspace_id: art.workspace_id, project_id: art.project_id,
      episode_id: art.episode_id, from_shot_id: from.shot_id!, to_shot_id: to.shot_id!, from_artifact_id: from.id, to_artifact_id: to.id,
      score: m.score, metrics: JSON.stringify(m.metrics), created_at: at,
    });
  }
}

/**
 * Inside the completing transaction: the artifact rows, the composition of a cut, continuity with
 * neighbouring shots, the event media.artifacts_registered (after commit, finishing re-opens the
 * reviews the new artifacts replace: src/finishing/review/reopen.ts), and the storage quota warnings the new files
 * may have caused (`quotas`: the settle's quota context, commercial/quotas.ts quotaContextOf).
 */
export async function registerArtifacts(
  ctx: Ctx, job: RegisteringJob, rows: ArtifactRow[], composition: CompositionDraft | null, at: string, quotas: QuotaContext,
): Promise<void> {
  for (const row of rows) {
    await insertArtifact(ctx.db, row);
    await recordContinuity(ctx, row, at);
  }
  if (rows.length) await storageQuotaWarnings(ctx, job.organization_id, job.workspace_id, quotas);
  const cut = rows.find((r) => r.kind === 'video');
  if (composition && cut) {
    const c: CompositionRow = {
      id: newId('cmp'), organization_id: job.organization_id, workspace_id: job.workspace_id, project_id: job.project_id,
      episode_id: composition.episodeId, job_id: job.id, artifact_id: cut.id, storage_path: cut.storage_path, width: composition.width,
      height: composition.height, frame_rate: composition.frameRate, duration_ms: composition.durationMs,
      inputs: JSON.stringify(composition.inputs), created_at: at,
    };
    await insertComposition(ctx.db, c);
  }
  // News for the wings above (finishing re-opens the reviews the new artifacts replace): recorded in
  // this transaction, handled after it commits, so a failing handler never fails the job.
  if (rows.length) {
    await ctx.emit('media.artifacts_registered', {
      projectId: job.project_id, jobId: job.id, artifactIds: rows.map((r) => r.id),
      cut: composition && cut ? { artifactId: cut.id, episodeId: composition.episodeId } : null, at,
    });
  }
}

/** The news of registered artifacts (ids: a handler reads the rows as they are when it runs). */
export interface ArtifactsRegistered {
  projectId: string; jobId: string; artifactIds: string[];
  /** Set when the job composed an episode cut: the cut's artifact and its episode. */
  cut: { artifactId: string; episodeId: string } | null;
  at: string;
}

declare module '../../directory/events.ts' {
  interface EventMap { 'media.artifacts_registered': ArtifactsRegistered }
}
