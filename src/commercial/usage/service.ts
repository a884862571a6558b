// Usage events: recording one (idempotent by its event key), the organization's usage list with its
// summary and facets, the streamed export, and the scope views GET /api/usage and GET /api/billing.
//
// The list and the export cover a window [from, to) of instants: a local day (YYYY-MM-DD in the
// organization's time zone) starts at its local midnight and `to` includes its whole day (23 or 25
// hours across a DST change); an ISO instant is taken as is, `to` inclusive. Without `from` the
// window starts at the local month of `to` (or of now): the list's default is this month, so that
// the summary and facets, exact sums over the whole filtered set, stay bounded
// (docs/commercial.md#usage).
import type { Ctx } from '../../directory/context.ts';
import type { Db } from '../../db/db.ts';
import { permissionDenied, scopeForbidden, validationFailed } from '../../kernel/errors.ts';
import { withScope } from '../../directory/context.ts';
import { hasPermission } from '../../directory/roles.ts';
import { organizationById } from '../../directory/tenancy/store.ts';
import { newId } from '../../kernel/ids.ts';
import { FACET_LIMIT, type Where } from '../../platform/audit/store.ts';
import { parseMetadata } from '../../platform/audit/present.ts';
import { csvRow, csvText, exportStamp, jsonArrayText, recordStream, type ExportFormat } from '../../kernel/export-stream.ts';
import { clipsTowardQuota, organizationStoredBytes, projectStoredBytes, workspaceStoredBytes } from '../meters.ts';
import { seatUsage } from '../../directory/plan/seats.ts';
import { billingAccountOf } from '../../directory/plan/account.ts';
import { presentBillingAccount } from '../account.ts';
import { exactToDecimal, formatAmount, formatE4Amount, formatUnitPrice, lineAmount, roundExact, roundHalfUp } from '../../kernel/money.ts';
import { dayOrInstant, monthOf, monthWindow, periodWindow, startOfLocalDay } from '../../kernel/periods.ts';
import { GIB, gbToBytes, quotaOfWorkspace } from '../quotas/service.ts';
import { roundUnits } from '../trend.ts';
import type { UsageFilters } from './schema.ts';
import type { UsageLevel } from '../vocabulary.ts';
import {
  costCenterByIdOrCode, eachUsageCombo, insertUsageEvent, namesOf, openUsageCursor, pageUsage, resolveQuery, scopeSums, usageWhere, windowSums,
  type FacetColumn, type UsageCombo, type UsageRow,
} from './store.ts';
import type { Out } from '../../kernel/view.ts';
import type { BillingOverviewView, ScopeUsageView, UsageEventView, UsageListView } from '../views.ts';

export interface UsageEventInput {
  organizationId: string; workspaceId?: string | null; projectId?: string | null; actorUserId?: string | null;
  kind: string; unit: string; quantity: number;
  /** The unit price the use is recorded at, e4 (the estimated cost, quantity x unit price, is computed here: estimatedCostE4). */
  unitPriceE4: number; currency: string;
  /** Default: the workspace's cost center. */
  costCenterId?: string | null; jobId?: string | null; metadata?: Record<string, unknown>;
  /** ISO instant of the usage. */
  at: string;
  /** Unique per organization: recording the same key again stores nothing. */
  eventKey: string;
}

/** A quantity in millionths, exactly; RangeError for a non-finite quantity or one with more than 6 decimals. */
function millionthsOf(quantity: number): bigint {
  if (!Number.isFinite(quantity)) throw new RangeError(`usage quantity ${quantity} is not finite`);
  if (Number.isInteger(quantity)) return BigInt(quantity) * 1_000_000n;
  const m = /^(-?\d+)\.(\d{1,6})$/.exec(String(quantity));
  if (!m) throw new RangeError(`usage quantity ${quantity} has more than 6 decimals`);
  const millionths = BigInt(m[1]) * 1_000_000n;
  const fraction = BigInt(m[2].padEnd(6, '0'));
  return m[1].startsWith('-') ? millionths - fraction : millionths + fraction;
}

