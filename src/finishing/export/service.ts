// Export packages of approved deliveries. Writing: the package is built in storage/tmp/export-<id>/
// (plan.ts decides, package.ts copies, checks and writes), optionally archived as
// storage/tmp/export-<id>.tar, then renamed into storage/exports/<id>/ (and <id>.tar); only then is
// the row recorded and audited, in one transaction that reads the delivery again (still approved, at
// the same version). Any failure removes what was written, so storage/exports never holds a partial
// package or an unrecorded archive. One package per delivery version: a repeat answers the recorded
// one without rewriting it (asking for the archive adds the archive only, audited once).
import fs from 'node:fs';
import path from 'node:path';
import type { Ctx } from '../../directory/context.ts';
import { record } from '../../platform/audit/service.ts';
import { AppError, conflict, notFound } from '../../kernel/errors.ts';
import { pageWindow, type Infer } from '../../kernel/validate.ts';
import { newId, sha256Hex } from '../../kernel/ids.ts';
import { resolveStored } from '../../kernel/files.ts';
import { assertProjectWritable } from '../../directory/tenancy/guard.ts';
import { projectById } from '../../directory/tenancy/store.ts';
import { deliveryInProject, deliveryItems, type DeliveryRow } from '../delivery/store.ts';
import { planExport } from './plan.ts';
import { writePackage } from './package.ts';
import type { ExportListQuery, ExportWriteBody } from './schema.ts';
import { writeTar, type TarEntry } from './tar.ts';
import { exportInProject, exportOfVersion, exportsOfProject, insertExport, setExportArchive, type ExportRow } from './store.ts';

export interface ExportView { row: ExportRow; manifest: unknown; manifestIntact: boolean; created: boolean }

const rmQuiet = (p: string | null) => { if (p) fs.rmSync(p, { recursive: true, force: true }); };

/** Every entry of a folder for the archive: folders before their contents, names sorted, under `root/`. */
function entriesOf(dir: string, root: string): TarEntry[] {
  const out: TarEntry[] = [{ name: root }];
  for (const d of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const abs = path.join(dir, d.name);
    if (d.isDirectory()) out.push(...entriesOf(abs, `${root}/${d.name}`));
    else if (d.isFile()) out.push({ name: `${root}/${d.name}`, file: abs });
  }
  return out;
}

/** The archive of a package folder, written under tmp/ (the caller renames it); deterministic: mtime is the export's time. */
async function archiveInTmp(storageDir: string, folder: string, id: string, createdAt: string): Promise<{ tmp: string; sha256: string }> {
  const tmp = path.join(storageDir, 'tmp', `export-${id}-${newId('tar')}.tar`);
  try {
    const { sha256 } = await writeTar(tmp, entriesOf(folder, id), Math.floor(Date.parse(createdAt) / 1000));
    return { tmp, sha256 };
  } catch (err) {
    rmQuiet(tmp);
    throw err;
  }
}

function approvedDelivery(ctx: Ctx, deliveryId: string): DeliveryRow {
  const d = deliveryInProject(ctx.db, ctx.scope.projectId!, deliveryId);
  if (!d) throw notFound('no such delivery in this project');
  if (d.status !== 'approved') {
    throw conflict('delivery_not_approved', `the delivery is ${d.status}: only an approved delivery is exported`, { deliveryId: d.id, status: d.status });
  }
  return d;
}

