// Export packages of the current project's approved deliveries: write (delivery:approve), list and
// read with the manifest (delivery:view). Writing on an archived project is 409 project_archived
// (the router's guard); an unapproved delivery 409 delivery_not_approved; a delivered file missing or
// changed on disk 409 export_source_missing / export_source_changed, with nothing left behind.
import { json, type Router } from '../http/router.ts';
import { presentExport } from './present.ts';
import { ExportListQuery, ExportWriteBody } from './schema.ts';
import { getExport, listExports, writeExport, type ExportView } from './service.ts';

const view = (v: Omit<ExportView, 'created'>) => ({ ...presentExport(v.row), manifestIntact: v.manifestIntact, manifest: v.manifest });

export function bindExportRoutes(r: Router): void {
  const base = { tags: ['exports'], scope: 'project' as const };

  r.post('/api/exports/write', {
    ...base, permission: 'delivery:approve', body: ExportWriteBody,
    summary: 'Writes the export package of an approved delivery into storage/exports/<id>/ (media, frames, manifest.json, shotlist.csv, subtitles/*.srt, timeline/*.otio and *.edl), optionally a .tar; one per delivery version (a repeat answers 200 with the same export).',
    response: { status: 201, description: 'the export with its manifest (200 when this delivery version was already exported)' },
  }, async ({ ctx, body }) => {
    const v = await writeExport(ctx, body);
    return json(v.created ? 201 : 200, view(v));
  });

  r.get('/api/exports', {
    ...base, permission: 'delivery:view', query: ExportListQuery,
    summary: 'Export packages of the current project, newest first; filter deliveryId; page, pageSize (default 50, at most 200).',
  }, ({ ctx, query }) => {
    const { rows, pagination } = listExports(ctx, query);
    return json(200, { items: rows.map(presentExport), pagination });
  });

  r.get('/api/exports/:exportId', { ...base, permission: 'delivery:view', summary: 'One export package with its manifest (as stored) and whether the manifest still has its recorded SHA-256.' },
    ({ ctx, params }) => json(200, view(getExport(ctx, params.exportId))));
}