/** quantity x unit price (e4), exact and rounded half-up once. */
export const estimatedCostE4 = (quantity: number, unitPriceE4: number): number =>
  Number(roundHalfUp(millionthsOf(quantity) * BigInt(unitPriceE4), 1_000_000n));

/** Records a usage event once per (organization, eventKey): true when it was new, false when it was already there. */
export function recordUsageEvent(db: Db, e: UsageEventInput): Promise<boolean> {
  return insertUsageEvent(db, {
    id: newId('use'), organization_id: e.organizationId, workspace_id: e.workspaceId ?? null, project_id: e.projectId ?? null,
    actor_user_id: e.actorUserId ?? null, kind: e.kind, unit: e.unit, quantity: e.quantity, unit_price_e4: e.unitPriceE4,
    estimated_cost_e4: estimatedCostE4(e.quantity, e.unitPriceE4),
    currency: e.currency, cost_center_id: e.costCenterId ?? null, job_id: e.jobId ?? null, metadata: JSON.stringify(e.metadata ?? {}),
    created_at: e.at, event_key: e.eventKey,
  });
}

// ---- window and filters ------------------------------------------------------------------------

/** A local day's start (or the next day's, `after`) or an instant (plus 1 ms, `after`), or null when its date is no real one. */
function boundOf(text: string, timeZone: string, after: boolean): Date | null {
  const b = dayOrInstant(text, timeZone);
  if (!b || !after) return b?.at ?? null;
  return b.day ? startOfLocalDay(b.day[0], b.day[1], b.day[2] + 1, timeZone) : new Date(b.at.getTime() + 1);
}

/** The window [from, to) as ISO instants (to null: open); 422 for an impossible date or from after to. */
export function usageWindow(f: Pick<UsageFilters, 'from' | 'to'>, timeZone: string, now: Date): { from: string; to: string | null } {
  const to = f.to === undefined ? null : boundOf(f.to, timeZone, true);
  const from = f.from === undefined ? monthOf(timeZone, to ? new Date(to.getTime() - 1) : now).start : boundOf(f.from, timeZone, false);
  const errors: Record<string, string> = {};
  if (!from) errors.from = 'is not a real date or instant';
  if (f.to !== undefined && !to) errors.to = 'is not a real date or instant';
  if (from && to && from >= to) errors.from = 'is after to';
  if (Object.keys(errors).length) throw validationFailed(errors);
  return { from: from!.toISOString(), to: to ? to.toISOString() : null };
}

async function whereOf(ctx: Ctx, organizationId: string, f: UsageFilters) {
  const org = (await organizationById(ctx.db, organizationId))!;
  const window = usageWindow(f, org.time_zone, ctx.now());
  const costCenterId = f.costCenter === undefined ? undefined : ((await costCenterByIdOrCode(ctx.db, organizationId, f.costCenter))?.id ?? f.costCenter);
  const where = usageWhere(ctx.db.dialect, {
    organizationId, ...window, workspaceId: f.workspaceId, projectId: f.projectId, userId: f.userId, kind: f.kind, unit: f.unitName,
    costCenterId, query: f.query === undefined ? undefined : await resolveQuery(ctx.db, organizationId, f.query),
  });
  return { where, window: { ...window, timeZone: org.time_zone } };
}

// ---- presenters --------------------------------------------------------------------------------

export function presentUsage(r: UsageRow): Out<typeof UsageEventView> {
  return {
    id: r.id, at: r.created_at, workspaceId: r.workspace_id, workspaceName: r.workspace_name, projectId: r.project_id,
    projectName: r.project_name, actorUserId: r.actor_user_id, actorName: r.actor_name, kind: r.kind, unit: r.unit, quantity: r.quantity,
    estimatedCost: formatE4Amount(r.estimated_cost_e4, r.currency), currency: r.currency,
    costCenter: r.cost_center_id === null ? null : { id: r.cost_center_id, code: r.cost_center_code, name: r.cost_center_name },
    jobId: r.job_id, metadata: parseMetadata(r.metadata),
  };
}

export const USAGE_CSV_COLUMNS = [
  'id', 'at', 'workspaceId', 'workspaceName', 'projectId', 'projectName', 'actorUserId', 'actorName', 'kind', 'unit', 'quantity',
  'estimatedCost', 'currency', 'costCenterId', 'costCenterCode', 'costCenterName', 'jobId', 'metadata',
] as const;

