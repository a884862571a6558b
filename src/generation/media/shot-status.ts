// A shot's status follows the work done on it. A person may set any status (PATCH); besides, the
// service moves it forward on these events (each audited shot.status_changed with the reason):
//
//   draft | ready              --a video job for the shot is created------------------> generating
//   draft | ready | generating --QA passes the shot's chosen video (no blocking fail)--> review
//   review                     --QA fails the shot's chosen video (a blocking fail)----> ready
//   any but approved           --a review approves the shot's chosen video, or an
//                                episode cut made with a video of the shot-------------> approved
//
// An approved shot is never moved by the service (only a person changes it). The "Shot to generate"
// work item (workitems.ts) lists the shots that are not approved and whose chosen video has not
// passed QA.
import type { Ctx } from '../../directory/context.ts';
import { record } from '../../platform/audit/service.ts';
import { setDocumentStatus } from '../../platform/search/index.ts';
import { chosenVideoOfShot, compositionOfArtifact, type ArtifactRow } from './store.ts';
import { shotById, updateShot } from '../../production/catalog/store.ts';

export type ShotEvent = 'video_job_created' | 'qa_passed' | 'qa_failed' | 'review_approved';

/** Per event: the status it moves a shot to, and the statuses it moves it from. */
const TRANSITIONS: Record<ShotEvent, { to: string; from: readonly string[] }> = {
  video_job_created: { to: 'generating', from: ['draft', 'ready'] },
  qa_passed: { to: 'review', from: ['draft', 'ready', 'generating'] },
  qa_failed: { to: 'ready', from: ['review'] },
  review_approved: { to: 'approved', from: ['draft', 'ready', 'generating', 'review'] },
};

/** Moves the shot on `event` when its status is one the event moves from (audited); answers whether it moved. Nests in the caller's transaction. */
export async function advanceShot(ctx: Ctx, projectId: string, shotId: string, event: ShotEvent, metadata: Record<string, unknown> = {}): Promise<boolean> {
  const { to, from } = TRANSITIONS[event];
  return await ctx.db.tx(async () => {
    // Locked: the status the event moves the shot from is the one it has when this transaction writes.
    const shot = await shotById(ctx.db, projectId, shotId, { forUpdate: true });
    if (!shot || !from.includes(shot.status)) return false;
    await updateShot(ctx.db, { ...shot, status: to, updated_at: ctx.now().toISOString() });
    await setDocumentStatus(ctx.db, 'shot', shot.id, to);
    await record(ctx, {
      action: 'shot.status_changed', targetType: 'shot', targetId: shot.id,
      metadata: { changes: { status: { from: shot.status, to } }, reason: event, ...metadata },
    });
    return true;
  });
}

/** The shot whose chosen (newest generated) video `a` is, or null. */
async function shotOfChosenVideo(ctx: Ctx, a: Pick<ArtifactRow, 'id' | 'project_id' | 'shot_id' | 'kind'>): Promise<string | null> {
  if (a.kind !== 'video' || !a.shot_id) return null;
  return (await chosenVideoOfShot(ctx.db, a.project_id, a.shot_id))?.id === a.id ? a.shot_id : null;
}

/** After a QA run (inside its transaction): every checked artifact that is its shot's chosen video moves the shot. */
export async function shotsAfterQa(ctx: Ctx, qaRunId: string, artifacts: readonly ArtifactRow[], failed: ReadonlySet<string>): Promise<void> {
  for (const a of artifacts) {
    const shotId = await shotOfChosenVideo(ctx, a);
    if (shotId) await advanceShot(ctx, a.project_id, shotId, failed.has(a.id) ? 'qa_failed' : 'qa_passed', { qaRunId, artifactId: a.id });
  }
}

/**
 * After a review approves `a` (inside the decision's transaction): the shot whose chosen video it is,
 * or, for an episode cut, every shot the cut was made of, is approved.
 */
export async function shotsAfterApproval(ctx: Ctx, reviewId: string, a: ArtifactRow): Promise<void> {
  const direct = await shotOfChosenVideo(ctx, a);
  if (direct) {
    await advanceShot(ctx, a.project_id, direct, 'review_approved', { reviewId, artifactId: a.id });
    return;
  }
  const cut = a.source === 'composition' ? await compositionOfArtifact(ctx.db, a.project_id, a.id) : undefined;
  if (!cut) return;
  for (const input of JSON.parse(cut.inputs) as Array<{ artifactId: string; shotId: string }>) {
    await advanceShot(ctx, a.project_id, input.shotId, 'review_approved', { reviewId, artifactId: a.id, inputArtifactId: input.artifactId });
  }
}
