// Workspace quotas, cost centers and quota warnings. A workspace's own limits (monthly clips, storage
// GiB; null: only the organization's plan applies) sit within the plan and above what the workspace
// already uses; they are enforced where usage happens (video job creation in jobs/service.ts, uploads in
// assets/service.ts). Clips count per local calendar month of the organization's time zone; storage is
// each distinct stored file of the workspace counted once. A quota warning is recorded once per scope
// (organization or workspace), metric, period, threshold and quota value (warnings.ts).
import type { Ctx } from '../../directory/context.ts';
import type { Db } from '../../db/db.ts';
import { lockClause, type RowRead } from '../../db/dialect.ts';
import { AppError, conflict, notFound, validationFailed } from '../../kernel/errors.ts';
import { record } from '../../platform/audit/service.ts';
import { clipEventsOf, storedBytesByWorkspace, workspaceStoredBytes } from '../meters.ts';
import { organizationById } from '../../directory/tenancy/store.ts';
import { billingAccountOf, type BillingAccountRow } from '../../directory/plan/account.ts';
import { formatAmount, formatE4Amount, parseAmount, roundHalfUp } from '../../kernel/money.ts';
import { monthWindow, periodWindow, type PeriodWindow } from '../../kernel/periods.ts';
import type { Out } from '../../kernel/view.ts';
import type { CostCenterUsageView as CostCenterUsage, CostCenterView as CostCenter, QuotaWarningView as QuotaWarning, WorkspaceQuotaView as WorkspaceQuota } from '../views.ts';

export const GIB = 1024 ** 3;
/** A quota of `gb` GiB in bytes (whole bytes, rounded down). */
export const gbToBytes = (gb: number): number => Math.floor(gb * GIB);

// ---- store -------------------------------------------------------------------------------------

export interface QuotaRow {
  id: string; organization_id: string; workspace_id: string; workspace_name: string;
  monthly_clip_quota: number | null; storage_gb: number | null; created_at: string; updated_at: string;
}
export interface CostCenterRow {
  id: string; organization_id: string; workspace_id: string | null; code: string; name: string;
  budget_minor: number | null; created_at: string; updated_at: string;
}

/** The organization's cost centers, by code (unique per organization). */
export const costCentersOf = (db: Db, organizationId: string) =>
  db.all<CostCenterRow>('SELECT * FROM cost_centers WHERE organization_id = ? ORDER BY code, id', organizationId);

const QUOTA_SELECT = `SELECT q.*, w.name AS workspace_name FROM workspace_quotas q JOIN workspaces w ON w.id = q.workspace_id
  WHERE q.organization_id = ?`;

const timeZoneOf = async (db: Db, organizationId: string): Promise<string> => (await organizationById(db, organizationId))?.time_zone ?? 'UTC';

/** The organization's local calendar month of `now` (clip quotas and their warnings). */
export const organizationMonth = async (db: Db, organizationId: string, now: Date): Promise<PeriodWindow> => monthWindow(await timeZoneOf(db, organizationId), now);

/** The organization's current billing period (the account's cycle; cost centers' spent). */
const billingWindow = async (db: Db, organizationId: string, now: Date): Promise<PeriodWindow> =>
  periodWindow((await billingAccountOf(db, organizationId))?.billing_cycle ?? 'monthly', await timeZoneOf(db, organizationId), now);

/** A quota row; `read` { forUpdate } locks the quota's row only (src/db/dialect.ts RowRead), not its workspace's. */
const quotaRow = (db: Db, organizationId: string, quotaId: string, read?: RowRead) =>
  db.get<QuotaRow>(`${QUOTA_SELECT} AND q.id = ?${lockClause(db, read, 'q')}`, organizationId, quotaId);
/** The workspace's own quota row (its limits null: none), or undefined. */
export const quotaOfWorkspace = (db: Db, organizationId: string, workspaceId: string) =>
  db.get<QuotaRow>(`${QUOTA_SELECT} AND q.workspace_id = ?`, organizationId, workspaceId);

