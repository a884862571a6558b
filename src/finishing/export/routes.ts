// Export packages of the current project's approved deliveries: write (delivery:approve), list and
// read with the manifest, download the archive or any file of the package (delivery:view). Writing on an archived project is 409 project_archived
// (the router's guard); an unapproved delivery 409 delivery_not_approved; a delivered file missing or
// changed on disk 409 export_source_missing / export_source_changed, with nothing left behind.
import { json, type Router } from '../../http/router.ts';
import { DOWNLOAD_REDIRECT } from '../delivery/serve.ts';
import { PACKAGE_FILE_TYPES, packageDownload, packageReply } from './download.ts';
import * as o from '../../kernel/view.ts';
import { ExportDetailView, ExportView as ExportItemView, presentExport } from './present.ts';
import { ExportFileQuery, ExportListQuery, ExportWriteBody } from './schema.ts';
import { exportRow, getExport, listExports, writeExport, type ExportView } from './service.ts';

const view = (v: Omit<ExportView, 'created'>): o.Out<typeof ExportDetailView> => ({ ...presentExport(v.row), manifestIntact: v.manifestIntact, manifest: v.manifest });

export function bindExportRoutes(router: Router): void {
  const r = router.module(import.meta.url);
  const base = { tags: ['exports'], scope: 'project' as const };

  r.post('/api/exports/write', {
    ...base, permission: 'delivery:approve', body: ExportWriteBody,
    summary: 'Writes the export package of an approved delivery into storage/exports/<id>/ (media, frames, manifest.json, shotlist.csv, subtitles/*.srt, timeline/*.otio and *.edl), optionally a .tar; one per delivery version (a repeat answers 200 with the same export).',
    response: { status: 201, also: [200], description: 'the export with its manifest (200 when this delivery version was already exported)', schema: ExportDetailView },
  }, async ({ ctx, body }) => {
    const v = await writeExport(ctx, body);
    return json(v.created ? 201 : 200, view(v));
  });

  r.get('/api/exports', {
    ...base, permission: 'delivery:view', query: ExportListQuery,
    summary: 'Export packages of the current project, newest first; filter deliveryId; page, pageSize (default 50, at most 200).',
    response: { description: 'a page of export packages', schema: o.page(ExportItemView) },
  }, async ({ ctx, query }) => {
    const { rows, pagination } = await listExports(ctx, query);
    return json(200, { items: rows.map(presentExport), pagination });
  });

  r.get('/api/exports/:exportId', { ...base, permission: 'delivery:view', summary: 'One export package with its manifest (as stored) and whether the manifest still has its recorded SHA-256.',
    response: { description: 'the export with its manifest', schema: ExportDetailView } },
    async ({ ctx, params }) => json(200, view(await getExport(ctx, params.exportId))));

  const download = { ...base, permission: 'delivery:view' as const };
  r.get('/api/exports/:exportId/archive', {
    ...download,
    summary: 'Download the package\'s .tar (an attachment): Content-Length, ETag = its SHA-256, Range (206, 416), If-None-Match (304). 404 when the export has no archive; 410 export_file_changed when its bytes no longer hash to the recorded SHA-256. Each download (the whole file or a range from byte 0) is audited as export.downloaded.',
    response: { description: 'the archive\'s bytes', type: 'application/x-tar', redirect: DOWNLOAD_REDIRECT },
  }, async ({ ctx, req, params }) => {
    const row = await exportRow(ctx, params.exportId);
    return packageReply(ctx, req, row, await packageDownload(ctx.storage, row, null), null);
  });

  r.get('/api/exports/:exportId/file', {
    ...download, query: ExportFileQuery,
    summary: 'Download one file of the package by its path in the manifest (?path=media/01-E01-cut.mp4, manifest.json): Content-Length, ETag = its SHA-256, Range (206, 416), If-None-Match (304). 404 for a path the manifest does not list; 410 export_file_changed when the file (or the manifest) no longer hashes to its recorded SHA-256. Audited as export.downloaded.',
    response: { description: 'the file\'s bytes (Content-Type from its extension)', type: PACKAGE_FILE_TYPES, redirect: DOWNLOAD_REDIRECT },
  }, async ({ ctx, req, params, query }) => {
    const row = await exportRow(ctx, params.exportId);
    return packageReply(ctx, req, row, await packageDownload(ctx.storage, row, query.path), null);
  });
}
