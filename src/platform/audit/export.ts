// The audit export: the scoped rows of a snapshot cursor (store.ts) streamed as CSV or a JSON array
// by the kernel's export streams (src/kernel/export-stream.ts).
import type { Readable } from 'node:stream';
import { csvText, jsonArrayText, recordStream, type ExportFormat } from '../../kernel/export-stream.ts';
import type { RowCursor } from '../../db/cursor.ts';
import { CSV_HEADER, csvLine, presentAudit } from './present.ts';
import type { AuditRow } from './store.ts';

export const exportStream = (cursor: RowCursor<AuditRow>, format: ExportFormat): Readable =>
  recordStream(cursor, format === 'csv' ? csvText(CSV_HEADER, csvLine) : jsonArrayText(presentAudit));
