// QA runs and checks as the API shows them: a run with its checks grouped by artifact.
import { mapSeq } from '../../kernel/seq.ts';
import type { Db } from '../../db/db.ts';
import * as o from '../../kernel/view.ts';
import { artifactInProject } from '../../generation/media/store.ts';
import { ARTIFACT_KINDS, ARTIFACT_SOURCES } from '../../generation/media/present.ts';
import type { GateDecided } from './gates.ts';
import { CHECK_KEYS, type CheckKey } from './inspect.ts';
import { DeliverySpecFieldsView } from '../../production/projects/spec.ts';
import { checksOfRun, type QaCheckRow, type QaRunRow } from './store.ts';
import { worstOf } from './verdict.ts';

/** A stored JSON column as the view that answers it says it is (the service wrote it from that shape; null stays null). */
const parsed = <T>(s: string | null): T => (s === null ? null : JSON.parse(s)) as T;

const RESULTS = ['pass', 'warn', 'fail'] as const;
const TARGET_KINDS = ['shot', 'episode', 'project', 'artifacts'] as const;

export const QaCheckView = o.named('QaCheck', o.object({
  position: o.int(), key: o.oneOf(CHECK_KEYS), blocking: o.bool('a failed blocking check stops an approval and fails a workflow gate'),
  result: o.oneOf(RESULTS), measured: o.anything('what was measured (a number, a size, stretches, ...)'),
  expected: o.anything('what the spec asks, when it asks something (null otherwise)'),
  message: o.text(), timeCodeMs: o.nullable(o.int('where in the file, when the check found a place')),
}));

export const presentCheck = (c: QaCheckRow): o.Out<typeof QaCheckView> => ({
  position: c.position, key: c.check_key as CheckKey, blocking: c.blocking === 1, result: c.result, measured: parsed(c.measured), expected: parsed(c.expected),
  message: c.message, timeCodeMs: c.time_code_ms,
});

export const QaRunSummaryView = o.named('QaRunSummary', o.object({
  id: o.text(), projectId: o.text(),
  target: o.object({ kind: o.oneOf(TARGET_KINDS), id: o.nullable(o.text({ description: 'the shot or episode; null for the project or a chosen set' })) }),
  result: o.oneOf(RESULTS, 'the worst result of its checks'), artifactCount: o.int(),
  summary: o.object({
    checks: o.int(), pass: o.int(), warn: o.int(), fail: o.int(), blockingFailed: o.int(),
    failing: o.array(o.object({ artifactId: o.text(), check: o.oneOf(CHECK_KEYS) }), 'every failed check'),
  }),
  createdBy: o.nullable(o.text()), startedAt: o.time(), createdAt: o.time(),
}, 'a QA run without its checks'));

/** A run without its checks (lists). */
export const presentRunSummary = (r: QaRunRow): o.Out<typeof QaRunSummaryView> => ({
  id: r.id, projectId: r.project_id, target: { kind: r.target_kind, id: r.target_id }, result: r.result, artifactCount: r.artifact_count,
  summary: parsed(r.summary), createdBy: r.created_by, startedAt: r.started_at, createdAt: r.created_at,
});

export const QaRunView = o.named('QaRun', o.extend(QaRunSummaryView, {
  spec: DeliverySpecFieldsView,
  artifacts: o.array(o.object({
    artifactId: o.text(), sha256: o.text({ description: 'the bytes checked' }),
    kind: o.nullable(o.oneOf(ARTIFACT_KINDS)), source: o.nullable(o.oneOf(ARTIFACT_SOURCES)),
    shotId: o.nullable(o.text()), episodeId: o.nullable(o.text()), result: o.oneOf(RESULTS),
    failing: o.array(o.oneOf(CHECK_KEYS), 'its failed blocking checks'), checks: o.array(QaCheckView),
  })),
  gatesDecided: o.optional(o.array(o.object({
    workflowRunId: o.text(), gateKey: o.text(), status: o.oneOf(['passed', 'failed'] as const), runStatus: o.text({ description: 'the workflow run\'s status after the decision' }),
  }), 'right after a run only: the blocking workflow gates it decided')),
}, 'a QA run with the spec it measured against and every artifact\'s checks'));

/** A run with the spec it measured against and every artifact's checks (and, right after a run, the gates it decided). */
export async function presentRun(db: Db, r: QaRunRow, gates?: GateDecided[]): Promise<o.Out<typeof QaRunView>> {
  const byArtifact = Map.groupBy(await checksOfRun(db, r.id), (c) => `${c.artifact_id}\0${c.artifact_sha256}`);
  const artifacts = await mapSeq([...byArtifact.values()], async (checks) => {
    const a = await artifactInProject(db, r.project_id, checks[0].artifact_id);
    return {
      artifactId: checks[0].artifact_id, sha256: checks[0].artifact_sha256, kind: a?.kind ?? null, source: a?.source ?? null,
      shotId: a?.shot_id ?? null, episodeId: a?.episode_id ?? null, result: worstOf(checks),
      failing: checks.filter((c) => c.blocking === 1 && c.result === 'fail').map((c) => c.check_key as CheckKey), checks: checks.map(presentCheck),
    };
  });
  return { ...presentRunSummary(r), spec: parsed(r.spec), artifacts, ...(gates ? { gatesDecided: gates } : {}) };
}
