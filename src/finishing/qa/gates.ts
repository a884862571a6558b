// A QA run decides the BLOCKING gates of the workflow runs it fully covers: runs of the project whose
// jobs have all completed (awaiting_qa, completed or failed) and every one of whose artifacts this QA
// run checked. A blocking gate that is pending, or that an earlier QA run decided, becomes passed when
// no blocking check failed on the run's artifacts, else failed: re-running QA re-decides what QA
// decided (a passing re-run passes a gate a failing run left failed, a failing re-run fails a passed
// one; a gate whose decision stays the same is not written again). A gate a person decided is left as
// it is, and non-blocking gates are never decided here (they wait for a person).
// The decision goes through the workflow's own gate code (same audit, workflow.gate_decided, with
// the QA run's id), inside the QA run's transaction.
import type { Ctx } from '../../directory/context.ts';
import type { Db } from '../../db/db.ts';
import { applyGateDecision, GATE_READY } from '../../generation/workflows/runs.ts';
import { gatesOfRuns, runInProject, type RunGateRow } from '../../generation/workflows/store.ts';

export interface GateDecided { workflowRunId: string; gateKey: string; status: 'passed' | 'failed'; runStatus: string }

/** A blocking gate QA may decide: still pending, or decided by an earlier QA run. */
const decidedByQa = (g: RunGateRow) => g.blocking === 1 && (g.status === 'pending' || g.qa_run_id !== null);

/** Workflow runs with a blocking gate QA may decide whose jobs have all completed, with the artifacts their jobs registered (by step). */
export async function gateCandidates(db: Db, projectId: string): Promise<Array<{ id: string; artifactIds: string[] }>> {
  const d = db.dialect;
  const rows = await db.all<{ id: string; artifact_ids: string | null }>(
    `SELECT r.id, (SELECT ${d.jsonArrayAgg('a.id', 'st.position, a.created_at, a.id')} FROM workflow_run_steps st JOIN media_artifacts a ON a.job_id = st.job_id
                    WHERE st.run_id = r.id) AS artifact_ids
       FROM workflow_runs r
      WHERE r.project_id = ? AND r.mode = 'queue' AND r.status IN (SELECT value FROM ${d.jsonValues('?')})
        AND EXISTS (SELECT 1 FROM workflow_run_gates g WHERE g.run_id = r.id AND g.blocking = 1 AND (g.status = 'pending' OR g.qa_run_id IS NOT NULL))
      ORDER BY r.created_at, r.id`, projectId, JSON.stringify(GATE_READY));
  return rows.map((r) => ({ id: r.id, artifactIds: JSON.parse(r.artifact_ids ?? '[]') as string[] }));
}

/** Call inside the QA run's transaction: `checked` = artifacts of the QA run, `failed` = those with a failed blocking check. */
export async function decideGatesAfterQa(ctx: Ctx, projectId: string, qaRunId: string, checked: Set<string>, failed: Set<string>): Promise<GateDecided[]> {
  const out: GateDecided[] = [];
  for (const c of await gateCandidates(ctx.db, projectId)) {
    if (c.artifactIds.length === 0 || !c.artifactIds.every((id) => checked.has(id))) continue;
    const failing = c.artifactIds.filter((id) => failed.has(id));
    const status = failing.length ? 'failed' : 'passed';
    const note = failing.length ? `QA run ${qaRunId}: blocking checks failed on ${failing.join(', ')}` : `QA run ${qaRunId}: no blocking check failed`;
    for (const gate of (await gatesOfRuns(ctx.db, [c.id])).filter((g) => decidedByQa(g) && g.status !== status)) {
      const run = (await runInProject(ctx.db, projectId, c.id))!;
      const after = await applyGateDecision(ctx, run, gate, status, note, qaRunId);
      out.push({ workflowRunId: c.id, gateKey: gate.gate_key, status, runStatus: after.run.status });
    }
  }
  return out;
}
