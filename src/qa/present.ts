// QA runs and checks as the API shows them: a run with its checks grouped by artifact.
import type { Db } from '../db/db.ts';
import { artifactInProject } from '../media/store.ts';
import type { GateDecided } from './gates.ts';
import { checksOfRun, type QaCheckRow, type QaRunRow } from './store.ts';
import { worstOf } from './verdict.ts';

const parsed = (s: string | null) => (s === null ? null : JSON.parse(s));

export const presentCheck = (c: QaCheckRow) => ({
  position: c.position, key: c.check_key, blocking: c.blocking === 1, result: c.result, measured: parsed(c.measured), expected: parsed(c.expected),
  message: c.message, timeCodeMs: c.time_code_ms,
});

/** A run without its checks (lists). */
export const presentRunSummary = (r: QaRunRow) => ({
  id: r.id, projectId: r.project_id, target: { kind: r.target_kind, id: r.target_id }, result: r.result, artifactCount: r.artifact_count,
  summary: parsed(r.summary), createdBy: r.created_by, startedAt: r.started_at, createdAt: r.created_at,
});

/** A run with the spec it measured against and every artifact's checks (and, right after a run, the gates it decided). */
export function presentRun(db: Db, r: QaRunRow, gates?: GateDecided[]) {
  const byArtifact = Map.groupBy(checksOfRun(db, r.id), (c) => `${c.artifact_id}\0${c.artifact_sha256}`);
  const artifacts = [...byArtifact.values()].map((checks) => {
    const a = artifactInProject(db, r.project_id, checks[0].artifact_id);
    return {
      artifactId: checks[0].artifact_id, sha256: checks[0].artifact_sha256, kind: a?.kind ?? null, source: a?.source ?? null,
      shotId: a?.shot_id ?? null, episodeId: a?.episode_id ?? null, result: worstOf(checks),
      failing: checks.filter((c) => c.blocking === 1 && c.result === 'fail').map((c) => c.check_key), checks: checks.map(presentCheck),
    };
  });
  return { ...presentRunSummary(r), spec: parsed(r.spec), artifacts, ...(gates ? { gatesDecided: gates } : {}) };
}
