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

/** A scope's stored bytes at least as high as the truth, as of the rowids `av` (asset_versions) and `ma` (media_artifacts). */
interface BytesBound { bytes: number; av: number; ma: number }
/** Per connection: the last bound of each scope ('org' or 'org workspace'), replaced after each commit that used it. */
const bytesBounds = new WeakMap<Db, Map<string, BytesBound>>();

/**
 * Bytes of the files added since the bounds' rowids (each file counted whole: an upper bound of what
 * they add), and the current last rowids. Asset versions and artifacts are never deleted, so rowids
 * only grow (a bound is stored after its transaction commits). One statement of rowid ranges.
 */
const ADDED_SINCE = `
  SELECT (SELECT coalesce(max(rowid), 0) FROM asset_versions) AS av, (SELECT coalesce(max(rowid), 0) FROM media_artifacts) AS ma,
    CASE WHEN CAST(?3 AS BIGINT) IS NULL THEN NULL ELSE
      (SELECT coalesce(sum(file_size), 0) FROM asset_versions WHERE rowid > ?3 AND organization_id = ?1)
      + (SELECT coalesce(sum(file_size + coalesce(first_frame_size, 0) + coalesce(last_frame_size, 0)), 0)
           FROM media_artifacts WHERE rowid > ?4 AND organization_id = ?1) END AS org,
    CASE WHEN CAST(?5 AS BIGINT) IS NULL THEN NULL ELSE
      (SELECT coalesce(sum(file_size), 0) FROM asset_versions WHERE rowid > ?5 AND organization_id = ?1 AND workspace_id = ?2)
      + (SELECT coalesce(sum(file_size + coalesce(first_frame_size, 0) + coalesce(last_frame_size, 0)), 0)
           FROM media_artifacts WHERE rowid > ?6 AND organization_id = ?1 AND workspace_id = ?2) END AS ws`;

/** The stored bytes after this change when the caller counted them exactly (an upload's commit); workspace null: not counted. */
export interface StoredBytes { organization: number; workspace: number | null }

/**
 * After files are stored (an upload's commit, generated media registered; inside that transaction):
 * the storage warnings of the organization and of the workspace with its own storage quota, cheaply.
 * Nothing is counted when every threshold of the current quota values is recorded. A scope's use the
 * caller counted (`exact`) is taken as is; otherwise it is bounded from above by its last bound on
 * this connection plus the files added since (one statement of rowid ranges), and only a bound that
 * reaches the lowest pending threshold, or a scope without a bound yet, is counted exactly (every
 * distinct stored file). Thresholds are recorded from exact counts only.
 */
export async function storageQuotaWarnings(ctx: Ctx, organizationId: string, workspaceId: string, q: QuotaContext, exact?: StoredBytes): Promise<void> {
  const pending = await pendingWarnings(ctx.db, organizationId, workspaceId, 'storage', STORAGE_PERIOD, q);
  if (!pending.length) return;
  let known = bytesBounds.get(ctx.db);
  if (!known) bytesBounds.set(ctx.db, (known = new Map<string, BytesBound>()));
  const keyOf = (s: WarnScope) => (s.key === '' ? organizationId : `${organizationId} ${s.key}`);
  const exactOf = (s: WarnScope) => (exact ? (s.key === '' ? exact.organization : exact.workspace) : null);
  const boundOf = (s: WarnScope | undefined) => (s && exactOf(s) === null ? known.get(keyOf(s)) : undefined);
  const [o, w] = [boundOf(pending.find((s) => s.key === '')), boundOf(pending.find((s) => s.key !== ''))];
  const added = (await ctx.db.get<{ av: number; ma: number; org: number | null; ws: number | null }>(
    ADDED_SINCE, organizationId, workspaceId, o?.av ?? null, o?.ma ?? null, w?.av ?? null, w?.ma ?? null))!;
  for (const s of pending) {
    let bytes = exactOf(s);
    if (bytes === null) {
      const before = s.key === '' ? o : w;
      bytes = before ? before.bytes + ((s.key === '' ? added.org : added.ws) ?? 0) : Infinity;
      if (bytes * 100 >= s.quota * Math.min(...s.pending)) {
        bytes = s.key === '' ? await organizationStoredBytes(ctx.db, organizationId) : await workspaceStoredBytes(ctx.db, organizationId, workspaceId);
        await recordCrossings(ctx, organizationId, 'storage', STORAGE_PERIOD, s, bytes);
      }
    } else await recordCrossings(ctx, organizationId, 'storage', STORAGE_PERIOD, s, bytes);
    const next: BytesBound = { bytes, av: added.av, ma: added.ma };
    await ctx.afterCommit(() => { known.set(keyOf(s), next); });
  }
}
