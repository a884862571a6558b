// What a delivery holds and whether it is ready. Items: the newest cut of every episode that has one
// (default), the newest cut of the named episodes, or a chosen set of artifacts; each keeps the
// artifact's SHA-256 as gathered. Readiness: every item needs a QA verdict on that hash with no
// failing blocking check and an approved review on that hash; the gaps name what is missing.
import { mapSeq } from '../../kernel/seq.ts';
import type { Db } from '../../db/db.ts';
import { conflict, validationFailed } from '../../kernel/errors.ts';
import type { StoredState, VerifiedFiles } from '../../kernel/storage/verify.ts';
import type { ObjectStore } from '../../kernel/storage/store.ts';
import { verifyObject } from '../../kernel/storage/verify.ts';
import { artifactInProject, newestCutOfEpisode, type ArtifactRow } from '../../generation/media/store.ts';
import { episodeById, episodesOfProject } from '../../production/catalog/store.ts';
import { qaVerdictOf, type QaVerdict } from '../qa/verdict.ts';
import { reviewVerdictOf, type ReviewVerdict } from '../review/verdict.ts';
import type { DeliveryItemRow } from './store.ts';

export type ItemInput = Omit<DeliveryItemRow, 'delivery_id' | 'position'>;

const itemOf = (a: ArtifactRow): ItemInput => ({
  artifact_id: a.id, artifact_sha256: a.content_sha256, episode_id: a.episode_id, shot_id: a.shot_id, qa_run_id: null, review_id: null,
});

function duplicates(field: string, ids: readonly string[], errors: Record<string, string>): void {
  ids.forEach((id, i) => { if (ids.indexOf(id) !== i) errors[`${field}[${i}]`] = 'is named twice'; });
}

/** The items of a delivery from its input; 422 naming every bad id, 409 nothing_to_deliver when the default finds no cut. */
export async function gatherItems(db: Db, projectId: string, input: { episodeIds?: string[]; artifactIds?: string[] }): Promise<ItemInput[]> {
  const errors: Record<string, string> = {};
  if (input.episodeIds && input.artifactIds) throw validationFailed({ artifactIds: 'give episodeIds or artifactIds, not both' });
  if (input.artifactIds) {
    duplicates('artifactIds', input.artifactIds, errors);
    const rows = await mapSeq(input.artifactIds, async (id, i) => {
      const a = await artifactInProject(db, projectId, id);
      if (!a) errors[`artifactIds[${i}]`] ??= 'names no media artifact of this project';
      else if (a.kind === 'other') errors[`artifactIds[${i}]`] ??= 'must be a video, audio or image artifact';
      return a;
    });
    if (Object.keys(errors).length) throw validationFailed(errors);
    return rows.map((a) => itemOf(a!));
  }
  if (input.episodeIds) {
    duplicates('episodeIds', input.episodeIds, errors);
    const cuts = await mapSeq(input.episodeIds, async (id, i) => {
      if (!await episodeById(db, projectId, id)) { errors[`episodeIds[${i}]`] ??= 'names no episode of this project'; return undefined; }
      const cut = await newestCutOfEpisode(db, projectId, id);
      if (!cut) errors[`episodeIds[${i}]`] ??= 'the episode has no cut yet (compose one first)';
      return cut;
    });
    if (Object.keys(errors).length) throw validationFailed(errors);
    return cuts.map((a) => itemOf(a!));
  }
  const cuts = (await mapSeq(await episodesOfProject(db, projectId), (e) => newestCutOfEpisode(db, projectId, e.id))).filter((a) => a !== undefined);
  if (cuts.length === 0) throw conflict('nothing_to_deliver', 'no episode of the project has a cut yet; compose one or name artifactIds');
  return cuts.map(itemOf);
}

export type GapKind = 'qa_missing' | 'qa_failed' | 'review_missing' | 'review_not_approved' | 'artifact_changed';

export interface Gap {
  artifactId: string;
  position: number;
  gap: GapKind;
  checks?: string[];
  reviewId?: string;
  reviewStatus?: string;
  reason?: string;
}

export interface ItemState {
  item: DeliveryItemRow;
  artifact: ArtifactRow | undefined;
  qa: QaVerdict | null;
  review: ReviewVerdict | null;
  gaps: Gap[];
}

/** Each item's verdicts and gaps, from the database (the files on disk: `changedOnDisk`). */
export async function itemStates(db: Db, projectId: string, items: readonly DeliveryItemRow[]): Promise<ItemState[]> {
  return await mapSeq(items, async (item) => {
    const at = { artifactId: item.artifact_id, position: item.position };
    const artifact = await artifactInProject(db, projectId, item.artifact_id);
    const qa = await qaVerdictOf(db, projectId, item.artifact_id, item.artifact_sha256);
    const review = await reviewVerdictOf(db, projectId, item.artifact_id, item.artifact_sha256);
    const gaps: Gap[] = [];
    if (!artifact || artifact.content_sha256 !== item.artifact_sha256) gaps.push({ ...at, gap: 'artifact_changed', reason: 'the artifact record changed' });
    if (!qa) gaps.push({ ...at, gap: 'qa_missing' });
    else if (qa.failing.length > 0) gaps.push({ ...at, gap: 'qa_failed', checks: qa.failing });
    if (!review) gaps.push({ ...at, gap: 'review_missing' });
    else if (!review.approved) gaps.push({ ...at, gap: 'review_not_approved', reviewId: review.reviewId, reviewStatus: review.status });
    return { item, artifact, qa, review, gaps };
  });
}

const DISK_REASONS: Record<Exclude<StoredState, 'ok'>, string> = {
  missing: 'the file is missing',
  unsafe: 'the stored file path is unsafe',
  unreadable: 'the file cannot be read',
  changed: 'the file\u2019s bytes no longer match the recorded SHA-256',
};

/**
 * Why the stored object of an item no longer holds the approved bytes (missing, unsafe key, other
 * hash), or null. With `cache`, an object verified before and unchanged since (same version: stat on
 * local, ETag and Last-Modified on s3) is not hashed again.
 */
export async function changedOnDisk(store: ObjectStore, artifact: ArtifactRow | undefined, sha256: string, cache?: VerifiedFiles): Promise<string | null> {
  if (!artifact) return 'the artifact no longer exists';
  const { state } = await verifyObject(store, artifact.storage_path, { sha256 }, cache);
  return state === 'ok' ? null : DISK_REASONS[state];
}

/** "position 1 (art_...): qa_missing, review_missing; position 2 ...". */
export function describeGaps(gaps: readonly Gap[]): string {
  const byItem = new Map<string, string[]>();
  for (const g of gaps) {
    const key = `position ${g.position} (${g.artifactId})`;
    byItem.set(key, [...(byItem.get(key) ?? []), g.checks ? `${g.gap} [${g.checks.join(', ')}]` : g.gap]);
  }
  return [...byItem].map(([k, v]) => `${k}: ${v.join(', ')}`).join('; ');
}