/** What the quota checks and warnings of one workspace read, loaded once per transaction (an upload's commit, a job's settle). */
export interface QuotaContext { account: BillingAccountRow | undefined; timeZone: string; ownQuota: QuotaRow | undefined }

export const quotaContextOf = async (db: Db, organizationId: string, workspaceId: string): Promise<QuotaContext> => ({
  account: await billingAccountOf(db, organizationId), timeZone: await timeZoneOf(db, organizationId), ownQuota: await quotaOfWorkspace(db, organizationId, workspaceId),
});

/** Clip usage events of one workspace in [start, end) (recorded use). */
export const workspaceClips = async (db: Db, organizationId: string, workspaceId: string, start: string, end: string): Promise<number> =>
  (await db.get<{ n: number }>(`SELECT count(*) AS n ${clipEventsOf(db.dialect, '?4')}`, organizationId, start, end, workspaceId))!.n;

const workspaceHasFile = async (db: Db, organizationId: string, workspaceId: string, storagePath: string): Promise<boolean> =>
  await db.get('SELECT 1 FROM asset_versions WHERE organization_id = ? AND storage_path = ? AND workspace_id = ? LIMIT 1',
    organizationId, storagePath, workspaceId) !== undefined;

/** The size of the largest asset file the organization (or, given, its workspace) stores; 0 without one. */
export const largestAssetFile = async (db: Db, organizationId: string, workspaceId: string | null): Promise<number> =>
  (await db.get<{ n: number }>('SELECT coalesce(max(file_size), 0) AS n FROM asset_versions WHERE organization_id = ?1 AND (workspace_id = ?2 OR ?2 IS NULL)',
    organizationId, workspaceId))!.n;

/** Whether the organization (or, given, its workspace) stores an asset file of exactly `size` bytes. */
export const storesAssetFileOfSize = async (db: Db, organizationId: string, workspaceId: string | null, size: number): Promise<boolean> =>
  await db.get('SELECT 1 FROM asset_versions WHERE organization_id = ?1 AND (workspace_id = ?2 OR ?2 IS NULL) AND file_size = ?3 LIMIT 1',
    organizationId, workspaceId, size) !== undefined;

const costCenterRow = (db: Db, organizationId: string, id: string, read?: RowRead) =>
  db.get<CostCenterRow>(`SELECT * FROM cost_centers WHERE organization_id = ? AND id = ?${lockClause(db, read)}`, organizationId, id);

// ---- views (commercial view and export) --------------------------------------------------------

export type WorkspaceQuotaView = Out<typeof WorkspaceQuota>;

const presentQuota = (q: QuotaRow, usedClips: number, usedStorageBytes: number): WorkspaceQuotaView => ({
  id: q.id, workspaceId: q.workspace_id, workspaceName: q.workspace_name, monthlyClipQuota: q.monthly_clip_quota,
  storageGb: q.storage_gb, usedClips, usedStorageBytes,
});

/** Every workspace's quota with this month's clips and its stored bytes, by workspace name. */
export async function workspaceQuotasView(db: Db, organizationId: string, now: Date): Promise<WorkspaceQuotaView[]> {
  const m = await organizationMonth(db, organizationId, now);
  const bytes = await storedBytesByWorkspace(db, organizationId);
  // One index range count per workspace (a correlated subquery), not a scan of the month's clips.
  return (await db.all<QuotaRow & { clips: number }>(
    `SELECT q.*, w.name AS workspace_name, (SELECT count(*) ${clipEventsOf(db.dialect, 'q.workspace_id')}) AS clips
       FROM workspace_quotas q JOIN workspaces w ON w.id = q.workspace_id WHERE q.organization_id = ?1 ORDER BY w.name, q.id`,
    organizationId, m.start, m.end))
    .map(({ clips, ...q }) => presentQuota(q, clips, bytes.get(q.workspace_id) ?? 0));
}

export type CostCenterView = Out<typeof CostCenter>;

const ratio = (spentE4: bigint, budgetMinor: number | null): number | null =>
  budgetMinor === null ? null : budgetMinor > 0 ? Number(roundHalfUp(spentE4 * 1_000_000n, BigInt(budgetMinor) * 10_000n)) / 1e6 : (spentE4 > 0n ? 1 : 0);