export function usageCsvLine(r: UsageRow): string {
  const cells = [
    r.id, r.created_at, r.workspace_id, r.workspace_name, r.project_id, r.project_name, r.actor_user_id, r.actor_name, r.kind, r.unit,
    r.quantity, formatE4Amount(r.estimated_cost_e4, r.currency), r.currency, r.cost_center_id, r.cost_center_code, r.cost_center_name,
    r.job_id, r.metadata,
  ];
  return csvRow(cells);
}

// ---- the list: page, summary and facets ---------------------------------------------------------

interface Tally { events: number; quantity: number; e4: bigint }

type FacetKey = 'kind' | 'unit' | 'w' | 'p' | 'c' | 'u';
const FACET_COLUMNS: Record<FacetKey, FacetColumn> = {
  kind: 'kind', unit: 'unit', w: 'workspace_id', p: 'project_id', c: 'cost_center_id', u: 'actor_user_id',
};
const KEYS = Object.keys(FACET_COLUMNS) as FacetKey[];

/** What summary and facets are made of: totals by unit, and counts by each facet's values. */
interface Aggregates { units: Map<string, Tally>; counts: Record<FacetKey, Map<string | null, number>> }

const emptyAggregates = (): Aggregates => ({ units: new Map(), counts: Object.fromEntries(KEYS.map((k) => [k, new Map()])) as Aggregates['counts'] });

/** The filtered set's combinations (one grouped pass), folded as they are read. */
async function fromCombos(db: Db, where: Where): Promise<Aggregates> {
  const a = emptyAggregates();
  await eachUsageCombo(db, where, (c: UsageCombo) => {
    const t = a.units.get(c.unit) ?? { events: 0, quantity: 0, e4: 0n };
    a.units.set(c.unit, { events: t.events + c.n, quantity: t.quantity + c.q, e4: t.e4 + c.e4 });
    for (const k of KEYS) a.counts[k].set(c[k], (a.counts[k].get(c[k]) ?? 0) + c.n);
  });
  return a;
}

/** Distinct values a facet may have for its loose index scan; above that the window is grouped instead. */
const LOOSE_SCAN_VALUES = 2000;

/** A window without other filters, each facet from its own index (usage-store.ts windowSums); null to group instead. */
async function fromWindow(db: Db, organizationId: string, from: string, to: string | null): Promise<Aggregates | null> {
  const a = emptyAggregates();
  for (const k of KEYS) {
    const sums = await windowSums(db, organizationId, FACET_COLUMNS[k], from, to, LOOSE_SCAN_VALUES);
    if (!sums) return null;
    for (const r of sums) {
      a.counts[k].set(r.value, r.n);
      if (k === 'unit') a.units.set(r.value!, { events: r.n, quantity: r.q, e4: r.e4 });
    }
  }
  return a;
}

/** The FACET_LIMIT most frequent values, most frequent first, then by value (null last). */
function top(counts: Map<string | null, number>): Array<{ value: string | null; count: number }> {
  return [...counts].map(([value, count]) => ({ value, count }))
    .sort((a, b) => b.count - a.count || (a.value === null ? 1 : b.value === null ? -1 : a.value < b.value ? -1 : a.value > b.value ? 1 : 0))
    .slice(0, FACET_LIMIT);
}

/** Summary (totals by unit and overall, each amount rounded once) and facets with the names of their ids. */
async function present(db: Db, organizationId: string, a: Aggregates, currency: string) {
  const units = [...a.units].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
  const named = async (k: FacetKey, table: Parameters<typeof namesOf>[2]) => {
    const facet = top(a.counts[k]);
    const names = await namesOf(db, organizationId, table, facet.flatMap((f) => (f.value === null ? [] : [f.value])));
    return facet.map((f) => {
      const n = f.value === null ? undefined : names.get(f.value);
      return { ...f, name: n?.name ?? null, ...(table === 'cost_centers' ? { code: n?.code ?? null } : {}) };
    });
  };
  return {
    summary: {
      events: units.reduce((n, [, t]) => n + t.events, 0),
      estimatedCost: formatE4Amount(units.reduce((e4, [, t]) => e4 + t.e4, 0n), currency),
      currency,
      byUnit: units.map(([unit, t]) => ({ unit, events: t.events, quantity: roundUnits(t.quantity), estimatedCost: formatE4Amount(t.e4, currency) })),
    },
    facets: {
      kind: top(a.counts.kind), unit: top(a.counts.unit), workspace: await named('w', 'workspaces'), project: await named('p', 'projects'),
      costCenter: (await named('c', 'cost_centers')).map((f) => ({ ...f, code: f.code ?? null })), user: await named('u', 'users'),
    },
  };
}

