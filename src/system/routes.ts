// Liveness, the API document, readiness, storage cleanup and database snapshots.
import { json, type Router } from '../http/router.ts';
import { buildOpenApi } from '../http/openapi.ts';
import { readiness } from './readiness.ts';
import { createBackup, listBackups } from './backups.ts';
import { CleanupPreviewQuery, ReclaimBody, previewCleanup, reclaimStorage } from './storage.ts';
import { configReport } from './config-report.ts';
import { systemHealth } from './health.ts';
import { identityOverview } from './identity.ts';
import { VERSION } from '../kernel/config.ts';
import * as o from '../kernel/view.ts';
import { ReadinessView } from './readiness.ts';
import { CleanupPreviewView, ReclaimResultView } from './storage.ts';
import { ConfigReportView } from './config-report.ts';
import { HealthView } from './health.ts';
import { IdentityOverviewView } from './identity.ts';
import { BackupView } from './backups.ts';

export function bindSystemRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  r.get('/api/health', { summary: 'Liveness: { status: "ok" }, no database detail.', tags: ['system'], auth: 'none', response: { description: 'the process answers', schema: o.object({ status: o.constant('ok') }) } },
    () => json(200, { status: 'ok' as const }));

  let doc: string | null = null;
  r.get('/api/openapi.json', { summary: 'This OpenAPI 3.1 document.', tags: ['system'], auth: 'none', response: { description: 'the OpenAPI document', schema: o.anyObject('an OpenAPI 3.1 document') } }, () => {
    doc ??= JSON.stringify(buildOpenApi(router, VERSION));
    return { status: 200, raw: doc, headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'public, max-age=60' } };
  });

  const admin = { tags: ['system'], systemAdmin: true, scope: 'none' as const };
  r.get('/api/system/readiness', {
    ...admin, summary: 'Active runtime versus target providers: Node, node:sqlite, the storage driver (local, or s3 when SVC_STORAGE_DRIVER=s3) and location, ffmpeg/ffprobe (path, source, version); PostgreSQL, Redis and S3 targets configured only by their PLATFORM_* variable, never active; status ready or degraded with problems.',
    response: { description: 'the readiness report', schema: ReadinessView },
  }, async ({ ctx }) => json(200, await readiness(ctx)));
  r.get('/api/system/storage/cleanup-preview', {
    ...admin, query: CleanupPreviewQuery, response: { description: 'the cleanup candidates', schema: CleanupPreviewView },
    summary: 'Unreferenced regular files in outputs/, frames/, tmp/, cache/ older than olderThanDays (default SVC_STORAGE_RETENTION_DAYS): { candidates: [{ path, bytes, modifiedAt, folder }], count, estimatedBytes, olderThanDays, retentionDays }.',
  }, async ({ ctx, query }) => json(200, await previewCleanup(ctx, query.olderThanDays)));
  r.post('/api/system/storage/reclaim', {
    ...admin, body: ReclaimBody,
    summary: 'Deletes every cleanup candidate, or the listed paths that are candidates now (others skipped: protected, not_found, too_recent, not_a_file, failed); 422 unsafe_path refuses the whole request. Audited as system.storage.reclaimed.',
    response: { description: '{ deleted: [{ path, bytes }], skipped: [{ path, reason }], freedBytes, removedDirectories, olderThanDays }', schema: ReclaimResultView },
  }, async ({ ctx, body }) => json(200, await reclaimStorage(ctx, body)));
  r.get('/api/system/config', {
    ...admin, summary: 'The effective configuration: { settings: [{ key, env, flag, source (default | env | flag), value, secret, set, default, description }], dbPath, backupsDir }; a secret shows only set: true|false, never its value.',
    response: { description: 'the effective configuration', schema: ConfigReportView },
  }, ({ ctx }) => json(200, configReport(ctx)));
  r.get('/api/system/health', {
    ...admin, response: { description: '{ status: ok | degraded | failing, checkedAt, probes: [{ name, status, latencyMs, message, details }], storage: { driver, location, status, latencyMs, message } }; 503 when failing', schema: HealthView },
    summary: 'Database-backed probes, each with status (ok | warn | fail) and latency: database write-and-read round trip, integrity-check age, WAL size, free disk, worker heartbeat, queue depth; and the active storage driver with a write, read and delete round trip (a failure: degraded). 200 ok or degraded, 503 failing.',
  }, async ({ ctx }) => {
    const h = await systemHealth(ctx);
    return json(h.status === 'failing' ? 503 : 200, h);
  });
  r.get('/api/system/identity', {
    ...admin, summary: 'The identity control plane: { policy, providers: { password, oidc, saml } (secrets only as references), directories (SCIM, token hints only), counts }.',
    response: { description: 'the identity overview', schema: IdentityOverviewView },
  }, async ({ ctx, req }) => json(200, await identityOverview(ctx, req)));
  r.get('/api/system/backups', {
    ...admin, summary: 'Database snapshots recorded in this database, newest first: { items: [{ id, fileName, path, sizeBytes, sha256, integrity, createdBy, createdAt }] }.',
    response: { description: 'the snapshots', schema: o.object({ items: o.array(BackupView) }) },
  }, async ({ ctx }) => json(200, { items: await listBackups(ctx) }));
  r.post('/api/system/backups', {
    ...admin, response: { status: 201, description: 'the snapshot record { id, fileName, path, sizeBytes, sha256, integrity, createdBy, createdAt }', schema: BackupView },
    summary: 'Takes a consistent snapshot of the database (SQLite: VACUUM INTO DATA_DIR/backups/svc-<UTC YYYYMMDDTHHMMSSmmmZ>.db, checked with PRAGMA integrity_check; PostgreSQL: pg_dump --format=custom into svc-<stamp>.dump, checked with pg_restore --list; else 500 backup_failed, nothing kept) and hashed (SHA-256); keeps the newest SVC_BACKUP_RETENTION snapshots. Audited as system.database.backup_created.',
  }, async ({ ctx }) => json(201, await createBackup(ctx)));
}