function presentCostCenter(c: CostCenterRow, currency: string, spentE4: bigint, events: number): CostCenterView {
  return {
    id: c.id, code: c.code, name: c.name, workspaceId: c.workspace_id,
    budget: c.budget_minor === null ? null : formatAmount(c.budget_minor, currency), currency,
    spent: formatE4Amount(spentE4, currency), events, budgetUsedRatio: ratio(spentE4, c.budget_minor),
  };
}

// Money sums are read as bigint (Db.allBig): they may pass 2^53.
const spentByCostCenter = async (db: Db, organizationId: string, start: string, end: string) =>
  new Map((await db.allBig<{ c: string; e4: bigint; n: bigint }>(
    `SELECT cost_center_id AS c, sum(estimated_cost_e4) AS e4, count(*) AS n FROM usage_events
      WHERE organization_id = ? AND created_at >= ? AND created_at < ? AND cost_center_id IS NOT NULL GROUP BY cost_center_id`,
    organizationId, start, end)).map((r) => [r.c, { e4: r.e4, n: Number(r.n) }]));

/** Cost centers with this billing period's estimated cost and event count, by code. */
export async function costCentersView(db: Db, organizationId: string, now: Date): Promise<CostCenterView[]> {
  const currency = (await billingAccountOf(db, organizationId))?.currency ?? 'USD';
  const p = await billingWindow(db, organizationId, now);
  const spent = await spentByCostCenter(db, organizationId, p.start, p.end);
  return (await costCentersOf(db, organizationId))
    .map((c) => presentCostCenter(c, currency, spent.get(c.id)?.e4 ?? 0n, spent.get(c.id)?.n ?? 0));
}

export type CostCenterDetailView = Out<typeof CostCenterUsage>;

/** This billing period's usage per cost center and workspace (only pairs with events), by code and workspace name. */
export async function costCenterDetailView(db: Db, organizationId: string, now: Date): Promise<CostCenterDetailView[]> {
  const currency = (await billingAccountOf(db, organizationId))?.currency ?? 'USD';
  const p = await billingWindow(db, organizationId, now);
  return (await db.allBig<{ c: string; code: string; w: string | null; wn: string | null; n: bigint; units: number; e4: bigint }>(
    `SELECT u.cost_center_id AS c, cc.code, u.workspace_id AS w, ws.name AS wn, count(*) AS n, sum(u.quantity) AS units, sum(u.estimated_cost_e4) AS e4
       FROM usage_events u JOIN cost_centers cc ON cc.id = u.cost_center_id AND cc.organization_id = ?1
       LEFT JOIN workspaces ws ON ws.id = u.workspace_id
      WHERE u.organization_id = ?1 AND u.created_at >= ?2 AND u.created_at < ?3
      GROUP BY u.cost_center_id, u.workspace_id, cc.code, ws.name ORDER BY cc.code, ws.name NULLS FIRST, u.workspace_id NULLS FIRST`,
    organizationId, p.start, p.end))
    .map((r) => ({
      costCenterId: r.c, code: r.code, workspaceId: r.w, workspaceName: r.wn, events: Number(r.n), units: r.units, estimatedCost: formatE4Amount(r.e4, currency),
    }));
}

export type QuotaWarningView = Out<typeof QuotaWarning>;

/** The latest quota warnings (organization: workspaceId null), newest first. */
export async function quotaWarningsView(db: Db, organizationId: string, limit: number): Promise<QuotaWarningView[]> {
  return (await db.all<{ workspace_id: string; metric: 'clips' | 'storage'; period: string; threshold: number; used: number; quota: number; created_at: string }>(
    'SELECT * FROM quota_warnings WHERE organization_id = ? ORDER BY created_at DESC, workspace_id, metric, threshold DESC LIMIT ?',
    organizationId, limit))
    .map((w) => ({ workspaceId: w.workspace_id || null, metric: w.metric, period: w.period, threshold: w.threshold, used: w.used, quota: w.quota, at: w.created_at }));
}

// ---- PATCH quota and cost center ----------------------------------------------------------------

