// svc storage preview|reclaim: the same cleanup preview and reclaim as
// GET /api/system/storage/cleanup-preview and POST /api/system/storage/reclaim, as the local operator
// (the reclaim writes the same system.storage.reclaimed audit record). svc storage migrate --to
// s3|local: copies every referenced object of the active store to the other driver's store
// (src/system/storage-migrate.ts), never touching the source.
import path from 'node:path';
import type { Argv } from 'yargs';
import type { Config } from '../kernel/config.ts';
import { LocalStore } from '../kernel/storage/local.ts';
import { createStore } from '../kernel/storage/index.ts';
import type { ObjectStore, StorageDriver } from '../kernel/storage/store.ts';
import { parse } from '../kernel/validate.ts';
import { record } from '../platform/audit/service.ts';
import { AUDIT_PATHS_KEPT, CleanupPreviewQuery, ReclaimBody, previewCleanup, reclaimStorage } from '../system/storage.ts';
import { migrateStorage } from '../system/storage-migrate.ts';
import { CliError } from './errors.ts';
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
      ...(p.incompleteUploads ?? []).map((u) => `${u.key}  incomplete upload ${u.uploadId}  begun ${u.initiatedAt}`),
      `${p.count} candidate file(s), ${p.estimatedBytes} bytes, older than ${p.olderThanDays} day(s)`
        + (p.incompleteUploads ? `; ${p.incompleteUploads.length} incomplete upload(s) to abort` : ''),
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
      ...(r.abortedUploads ?? []).map((u) => `aborted the incomplete upload ${u.uploadId} of ${u.key}`),
      `deleted ${r.deleted.length} file(s), freed ${r.freedBytes} bytes; skipped ${r.skipped.length}; removed ${r.removedDirectories} empty director${r.removedDirectories === 1 ? 'y' : 'ies'}`,
    ]);
  },
};

interface MigrateArgs extends SharedArgs { to: StorageDriver; toStorageDir?: string }

/** The store of the driver to move to: the SVC_S3_* bucket, or a local one at --to-storage-dir (by default SVC_STORAGE_DIR). */
function targetStore(config: Config, args: MigrateArgs): ObjectStore {
  if (args.to === 'local') return args.toStorageDir ? new LocalStore(path.resolve(args.toStorageDir)) : createStore(config, 'local');
  if (args.toStorageDir) throw new CliError('validation_failed', '--to-storage-dir goes with --to local only');
  try {
    return createStore(config, 's3');
  } catch (err) {
    throw new CliError('validation_failed', `--to s3: ${(err as Error).message}`);
  }
}

/** Closes a store's connections when its driver keeps any (s3), so the command can exit. */
async function closeStore(store: ObjectStore): Promise<void> {
  const closable = store as ObjectStore & { close?: () => Promise<void> };
  if (typeof closable.close === 'function') await closable.close();
}

const migrateCmd = {
  command: 'migrate',
  describe: 'copy every referenced object to the other storage driver, verifying each SHA-256 (resumable; the source is only read)',
  builder: (y: Argv) => sharedOptions(y)
    .option('to', { choices: ['s3', 'local'] as const, demandOption: true, describe: 'the driver to copy to (its SVC_S3_* settings, or the local folder)' })
    .option('to-storage-dir', { type: 'string', requiresArg: true, describe: 'with --to local: the folder to copy to (default SVC_STORAGE_DIR)' }),
  handler: async (args: MigrateArgs) => {
    const s = await withOperator(args, async (ctx) => {
      const target = targetStore(ctx.config, args);
      try {
        const summary = await migrateStorage(ctx.db, ctx.storage, target, (step, done, total) => {
          if (args.json || step.outcome === 'present') return;
          process.stdout.write(`[${done}/${total}] ${step.outcome} ${step.key}${step.outcome === 'copied' ? ` (${step.bytes} bytes)` : step.reason ? `: ${step.reason}` : ''}\n`);
        });
        await record(ctx, {
          action: 'system.storage.migrated', targetType: 'storage', targetId: 'storage', organizationId: null, workspaceId: null, projectId: null,
          metadata: {
            from: summary.from, to: summary.to, objects: summary.objects, copied: summary.copied, present: summary.present, bytesCopied: summary.bytesCopied,
            missingCount: summary.missing.length, failedCount: summary.failed.length,
            missing: summary.missing.slice(0, AUDIT_PATHS_KEPT), failed: summary.failed.slice(0, AUDIT_PATHS_KEPT).map((f) => f.key),
          },
        });
        return summary;
      } finally {
        await closeStore(target);
        await closeStore(ctx.storage);
      }
    });
    output(args, s, [
      `${s.objects} object(s) from ${s.from.driver} ${s.from.location} to ${s.to.driver} ${s.to.location}: ${s.copied} copied (${s.bytesCopied} bytes), `
        + `${s.present} already there, ${s.missing.length} missing at the source, ${s.failed.length} failed`,
      ...(s.failed.length ? [] : [`switch SVC_STORAGE_DRIVER to ${s.to.driver} when ready (the ${s.from.driver} store was not changed)`]),
    ]);
    if (s.failed.length) process.exitCode = 1;
  },
};

export const storageCommand = {
  command: 'storage <command>',
  describe: 'preview and reclaim unreferenced storage files; migrate to the other storage driver',
  builder: (y: Argv) => y.command(preview).command(reclaim).command(migrateCmd).demandCommand(1),
  handler: () => {},
};
