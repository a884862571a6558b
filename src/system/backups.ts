// Database snapshots, into data/backups/. On SQLite: VACUUM INTO a new file
// svc-<UTC YYYYMMDDTHHMMSSmmmZ>.db. The copy
// is written by a separate read-only connection (one read transaction, so one consistent snapshot
// while the service and the worker thread keep committing; WAL lets readers and the writer run side
// by side), to a temporary name in the same folder, then checked (PRAGMA integrity_check on the copy
// opened read-only), stream-hashed (SHA-256) and renamed into place. Its row in system_backups, the
// audit record and the retention (newest SVC_BACKUP_RETENTION kept; older files and rows removed)
// follow in one transaction. On PostgreSQL: pg_dump's custom format (one REPEATABLE READ snapshot of
// the whole database) into svc-<stamp>.dump, checked by pg_restore --list reading its table of
// contents, then hashed, renamed and recorded the same way (the password reaches pg_dump through its
// environment, never its command line). There is no online restore: docs/operations.md#snapshots
// describes the offline one.
import fs from 'node:fs';
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import { DatabaseSync } from 'node:sqlite';
import { execFile } from 'node:child_process';
import { SqliteDb } from '../db/db.ts';
import type { Ctx } from '../directory/context.ts';
import { record } from '../platform/audit/service.ts';
import { AppError, requireSystemAdmin } from '../kernel/errors.ts';
import * as o from '../kernel/view.ts';
import { newId } from '../kernel/ids.ts';

export const BackupView = o.named('Backup', o.object({
  id: o.text(),
  fileName: o.text(),
  path: o.text({ description: 'absolute path of the snapshot file on the server' }),
  sizeBytes: o.int(),
  sha256: o.text({ description: 'SHA-256 of the file, hex' }),
  integrity: o.text({ description: 'the result of the snapshot\'s integrity check (ok): PRAGMA integrity_check on SQLite, pg_restore --list on PostgreSQL' }),
  createdBy: o.nullable(o.text()),
  createdAt: o.time(),
}, 'a database snapshot'));
export type BackupRecord = o.Out<typeof BackupView>;

interface BackupRow { id: string; file_name: string; size_bytes: number; sha256: string; integrity: string; created_by: string | null; created_at: string }

const FILE_NAME = /^svc-\d{8}T\d{9}Z\.(?:db|dump)$/;

function present(ctx: Ctx, r: BackupRow): BackupRecord {
  return {
    id: r.id, fileName: r.file_name, path: path.join(ctx.config.backupsDir, r.file_name), sizeBytes: Number(r.size_bytes),
    sha256: r.sha256, integrity: r.integrity, createdBy: r.created_by, createdAt: r.created_at,
  };
}

/** svc-20260101T000000000Z.db for 2026-01-01T00:00:00.000Z (.dump on PostgreSQL). */
export function backupFileName(at: Date, engine: 'sqlite' | 'postgres' = 'sqlite'): string {
  return `svc-${at.toISOString().replace(/[-:.]/g, '')}.${engine === 'postgres' ? 'dump' : 'db'}`;
}

/** The snapshots recorded in this database, newest first. */
export async function listBackups(ctx: Ctx): Promise<BackupRecord[]> {
  requireSystemAdmin(ctx);
  return (await ctx.db.all<BackupRow>('SELECT * FROM system_backups ORDER BY created_at DESC, file_name DESC')).map((r) => present(ctx, r));
}

async function sha256OfFile(file: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(fs.createReadStream(file), hash);
  return hash.digest('hex');
}

function integrityOf(file: string): string {
  const copy = new DatabaseSync(file, { readOnly: true });
  try {
    return copy.prepare('PRAGMA integrity_check').all().map((r) => String((r as { integrity_check: unknown }).integrity_check)).join('; ');
  } finally {
    copy.close();
  }
}

function removeQuietly(file: string): void {
  try {
    fs.rmSync(file, { force: true });
  } catch { /* already gone or not removable: nothing more to do */ }
}

