// SQL of generation jobs and their attempts. Reads name the project (or the organization for the
// queue views); the worker's statements (claim, settle, reclaim) fence on the lease
// (status running, leased_by, attempt) so that a write from a lost lease changes nothing.
import type { Db, Param, Row, Statement } from '../../db/db.ts';
import type { Dialect } from '../../db/dialect.ts';
import { mapSeq } from '../../kernel/seq.ts';

export const JOB_STATUSES = ['queued', 'running', 'blocked', 'failed', 'completed', 'cancelled'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export interface JobRow {
  id: string; organization_id: string; workspace_id: string; project_id: string; shot_id: string | null;
  kind: string; status: JobStatus; connector_id: string | null; priority: number; attempt: number; max_attempts: number;
  depends_on: string | null; leased_by: string | null; leased_at: string | null; run_after: string | null;
  input: string; output: string | null; error: string | null; created_by: string | null; created_at: string; updated_at: string;
  started_at: string | null; finished_at: string | null; external_ref: string | null; attempt_started_at: string | null;
  episode_id: string | null;
  /** The workflow run whose step made the job, or null (the trigger that follows a run's jobs skips the others). */
  workflow_run_id: string | null;
}

export interface AttemptRow {
  job_id: string; attempt: number; project_id: string; mode: 'worker' | 'run'; runner: string; started_at: string;
  finished_at: string | null; outcome: 'running' | 'completed' | 'retry' | 'failed' | 'reclaimed' | 'cancelled';
  error: string | null; latency_ms: number | null;
}

export async function insertJob(db: Db, j: JobRow): Promise<void> {
  await db.run(
    `INSERT INTO generation_jobs (id, organization_id, workspace_id, project_id, shot_id, kind, status, connector_id, priority, attempt,
       max_attempts, depends_on, leased_by, leased_at, run_after, input, output, error, created_by, created_at, updated_at, started_at,
       finished_at, external_ref, attempt_started_at, episode_id, workflow_run_id)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    j.id, j.organization_id, j.workspace_id, j.project_id, j.shot_id, j.kind, j.status, j.connector_id, j.priority, j.attempt,
    j.max_attempts, j.depends_on, j.leased_by, j.leased_at, j.run_after, j.input, j.output, j.error, j.created_by, j.created_at,
    j.updated_at, j.started_at, j.finished_at, j.external_ref, j.attempt_started_at, j.episode_id, j.workflow_run_id,
  );
}

export const jobInProject = (db: Db, projectId: string, id: string) =>
  db.get<JobRow>('SELECT * FROM generation_jobs WHERE project_id = ? AND id = ?', projectId, id);
export const jobInOrganization = (db: Db, organizationId: string, id: string) =>
  db.get<JobRow>('SELECT * FROM generation_jobs WHERE organization_id = ? AND id = ?', organizationId, id);
export const jobById = (db: Db, id: string) => db.get<JobRow>('SELECT * FROM generation_jobs WHERE id = ?', id);

/**
 * A job's status as last committed, its row locked against change until the transaction ends (on
 * PostgreSQL; SQLite's writers take turns): for a decision a later write rests on (jobs/service.ts).
 */
export const dependencyStatus = async (db: Db, id: string): Promise<JobRow['status'] | undefined> =>
  (await db.get<{ status: JobRow['status'] }>(`SELECT status FROM generation_jobs WHERE id = ?${db.dialect.forShare}`, id))?.status;

export interface JobFilter {
  status: string | null; kind: string | null; shotId: string | null; connectorId: string | null; limit: number; offset: number;
}

export async function jobsOfProject(db: Db, projectId: string, f: JobFilter): Promise<{ rows: JobRow[]; total: number }> {
  const where = `project_id = ?1 AND (status = ?2 OR ?2 IS NULL) AND (kind = ?3 OR ?3 IS NULL) AND (shot_id = ?4 OR ?4 IS NULL)
    AND (connector_id = ?5 OR ?5 IS NULL)`;
  const args = [projectId, f.status, f.kind, f.shotId, f.connectorId] as const;
  const total = (await db.get<{ n: number }>(`SELECT count(*) AS n FROM generation_jobs WHERE ${where}`, ...args))!.n;
  const rows = await db.all<JobRow>(`SELECT * FROM generation_jobs WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ?6 OFFSET ?7`,
    ...args, f.limit, f.offset);
  return { rows, total };
}

/** Finished attempts, then the running one (from the job row). */
export async function attemptsOf(db: Db, job: JobRow): Promise<AttemptRow[]> {
  const rows = await db.all<AttemptRow>('SELECT * FROM job_attempts WHERE project_id = ? AND job_id = ? ORDER BY attempt', job.project_id, job.id);
  if (job.status === 'running' && job.leased_by) {
    rows.push({
      job_id: job.id, attempt: job.attempt, project_id: job.project_id, mode: modeOf(job.leased_by), runner: job.leased_by,
      started_at: job.attempt_started_at ?? job.leased_at!, finished_at: null, outcome: 'running', error: null, latency_ms: null,
    });
  }
  return rows;
}

const modeOf = (runner: string): AttemptRow['mode'] => (runner.startsWith('run:') ? 'run' : 'worker');

type EndedOutcome = Exclude<AttemptRow['outcome'], 'running'>;

const ATTEMPT_COLUMNS = '(job_id, attempt, project_id, mode, runner, started_at, finished_at, outcome, error, latency_ms)';
/** The integers are cast: as `INSERT ... SELECT` (completeWithoutMedia) PostgreSQL would take untyped parameters for text. */
const ATTEMPT_VALUES = '?, CAST(? AS bigint), ?, ?, ?, ?, ?, ?, ?, CAST(? AS bigint)';

/** The values of the row of an attempt that ended; `job` is the row as leased (runner, attempt, start). */
function attemptValues(job: JobRow, outcome: EndedOutcome, at: string, error: string | null): Param[] {
  const started = job.attempt_started_at ?? job.leased_at ?? at;
  return [
    job.id, job.attempt, job.project_id, modeOf(job.leased_by ?? 'worker'), job.leased_by ?? 'unknown', started, at, outcome, error,
    Math.max(0, Date.parse(at) - Date.parse(started)),
  ];
}

/** Writes the row of an attempt that ended; `job` is the row as leased (runner, attempt, start). */
export async function recordAttempt(db: Db, job: JobRow, outcome: EndedOutcome, at: string, error: string | null): Promise<void> {
  await db.run(`INSERT INTO job_attempts ${ATTEMPT_COLUMNS} VALUES (${ATTEMPT_VALUES}) ON CONFLICT (job_id, attempt) DO NOTHING`,
    ...attemptValues(job, outcome, at, error));
}

/** The lease a runner holds: a settle with another lease changes nothing. */
export interface Lease { jobId: string; leasedBy: string; attempt: number }

const FENCE = "id = ? AND status = 'running' AND leased_by = ? AND attempt = ?";
const fence = (l: Lease) => [l.jobId, l.leasedBy, l.attempt] as const;

const completion = (l: Lease, output: string, at: string): Statement => ({
  sql: `UPDATE generation_jobs SET status = 'completed', output = ?, error = NULL, leased_by = NULL, leased_at = NULL, run_after = NULL,
       finished_at = ?, updated_at = ? WHERE ${FENCE}`,
  params: [output, at, at, ...fence(l)],
});

export async function completeLeased(db: Db, l: Lease, output: string, at: string): Promise<boolean> {
  const s = completion(l, output, at);
  return (await db.run(s.sql, ...s.params)).changes === 1;
}

/**
 * What rides on a one-statement completion: the worker's claim for its free slots (claimRider in
 * claim.ts), made whether or not the leases were lost (the slots are free either way).
 */
export interface Rider {
  /** Its CTEs, the last named `rider`, whose rows the statement answers (PostgreSQL); parameters numbered after the first `offset`. */
  ctes(dialect: Dialect, offset: number): Statement;
  /** The rows of `rider`, once the completion's statement has answered. */
  rows(rows: Row[]): void;
}

/** A chat answer to store: the job as leased, its lease, the output's JSON text and the time. */
export interface Completion { job: JobRow; lease: Lease; output: string; at: string }

/** How completions set their jobs' search documents: one job's statement, or a statement's part for the ids of the relation `ids`. */
export interface DocumentWrites { one(id: string): Statement; of(ids: string): Statement }

/**
 * Completions that register no media (chat answers), each whole: the job completed under its lease,
 * the attempt's row, the search document's status and the children released; and what rides on
 * them. On PostgreSQL one statement for all of them (data-modifying CTEs over the completions given
 * as one JSON parameter, each part guarded by the completions that held; they write different rows,
 * and the trigger that follows a workflow run fires at its end, seeing all of them), so it needs no
 * transaction of its own; on SQLite the same statements in turn for each, in the caller's
 * transaction, and no rider. For each completion, in order: null when its lease was lost (nothing
 * written for it), else the released children's ids.
 */
export async function completeWithoutMedia(
  db: Db, items: readonly Completion[], docs: DocumentWrites, rider: Rider | null = null,
): Promise<Array<string[] | null>> {
  if (!db.dialect.writingCtes) {
    if (rider) throw new Error('a claim rides on a completion only on PostgreSQL');
    return await mapSeq(items, async ({ job, lease, output, at }) => {
      const done = completion(lease, output, at);
      if ((await db.run(done.sql, ...done.params)).changes !== 1) return null;
      await recordAttempt(db, job, 'completed', at, null);
      const doc = docs.one(job.id);
      await db.run(doc.sql, ...doc.params);
      return await unblockChildren(db, job.id, at);
    });
  }
  const input = JSON.stringify(items.map(({ job, lease, output, at }) => {
    const [, attempt, projectId, mode, runner, started, , , , latency] = attemptValues(job, 'completed', at, null);
    return { id: lease.jobId, leased_by: lease.leasedBy, attempt: lease.attempt, output, at, a_attempt: attempt, a_project: projectId, a_mode: mode, a_runner: runner, a_started: started, a_latency: latency };
  }));
  const doc = docs.of('done'); // its placeholders follow ?1, numbered as SQLite numbers them
  const params = [input, ...doc.params];
  const ride = rider?.ctes(db.dialect, params.length);
  // The LIMIT, written into the SQL, tells the planner how many completions there are (a generic
  // plan would otherwise count on json_to_recordset's 100 rows).
  const [row, ...more] = await db.all<{ settle_done: string | null; settle_released: string | null }>(
    `WITH input AS MATERIALIZED (
         SELECT * FROM json_to_recordset(CAST(?1 AS json)) AS x(id text, leased_by text, attempt bigint, output text, at text,
           a_attempt bigint, a_project text, a_mode text, a_runner text, a_started text, a_latency bigint) LIMIT ${items.length}),
       done AS (UPDATE generation_jobs g SET status = 'completed', output = x.output, error = NULL, leased_by = NULL, leased_at = NULL,
           run_after = NULL, finished_at = x.at, updated_at = x.at
         FROM input x WHERE g.id = x.id AND g.status = 'running' AND g.leased_by = x.leased_by AND g.attempt = x.attempt RETURNING g.id),
       attempt AS (INSERT INTO job_attempts ${ATTEMPT_COLUMNS}
         SELECT x.id, x.a_attempt, x.a_project, x.a_mode, x.a_runner, x.a_started, x.at, 'completed', NULL, x.a_latency
           FROM input x WHERE x.id IN (SELECT id FROM done) ON CONFLICT (job_id, attempt) DO NOTHING),
       doc AS (${doc.sql}),
       released AS (UPDATE generation_jobs c SET status = 'queued', updated_at = x.at FROM input x
         WHERE c.depends_on = x.id AND c.status = 'blocked' AND x.id IN (SELECT id FROM done) RETURNING c.id, c.depends_on)${ride ? `, ${ride.sql}` : ''}
     SELECT (SELECT json_agg(id) FROM done) AS settle_done, (SELECT json_agg(json_build_array(depends_on, id)) FROM released) AS settle_released${ride ? ', r.*' : ''}
       FROM (SELECT 1 AS one) one${ride ? ' LEFT JOIN rider r ON true' : ''}`,
    ...params, ...(ride?.params ?? []));
  rider?.rows([row, ...more].map(({ settle_done: _d, settle_released: _r, ...rest }) => rest as Row).filter((r) => r.id != null));
  const done = new Set(row.settle_done === null ? [] : JSON.parse(row.settle_done) as string[]);
  const released = row.settle_released === null ? [] : JSON.parse(row.settle_released) as Array<[string, string]>;
  return items.map(({ lease }) => (done.has(lease.jobId) ? released.filter(([parent]) => parent === lease.jobId).map(([, id]) => id) : null));
}

/** Back to the queue (run_after set) or failed, by the caller's decision. */
export async function failLeased(db: Db, l: Lease, status: 'queued' | 'failed', error: string, runAfter: string | null, at: string): Promise<boolean> {
  return (await db.run(
    `UPDATE generation_jobs SET status = ?, error = ?, run_after = ?, leased_by = NULL, leased_at = NULL, updated_at = ?,
       finished_at = CASE WHEN ? = 'failed' THEN ? ELSE NULL END WHERE ${FENCE}`,
    status, error, runAfter, at, status, at, ...fence(l))).changes === 1;
}

export async function renewLease(db: Db, l: Lease, at: string): Promise<boolean> {
  return (await db.run(`UPDATE generation_jobs SET leased_at = ? WHERE ${FENCE}`, at, ...fence(l))).changes === 1;
}

export async function setExternalRef(db: Db, l: Lease, ref: string): Promise<boolean> {
  return (await db.run(`UPDATE generation_jobs SET external_ref = ? WHERE ${FENCE}`, ref, ...fence(l))).changes === 1;
}

/** Every job downstream of one (children, grandchildren, ...), for blocking on a failure. */
export async function descendantsOf(db: Db, jobId: string): Promise<string[]> {
  return (await db.all<{ id: string }>(
    `WITH RECURSIVE d(id) AS (SELECT id FROM generation_jobs WHERE depends_on = ?1
       UNION SELECT j.id FROM generation_jobs j JOIN d ON j.depends_on = d.id)
     SELECT id FROM d`, jobId)).map((r) => r.id);
}

/** Blocks the waiting jobs downstream of a failed or cancelled job. */
export async function blockDescendants(db: Db, jobId: string, at: string): Promise<string[]> {
  const ids = await descendantsOf(db, jobId);
  const blocked: string[] = [];
  for (const id of ids) {
    if ((await db.run("UPDATE generation_jobs SET status = 'blocked', updated_at = ? WHERE id = ? AND status = 'queued'", at, id)).changes) blocked.push(id);
  }
  return blocked;
}

const unblocking = (jobId: string, at: string): Statement =>
  ({ sql: "UPDATE generation_jobs SET status = 'queued', updated_at = ? WHERE depends_on = ? AND status = 'blocked'", params: [at, jobId] });

/** A completed job releases its blocked children (their own children wait for them). */
export async function unblockChildren(db: Db, jobId: string, at: string): Promise<string[]> {
  const s = unblocking(jobId, at);
  return (await db.all<{ id: string }>(`${s.sql} RETURNING id`, ...s.params)).map((r) => r.id);
}

/** Sets the priority of a job still in the queue (queued, blocked or running); false when it finished meanwhile. */
export async function setPriority(db: Db, projectId: string, id: string, priority: number, at: string): Promise<boolean> {
  return (await db.run(
    "UPDATE generation_jobs SET priority = ?, updated_at = ? WHERE project_id = ? AND id = ? AND status IN ('queued', 'blocked', 'running')",
    priority, at, projectId, id)).changes === 1;
}

/** Cancels a job that is not finished; returns the row before the change, or null. */
export async function cancelJob(db: Db, id: string, error: string, at: string): Promise<JobRow | null> {
  const before = await db.get<JobRow>('SELECT * FROM generation_jobs WHERE id = ?', id);
  if (!before) return null;
  return await db.get<JobRow>(
    `UPDATE generation_jobs SET status = 'cancelled', error = ?, leased_by = NULL, leased_at = NULL, run_after = NULL, finished_at = ?,
       updated_at = ? WHERE id = ? AND status IN ('queued', 'running', 'blocked', 'failed') RETURNING id`, error, at, at, id) ? before : null;
}

/** Puts a failed, cancelled or blocked job back in the queue with `extra` more attempts. */
export async function requeueJob(db: Db, id: string, extra: number, blocked: boolean, at: string): Promise<JobRow | null> {
  return await db.get<JobRow>(
    `UPDATE generation_jobs SET status = ?, error = NULL, run_after = NULL, finished_at = NULL, external_ref = NULL,
       max_attempts = max(max_attempts, attempt + ?), updated_at = ? WHERE id = ? AND status IN ('failed', 'cancelled') RETURNING *`,
    blocked ? 'blocked' : 'queued', extra, at, id) ?? null;
}