export interface QuotaPatch { monthlyClipQuota?: number | null; storageGb?: number | null }

/**
 * Sets a workspace's own limits (null: none). Refused, with nothing changed: above the plan's limit
 * (409 quota_above_plan) or below what the workspace uses (409 quota_below_usage: this month's clips,
 * its stored bytes). Another organization's quota id is 404.
 */
export async function updateQuota(ctx: Ctx, organizationId: string, quotaId: string, patch: QuotaPatch): Promise<WorkspaceQuotaView> {
  if (patch.monthlyClipQuota === undefined && patch.storageGb === undefined) {
    throw validationFailed({ body: 'give monthlyClipQuota, storageGb or both (null removes the workspace\'s own limit)' });
  }
  return await ctx.db.tx(async () => {
    const q = await quotaRow(ctx.db, organizationId, quotaId, { forUpdate: true });
    if (!q) throw notFound('no such quota in this organization');
    const account = (await billingAccountOf(ctx.db, organizationId))!;
    const clips = patch.monthlyClipQuota;
    const gb = patch.storageGb;
    if (clips != null && clips > account.monthly_clip_quota) {
      throw conflict('quota_above_plan', `monthlyClipQuota ${clips} is above the organization's plan limit of ${account.monthly_clip_quota} clips a month`,
        { field: 'monthlyClipQuota', requested: clips, bound: 'plan.monthlyClipQuota', planLimit: account.monthly_clip_quota });
    }
    if (gb != null && gb > account.storage_gb) {
      throw conflict('quota_above_plan', `storageGb ${gb} is above the organization's plan limit of ${account.storage_gb} GB`,
        { field: 'storageGb', requested: gb, bound: 'plan.storageGb', planLimit: account.storage_gb });
    }
    // Recorded use only: video jobs not finished yet are not counted here (they are at job creation).
    const m = await organizationMonth(ctx.db, organizationId, ctx.now());
    const usedClips = await workspaceClips(ctx.db, organizationId, q.workspace_id, m.start, m.end);
    const usedBytes = await workspaceStoredBytes(ctx.db, organizationId, q.workspace_id);
    if (clips != null && clips < usedClips) {
      throw conflict('quota_below_usage', `monthlyClipQuota ${clips} is below the ${usedClips} clip(s) workspace ${q.workspace_name} used this month`,
        { field: 'monthlyClipQuota', requested: clips, bound: 'workspace.usedClipsThisMonth', used: usedClips, period: m.label });
    }
    if (gb != null && gbToBytes(gb) < usedBytes) {
      throw conflict('quota_below_usage', `storageGb ${gb} is below the ${usedBytes} bytes workspace ${q.workspace_name} stores`,
        { field: 'storageGb', requested: gb, bound: 'workspace.usedStorageBytes', usedBytes, requestedBytes: gbToBytes(gb) });
    }
    const next: QuotaRow = {
      ...q, monthly_clip_quota: clips === undefined ? q.monthly_clip_quota : clips, storage_gb: gb === undefined ? q.storage_gb : gb,
      updated_at: ctx.now().toISOString(),
    };
    await ctx.db.run('UPDATE workspace_quotas SET monthly_clip_quota = ?, storage_gb = ?, updated_at = ? WHERE organization_id = ? AND id = ?',
      next.monthly_clip_quota, next.storage_gb, next.updated_at, organizationId, q.id);
    await record(ctx, {
      action: 'quota.updated', targetType: 'workspace_quota', targetId: q.id, organizationId, workspaceId: q.workspace_id, projectId: null,
      metadata: {
        before: { monthlyClipQuota: q.monthly_clip_quota, storageGb: q.storage_gb },
        after: { monthlyClipQuota: next.monthly_clip_quota, storageGb: next.storage_gb },
      },
    });
    return presentQuota(next, usedClips, usedBytes);
  });
}

export interface CostCenterPatch { budget?: string | null; name?: string }

