// Export packages of approved deliveries, in the store (ctx.storage). Writing: the package is built
// under the temporary prefix tmp/export-<id>/ (plan.ts decides, package.ts copies media server-side,
// checks every copy and writes the small files), optionally archived (the .tar streamed from the
// store into the store's write(), hashed as it goes, under a temporary key), then moved into
// exports/<id>/ object by object (copy, then the temporary object removed) and the archive placed
// at exports/<id>.tar; only then is the row recorded and audited, in one transaction that reads the
// delivery again (still approved, at the same version). Any failure removes what was written, so no
// row ever names a partial package and no archive is left unrecorded. One package per delivery
// version: a repeat answers the recorded one without rewriting it (asking for the archive adds the
// archive only, audited once).
import type { Ctx } from '../../directory/context.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { record } from '../../platform/audit/service.ts';
import { conflict, notFound } from '../../kernel/errors.ts';
import { pageWindow, type Infer } from '../../kernel/validate.ts';
import { newId, sha256Hex } from '../../kernel/ids.ts';
import type { ObjectStore, PendingWrite } from '../../kernel/storage/store.ts';
import { assertProjectWritable } from '../../directory/tenancy/guard.ts';
import { projectById } from '../../directory/tenancy/store.ts';
import { deliveryInProject, deliveryItems, type DeliveryRow } from '../delivery/store.ts';
import { planExport } from './plan.ts';
import { PACKAGE_FOLDERS, writePackage } from './package.ts';
import type { ExportListQuery, ExportWriteBody } from './schema.ts';
import { tarBlocks, type TarEntry, type TarSource } from './tar.ts';
import { exportInProject, exportOfVersion, exportsOfProject, insertExport, setExportArchive, type ExportRow } from './store.ts';

export interface ExportView { row: ExportRow; manifest: unknown; manifestIntact: boolean; created: boolean }

/** The package paths under a folder prefix (ending in "/"), in key order. */
async function packagePaths(store: ObjectStore, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list(prefix)) out.push(o.key.slice(prefix.length));
  return out;
}

type Tree = Map<string, Tree | string>;

/**
 * Every entry of a package folder for the archive: folders before their contents, names sorted,
 * under `root/`, the package's folders even when empty (as the package was always laid out).
 */
function entriesOf(prefix: string, paths: string[], root: string): TarEntry[] {
  const tree: Tree = new Map(PACKAGE_FOLDERS.map((f) => [f, new Map()]));
  for (const p of paths) {
    const parts = p.split('/');
    let node = tree;
    for (const dir of parts.slice(0, -1)) {
      let next = node.get(dir);
      if (typeof next !== 'object') node.set(dir, (next = new Map()));
      node = next;
    }
    node.set(parts.at(-1)!, `${prefix}${p}`);
  }
  const walk = (node: Tree, name: string): TarEntry[] => [{ name }, ...[...node].sort(([a], [b]) => (a < b ? -1 : 1))
    .flatMap(([n, v]) => (typeof v === 'string' ? [{ name: `${name}/${n}`, file: v }] : walk(v, `${name}/${n}`)))];
  return walk(tree, root);
}

/**
 * The archive of the package under `prefix`, streamed from the store into a write under a temporary
 * key (the caller places it); deterministic: mtime is the export's time.
 */
async function archiveOf(store: ObjectStore, prefix: string, paths: string[], id: string, createdAt: string): Promise<PendingWrite> {
  const open: TarSource = async (key) => {
    const st = await store.stat(key);
    if (!st) throw new Error(`tar: ${key} is gone`);
    return { size: st.size, bytes: await store.read(key) };
  };
  return store.write(tarBlocks(entriesOf(prefix, paths, id), Math.floor(Date.parse(createdAt) / 1000), open));
}

/** Moves every object of a package from one folder prefix to another (a rename locally; a server-side copy and delete on s3). */
async function movePackage(store: ObjectStore, from: string, to: string, paths: string[]): Promise<void> {
  for (const p of paths) await store.move(`${from}${p}`, `${to}${p}`);
  await store.deletePrefix(from);
}

