// Downloading an export package: its archive (storage/exports/<id>.tar) or one file of its folder,
// named by its path in the manifest ("media/01-E01-cut.mp4", "manifest.json"). Only the files the
// recorded manifest lists are served (the manifest itself must still hash to the SHA-256 recorded
// with the export), and only while their bytes still hash to the SHA-256 the manifest (or the export
// row, for the archive and the manifest) records: otherwise 410 export_file_changed, never other
// bytes. A successful check is remembered until the file's stat changes, so a player's range
// requests do not hash the whole file again. The answer is deliveryReply()'s: on s3 a redirect to a
// short-lived signed URL, on local the bytes (Content-Length, ETag = the SHA-256, Range,
// If-None-Match); one audit record export.downloaded per download, counted before the redirect.
import path from 'node:path';
import type { IncomingMessage } from 'node:http';
import type { Ctx } from '../../directory/context.ts';
import { record } from '../../platform/audit/service.ts';
import type { StoredFile } from '../../http/content.ts';
import { VerifiedFiles } from '../../kernel/storage/verify.ts';
import type { ObjectStore } from '../../kernel/storage/store.ts';
import { verifyObject } from '../../kernel/storage/verify.ts';
import { AppError, notFound } from '../../kernel/errors.ts';
import type { Reply } from '../../http/router.ts';
import { sha256Hex } from '../../kernel/ids.ts';
import { deliveryReply } from '../delivery/serve.ts';
import { touchLink } from '../delivery/store.ts';
import type { ExportRow } from './store.ts';

/** How the archive is named in errors and audit records (a package path never is: it holds a "/" or ends in .json/.csv). */
export const ARCHIVE = 'archive';

const TYPES: Record<string, string> = {
  '.mp4': 'video/mp4', '.mov': 'video/quicktime', '.webm': 'video/webm', '.mkv': 'video/x-matroska',
  '.wav': 'audio/wav', '.mp3': 'audio/mpeg', '.m4a': 'audio/mp4', '.ogg': 'audio/ogg', '.flac': 'audio/flac',
  '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.webp': 'image/webp', '.gif': 'image/gif',
  '.json': 'application/json', '.otio': 'application/json', '.csv': 'text/csv; charset=utf-8',
  '.edl': 'text/plain; charset=utf-8', '.srt': 'application/x-subrip; charset=utf-8', '.tar': 'application/x-tar',
};

const typeOf = (p: string) => TYPES[path.extname(p).toLowerCase()] ?? 'application/octet-stream';

/** Every media type a package file may be served as (without parameters), for the OpenAPI document. */
export const PACKAGE_FILE_TYPES: readonly string[] = [...new Set([...Object.values(TYPES).map((t) => t.split(';')[0]), 'application/octet-stream'])];

/** Package files verified for downloads (process-wide, the newest 256). */
const verified = new VerifiedFiles(256);

const changed = (exportId: string, file: string, why: string) =>
  new AppError(410, 'export_file_changed', `the export's ${file} is no longer available: ${why}`, { exportId, file });

/** One file of a package: what deliveryReply() serves, and the package path it was asked by (or "archive"). */
export interface PackageDownload { file: StoredFile; name: string; archive: boolean }

export interface ListedFile { sha256: string; size?: number; role: string }

/** The manifest's files (path -> SHA-256, size, role; manifest.json first), read from the store and checked against the recorded SHA-256; 410 otherwise. */
async function listedFiles(store: ObjectStore, row: ExportRow): Promise<Map<string, ListedFile>> {
  let bytes: Buffer;
  try {
    bytes = await store.readBytes(`${row.storage_path}/manifest.json`);
  } catch {
    throw changed(row.id, 'manifest.json', 'the package is no longer in storage');
  }
  if (sha256Hex(bytes) !== row.manifest_sha256) throw changed(row.id, 'manifest.json', 'its bytes no longer match the recorded SHA-256');
  const files = new Map<string, ListedFile>([['manifest.json', { sha256: row.manifest_sha256, size: bytes.length, role: 'manifest' }]]);
  const manifest = JSON.parse(bytes.toString('utf8')) as { files?: Array<{ path: string; sha256: string; size: number; role: string }> };
  for (const f of manifest.files ?? []) files.set(f.path, { sha256: f.sha256, size: f.size, role: f.role });
  return files;
}

/** The files of a package (as listedFiles()), or null when its manifest is gone or changed. */
export async function packageFiles(store: ObjectStore, row: ExportRow): Promise<Map<string, ListedFile> | null> {
  try {
    return await listedFiles(store, row);
  } catch (err) {
    if (err instanceof AppError) return null;
    throw err;
  }
}

/**
 * The archive (`packagePath` null; 404 when the export was written without one) or a file the
 * package's manifest lists (404 for any other path), verified on disk (410 export_file_changed).
 */
export async function packageDownload(store: ObjectStore, row: ExportRow, packagePath: string | null): Promise<PackageDownload> {
  const name = packagePath ?? ARCHIVE;
  let rel: string;
  let expected: { sha256: string; size?: number };
  if (packagePath === null) {
    if (!row.archive_path || !row.archive_sha256) throw notFound('the export was written without an archive (write it again with archive: true)');
    rel = row.archive_path;
    expected = { sha256: row.archive_sha256 };
  } else {
    const listed = (await listedFiles(store, row)).get(name);
    if (!listed) throw notFound('the export package has no file at that path (see the manifest\u2019s files)');
    rel = `${row.storage_path}/${name}`;
    expected = listed;
  }
  const got = await verifyObject(store, rel, expected, verified);
  if (got.state !== 'ok') throw changed(row.id, name, got.state === 'missing' ? 'it is missing' : 'its bytes no longer match the recorded SHA-256');
  const fileName = packagePath === null ? `${row.id}.tar` : path.posix.basename(name);
  return { name, archive: packagePath === null, file: { storage_path: rel, content_sha256: expected.sha256, mime_type: typeOf(rel), file_name: fileName } };
}

/**
 * The answer for a package download (the archive as an attachment, a file inline; a redirect to a
 * signed URL on s3), with its one audit record export.downloaded when it is a download: export id,
 * delivery id, file, SHA-256, range, and `via` (the delivery link's id for a client, whose download
 * count it adds to; never a token).
 */
export async function packageReply(
  ctx: Ctx, req: IncomingMessage, row: ExportRow, d: PackageDownload, via: { linkId: string; actorName: string } | null,
): Promise<Reply> {
  const { reply, counts, range } = await deliveryReply(req, ctx.storage, d.file, d.archive ? 'attachment' : 'inline');
  if (counts) await ctx.db.tx(async () => {
    if (via) await touchLink(ctx.db, via.linkId, ctx.now().toISOString(), true);
    await record(ctx, {
      action: 'export.downloaded', targetType: 'export', targetId: row.id,
      organizationId: row.organization_id, workspaceId: row.workspace_id, projectId: row.project_id,
      ...(via ? { actorName: via.actorName } : {}),
      metadata: { deliveryId: row.delivery_id, file: d.name, sha256: d.file.content_sha256, range, linkId: via?.linkId ?? null },
    });
  });
  return reply;
}
