// The worker's claim: one atomic UPDATE ... RETURNING takes the next claimable jobs — queued, due,
// dependencies completed, connector ready and local (or a local compose job, which has none) — in
// priority then age order, and leases them. On PostgreSQL the picked rows are locked (FOR UPDATE SKIP
// LOCKED, db.dialect): two workers claiming at once take different jobs, and neither waits for the other.
// Manual runs (/run) take one named job the same way; reclaim returns expired leases to the queue.
// Both claims read, in their statement, what the job's call is made from (CallContext).
import { flatMapSeq } from '../../kernel/seq.ts';
import type { Db } from '../../db/db.ts';
import { perDialect, type Dialect } from '../../db/dialect.ts';
import { SPEC_COLUMNS, type SpecRow } from '../connectors/store.ts';
import type { JobRow, Rider } from './store.ts';

const CLAIMABLE = `j.status = 'queued' AND (j.run_after IS NULL OR j.run_after <= ?2)
  AND (j.depends_on IS NULL OR EXISTS (SELECT 1 FROM generation_jobs d WHERE d.id = j.depends_on AND d.status = 'completed'))
  AND (EXISTS (SELECT 1 FROM model_connectors c WHERE c.id = j.connector_id AND c.status = 'ready' AND c.cost_mode = 'local')
       OR (j.connector_id IS NULL AND j.kind = 'compose'))`;

/**
 * What a job's call is made from, read by the claim with the job (one statement, no read per job
 * after it): its connector's configuration (null without one: a compose job) and the names of its
 * organization and project (the production contract). A job runs with its connector as it was when it
 * was claimed; a change (or a pause) takes effect from the next claim.
 */
export interface CallContext { connector: SpecRow | null; organizationName: string; projectName: string }

/** A claimed job with its call's context. */
export interface ClaimedJob extends JobRow { call: CallContext }

/** The RETURNING columns of CallContext (`generation_jobs` is the claimed row); the connector's only when of the job's organization. */
const CALL_COLUMNS = perDialect((d: Dialect) => `
  (SELECT ${d.jsonObject(SPEC_COLUMNS.map((c) => [c, `c.${c}`]))} FROM model_connectors c
    WHERE c.id = generation_jobs.connector_id AND c.organization_id = generation_jobs.organization_id) AS call_connector,
  (SELECT o.name FROM organizations o WHERE o.id = generation_jobs.organization_id) AS call_organization,
  (SELECT p.name FROM projects p WHERE p.id = generation_jobs.project_id) AS call_project`);

interface CallColumns { call_connector: string | null; call_organization: string; call_project: string }

/**
 * The connectors last read by claims, by their JSON text (the same text is the same configuration):
 * a burst of jobs on one connector parses it once. Frozen, shared by those jobs.
 */
const parsedConnectors = new Map<string, SpecRow>();
const PARSED_CONNECTORS_MAX = 64;

function connectorOf(text: string): SpecRow {
  let row = parsedConnectors.get(text);
  if (row === undefined) {
    if (parsedConnectors.size >= PARSED_CONNECTORS_MAX) parsedConnectors.clear();
    row = Object.freeze(JSON.parse(text) as SpecRow);
    parsedConnectors.set(text, row);
  }
  return row;
}

function claimed({ call_connector: connector, call_organization: organizationName, call_project: projectName, ...job }: JobRow & CallColumns): ClaimedJob {
  return { ...job, call: { connector: connector === null ? null : connectorOf(connector), organizationName, projectName } };
}

const LEASE_SET = `status = 'running', attempt = attempt + 1, leased_by = ?1, leased_at = ?2, started_at = coalesce(started_at, ?2),
  attempt_started_at = ?2, updated_at = ?2, error = NULL`;

/**
 * The claim of up to `limit` jobs (parameters: worker id, now, organization id or null). The limit is
 * written into the SQL (one cached statement per value, 1..8): with a bound LIMIT SQLite plans the
 * ordered index scan several times slower. The picked ids are materialized once: PostgreSQL could
 * otherwise run a locking subquery again (its rows differ each time with SKIP LOCKED) and lease more
 * than `limit`. RETURNING has no order. On PostgreSQL the worker's connections plan it without bitmap
 * scans (workerPlans in db/postgres.ts): it must walk the claim index in order and stop at its LIMIT.
 * When the statistics say few rows are queued (a fresh table, or a burst into a table of mostly
 * finished jobs, which does not trigger an analyze), PostgreSQL would otherwise read every queued row
 * and sort them, for each claim.
 */
export const claimSql = (dialect: Dialect, limit: number) => `WITH ${picking(dialect, limit)} ${leasing(dialect)}`;

/** The claim's parts (parameters ?1 worker, ?2 now, ?3 organization): the CTE `picked`, and the UPDATE that leases its jobs. */
const picking = (dialect: Dialect, limit: number) => `picked AS MATERIALIZED (
       SELECT j.id FROM generation_jobs j WHERE ${CLAIMABLE} AND (j.organization_id = ?3 OR ?3 IS NULL)
        ORDER BY j.priority DESC, j.created_at, j.id LIMIT ${Math.max(1, Math.trunc(limit))}${dialect.skipLocked})`;