/** Best-effort removal while failing: the original error is the one answered. */
const quietly = async (work: Promise<unknown>) => {
  try {
    await work;
  } catch { /* a cleanup candidate */ }
};

async function approvedDelivery(ctx: Ctx, deliveryId: string): Promise<DeliveryRow> {
  const d = await deliveryInProject(ctx.db, ctx.scope.projectId!, deliveryId);
  if (!d) throw notFound('no such delivery in this project');
  if (d.status !== 'approved') {
    throw conflict('delivery_not_approved', `the delivery is ${d.status}: only an approved delivery is exported`, { deliveryId: d.id, status: d.status });
  }
  return d;
}

export async function writeExport(ctx: Ctx, body: Infer<typeof ExportWriteBody>): Promise<ExportView> {
  const projectId = ctx.scope.projectId!;
  const delivery = await approvedDelivery(ctx, body.deliveryId);
  const existing = await exportOfVersion(ctx.db, projectId, delivery.id, delivery.version);
  if (existing) return { ...(await withArchive(ctx, existing, body.archive === true)), created: false };
  const items = await deliveryItems(ctx.db, delivery.id);
  if (items.length === 0) throw conflict('delivery_empty', 'the delivery has no items to export', { deliveryId: delivery.id });
  const plan = await planExport(ctx.db, projectId, items);

  const store = ctx.storage;
  const id = newId('exp');
  const createdAt = ctx.now().toISOString();
  const project = (await projectById(ctx.db, projectId))!;
  const tmp = `tmp/export-${id}/`;
  const rel = { dir: `exports/${id}`, tar: body.archive ? `exports/${id}.tar` : null };
  let archive: PendingWrite | null = null;
  let placed = false;
  const removePlaced = async () => {
    await quietly(store.deletePrefix(`${rel.dir}/`));
    if (rel.tar) await quietly(store.delete(rel.tar));
  };
  try {
    const facts = await writePackage(ctx.db, { store, prefix: tmp }, projectId, plan, {
      exportId: id, createdAt, createdBy: ctx.actor.userId,
      delivery: { id: delivery.id, version: delivery.version, title: delivery.title, approvedAt: delivery.approved_at, approvedBy: delivery.approved_by },
      project: { id: project.id, name: project.name, organizationId: project.organization_id, workspaceId: project.workspace_id },
    });
    const paths = await packagePaths(store, tmp);
    archive = rel.tar ? await archiveOf(store, tmp, paths, id, createdAt) : null;
    placed = true;
    await movePackage(store, tmp, `${rel.dir}/`, paths);
    if (archive && rel.tar) await archive.place(rel.tar, { replace: true });
    const row: ExportRow = {
      id, organization_id: project.organization_id, workspace_id: project.workspace_id, project_id: projectId,
      delivery_id: delivery.id, delivery_version: delivery.version, storage_path: rel.dir, archive_path: rel.tar,
      archive_sha256: archive?.sha256 ?? null, manifest_sha256: facts.manifestSha256, file_count: facts.files.length + 1,
      total_bytes: facts.files.reduce((n, f) => n + f.size, facts.manifestSize), created_by: ctx.actor.userId, created_at: createdAt,
    };
    const raced = await ctx.db.tx(async () => {
      // The delivery may have been withdrawn while the package was written.
      const current = await approvedDelivery(ctx, delivery.id);
      if (current.version !== delivery.version) {
        throw conflict('delivery_changed', 'the delivery changed while its package was written; try again', { deliveryId: delivery.id, version: current.version });
      }
      const other = await exportOfVersion(ctx.db, projectId, delivery.id, delivery.version);
      if (other) return other;
      await assertProjectWritable(ctx.db, projectId);
      await insertExport(ctx.db, row);
      await record(ctx, {
        action: 'export.written', targetType: 'export', targetId: id,
        metadata: {
          deliveryId: delivery.id, deliveryVersion: delivery.version, fileCount: row.file_count, totalBytes: row.total_bytes,
          manifestSha256: row.manifest_sha256, archiveSha256: row.archive_sha256,
        },
      });
      return null;
    }).catch(async (err: unknown) => {
      // The other request's export of this version committed after the check (PostgreSQL: it commits
      // in between, and this insert meets its unique key): the same answer as the check's.
      const other = isUniqueViolation(err) ? await exportOfVersion(ctx.db, projectId, delivery.id, delivery.version) : undefined;
      if (!other) throw err;
      return other;
    });
    if (raced) {
      // Another request wrote this delivery version meanwhile: its package stands, this one goes.
      await removePlaced();
      return { ...(await withArchive(ctx, raced, body.archive === true)), created: false };
    }
    return { row, manifest: facts.manifest, manifestIntact: true, created: true };
  } catch (err) {
    await quietly(store.deletePrefix(tmp));
    if (archive) await quietly(archive.discard());
    if (placed) await removePlaced();
    throw err;
  }
}