const currencyOf = async (db: Db, organizationId: string) => (await billingAccountOf(db, organizationId))?.currency ?? 'USD';

const NARROWING = ['workspaceId', 'projectId', 'userId', 'kind', 'unitName', 'costCenter', 'query'] as const;

/** GET /api/organizations/:organizationId/usage: the page, and summary and facets from the window's indexes or one grouped pass. */
export async function listUsage(ctx: Ctx, organizationId: string, f: UsageFilters, page: { page: number; pageSize: number; offset: number }): Promise<Out<typeof UsageListView>> {
  const { where, window } = await whereOf(ctx, organizationId, f);
  const items = (await pageUsage(ctx.db, where, page.pageSize, page.offset)).map(presentUsage);
  const onlyWindow = NARROWING.every((k) => f[k] === undefined);
  const aggregates = (onlyWindow ? await fromWindow(ctx.db, organizationId, window.from, window.to) : null) ?? await fromCombos(ctx.db, where);
  const { summary, facets } = await present(ctx.db, organizationId, aggregates, await currencyOf(ctx.db, organizationId));
  return { items, summary, pagination: { page: page.page, pageSize: page.pageSize, total: summary.events }, facets, window };
}

/** GET .../usage/export: the filtered events, newest first, streamed from a snapshot taken now. */
export async function exportUsage(ctx: Ctx, organizationId: string, f: UsageFilters, format: ExportFormat) {
  const { where } = await whereOf(ctx, organizationId, f);
  const text = format === 'csv' ? csvText(`${USAGE_CSV_COLUMNS.join(',')}\r\n`, usageCsvLine) : jsonArrayText(presentUsage);
  const stamp = exportStamp(ctx.now());
  return { stream: recordStream(openUsageCursor(ctx.db, where), text), filename: `usage-${organizationId}-${stamp}.${format}` };
}

// ---- GET /api/usage and GET /api/billing ------------------------------------------------------

const bytesOfGb = (gb: number | null) => (gb === null ? null : gbToBytes(gb));

