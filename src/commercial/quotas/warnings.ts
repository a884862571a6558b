// Quota warnings: recorded once per scope (the organization, or a workspace with its own quota),
// metric, period (clips: the local month; storage: '', none), threshold (quotaWarningPercent and 100)
// and quota value in quota_warnings; only a new row notifies the organization's owners and admins
// (usage_quota). Called in the transaction that used the quota: a job's settle (clips, and the
// storage of its new media) and an upload's commit (storage).
import type { Ctx } from '../../directory/context.ts';
import type { Db } from '../../db/db.ts';
import { notify } from '../../platform/notifications/service.ts';
import { clipEventsOf, organizationStoredBytes, workspaceStoredBytes } from '../meters.ts';
import { monthWindow } from '../../kernel/periods.ts';
import { consoleLinks } from '../../kernel/links.ts';
import { gbToBytes, type QuotaContext } from './service.ts';

type Metric = 'clips' | 'storage';
/** A scope warned about: the organization (key '') or a workspace with its own quota; `pending`: thresholds not yet recorded. */
interface WarnScope { key: string; name: string | null; quota: number; pending: number[] }

/** Storage is not counted per period: a scope is warned once per threshold and quota value. */
const STORAGE_PERIOD = '';

/** The thresholds (percent) a warning is recorded at: quotaWarningPercent (when below 100) and 100. */
function thresholdsOf(percent: number): number[] {
  return percent > 0 && percent < 100 ? [percent, 100] : [100];
}

/** The scopes with a threshold not yet recorded in `period` for their current quota value, with those thresholds. */
async function pendingScopes(db: Db, organizationId: string, metric: Metric, period: string, thresholds: number[], scopes: WarnScope[]): Promise<WarnScope[]> {
  const ws = scopes[1];
  const done = new Set((await db.all<{ w: string; t: number }>(
    `SELECT workspace_id AS w, threshold AS t FROM quota_warnings WHERE organization_id = ?1 AND metric = ?2 AND period = ?3
        AND ((workspace_id = '' AND quota = ?4) OR (workspace_id = ?5 AND quota = ?6))`,
    organizationId, metric, period, scopes[0].quota, ws?.key ?? '', ws?.quota ?? -1)).map((r) => `${r.w}:${r.t}`));
  return scopes.map((s) => ({ ...s, pending: thresholds.filter((t) => !done.has(`${s.key}:${Math.floor(t)}`)) })).filter((s) => s.pending.length > 0);
}