/**
 * The recorded export, first given its archive when asked for one it does not have yet. The archive
 * (deterministic: the same package and time give the same bytes) is placed at exports/<id>.tar, then
 * recorded and audited only when this request records it (two requests at once: one records and
 * audits, the other's identical bytes are the same object); when recording fails, it is removed.
 */
async function withArchive(ctx: Ctx, row: ExportRow, wanted: boolean): Promise<Omit<ExportView, 'created'>> {
  if (!wanted || row.archive_path) return viewOf(ctx, row);
  const store = ctx.storage;
  const prefix = `${row.storage_path}/`;
  const paths = await packagePaths(store, prefix);
  if (paths.length === 0) throw conflict('export_missing', 'the export package is no longer in storage', { exportId: row.id });
  const archive = await archiveOf(store, prefix, paths, row.id, row.created_at);
  const rel = `exports/${row.id}.tar`;
  try {
    await archive.place(rel, { replace: true });
    await ctx.db.tx(async () => {
      await assertProjectWritable(ctx.db, row.project_id);
      if ((await setExportArchive(ctx.db, row.id, rel, archive.sha256)).changes === 0) return;
      await record(ctx, { action: 'export.archived', targetType: 'export', targetId: row.id, metadata: { deliveryId: row.delivery_id, archiveSha256: archive.sha256 } });
    });
  } catch (err) {
    // Rolled back: unless another request recorded it meanwhile, nothing records this archive.
    if (!(await exportInProject(ctx.db, row.project_id, row.id))?.archive_path) await quietly(store.delete(rel));
    throw err;
  } finally {
    await quietly(archive.discard());
  }
  return viewOf(ctx, (await exportInProject(ctx.db, row.project_id, row.id))!);
}

/** The row with its manifest as stored, and whether the manifest still has the recorded SHA-256. */
async function viewOf(ctx: Ctx, row: ExportRow): Promise<Omit<ExportView, 'created'>> {
  try {
    const bytes = await ctx.storage.readBytes(`${row.storage_path}/manifest.json`);
    const intact = sha256Hex(bytes) === row.manifest_sha256;
    return { row, manifest: JSON.parse(bytes.toString('utf8')), manifestIntact: intact };
  } catch {
    return { row, manifest: null, manifestIntact: false };
  }
}

/** The export of the current project, or 404. */
export async function exportRow(ctx: Ctx, exportId: string): Promise<ExportRow> {
  const row = await exportInProject(ctx.db, ctx.scope.projectId!, exportId);
  if (!row) throw notFound('no such export in this project');
  return row;
}

export async function getExport(ctx: Ctx, exportId: string): Promise<Omit<ExportView, 'created'>> {
  return viewOf(ctx, await exportRow(ctx, exportId));
}

export async function listExports(ctx: Ctx, q: Infer<typeof ExportListQuery>) {
  const { page, pageSize, offset } = pageWindow(q.page, q.pageSize);
  const { rows, total } = await exportsOfProject(ctx.db, ctx.scope.projectId!, { deliveryId: q.deliveryId ?? null, limit: pageSize, offset });
  return { rows, pagination: { page, pageSize, total } };
}