/** Sets a cost center's name and budget (an amount of the account's currency per billing period; null: none). */
export async function updateCostCenter(ctx: Ctx, organizationId: string, costCenterId: string, patch: CostCenterPatch): Promise<CostCenterView> {
  if (patch.budget === undefined && patch.name === undefined) throw validationFailed({ body: 'give budget, name or both' });
  const currency = (await billingAccountOf(ctx.db, organizationId))?.currency ?? 'USD';
  let budget: number | null | undefined = patch.budget === null ? null : undefined;
  if (typeof patch.budget === 'string') {
    const minor = parseAmount(patch.budget, currency);
    if (minor === null || minor < 0n) throw validationFailed({ budget: `must be a non-negative amount in ${currency} with at most the currency's decimals, e.g. "1250.00"` });
    if (minor > BigInt(Number.MAX_SAFE_INTEGER)) throw validationFailed({ budget: 'is too large' });
    budget = Number(minor);
  }
  return await ctx.db.tx(async () => {
    const c = await costCenterRow(ctx.db, organizationId, costCenterId, { forUpdate: true });
    if (!c) throw notFound('no such cost center in this organization');
    const next: CostCenterRow = {
      ...c, name: patch.name ?? c.name, budget_minor: budget === undefined ? c.budget_minor : budget, updated_at: ctx.now().toISOString(),
    };
    await ctx.db.run('UPDATE cost_centers SET name = ?, budget_minor = ?, updated_at = ? WHERE organization_id = ? AND id = ?',
      next.name, next.budget_minor, next.updated_at, organizationId, c.id);
    const shown = (r: CostCenterRow) => ({ name: r.name, budget: r.budget_minor === null ? null : formatAmount(r.budget_minor, currency), currency });
    await record(ctx, {
      action: 'cost_center.updated', targetType: 'cost_center', targetId: c.id, organizationId, workspaceId: c.workspace_id, projectId: null,
      metadata: { code: c.code, before: shown(c), after: shown(next) },
    });
    const p = await billingWindow(ctx.db, organizationId, ctx.now());
    const spent = (await spentByCostCenter(ctx.db, organizationId, p.start, p.end)).get(c.id);
    return presentCostCenter(next, currency, spent?.e4 ?? 0n, spent?.n ?? 0);
  });
}

// ---- enforcement -------------------------------------------------------------------------------

/** The workspace's own monthly clip quota, or null without one (jobs/service.ts clipQuotaProblem counts against it). */
export async function workspaceClipQuota(db: Db, organizationId: string, workspaceId: string): Promise<{ quota: number; workspaceName: string } | null> {
  const q = await quotaOfWorkspace(db, organizationId, workspaceId);
  return q && q.monthly_clip_quota !== null ? { quota: q.monthly_clip_quota, workspaceName: q.workspace_name } : null;
}

export interface WorkspaceStorageBound { workspaceId: string; workspaceName: string; usedBytes: number; limitBytes: number }

/**
 * The workspace's own storage limit and use (`q`: its quota row, quotaOfWorkspace); null without one,
 * or when `storagePath` is already stored in the workspace (nothing added).
 */
export async function workspaceStorageBound(
  db: Db, organizationId: string, workspaceId: string, q: QuotaRow | undefined, storagePath?: string,
): Promise<WorkspaceStorageBound | null> {
  if (!q || q.storage_gb === null) return null;
  if (storagePath && await workspaceHasFile(db, organizationId, workspaceId, storagePath)) return null;
  return { workspaceId, workspaceName: q.workspace_name, usedBytes: await workspaceStoredBytes(db, organizationId, workspaceId), limitBytes: gbToBytes(q.storage_gb) };
}

/** 409 storage_quota_exceeded when `requested` more bytes do not fit in the workspace's own storage quota. */
export function checkWorkspaceStorage(bound: WorkspaceStorageBound | null, requested: number): void {
  if (!bound || bound.usedBytes + requested <= bound.limitBytes) return;
  throw new AppError(409, 'storage_quota_exceeded', `the upload does not fit in the storage quota of workspace ${bound.workspaceName}`,
    { scope: 'workspace', workspaceId: bound.workspaceId, usedBytes: bound.usedBytes, limitBytes: bound.limitBytes, requestedBytes: requested },
    { connection: 'close' });
}