/** Writes the SQLite snapshot to `tmpPath` (VACUUM INTO, on a read-only connection of its own) and answers its integrity_check. */
function sqliteSnapshot(file: string, tmpPath: string): Promise<string> {
  if (file === ':memory:') throw new AppError(500, 'backup_failed', 'an in-memory database cannot be snapshotted');
  const reader = new DatabaseSync(file, { readOnly: true });
  try {
    reader.exec('PRAGMA busy_timeout = 5000');
    reader.prepare('VACUUM INTO ?').run(tmpPath);
  } catch (err) {
    throw new AppError(500, 'backup_failed', `the database snapshot could not be written: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    reader.close();
  }
  try {
    return Promise.resolve(integrityOf(tmpPath));
  } catch (err) {
    return Promise.resolve(`unreadable: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Runs a PostgreSQL client tool; its error output (never the password: it is in PGPASSWORD) in the failure. */
function pgTool(tool: 'pg_dump' | 'pg_restore', args: string[], password: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(tool, args, { env: { ...process.env, PGPASSWORD: password }, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${tool}: ${(stderr || err.message).trim().slice(0, 500)}`));
      else resolve(stdout);
    });
  });
}

/** Writes pg_dump's custom format of the database to `tmpPath` and answers 'ok' when pg_restore reads its table of contents. */
async function postgresSnapshot(config: Ctx['config'], tmpPath: string): Promise<string> {
  const url = new URL(config.postgresUrl);
  const password = decodeURIComponent(url.password);
  url.password = '';
  try {
    await pgTool('pg_dump', ['--format=custom', '--no-owner', '--no-privileges', `--file=${tmpPath}`, `--dbname=${url.toString()}`], password);
  } catch (err) {
    throw new AppError(500, 'backup_failed', `the database snapshot could not be written: ${(err as Error).message}`);
  }
  try {
    const toc = await pgTool('pg_restore', ['--list', tmpPath], '');
    return /TABLE DATA/.test(toc) ? 'ok' : 'the dump holds no table data';
  } catch (err) {
    return `unreadable: ${(err as Error).message}`;
  }
}

export async function createBackup(ctx: Ctx): Promise<BackupRecord> {
  requireSystemAdmin(ctx);
  const dir = ctx.config.backupsDir;
  fs.mkdirSync(dir, { recursive: true });
  // A later millisecond when the name is taken (two snapshots within one millisecond).
  let at = ctx.now();
  while (fs.existsSync(path.join(dir, backupFileName(at, ctx.db.engine)))) at = new Date(at.getTime() + 1);
  const fileName = backupFileName(at, ctx.db.engine);
  const finalPath = path.join(dir, fileName);
  const tmpPath = path.join(dir, `.${fileName}.${randomBytes(6).toString('hex')}.tmp`);

  let integrity: string;
  try {
    integrity = ctx.db instanceof SqliteDb ? await sqliteSnapshot(ctx.db.path, tmpPath) : await postgresSnapshot(ctx.config, tmpPath);
  } catch (err) {
    removeQuietly(tmpPath);
    throw err;
  }
  if (integrity !== 'ok') {
    removeQuietly(tmpPath);
    throw new AppError(500, 'backup_failed', `the snapshot failed its integrity check (${integrity.slice(0, 500)}); it was deleted`);
  }
  let sha256: string;
  let sizeBytes: number;
  try {
    sha256 = await sha256OfFile(tmpPath);
    sizeBytes = fs.statSync(tmpPath).size;
    fs.renameSync(tmpPath, finalPath);
  } catch (err) {
    removeQuietly(tmpPath);
    throw new AppError(500, 'backup_failed', `the snapshot could not be finished: ${err instanceof Error ? err.message : String(err)}`);
  }

  const row: BackupRow = {
    id: newId('bkp'), file_name: fileName, size_bytes: sizeBytes, sha256, integrity,
    created_by: ctx.actor.userId ?? ctx.actor.name, created_at: ctx.now().toISOString(),
  };
  let expired: string[] = [];
  await ctx.db.tx(async () => {
    await ctx.db.run('INSERT INTO system_backups (id, file_name, size_bytes, sha256, integrity, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      row.id, row.file_name, row.size_bytes, row.sha256, row.integrity, row.created_by, row.created_at);
    await record(ctx, {
      action: 'system.database.backup_created', targetType: 'backup', targetId: row.id,
      organizationId: null, workspaceId: null, projectId: null,
      metadata: { fileName, sizeBytes, sha256 },
    });
    const old = await ctx.db.all<{ id: string; file_name: string }>(
      `SELECT id, file_name FROM system_backups WHERE id NOT IN (SELECT id FROM system_backups ORDER BY created_at DESC, file_name DESC LIMIT ?)
        ORDER BY created_at DESC, file_name DESC`, ctx.config.backupRetention);
    for (const o of old) await ctx.db.run('DELETE FROM system_backups WHERE id = ?', o.id);
    expired = old.map((o) => o.file_name);
  });
  for (const name of expired) {
    if (FILE_NAME.test(name)) removeQuietly(path.join(dir, name));
  }
  return present(ctx, row);
}
