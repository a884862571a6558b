// Invoices, their lines and events, the invoice number counter, and what a draft snapshots (usage
// grouped for lines, storage per workspace, cost centers). Every statement carries the organization
// id except organizationOfInvoice, which exists to tell "another organization's invoice" (403) from
// "no such invoice" (404). Money columns (amounts, unit prices, usage cost sums) are read as bigint.
import type { Db } from '../../db/db.ts';
import type { Dialect } from '../../db/dialect.ts';
import { likePattern } from '../../db/like.ts';
import { mapCursor, type RowCursor } from '../../db/cursor.ts';
import { storedBytesByWorkspace } from '../meters.ts';
import type { InvoiceFilter } from './schema.ts';
import type { InvoiceStatus } from '../vocabulary.ts';

export interface InvoiceRow {
  id: string;
  organization_id: string;
  period_start: string;
  period_end: string;
  status: InvoiceStatus;
  number: string | null;
  currency: string;
  tax_rate: string;
  due_days: number;
  subtotal_minor: bigint;
  tax_minor: bigint;
  total_minor: bigint;
  snapshot: string;
  created_by: string | null;
  created_at: string;
  updated_at: string;
  issued_at: string | null;
  due_at: string | null;
  paid_at: string | null;
  voided_at: string | null;
}

export interface InvoiceLineRow {
  invoice_id: string;
  position: number;
  kind: string;
  description: string;
  workspace_id: string | null;
  cost_center_id: string | null;
  quantity: string;
  unit: string;
  unit_price_e4: bigint;
  price_unit: string;
  amount_exact: string;
  amount_minor: bigint;
}

export interface InvoiceEventRow {
  id: string;
  invoice_id: string;
  organization_id: string;
  action: string;
  from_status: string | null;
  to_status: string;
  actor_user_id: string | null;
  actor_name: string | null;
  note: string | null;
  created_at: string;
}

const INVOICE_COLUMNS = [
  'id', 'organization_id', 'period_start', 'period_end', 'status', 'number', 'currency', 'tax_rate', 'due_days', 'subtotal_minor',
  'tax_minor', 'total_minor', 'snapshot', 'created_by', 'created_at', 'updated_at', 'issued_at', 'due_at', 'paid_at', 'voided_at',
] as const satisfies ReadonlyArray<keyof InvoiceRow>;

/** Inserts the invoice unless the organization has one for that period (the unique key); true when inserted. */
export async function insertInvoice(db: Db, row: InvoiceRow): Promise<boolean> {
  return (await db.run(
    `INSERT INTO invoices (${INVOICE_COLUMNS.join(', ')}) VALUES (${INVOICE_COLUMNS.map(() => '?').join(', ')})
     ON CONFLICT (organization_id, period_start, period_end) DO NOTHING`,
    ...INVOICE_COLUMNS.map((c) => row[c]),
  )).changes === 1;
}

