// Client delivery links, the client's side (no account). The link is found by the token's hash (the
// UNIQUE index: one lookup, no comparison of secrets) and answers the same 401 for an unknown,
// revoked or expired token, for a delivery that is no longer approved, and while the
// client_delivery_links flag is off for the delivery's organization (a kill switch). Files are served
// only while their bytes still hash to the approved SHA-256 (else 410 delivery_file_changed); a
// successful check is remembered until the file's stat changes, so a player's range requests do not
// hash the whole file again. Each download that starts at byte 0 is counted and audited (link id,
// artifact id; never the token). A link made with includeExport also opens the export package.
import { mapSeq } from '../../kernel/seq.ts';
import { featureEnabled } from '../../platform/flags/flags.ts';
import { VerifiedFiles } from '../../kernel/storage/verify.ts';
import path from 'node:path';
import type { IncomingMessage } from 'node:http';
import type { Reply } from '../../http/router.ts';
import { packageDownload, packageFiles, packageReply } from '../export/download.ts';
import { exportOfVersion, type ExportRow } from '../export/store.ts';
import type { Ctx } from '../../directory/context.ts';
import { AppError, notFound } from '../../kernel/errors.ts';
import { sha256Hex } from '../../kernel/ids.ts';
import { record } from '../../platform/audit/service.ts';
import { artifactInProject, type ArtifactRow } from '../../generation/media/store.ts';
import { episodeById, shotById } from '../../production/catalog/store.ts';
import { projectById } from '../../directory/tenancy/store.ts';
import { changedOnDisk } from '../delivery/gather.ts';
import type { Out } from '../../kernel/view.ts';
import type { ClientManifestView } from '../delivery/present.ts';
import { deliveryById, deliveryItems, linkByTokenHash, touchLink, type DeliveryItemRow, type DeliveryLinkRow, type DeliveryRow } from '../delivery/store.ts';

const invalidLink = () => new AppError(401, 'delivery_link_invalid', 'the delivery link is unknown, revoked or expired');

export interface ClientAccess { link: DeliveryLinkRow; delivery: DeliveryRow }

/**
 * The link and approved delivery a token opens, or 401 delivery_link_invalid (one answer for every
 * reason, the flag client_delivery_links turned off for the organization included).
 */
export async function accessOfToken(ctx: Ctx, token: string | null | undefined): Promise<ClientAccess> {
  if (!token) throw invalidLink();
  const link = await linkByTokenHash(ctx.db, sha256Hex(token));
  if (!link || link.revoked_at || Date.parse(link.expires_at) <= ctx.now().getTime()) throw invalidLink();
  const delivery = await deliveryById(ctx.db, link.delivery_id);
  if (!delivery || delivery.status !== 'approved') throw invalidLink();
  if (!await featureEnabled(ctx.db, 'client_delivery_links', delivery.organization_id)) throw invalidLink();
  return { link, delivery };
}

/** The name a delivered file is offered under: position, episode (and shot), kind, extension. */
async function fileNameOf(ctx: Ctx, item: DeliveryItemRow, a: ArtifactRow | undefined): Promise<string> {
  const ext = a ? path.extname(a.file_name) : '';
  const episode = item.episode_id ? await episodeById(ctx.db, a?.project_id ?? '', item.episode_id) : undefined;
  const shot = item.shot_id ? await shotById(ctx.db, a?.project_id ?? '', item.shot_id) : undefined;
  const parts = [String(item.position).padStart(2, '0')];
  if (episode) parts.push(`episode-${episode.number}`);
  if (shot) parts.push(`shot-${shot.position}`);
  parts.push(a?.source === 'composition' ? 'cut' : a?.kind ?? 'file');
  return `${parts.join('-')}${ext}`;
}

const downloadPath = (position: number) => `/api/client/delivery/files/${position}`;

/**
 * A client path with the link's token in the query (`?token=`, the same for every file): it opens
 * without any header, in a browser, a <video> or curl. The query string is never logged, and every
 * client answer carries Referrer-Policy: no-referrer, so the token is not passed on.
 */
export const withToken = (p: string, token: string) => `${p}${p.includes('?') ? '&' : '?'}token=${encodeURIComponent(token)}`;

/** The export package of the delivery's version, when the link includes it and it was written; else undefined. */
async function exportOfLink(ctx: Ctx, access: ClientAccess): Promise<ExportRow | undefined> {
  if (access.link.allow_export !== 1) return undefined;
  return await exportOfVersion(ctx.db, access.delivery.project_id, access.delivery.id, access.delivery.version);
}