const leasing = (dialect: Dialect) => `UPDATE generation_jobs SET ${LEASE_SET}
      WHERE id IN (SELECT id FROM picked) AND status = 'queued'
      RETURNING *, ${CALL_COLUMNS(dialect)}`;

/** Leases up to `limit` claimable jobs (of one organization when given) to `workerId`. */
export async function claimJobs(db: Db, workerId: string, now: string, limit: number, organizationId: string | null = null): Promise<ClaimedJob[]> {
  if (limit <= 0) return [];
  return claimedRows(await db.all<JobRow & CallColumns>(claimSql(db.dialect, limit), workerId, now, organizationId));
}

const claimedRows = (rows: Array<JobRow & CallColumns>) => rows.map(claimed).sort(claimOrder);

/**
 * A claim made by another writing statement, for the worker's free slots: chat completions on
 * PostgreSQL carry it as their statement's last CTEs (completeWithoutMedia), so that settling jobs
 * and leasing the next cost one round trip. `taken` gets the leased jobs once the statement has
 * answered, as claimJobs would answer them.
 */
export interface ClaimRide { workerId: string; now: string; limit: number; taken(jobs: ClaimedJob[]): void }

/**
 * A ride as the rider of a one-statement completion (completeWithoutMedia, PostgreSQL): its CTEs
 * `picked` and `rider` (the leased jobs), parameters numbered after the statement's first `offset`.
 */
export function claimRider(ride: ClaimRide): Rider {
  return {
    ctes: (dialect, offset) => ({
      sql: `${picking(dialect, ride.limit)}, rider AS (${leasing(dialect)})`.replace(/\?(\d)/g, (_, d: string) => `?${Number(d) + offset}`),
      params: [ride.workerId, ride.now, null],
    }),
    rows: (rows) => { ride.taken(claimedRows(rows as unknown as Array<JobRow & CallColumns>)); },
  };
}

/** Priority then age order (what the claim picks first comes first). */
const claimOrder = (a: JobRow, b: JobRow) =>
  b.priority - a.priority || (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** True when some job is claimable now (a read, so that an idle poll takes no write lock). */
export async function anyClaimable(db: Db, now: string): Promise<boolean> {
  return await db.get(`SELECT 1 AS x FROM generation_jobs j WHERE ${CLAIMABLE.replaceAll('?2', '?1')} LIMIT 1`, now) !== undefined;
}

/** The earliest run_after among queued jobs waiting for their backoff, to wake up then. */
export async function nextRunAfter(db: Db, now: string): Promise<string | null> {
  return (await db.get<{ t: string | null }>("SELECT min(run_after) AS t FROM generation_jobs WHERE status = 'queued' AND run_after > ?", now))?.t ?? null;
}

/** Leases one named job for a manual run: queued (due or not) or failed (one more attempt). */
export async function claimForRun(db: Db, jobId: string, runner: string, now: string): Promise<ClaimedJob | null> {
  const row = await db.get<JobRow & CallColumns>(
    `UPDATE generation_jobs SET ${LEASE_SET}, run_after = NULL, finished_at = NULL, max_attempts = max(max_attempts, attempt + 1)
      WHERE id = ?3 AND status IN ('queued', 'failed') RETURNING *, ${CALL_COLUMNS(db.dialect)}`, runner, now, jobId);
  return row ? claimed(row) : null;
}

/**
 * Running jobs whose lease is older than `cutoff`: back to the queue, or failed when attempts are
 * exhausted. Answers the rows as they were leased (runner, attempt) with their new status.
 */
export async function reclaimExpired(db: Db, cutoff: string, now: string): Promise<JobRow[]> {
  const expired = await db.all<JobRow>("SELECT * FROM generation_jobs WHERE status = 'running' AND leased_at < ?", cutoff);
  return await flatMapSeq(expired, async (job) => {
    const after = await db.get<{ status: JobRow['status']; error: string }>(
      `UPDATE generation_jobs SET status = CASE WHEN attempt < max_attempts THEN 'queued' ELSE 'failed' END,
         error = 'lease expired: the runner stopped renewing it (crash or hang)', leased_by = NULL, leased_at = NULL, run_after = NULL,
         finished_at = CASE WHEN attempt < max_attempts THEN NULL ELSE ?2 END, updated_at = ?2
       WHERE id = ?1 AND status = 'running' AND leased_at = ?3 RETURNING status, error`, job.id, now, job.leased_at);
    return after ? [{ ...job, status: after.status, error: after.error }] : [];
  });
}

/** At shutdown: this runner's jobs (or just `jobId`) go back to the queue, their unfinished attempt forgotten. */
export function releaseLeases(db: Db, runner: string, now: string, jobId: string | null = null): Promise<JobRow[]> {
  return db.all<JobRow>(
    `UPDATE generation_jobs SET status = 'queued', attempt = attempt - 1, leased_by = NULL, leased_at = NULL, attempt_started_at = NULL,
       updated_at = ?2, started_at = CASE WHEN attempt = 1 THEN NULL ELSE started_at END
     WHERE status = 'running' AND leased_by = ?1 AND (id = ?3 OR ?3 IS NULL) RETURNING *`, runner, now, jobId);
}
