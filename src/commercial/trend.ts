// Usage sums per local calendar bucket (day or month of the organization's time zone), and the usage
// trend of the commercial view: the last 31 days including today, oldest first; days without events
// are omitted, not zero-filled. Buckets are bounded by the zone's local midnights (periods.ts,
// DST-safe: a day may last 23 or 25 hours), and SQL sums each bucket over the (organization_id,
// created_at) index, the buckets outside, one index range each. The upper bound (`until`) is a
// column of the buckets, not a bound of usage_events alone: so no plan that starts from usage_events
// (a range of the whole organization, scanned once per bucket) looks cheaper, even without ANALYZE.
import type { Db } from '../db/db.ts';
import { perDialect, type Dialect } from '../db/dialect.ts';
import { formatE4Amount } from '../kernel/money.ts';
import { localDate, localDaysBefore } from '../kernel/periods.ts';
import type { Out } from '../kernel/view.ts';
import type { UsageTrendDayView } from './views.ts';

export const TREND_DAYS = 31;

/** A local calendar bucket: its label and its UTC instants, [start, end). */
export interface Bucket { label: string; start: Date; end: Date }
/** A bucket's sums (unit: the unit name when split by unit, else null); the cost sum (e4) is exact. */
export interface BucketRow { label: string; unit: string | null; events: number; clips: number; units: number; e4: bigint }

// MATERIALIZED: the buckets are read from the JSON once, not per compared row.
const bucketSql = (d: Dialect, byUnit: boolean) => `
  WITH buckets(label, start, finish, until) AS MATERIALIZED (
    SELECT ${d.jsonText('j.value', 0)}, ${d.jsonText('j.value', 1)}, ${d.jsonText('j.value', 2)}, ?3 FROM ${d.jsonEach('?1', 'j')})
  SELECT b.label AS label, ${byUnit ? 'u.unit' : 'NULL'} AS unit, count(*) AS events,
         CAST(count(*) FILTER (WHERE u.kind = 'clip') AS DOUBLE PRECISION) AS clips,
         CAST(coalesce(sum(u.quantity), 0) AS DOUBLE PRECISION) AS units, sum(u.estimated_cost_e4) AS e4
    FROM buckets b JOIN usage_events u ${d.indexedBy('usage_events_org')}
      ON u.organization_id = ?2 AND u.created_at >= b.start AND u.created_at < b.finish AND u.created_at <= b.until
   GROUP BY b.label${byUnit ? ', u.unit' : ''} ORDER BY b.label${byUnit ? ', u.unit' : ''}`;
const bySql = perDialect((d) => ({ bucket: bucketSql(d, false), bucketAndUnit: bucketSql(d, true) }));

/** The organization's usage events per bucket (and unit name), up to `until` inclusive; buckets without events give no row. */
export async function usageByBucket(db: Db, organizationId: string, buckets: Bucket[], until: Date, byUnit = false): Promise<BucketRow[]> {
  const json = JSON.stringify(buckets.map((b) => [b.label, b.start.toISOString(), b.end.toISOString()]));
  // Integers as bigint: the cost sum may pass 2^53; the count is a number again (clips and units are REAL sums).
  return (await db.allBig<BucketRow>(byUnit ? bySql(db.dialect).bucketAndUnit : bySql(db.dialect).bucket, json, organizationId, until.toISOString()))
    .map((r) => ({ ...r, events: Number(r.events) }));
}

/** The trend window's local days, oldest first: localDaysBefore(now, 30) to today (its bucket ends at tomorrow's midnight). */
export function trendDays(now: Date, timeZone: string): Bucket[] {
  // TREND_DAYS + 1 local midnights, each day from one to the next.
  const edges = Array.from({ length: TREND_DAYS + 1 }, (_, i) => localDaysBefore(now, TREND_DAYS - 1 - i, timeZone));
  return edges.slice(0, -1).map((start, i) => ({ label: localDate(start, timeZone), start, end: edges[i + 1] }));
}

export type TrendDay = Out<typeof UsageTrendDayView>;

/** Quantities are REAL: sums are shown to 6 decimals. */
export const roundUnits = (n: number): number => Math.round(n * 1e6) / 1e6;

/** The window [localDaysBefore(now, 30), now]: one item a local day with events (units = summed quantity, cost rounded once). */
export async function usageTrend(db: Db, organizationId: string, timeZone: string, currency: string, now: Date): Promise<TrendDay[]> {
  return (await usageByBucket(db, organizationId, trendDays(now, timeZone), now))
    .map((r) => ({ day: r.label, units: roundUnits(r.units), estimatedCost: formatE4Amount(r.e4, currency), events: r.events }));
}
