// Calendar arithmetic in an organization's time zone (IANA name), DST-safe: local dates of instants,
// the UTC instant of a local midnight, and billing periods (calendar month, quarter or year,
// half-open [start, end)) as UTC instants.

const formatters = new Map<string, Intl.DateTimeFormat>();
function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });
    formatters.set(timeZone, f);
  }
  return f;
}

/** True for a time zone the runtime knows ("UTC", "Asia/Tokyo", "America/New_York"). */
export function isTimeZone(timeZone: string): boolean {
  try {
    formatter(timeZone);
    return true;
  } catch {
    return false;
  }
}

interface Wall { year: number; month: number; day: number; hour: number; minute: number; second: number }

function wallClock(at: Date, timeZone: string): Wall {
  const parts = Object.fromEntries(formatter(timeZone).formatToParts(at).map((p) => [p.type, p.value]));
  return { year: +parts.year, month: +parts.month, day: +parts.day, hour: +parts.hour, minute: +parts.minute, second: +parts.second };
}

/** The local calendar date of an instant, YYYY-MM-DD. */
export function localDate(at: Date | string, timeZone: string): string {
  const w = wallClock(typeof at === 'string' ? new Date(at) : at, timeZone);
  return `${String(w.year).padStart(4, '0')}-${String(w.month).padStart(2, '0')}-${String(w.day).padStart(2, '0')}`;
}

/** The zone's offset from UTC at an instant, in milliseconds (local = UTC + offset). */
function offsetAt(at: Date, timeZone: string): number {
  const w = wallClock(at, timeZone);
  const asUtc = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
  return asUtc - Math.floor(at.getTime() / 1000) * 1000;
}

/**
 * A bound given as a local date `YYYY-MM-DD` (the instant it begins in the zone; `day` holds its parts)
 * or as an ISO 8601 instant (its form already checked by the caller's schema); null when the calendar
 * date is no real one (Feb 30) or the instant does not parse. Usage filters and invoice periods.
 */
export function dayOrInstant(text: string, timeZone: string): { at: Date; day: [number, number, number] | null } | null {
  const date = text.slice(0, 10);
  const [y, m, d] = date.split('-').map(Number);
  if (new Date(Date.UTC(y, m - 1, d)).toISOString().slice(0, 10) !== date) return null;
  if (text.length === 10) return { at: startOfLocalDay(y, m, d, timeZone), day: [y, m, d] };
  const t = Date.parse(text);
  return Number.isNaN(t) ? null : { at: new Date(t), day: null };
}

/**
 * The instant the local date begins (its first existing local minute: where midnight is skipped by
 * a DST change, the day starts at the end of the gap). Month and day may overflow (Date.UTC rules).
 */
export function startOfLocalDay(year: number, month: number, day: number, timeZone: string): Date {
  const guess = Date.UTC(year, month - 1, day);
  // Two passes settle the offset across a transition; the result is the local midnight or the gap's end.
  let t = guess - offsetAt(new Date(guess), timeZone);
  t = guess - offsetAt(new Date(t), timeZone);
  const want = new Date(guess).toISOString().slice(0, 10);
  if (localDate(new Date(t), timeZone) < want) {
    // Midnight did not exist: step forward to the first minute of the day.
    while (localDate(new Date(t), timeZone) < want) t += 60_000;
  }
  return new Date(t);
}

export type BillingCycle = 'monthly' | 'quarterly' | 'annual';
const MONTHS: Record<BillingCycle, number> = { monthly: 1, quarterly: 3, annual: 12 };

/** The billing period containing `at`: the calendar month, quarter or year in the zone, [start, end). */
export function billingPeriod(cycle: BillingCycle, timeZone: string, at: Date): { start: Date; end: Date } {
  const w = wallClock(at, timeZone);
  const length = MONTHS[cycle];
  const firstMonth = Math.floor((w.month - 1) / length) * length + 1;
  return { start: startOfLocalDay(w.year, firstMonth, 1, timeZone), end: startOfLocalDay(w.year, firstMonth + length, 1, timeZone) };
}

/** The calendar month containing `at` in the zone (quotas count clips per local month), [start, end). */
export const monthOf = (timeZone: string, at: Date) => billingPeriod('monthly', timeZone, at);

/** A period as SQL compares it: ISO instants [start, end) and the local month of its start (YYYY-MM). */
export interface PeriodWindow { readonly start: string; readonly end: string; readonly label: string }

/** The last window computed per cycle and zone: valid for every instant inside it (the zone arithmetic is the costly part). */
const lastWindow = new Map<string, PeriodWindow>();

/** The billing period (calendar month, quarter or year in the zone) containing `at`, as a PeriodWindow. */
export function periodWindow(cycle: BillingCycle, timeZone: string, at: Date): PeriodWindow {
  const key = `${cycle} ${timeZone}`;
  const iso = at.toISOString();
  const hit = lastWindow.get(key);
  if (hit && hit.start <= iso && iso < hit.end) return hit;
  const p = billingPeriod(cycle, timeZone, at);
  const w = Object.freeze({ start: p.start.toISOString(), end: p.end.toISOString(), label: localDate(p.start, timeZone).slice(0, 7) });
  lastWindow.set(key, w);
  return w;
}

/** The local calendar month containing `at` (clip quotas, this month's usage), as a PeriodWindow. */
export const monthWindow = (timeZone: string, at: Date): PeriodWindow => periodWindow('monthly', timeZone, at);

/** The local day `days` before the local date of `at`, as the instant it begins (trend windows). */
export function localDaysBefore(at: Date, days: number, timeZone: string): Date {
  const w = wallClock(at, timeZone);
  return startOfLocalDay(w.year, w.month, w.day - days, timeZone);
}