export async function insertInvoiceLine(db: Db, l: InvoiceLineRow): Promise<void> {
  await db.run(
    `INSERT INTO invoice_lines (invoice_id, position, kind, description, workspace_id, cost_center_id, quantity, unit, unit_price_e4,
       price_unit, amount_exact, amount_minor) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    l.invoice_id, l.position, l.kind, l.description, l.workspace_id, l.cost_center_id, l.quantity, l.unit, l.unit_price_e4,
    l.price_unit, l.amount_exact, l.amount_minor,
  );
}

export async function insertInvoiceEvent(db: Db, e: InvoiceEventRow): Promise<void> {
  await db.run(
    `INSERT INTO invoice_events (id, invoice_id, organization_id, action, from_status, to_status, actor_user_id, actor_name, note, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    e.id, e.invoice_id, e.organization_id, e.action, e.from_status, e.to_status, e.actor_user_id, e.actor_name, e.note, e.created_at,
  );
}

// Rows read with bigint integers (Db.allBig): money stays exact; the few counts are numbers again.
const invoiceRow = (r: InvoiceRow): InvoiceRow => ({ ...r, due_days: Number(r.due_days) });
const lineRow = (r: InvoiceLineRow): InvoiceLineRow => ({ ...r, position: Number(r.position) });
const invoices = async (db: Db, sql: string, ...params: Array<string | number>) => (await db.allBig<InvoiceRow>(sql, ...params)).map(invoiceRow);

export const invoiceForPeriod = async (db: Db, organizationId: string, start: string, end: string): Promise<InvoiceRow | undefined> =>
  (await invoices(db, 'SELECT * FROM invoices WHERE organization_id = ? AND period_start = ? AND period_end = ?', organizationId, start, end))[0];

export const invoiceInOrganization = async (db: Db, organizationId: string, invoiceId: string): Promise<InvoiceRow | undefined> =>
  (await invoices(db, 'SELECT * FROM invoices WHERE organization_id = ? AND id = ?', organizationId, invoiceId))[0];

/**
 * The organization's first invoice, not void, whose period overlaps [start, end) (both half-open:
 * period_start < end AND period_end > start); without bounds, its latest invoice that is not void.
 */
export const liveInvoiceOverlapping = async (db: Db, organizationId: string, start = '', end = '\uffff'): Promise<InvoiceRow | undefined> =>
  (await invoices(db, `SELECT * FROM invoices WHERE organization_id = ? AND status <> 'void' AND period_start < ? AND period_end > ?
    ORDER BY period_start DESC, id LIMIT 1`, organizationId, end, start))[0];

/** The organization an invoice belongs to (undefined: no such invoice). */
export const organizationOfInvoice = async (db: Db, invoiceId: string) =>
  (await db.get<{ organization_id: string }>('SELECT organization_id FROM invoices WHERE id = ?', invoiceId))?.organization_id;

const LINES_SQL = `SELECT l.* FROM invoice_lines l JOIN invoices i ON i.id = l.invoice_id
  WHERE i.organization_id = ? AND l.invoice_id = ? ORDER BY l.position`;

export const linesOfInvoice = async (db: Db, organizationId: string, invoiceId: string) =>
  (await db.allBig<InvoiceLineRow>(LINES_SQL, organizationId, invoiceId)).map(lineRow);

export const eventsOfInvoice = (db: Db, organizationId: string, invoiceId: string) =>
  db.all<InvoiceEventRow>('SELECT * FROM invoice_events WHERE organization_id = ? AND invoice_id = ? ORDER BY created_at, id', organizationId, invoiceId);

/** Moves an invoice from `from` to `next.status` with its dates and number; false when it was no longer in `from`. */
export async function updateInvoiceStatus(db: Db, from: InvoiceStatus, next: InvoiceRow): Promise<boolean> {
  return (await db.run(
    `UPDATE invoices SET status = ?, number = ?, issued_at = ?, due_at = ?, paid_at = ?, voided_at = ?, updated_at = ?
      WHERE organization_id = ? AND id = ? AND status = ?`,
    next.status, next.number, next.issued_at, next.due_at, next.paid_at, next.voided_at, next.updated_at, next.organization_id, next.id, from,
  )).changes === 1;
}

/** Takes the organization's next invoice number (and advances the counter): prefix and the number taken. */
export async function takeInvoiceNumber(db: Db, organizationId: string): Promise<{ prefix: string; number: number }> {
  const r = await db.get<{ invoice_prefix: string; taken: number }>(
    `UPDATE billing_accounts SET next_invoice_number = next_invoice_number + 1 WHERE organization_id = ?
     RETURNING invoice_prefix, next_invoice_number - 1 AS taken`, organizationId);
  if (!r) throw new Error(`organization ${organizationId} has no billing account`);
  return { prefix: r.invoice_prefix, number: r.taken };
}

function filterWhere(d: Dialect, organizationId: string, f: InvoiceFilter): { sql: string; params: string[] } {
  let sql = 'organization_id = ?';
  const params = [organizationId];
  if (f.status) {
    sql += ' AND status = ?';
    params.push(f.status);
  }
  if (f.query) {
    const like = likePattern(f.query);
    sql += ` AND (number ${d.likeAnyCase} ? ESCAPE '\\' OR id ${d.likeAnyCase} ? ESCAPE '\\')`;
    params.push(like, like);
  }
  return { sql, params };
}

const LEDGER_ORDER = 'ORDER BY period_start DESC, created_at DESC, id DESC';

export async function pageInvoices(db: Db, organizationId: string, f: InvoiceFilter, limit: number, offset: number): Promise<{ rows: InvoiceRow[]; total: number }> {
  const w = filterWhere(db.dialect, organizationId, f);
  return {
    rows: await invoices(db, `SELECT * FROM invoices WHERE ${w.sql} ${LEDGER_ORDER} LIMIT ? OFFSET ?`, ...w.params, limit, offset),
    total: (await db.get<{ n: number }>(`SELECT count(*) AS n FROM invoices WHERE ${w.sql}`, ...w.params))!.n,
  };
}

export type ExportedInvoice = InvoiceRow & { lines?: InvoiceLineRow[] };

/** The matching invoices, ledger order, with their lines when asked, read from one snapshot (Db.snapshotCursor). */
export function openInvoiceCursor(db: Db, organizationId: string, f: InvoiceFilter, withLines: boolean): RowCursor<ExportedInvoice> {
  const w = filterWhere(db.dialect, organizationId, f);
  const c = db.snapshotCursor<ExportedInvoice>({
    sql: `SELECT * FROM invoices WHERE ${w.sql} ${LEDGER_ORDER}`,
    params: w.params,
    bigInts: true,
    each: withLines ? { name: 'lines', sql: LINES_SQL, params: (r) => [organizationId, r.id as string] } : undefined,
  });
  return mapCursor(c, (r) => (r.lines ? { ...invoiceRow(r), lines: r.lines.map(lineRow) } : invoiceRow(r)));
}

export interface UsageGroupRow {
  cost_center_id: string | null;
  cost_center_code: string | null;
  workspace_id: string | null;
  workspace_name: string | null;
  kind: string;
  unit: string;
  currency: string;
  unit_price_e4: bigint;
  /** Sum of the quantities in millionths (quantities are stored as REAL; six decimals are kept per event). */
  quantity_e6: bigint;
  /** Sum of the events' estimated costs (e4). */
  cost_e4: bigint;
  events: number;
}

/** Usage events of [start, end) grouped by cost center, workspace, kind, unit, currency and the unit price each was recorded at. */
export async function usageGroups(db: Db, organizationId: string, start: string, end: string): Promise<UsageGroupRow[]> {
  return (await db.allBig<UsageGroupRow>(
    `SELECT g.*, c.code AS cost_center_code, w.name AS workspace_name FROM (
        SELECT cost_center_id, workspace_id, kind, unit, currency, unit_price_e4,
               sum(CAST(${db.dialect.roundHalfAway('quantity * 1000000')} AS BIGINT)) AS quantity_e6, sum(estimated_cost_e4) AS cost_e4, count(*) AS events
          FROM usage_events WHERE organization_id = ?1 AND created_at >= ?2 AND created_at < ?3
         GROUP BY cost_center_id, workspace_id, kind, unit, currency, unit_price_e4) g
       LEFT JOIN cost_centers c ON c.id = g.cost_center_id AND c.organization_id = ?1
       LEFT JOIN workspaces w ON w.id = g.workspace_id AND w.organization_id = ?1
      ORDER BY c.code NULLS FIRST, w.name NULLS FIRST, g.workspace_id NULLS FIRST, g.kind, g.unit, g.currency, g.unit_price_e4`,
    organizationId, start, end)).map((g) => ({ ...g, events: Number(g.events) }));
}

export interface WorkspaceStorage { workspaceId: string; workspaceName: string; costCenterId: string | null; bytes: number }

/** Bytes each workspace stores now, each distinct file once per workspace (every workspace, 0 when none), by workspace name. */
export async function storageByWorkspace(db: Db, organizationId: string): Promise<WorkspaceStorage[]> {
  const bytes = await storedBytesByWorkspace(db, organizationId);
  return (await db.all<{ id: string; name: string; cost_center_id: string | null }>(
    `SELECT w.id, w.name, c.id AS cost_center_id FROM workspaces w LEFT JOIN cost_centers c ON c.workspace_id = w.id AND c.organization_id = ?1
      WHERE w.organization_id = ?1 ORDER BY w.name, w.id`, organizationId,
  )).map((w) => ({ workspaceId: w.id, workspaceName: w.name, costCenterId: w.cost_center_id, bytes: bytes.get(w.id) ?? 0 }));
}