export async function writeExport(ctx: Ctx, body: Infer<typeof ExportWriteBody>): Promise<ExportView> {
  const projectId = ctx.scope.projectId!;
  const delivery = approvedDelivery(ctx, body.deliveryId);
  const existing = exportOfVersion(ctx.db, projectId, delivery.id, delivery.version);
  if (existing) return { ...(await withArchive(ctx, existing, body.archive === true)), created: false };
  const items = deliveryItems(ctx.db, delivery.id);
  if (items.length === 0) throw conflict('delivery_empty', 'the delivery has no items to export', { deliveryId: delivery.id });
  const plan = planExport(ctx.db, projectId, items);

  const storageDir = ctx.config.storageDir;
  const id = newId('exp');
  const createdAt = ctx.now().toISOString();
  const project = projectById(ctx.db, projectId)!;
  const tmpDir = path.join(storageDir, 'tmp', `export-${id}`);
  const rel = { dir: `exports/${id}`, tar: body.archive ? `exports/${id}.tar` : null };
  const finalDir = path.join(storageDir, rel.dir);
  const finalTar = rel.tar ? path.join(storageDir, rel.tar) : null;
  let tarTmp: string | null = null;
  let placed = false;
  try {
    fs.mkdirSync(tmpDir, { recursive: true });
    const facts = await writePackage(ctx.db, storageDir, projectId, plan, tmpDir, {
      exportId: id, createdAt, createdBy: ctx.actor.userId,
      delivery: { id: delivery.id, version: delivery.version, title: delivery.title, approvedAt: delivery.approved_at, approvedBy: delivery.approved_by },
      project: { id: project.id, name: project.name, organizationId: project.organization_id, workspaceId: project.workspace_id },
    });
    const archive = finalTar ? await archiveInTmp(storageDir, tmpDir, id, createdAt) : null;
    tarTmp = archive?.tmp ?? null;
    fs.mkdirSync(path.join(storageDir, 'exports'), { recursive: true });
    fs.renameSync(tmpDir, finalDir);
    placed = true;
    if (archive && finalTar) fs.renameSync(archive.tmp, finalTar);
    const row: ExportRow = {
      id, organization_id: project.organization_id, workspace_id: project.workspace_id, project_id: projectId,
      delivery_id: delivery.id, delivery_version: delivery.version, storage_path: rel.dir, archive_path: rel.tar,
      archive_sha256: archive?.sha256 ?? null, manifest_sha256: facts.manifestSha256, file_count: facts.files.length + 1,
      total_bytes: facts.files.reduce((n, f) => n + f.size, facts.manifestSize), created_by: ctx.actor.userId, created_at: createdAt,
    };
    const raced = ctx.db.tx(() => {
      // The delivery may have been withdrawn while the package was written.
      const current = approvedDelivery(ctx, delivery.id);
      if (current.version !== delivery.version) {
        throw conflict('delivery_changed', 'the delivery changed while its package was written; try again', { deliveryId: delivery.id, version: current.version });
      }
      const other = exportOfVersion(ctx.db, projectId, delivery.id, delivery.version);
      if (other) return other;
      assertProjectWritable(ctx.db, projectId);
      insertExport(ctx.db, row);
      record(ctx, {
        action: 'export.written', targetType: 'export', targetId: id,
        metadata: {
          deliveryId: delivery.id, deliveryVersion: delivery.version, fileCount: row.file_count, totalBytes: row.total_bytes,
          manifestSha256: row.manifest_sha256, archiveSha256: row.archive_sha256,
        },
      });
      return null;
    });
    if (raced) {
      // Another request wrote this delivery version meanwhile: its package stands, this one goes.
      rmQuiet(finalDir);
      rmQuiet(finalTar);
      return { ...(await withArchive(ctx, raced, body.archive === true)), created: false };
    }
    return { row, manifest: facts.manifest, manifestIntact: true, created: true };
  } catch (err) {
    rmQuiet(tmpDir);
    rmQuiet(tarTmp);
    if (placed) {
      rmQuiet(finalDir);
      rmQuiet(finalTar);
    }
    throw err;
  }
}

/**
 * The recorded export, first given its archive when asked for one it does not have yet. The archive
 * is renamed into exports/ inside the transaction that records it, only when this request records it
 * (two requests at once: one records and audits, the other drops its copy); any failure removes it.
 */
async function withArchive(ctx: Ctx, row: ExportRow, wanted: boolean): Promise<Omit<ExportView, 'created'>> {
  if (!wanted || row.archive_path) return viewOf(ctx, row);
  const storageDir = ctx.config.storageDir;
  const folder = packageFolder(storageDir, row);
  const archive = await archiveInTmp(storageDir, folder, row.id, row.created_at);
  const rel = `exports/${row.id}.tar`;
  const finalTar = path.join(storageDir, rel);
  let placed = false;
  try {
    ctx.db.tx(() => {
      assertProjectWritable(ctx.db, row.project_id);
      if (setExportArchive(ctx.db, row.id, rel, archive.sha256).changes === 0) return;
      fs.renameSync(archive.tmp, finalTar);
      placed = true;
      record(ctx, { action: 'export.archived', targetType: 'export', targetId: row.id, metadata: { deliveryId: row.delivery_id, archiveSha256: archive.sha256 } });
    });
  } catch (err) {
    // Rolled back: nothing records this archive.
    if (placed) rmQuiet(finalTar);
    throw err;
  } finally {
    rmQuiet(archive.tmp);
  }
  return viewOf(ctx, exportInProject(ctx.db, row.project_id, row.id)!);
}

function packageFolder(storageDir: string, row: ExportRow): string {
  try {
    return resolveStored(storageDir, row.storage_path);
  } catch (err) {
    if (err instanceof AppError && err.status === 404) throw conflict('export_missing', 'the export package is no longer on disk', { exportId: row.id });
    throw err;
  }
}

/** The row with its manifest as stored, and whether the manifest still has the recorded SHA-256. */
function viewOf(ctx: Ctx, row: ExportRow): Omit<ExportView, 'created'> {
  try {
    const bytes = fs.readFileSync(path.join(packageFolder(ctx.config.storageDir, row), 'manifest.json'));
    const intact = sha256Hex(bytes) === row.manifest_sha256;
    return { row, manifest: JSON.parse(bytes.toString('utf8')), manifestIntact: intact };
  } catch {
    return { row, manifest: null, manifestIntact: false };
  }
}

/** The export of the current project, or 404. */
export function exportRow(ctx: Ctx, exportId: string): ExportRow {
  const row = exportInProject(ctx.db, ctx.scope.projectId!, exportId);
  if (!row) throw notFound('no such export in this project');
  return row;
}

export function getExport(ctx: Ctx, exportId: string): Omit<ExportView, 'created'> {
  return viewOf(ctx, exportRow(ctx, exportId));
}

export function listExports(ctx: Ctx, q: Infer<typeof ExportListQuery>) {
  const { page, pageSize, offset } = pageWindow(q.page, q.pageSize);
  const { rows, total } = exportsOfProject(ctx.db, ctx.scope.projectId!, { deliveryId: q.deliveryId ?? null, limit: pageSize, offset });
  return { rows, pagination: { page, pageSize, total } };
}
