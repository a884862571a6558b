// Bodies and queries of the export routes.
import * as v from '../../kernel/validate.ts';

const id = v.string({ min: 1, max: 64 });

export const ExportWriteBody = v.object({
  deliveryId: id,
  archive: v.optional(v.boolean({ description: 'also write storage/exports/<id>.tar (POSIX ustar) with its SHA-256' })),
});

export const ExportListQuery = v.object({
  deliveryId: v.optional(id),
  page: v.optional(v.int({ min: 1, description: 'page number from 1' })),
  pageSize: v.optional(v.int({ min: 1, max: 200, description: 'items per page, default 50' })),
}, { allowUnknown: true });

export const ExportFileQuery = v.object({
  path: v.string({ min: 1, max: 300, description: 'the file\'s path in the package, as the manifest lists it ("media/01-E01-cut.mp4", "manifest.json")' }),
}, { allowUnknown: true });