/** Records (and notifies) each pending threshold that `used` reached; a row already there (same quota value) changes nothing. */
async function recordCrossings(ctx: Ctx, organizationId: string, metric: Metric, period: string, s: WarnScope, used: number): Promise<void> {
  for (const t of s.pending) {
    if (used <= 0 || used * 100 < s.quota * t) continue;
    const threshold = Math.floor(t);
    const fresh = (await ctx.db.run(
      `INSERT INTO quota_warnings (organization_id, workspace_id, metric, period, threshold, used, quota, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
      organizationId, s.key, metric, period, threshold, used, s.quota, ctx.now().toISOString())).changes > 0;
    if (!fresh) continue;
    const what = metric === 'clips' ? `${used} of ${s.quota} clips this month` : `${used} of ${s.quota} bytes stored`;
    const whose = s.name === null ? 'The organization\'s' : `Workspace ${s.name}'s own`;
    await notify(ctx, {
      category: 'usage_quota', type: threshold >= 100 ? 'quota.reached' : 'quota.warning', organizationId,
      subject: `${whose} ${metric === 'clips' ? 'monthly clip' : 'storage'} quota ${threshold >= 100 ? 'reached' : `at ${threshold} %`}: ${what}`,
      body: `${metric === 'clips' ? `Period ${period}; t` : 'T'}hreshold ${threshold} % of a quota of ${s.quota}${metric === 'clips' ? ' clips' : ' bytes'}.`,
      link: consoleLinks.commercial({ organizationId }),
    });
  }
}

/** The organization's scope and the workspace's (when it has its own quota of `metric`), with the pending thresholds of `period`. */
async function pendingWarnings(db: Db, organizationId: string, workspaceId: string, metric: Metric, period: string, q: QuotaContext): Promise<WarnScope[]> {
  const { account, ownQuota: own } = q;
  if (!account) return [];
  const scopes: WarnScope[] = [{
    key: '', name: null, quota: metric === 'clips' ? account.monthly_clip_quota : gbToBytes(account.storage_gb), pending: [],
  }];
  const ownLimit = metric === 'clips' ? own?.monthly_clip_quota : own?.storage_gb;
  if (own && ownLimit != null) {
    scopes.push({ key: workspaceId, name: own.workspace_name, quota: metric === 'clips' ? ownLimit : gbToBytes(ownLimit), pending: [] });
  }
  return await pendingScopes(db, organizationId, metric, period, thresholdsOf(account.quota_warning_percent), scopes);
}

/**
 * After a clip usage event (inside the settling transaction): records and notifies the thresholds the
 * organization's and the workspace's own monthly clip quota reached. At most one statement of two
 * index range counts, none when every threshold of the month (for the current quota values) is recorded.
 */
export async function clipQuotaWarnings(ctx: Ctx, organizationId: string, workspaceId: string, q: QuotaContext): Promise<void> {
  const m = monthWindow(q.timeZone, ctx.now());
  const pending = await pendingWarnings(ctx.db, organizationId, workspaceId, 'clips', m.label, q);
  if (!pending.length) return;
  // Each count walks its index range only up to the scope's quota (a threshold not yet recorded means
  // the count was below the quota before this event), 0 for a scope not pending.
  const limit = (org: boolean) => pending.find((s) => (s.key === '') === org)?.quota ?? 0;
  const used = (await ctx.db.get<{ org: number; ws: number }>(
    `SELECT (SELECT count(*) FROM (SELECT 1 ${clipEventsOf(ctx.db.dialect)} LIMIT ?5) AS e) AS org,
            (SELECT count(*) FROM (SELECT 1 ${clipEventsOf(ctx.db.dialect, '?4')} LIMIT ?6) AS e) AS ws`,
    organizationId, m.start, m.end, workspaceId, Math.max(0, limit(true)), Math.max(0, limit(false))))!;
  for (const s of pending) await recordCrossings(ctx, organizationId, 'clips', m.label, s, s.key === '' ? used.org : used.ws);
}

/**
 * A scope's stored bytes counted exactly (`bytes`) and its storage_added counter read before that
 * count (`added`): its stored bytes later are at most bytes + (the counter then - added).
 */
interface BytesBound { bytes: number; added: number }
/** Per database handle (a process's): the last bound of each scope ('org' or 'org workspace'), kept once its transaction committed. */
const bytesBounds = new WeakMap<Db, Map<string, BytesBound>>();

/**
 * The storage_added counters of the organization (all its workspaces) and of the workspace: the bytes
 * of every file ever registered there, each counted whole, kept by triggers in the registering
 * transaction (schema.sql). They only grow, and a count that sees a file also sees its bytes added
 * (same transaction): read BEFORE an exact count, the growth since bounds what that count missed, on
 * SQLite (writers take turns) as on PostgreSQL (files committed between the two reads are counted
 * twice, never missed). Two primary-key ranges.
 */
const ADDED = `
  SELECT (SELECT coalesce(sum(bytes), 0) FROM storage_added WHERE organization_id = ?1) AS org,
         (SELECT coalesce(sum(bytes), 0) FROM storage_added WHERE organization_id = ?1 AND workspace_id = ?2) AS ws`;

/** The stored bytes after this change when the caller counted them exactly (an upload's commit); workspace null: not counted. */
export interface StoredBytes { organization: number; workspace: number | null }

/**
 * After files are stored (an upload's commit, generated media registered; inside that transaction):
 * the storage warnings of the organization and of the workspace with its own storage quota, cheaply.
 * Nothing is counted when every threshold of the current quota values is recorded. A scope's use the
 * caller counted (`exact`) is taken as is; otherwise it is bounded from above by its last bound in
 * this process plus the bytes added since (storage_added, one statement), and only a bound that
 * reaches the lowest pending threshold, or a scope without a bound yet, is counted exactly (every
 * distinct stored file), which makes its next bound. Thresholds are recorded from exact counts only.
 */
export async function storageQuotaWarnings(ctx: Ctx, organizationId: string, workspaceId: string, q: QuotaContext, exact?: StoredBytes): Promise<void> {
  const pending = await pendingWarnings(ctx.db, organizationId, workspaceId, 'storage', STORAGE_PERIOD, q);
  if (!pending.length) return;
  let known = bytesBounds.get(ctx.db);
  if (!known) bytesBounds.set(ctx.db, (known = new Map<string, BytesBound>()));
  const keyOf = (s: WarnScope) => (s.key === '' ? organizationId : `${organizationId} ${s.key}`);
  const exactOf = (s: WarnScope) => (exact ? (s.key === '' ? exact.organization : exact.workspace) : null);
  // Read before any exact count below (see ADDED). An exact count from the caller was made before
  // this read, so it makes no bound: the scope's last one stays (it counts this change as added).
  const added = pending.some((s) => exactOf(s) === null)
    ? (await ctx.db.get<{ org: number; ws: number }>(ADDED, organizationId, workspaceId))!
    : null;
  for (const s of pending) {
    const given = exactOf(s);
    if (given !== null) {
      await recordCrossings(ctx, organizationId, 'storage', STORAGE_PERIOD, s, given);
      continue;
    }
    const now = s.key === '' ? added!.org : added!.ws;
    const before = known.get(keyOf(s));
    const bound = before ? before.bytes + (now - before.added) : Infinity;
    if (bound * 100 < s.quota * Math.min(...s.pending)) continue;
    const bytes = s.key === '' ? await organizationStoredBytes(ctx.db, organizationId) : await workspaceStoredBytes(ctx.db, organizationId, workspaceId);
    await recordCrossings(ctx, organizationId, 'storage', STORAGE_PERIOD, s, bytes);
    const next: BytesBound = { bytes, added: now };
    await ctx.afterCommit(() => { known.set(keyOf(s), next); });
  }
}