/** This local month's usage of the session's scope at `level` (default: its most specific), with the limits that apply there. */
export async function scopeUsage(ctx: Ctx, level: UsageLevel | undefined): Promise<Out<typeof ScopeUsageView>> {
  const s = ctx.scope;
  const lvl = level ?? (s.projectId ? 'project' : s.workspaceId ? 'workspace' : 'organization');
  if ((lvl === 'project' && !s.projectId) || (lvl === 'workspace' && !s.workspaceId)) throw scopeForbidden(`the session has no ${lvl} in scope; choose one with PATCH /api/context`);
  const scope = { organizationId: s.organizationId!, workspaceId: lvl === 'organization' ? null : s.workspaceId, projectId: lvl === 'project' ? s.projectId : null };
  if (!hasPermission(withScope(ctx, scope).permissions, 'usage:view')) throw permissionDenied('usage:view');
  const db = ctx.db;
  const orgId = scope.organizationId;
  const org = (await organizationById(db, orgId))!;
  const account = (await billingAccountOf(db, orgId))!;
  const now = ctx.now();
  const { start, end, label } = monthWindow(org.time_zone, now);
  const sums = await scopeSums(db, scope, start, end);
  const cur = account.currency;
  const e4 = sums.reduce((t, r) => t + r.e4, 0n);
  const orgBytes = await organizationStoredBytes(db, orgId);
  const wsBytes = scope.workspaceId ? await workspaceStoredBytes(db, orgId, scope.workspaceId) : null;
  const quota = scope.workspaceId ? await quotaOfWorkspace(db, orgId, scope.workspaceId) : undefined;
  const toward = await clipsTowardQuota(db, orgId, scope.workspaceId, start, end);
  return {
    scope: { level: lvl, ...scope },
    month: { label, start, end, timeZone: org.time_zone },
    events: sums.reduce((n, r) => n + r.events, 0),
    clips: sums.filter((r) => r.kind === 'clip').reduce((n, r) => n + r.events, 0),
    estimatedCost: formatE4Amount(e4, cur),
    currency: cur,
    byKind: sums.map((r) => ({ kind: r.kind, unit: r.unit, events: r.events, quantity: roundUnits(r.quantity), estimatedCost: formatE4Amount(r.e4, cur) })),
    storage: { usedBytes: scope.projectId ? await projectStoredBytes(db, orgId, scope.projectId) : (wsBytes ?? orgBytes) },
    limits: {
      organization: {
        monthlyClipQuota: account.monthly_clip_quota, clipsUsed: toward.organizationClips.recorded, clipsTowardQuota: toward.organization,
        storageLimitBytes: bytesOfGb(account.storage_gb), storageUsedBytes: orgBytes, quotaWarningPercent: account.quota_warning_percent,
      },
      workspace: scope.workspaceId ? {
        workspaceId: scope.workspaceId, monthlyClipQuota: quota?.monthly_clip_quota ?? null, clipsUsed: toward.workspaceClips?.recorded ?? 0,
        clipsTowardQuota: toward.workspace, storageLimitBytes: bytesOfGb(quota?.storage_gb ?? null), storageUsedBytes: wsBytes,
      } : null,
    },
  };
}

/**
 * The organization's billing account (read view) and the estimated charges of the current billing
 * period so far, before tax: base fee, seats (active members), storage (stored GiB now) and usage
 * events (their recorded costs); each line rounded half-up once, the total their sum.
 */
export async function billingView(ctx: Ctx): Promise<Out<typeof BillingOverviewView>> {
  const db = ctx.db;
  const orgId = ctx.scope.organizationId!;
  const org = (await organizationById(db, orgId))!;
  const a = (await billingAccountOf(db, orgId))!;
  const cur = a.currency;
  const now = ctx.now();
  const { start, end } = periodWindow(a.billing_cycle, org.time_zone, now);
  const seats = await seatUsage(db, orgId, now.toISOString());
  const gib = { num: BigInt(await organizationStoredBytes(db, orgId)), den: BigInt(GIB) };
  const usage = await scopeSums(db, { organizationId: orgId, workspaceId: null, projectId: null }, start, end);
  const usageE4 = usage.reduce((t, r) => t + r.e4, 0n);
  const lines = [
    { kind: 'base_fee' as const, quantity: '1', unitPrice: formatAmount(a.base_fee_minor, cur), minor: BigInt(a.base_fee_minor) },
    { kind: 'seats' as const, quantity: String(seats.activeMembers), unitPrice: formatUnitPrice(a.seat_unit_price_e4, cur), minor: roundExact(lineAmount({ num: BigInt(seats.activeMembers), den: 1n }, BigInt(a.seat_unit_price_e4))) },
    { kind: 'storage' as const, quantity: exactToDecimal(gib), unitPrice: formatUnitPrice(a.storage_unit_price_e4, cur), minor: roundExact(lineAmount(gib, BigInt(a.storage_unit_price_e4))) },
    { kind: 'usage' as const, quantity: String(usage.reduce((n, r) => n + r.events, 0)), unitPrice: null, minor: roundHalfUp(usageE4, 10_000n) },
  ];
  return {
    ...presentBillingAccount(a, org.time_zone),
    period: { cycle: a.billing_cycle, start, end, timeZone: org.time_zone },
    estimatedCharges: {
      currency: cur,
      lines: lines.map(({ minor, ...l }) => ({ ...l, amount: formatAmount(minor, cur) })),
      total: formatAmount(lines.reduce((t, l) => t + l.minor, 0n), cur),
    },
  };
}
