// SQL of deliveries, their items and their client links. Every read names the project (or, for a
// link found by its token's hash, hands back the delivery it belongs to).
import { forEachSeq } from '../../kernel/seq.ts';
import { newestPageOfProject } from '../../db/page.ts';
import type { Db } from '../../db/db.ts';
import { lockClause, type RowRead } from '../../db/dialect.ts';

export interface DeliveryRow {
  id: string; organization_id: string; workspace_id: string; project_id: string;
  title: string; note: string | null; status: 'draft' | 'approved' | 'withdrawn'; version: number;
  created_by: string | null; created_at: string; updated_at: string; approved_by: string | null; approved_at: string | null;
}

export interface DeliveryItemRow {
  delivery_id: string; position: number; artifact_id: string; artifact_sha256: string;
  episode_id: string | null; shot_id: string | null; qa_run_id: string | null; review_id: string | null;
}

export interface DeliveryLinkRow {
  id: string; delivery_id: string; organization_id: string; token_hash: string; label: string | null;
  expires_at: string; revoked_at: string | null; revoked_by: string | null; created_by: string | null; created_at: string;
  last_used_at: string | null; download_count: number;
  /** 1: the link also opens the export package of the delivery's version. */
  allow_export: number;
}

export async function insertDelivery(db: Db, d: DeliveryRow): Promise<void> {
  await db.run(
    `INSERT INTO deliveries (id, organization_id, workspace_id, project_id, title, note, status, version, created_by, created_at, updated_at,
       approved_by, approved_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    d.id, d.organization_id, d.workspace_id, d.project_id, d.title, d.note, d.status, d.version, d.created_by, d.created_at, d.updated_at,
    d.approved_by, d.approved_at,
  );
}

/**
 * Writes `d` over the delivery as it was read (`read`): only while its version, status and updated_at
 * are still the ones read, so that of two changes made from the same row the second writes nothing
 * (on PostgreSQL at READ COMMITTED it waits for the first, then finds the row changed). False then:
 * the caller refuses (409 delivery_changed) and its transaction ends without its other writes. The
 * service's changes read the row locked first (deliveryInProject { forUpdate }), so they never find it
 * changed; the check keeps a write from a read that did not lock.
 */
export async function updateDelivery(db: Db, read: DeliveryRow, d: DeliveryRow): Promise<boolean> {
  return (await db.run(
    `UPDATE deliveries SET title = ?, note = ?, status = ?, version = ?, updated_at = ?, approved_by = ?, approved_at = ?
      WHERE id = ? AND project_id = ? AND version = ? AND status = ? AND updated_at = ?`,
    d.title, d.note, d.status, d.version, d.updated_at, d.approved_by, d.approved_at, d.id, d.project_id,
    read.version, read.status, read.updated_at,
  )).changes === 1;
}

export const deliveryInProject = (db: Db, projectId: string, id: string, read?: RowRead): Promise<DeliveryRow | undefined> =>
  db.get<DeliveryRow>(`SELECT * FROM deliveries WHERE project_id = ? AND id = ?${lockClause(db, read)}`, projectId, id);

export const deliveryItems = (db: Db, deliveryId: string): Promise<DeliveryItemRow[]> =>
  db.all<DeliveryItemRow>('SELECT * FROM delivery_items WHERE delivery_id = ? ORDER BY position', deliveryId);

export const itemCounts = async (db: Db, deliveryIds: readonly string[]): Promise<Map<string, number>> => new Map(
  (await db.all<{ delivery_id: string; n: number }>(
    `SELECT delivery_id, count(*) AS n FROM delivery_items WHERE delivery_id IN (SELECT value FROM ${db.dialect.jsonValues('?')}) GROUP BY delivery_id`,
    JSON.stringify(deliveryIds),
  )).map((r) => [r.delivery_id, r.n]),
);

/** Replaces the items of a delivery (its new version's set), in order from position 1. */
export async function replaceItems(db: Db, deliveryId: string, items: ReadonlyArray<Omit<DeliveryItemRow, 'delivery_id' | 'position'>>): Promise<void> {
  await db.run('DELETE FROM delivery_items WHERE delivery_id = ?', deliveryId);
  await forEachSeq(items, (it, i) => db.run(
    `INSERT INTO delivery_items (delivery_id, position, artifact_id, artifact_sha256, episode_id, shot_id, qa_run_id, review_id)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    deliveryId, i + 1, it.artifact_id, it.artifact_sha256, it.episode_id, it.shot_id, it.qa_run_id, it.review_id,
  ));
}

/** At approval: the QA run and review each item was approved on. */
export const setItemVerdicts = (db: Db, deliveryId: string, position: number, qaRunId: string | null, reviewId: string | null) =>
  db.run('UPDATE delivery_items SET qa_run_id = ?, review_id = ? WHERE delivery_id = ? AND position = ?', qaRunId, reviewId, deliveryId, position);

export interface DeliveryFilter { status: string | null; limit: number; offset: number }

/** Newest first. */
export function deliveriesOfProject(db: Db, projectId: string, f: DeliveryFilter): Promise<{ rows: DeliveryRow[]; total: number }> {
  return newestPageOfProject<DeliveryRow>(db, 'deliveries', projectId, f.status, f.limit, f.offset);
}

export async function insertLink(db: Db, l: DeliveryLinkRow): Promise<void> {
  await db.run(
    `INSERT INTO delivery_links (id, delivery_id, organization_id, token_hash, label, expires_at, revoked_at, revoked_by, created_by, created_at,
       last_used_at, download_count, allow_export) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    l.id, l.delivery_id, l.organization_id, l.token_hash, l.label, l.expires_at, l.revoked_at, l.revoked_by, l.created_by, l.created_at,
    l.last_used_at, l.download_count, l.allow_export,
  );
}

export const linksOfDelivery = (db: Db, deliveryId: string): Promise<DeliveryLinkRow[]> =>
  db.all<DeliveryLinkRow>('SELECT * FROM delivery_links WHERE delivery_id = ? ORDER BY created_at DESC, id DESC', deliveryId);

export const linkOfDelivery = (db: Db, deliveryId: string, linkId: string): Promise<DeliveryLinkRow | undefined> =>
  db.get<DeliveryLinkRow>('SELECT * FROM delivery_links WHERE delivery_id = ? AND id = ?', deliveryId, linkId);

export const revokeLink = (db: Db, linkId: string, at: string, by: string | null) =>
  db.run('UPDATE delivery_links SET revoked_at = ?, revoked_by = ? WHERE id = ? AND revoked_at IS NULL', at, by, linkId);

/** A link by its token's SHA-256 (the UNIQUE index: one lookup, no comparison of secrets). */
export const linkByTokenHash = (db: Db, tokenHash: string): Promise<DeliveryLinkRow | undefined> =>
  db.get<DeliveryLinkRow>('SELECT * FROM delivery_links WHERE token_hash = ?', tokenHash);

export const deliveryById = (db: Db, id: string): Promise<DeliveryRow | undefined> =>
  db.get<DeliveryRow>('SELECT * FROM deliveries WHERE id = ?', id);

export const touchLink = (db: Db, linkId: string, at: string, counted: boolean) =>
  db.run('UPDATE delivery_links SET last_used_at = ?, download_count = download_count + ? WHERE id = ?', at, counted ? 1 : 0, linkId);
