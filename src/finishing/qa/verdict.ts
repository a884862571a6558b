// QA's word on one artifact at one hash, for approvals (deliveries): the newest QA run that checked
// exactly these bytes, and which of its blocking checks failed.
import type { Db } from '../../db/db.ts';
import { checksOfArtifactInRun, newestRunOfArtifact, type QaCheckRow } from './store.ts';

export interface QaVerdict { runId: string; result: 'pass' | 'warn' | 'fail'; failing: string[]; checkedAt: string }

/** The worst result of a set of checks. */
export function worstOf(checks: ReadonlyArray<Pick<QaCheckRow, 'result'>>): QaVerdict['result'] {
  if (checks.some((c) => c.result === 'fail')) return 'fail';
  return checks.some((c) => c.result === 'warn') ? 'warn' : 'pass';
}

/**
 * The newest QA run of the project that checked this artifact at this SHA-256, or null. `result` is
 * the worst of the artifact's checks in that run; `failing` the keys of its blocking checks that
 * failed (empty: QA passed for approval purposes, warnings included).
 */
export async function qaVerdictOf(db: Db, projectId: string, artifactId: string, sha256: string): Promise<QaVerdict | null> {
  const run = await newestRunOfArtifact(db, projectId, artifactId, sha256);
  if (!run) return null;
  const checks = await checksOfArtifactInRun(db, run.id, artifactId, sha256);
  const failing = [...new Set(checks.filter((c) => c.blocking === 1 && c.result === 'fail').map((c) => c.check_key))];
  return { runId: run.id, result: worstOf(checks), failing, checkedAt: run.created_at };
}
