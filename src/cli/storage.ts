// svc storage preview|reclaim: the same cleanup preview and reclaim as
// GET /api/system/storage/cleanup-preview and POST /api/system/storage/reclaim, as the local operator
// (the reclaim writes the same system.storage.reclaimed audit record).
import type { Argv } from 'yargs';
import { parse } from '../kernel/validate.ts';
import { CleanupPreviewQuery, ReclaimBody, previewCleanup, reclaimStorage } from '../system/storage.ts';
import { output, sharedOptions, withOperator, type SharedArgs } from './common.ts';

interface StorageArgs extends SharedArgs { olderThanDays?: number; path?: string[] }

const olderThanDaysOption = {
  type: 'number', requiresArg: true,
  describe: 'files modified more than this many days ago (default SVC_STORAGE_RETENTION_DAYS; tmp/ files younger than the retention are never included)',
} as const;

const preview = {
  command: 'preview',
  describe: 'list unreferenced files in outputs/, frames/, tmp/, cache/ older than the retention period',
  builder: (y: Argv) => sharedOptions(y).option('older-than-days', olderThanDaysOption),
  handler: async (args: StorageArgs) => {
    const q = parse(CleanupPreviewQuery, { olderThanDays: args.olderThanDays });
    const p = await withOperator(args, (ctx) => previewCleanup(ctx, q.olderThanDays));
    output(args, p, [
      ...p.candidates.map((c) => `${c.path}  ${c.bytes} bytes  modified ${c.modifiedAt}`),
      `${p.count} candidate file(s), ${p.estimatedBytes} bytes, older than ${p.olderThanDays} day(s)`,
    ]);
  },
};

const reclaim = {
  command: 'reclaim',
  describe: 'delete every cleanup candidate, or only the given paths that are candidates now',
  builder: (y: Argv) => sharedOptions(y)
    .option('path', { type: 'string', array: true, requiresArg: true, describe: 'a path relative to the storage root (repeatable); without it every candidate is deleted' })
    .option('older-than-days', olderThanDaysOption),
  handler: async (args: StorageArgs) => {
    const input = parse(ReclaimBody, { paths: args.path?.map(String), olderThanDays: args.olderThanDays });
    const r = await withOperator(args, (ctx) => reclaimStorage(ctx, input));
    output(args, r, [
      ...r.deleted.map((d) => `deleted ${d.path} (${d.bytes} bytes)`),
      ...r.skipped.map((s) => `skipped ${s.path}: ${s.reason}`),
      `deleted ${r.deleted.length} file(s), freed ${r.freedBytes} bytes; skipped ${r.skipped.length}; removed ${r.removedDirectories} empty director${r.removedDirectories === 1 ? 'y' : 'ies'}`,
    ]);
  },
};

export const storageCommand = {
  command: 'storage <command>',
  describe: 'preview and reclaim unreferenced storage files',
  builder: (y: Argv) => y.command(preview).command(reclaim).demandCommand(1),
  handler: () => {},
};