/** The export package as the client manifest shows it: the archive and every file, each with its size, SHA-256 and href. */
async function clientExport(ctx: Ctx, row: ExportRow, token: string) {
  const files = await packageFiles(ctx.storage, row);
  let archiveSize: number | null = null;
  try {
    archiveSize = row.archive_path ? (await ctx.storage.stat(row.archive_path))?.size ?? null : null;
  } catch { /* an unsafe key: its download answers 410 */ }
  return {
    id: row.id, createdAt: row.created_at,
    archive: row.archive_path ? { name: `${row.id}.tar`, size: archiveSize, sha256: row.archive_sha256, href: withToken(CLIENT_EXPORT_ARCHIVE, token) } : null,
    files: files ? [...files].map(([p, f]) => ({ path: p, role: f.role, size: f.size ?? null, sha256: f.sha256, href: withToken(CLIENT_EXPORT_FILE, token).concat(`&path=${encodeURIComponent(p)}`) })) : [],
  };
}

const CLIENT_EXPORT_ARCHIVE = '/api/client/delivery/export/archive';
const CLIENT_EXPORT_FILE = '/api/client/delivery/export/file';

/**
 * The manifest a link opens: the delivery's title and its approved files (name, size, SHA-256,
 * download path, and href: the path with the token), and `export` (the package, when the link
 * includes it and it was written; else null).
 */
export async function clientManifest(ctx: Ctx, access: ClientAccess, token: string): Promise<Out<typeof ClientManifestView>> {
  const { link, delivery: d } = access;
  await ctx.db.tx(() => touchLink(ctx.db, link.id, ctx.now().toISOString(), false));
  const project = (await projectById(ctx.db, d.project_id))!;
  const exp = await exportOfLink(ctx, access);
  return {
    title: d.title, version: d.version, project: project.name, approvedAt: d.approved_at, expiresAt: link.expires_at,
    files: await mapSeq(await deliveryItems(ctx.db, d.id), async (item) => {
      const a = await artifactInProject(ctx.db, d.project_id, item.artifact_id);
      return {
        position: item.position, name: await fileNameOf(ctx, item, a), kind: a?.kind ?? null, mimeType: a?.mime_type ?? null,
        size: a?.file_size ?? null, sha256: item.artifact_sha256, durationMs: a?.duration_ms ?? null, downloadPath: downloadPath(item.position),
        href: withToken(downloadPath(item.position), token),
      };
    }),
    export: exp ? await clientExport(ctx, exp, token) : null,
  };
}

/**
 * The export package a link opens (404 when the link was made without includeExport or no package
 * of the delivery's version was written yet), and the download of its archive (`packagePath` null)
 * or one of its files; counted on the link and audited once (export.downloaded, via the link).
 */
export async function clientExportReply(ctx: Ctx, req: IncomingMessage, access: ClientAccess, packagePath: string | null): Promise<Reply> {
  if (access.link.allow_export !== 1) throw notFound('this delivery link does not include the export package');
  const row = await exportOfLink(ctx, access);
  if (!row) throw notFound('no export package of this delivery has been written yet');
  const d = await packageDownload(ctx.storage, row, packagePath);
  return packageReply(ctx, req, row, d, { linkId: access.link.id, actorName: linkActorName(access.link) });
}

const linkActorName = (link: DeliveryLinkRow) => `delivery link ${link.label ?? link.id}`;

export interface ClientFile { item: DeliveryItemRow; artifact: ArtifactRow; name: string }

/** Files verified for client downloads (process-wide, the newest 256). */
const verifiedDownloads = new VerifiedFiles(256);

/**
 * The approved file at a position, checked on disk against its approved SHA-256 (410 when it changed
 * or is gone); hashed again only when the file's stat changed since its last successful check.
 */
export async function clientFile(ctx: Ctx, access: ClientAccess, position: string): Promise<ClientFile> {
  const n = /^[1-9]\d{0,5}$/.test(position) ? Number(position) : NaN;
  const item = (await deliveryItems(ctx.db, access.delivery.id)).find((i) => i.position === n);
  if (!item) throw notFound('the delivery has no file at that position');
  const artifact = await artifactInProject(ctx.db, access.delivery.project_id, item.artifact_id);
  const changed = await changedOnDisk(ctx.storage, artifact, item.artifact_sha256, verifiedDownloads);
  if (changed || !artifact) {
    throw new AppError(410, 'delivery_file_changed', `the approved file is no longer available: ${changed ?? 'missing'}`, { position: item.position });
  }
  return { item, artifact, name: await fileNameOf(ctx, item, artifact) };
}

/** Counts and audits a download (the caller decides it counts: a whole file or a range from byte 0). */
export async function recordDownload(ctx: Ctx, access: ClientAccess, f: ClientFile, range: string | null): Promise<void> {
  const { link, delivery: d } = access;
  await ctx.db.tx(async () => {
    await touchLink(ctx.db, link.id, ctx.now().toISOString(), true);
    await record(ctx, {
      action: 'delivery.downloaded', targetType: 'delivery', targetId: d.id,
      organizationId: d.organization_id, workspaceId: d.workspace_id, projectId: d.project_id,
      actorName: linkActorName(link),
      metadata: { linkId: link.id, artifactId: f.artifact.id, position: f.item.position, sha256: f.item.artifact_sha256, range },
    });
  });
}
