// System health: database-backed probes, each with a status (ok | warn | fail), its latency and what
// it measured. The overall status is the worst probe's: ok, degraded (a warn) or failing (a fail).
//
//   database   a write and read round trip: a fresh nonce written to system_health_probe in its own
//              transaction, read back and compared (fail on any error or mismatch)
//   integrity  age of the newest snapshot whose PRAGMA integrity_check passed (every `svc backup` checks
//              its copy): warn when there is none or it is older than INTEGRITY_MAX_AGE_HOURS
//   wal        size of the write-ahead log file: warn above WAL_WARN_BYTES (checkpoints are not keeping up);
//              on PostgreSQL the server's WAL folder (pg_ls_waldir, which needs pg_monitor: without it the
//              probe says so and stays ok), warn above twice max_wal_size
//   disk       free bytes of the file systems of the data directory and the storage root: warn below
//              10 % or 1 GiB, fail below 100 MiB
//   worker     the job worker's heartbeat (src/generation/dispatch/status.ts): ok; paused warn; stale, stopped or
//              never started fail
//   queue      jobs by status; warn with the worker's queue alerts (oldest waiting, unclaimable)
//
// Beside the probes, `storage` names the active storage driver and its location and probes the store
// itself: a small object written under tmp/, read back, compared and deleted, with its latency. A
// failing store makes the health degraded (never failing: a 200, not a 503) and says why in one
// sentence without the driver's error text (which could carry an endpoint's answer or a credential).
import fs from 'node:fs';
import type { Ctx } from '../directory/context.ts';
import * as o from '../kernel/view.ts';
import { requireSystemAdmin } from '../kernel/errors.ts';
import { newToken } from '../kernel/ids.ts';
import { tempKey, type ObjectStore } from '../kernel/storage/store.ts';
import { workerStatus } from '../generation/dispatch/status.ts';

export const INTEGRITY_MAX_AGE_HOURS = 168;
export const WAL_WARN_BYTES = 256 * 1024 * 1024;
const GiB = 1024 ** 3;
const DISK_WARN_FRACTION = 0.1;
const DISK_FAIL_BYTES = 100 * 1024 * 1024;

export const PROBE_STATUSES = ['ok', 'warn', 'fail'] as const;
export type ProbeStatus = (typeof PROBE_STATUSES)[number];

export const ProbeView = o.named('HealthProbe', o.object({
  name: o.oneOf(['database', 'integrity', 'wal', 'disk', 'worker', 'queue']),
  status: o.oneOf(PROBE_STATUSES),
  latencyMs: o.number(),
  message: o.text(),
  details: o.anyObject('what the probe measured; the fields depend on the probe (see docs/operations.md#health)'),
}));
export type Probe = o.Out<typeof ProbeView>;

export const StorageHealthView = o.named('StorageHealth', o.object({
  driver: o.oneOf(['local', 's3'], 'SVC_STORAGE_DRIVER'),
  location: o.text({ description: 'the folder, or s3://bucket/prefix at its endpoint (never a credential)' }),
  status: o.oneOf(['ok', 'fail']),
  latencyMs: o.number('write, read back and delete of a small object under tmp/'),
  message: o.text(),
}, 'the active store and its round trip'));

export const HealthView = o.named('SystemHealth', o.object({
  status: o.oneOf(['ok', 'degraded', 'failing'], 'the worst probe\'s: ok, degraded (a warn) or failing (a fail); a failing storage round trip makes it at least degraded'),
  checkedAt: o.time(),
  probes: o.array(ProbeView),
  storage: StorageHealthView,
}));
export type Health = o.Out<typeof HealthView>;

type Measured = { status: ProbeStatus; message: string; details?: Record<string, unknown> };
type Measure = () => Measured | Promise<Measured>;

async function probe(name: Probe['name'], measure: Measure): Promise<Probe> {
  const started = performance.now();
  let r: Measured;
  try {
    r = await measure();
  } catch (err) {
    r = { status: 'fail', message: `${name} probe failed: ${(err as Error).message}` };
  }
  return { name, status: r.status, latencyMs: Math.round((performance.now() - started) * 1000) / 1000, message: r.message, details: r.details ?? {} };
}

function databaseProbe(ctx: Ctx): Measure {
  return async () => {
    const nonce = newToken(12);
    const at = ctx.now().toISOString();
    await ctx.db.tx(() => ctx.db.run(
      'INSERT INTO system_health_probe (id, nonce, written_at) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET nonce = excluded.nonce, written_at = excluded.written_at',
      nonce, at));
    const back = await ctx.db.get<{ nonce: string }>('SELECT nonce FROM system_health_probe WHERE id = 1');
    return back?.nonce === nonce
      ? { status: 'ok', message: 'write and read round trip' }
      : { status: 'fail', message: 'the value read back differs from the value written' };
  };
}

function integrityProbe(ctx: Ctx): Measure {
  return async () => {
    const last = await ctx.db.get<{ created_at: string; file_name: string }>(
      "SELECT created_at, file_name FROM system_backups WHERE integrity = 'ok' ORDER BY created_at DESC LIMIT 1");
    if (!last) return { status: 'warn', message: 'no integrity check has run yet: take a snapshot (svc backup)', details: { lastCheckedAt: null, ageHours: null } };
    const ageHours = Math.round(((ctx.now().getTime() - Date.parse(last.created_at)) / 3_600_000) * 10) / 10;
    const details = { lastCheckedAt: last.created_at, ageHours, snapshot: last.file_name, maxAgeHours: INTEGRITY_MAX_AGE_HOURS };
    return ageHours > INTEGRITY_MAX_AGE_HOURS
      ? { status: 'warn', message: `the last passing integrity check is ${ageHours} hours old`, details }
      : { status: 'ok', message: `integrity_check passed ${ageHours} hours ago`, details };
  };
}

function walProbe(ctx: Ctx): Measure {
  if (ctx.db.engine === 'postgres') return postgresWalProbe(ctx);
  return () => {
    let bytes = 0;
    try {
      bytes = fs.statSync(`${ctx.config.dbPath}-wal`).size;
    } catch { /* no WAL file: nothing pending */ }
    return walMeasured(bytes, WAL_WARN_BYTES);
  };
}

function walMeasured(bytes: number, warnAboveBytes: number): Measured {
  const details = { bytes, warnAboveBytes };
  return bytes > warnAboveBytes
    ? { status: 'warn', message: `the write-ahead log holds ${bytes} bytes`, details }
    : { status: 'ok', message: `write-ahead log ${bytes} bytes`, details };
}

function postgresWalProbe(ctx: Ctx): Measure {
  return async () => {
    const limit = Number((await ctx.db.get<{ b: number }>("SELECT pg_size_bytes(current_setting('max_wal_size')) AS b"))!.b) * 2;
    try {
      const bytes = Number((await ctx.db.get<{ b: number }>('SELECT coalesce(sum(size), 0) AS b FROM pg_ls_waldir()'))!.b);
      return walMeasured(bytes, limit);
    } catch {
      return { status: 'ok', message: 'the PostgreSQL server\'s write-ahead log is not readable by this database user (grant it pg_monitor to measure it)', details: { bytes: null, warnAboveBytes: limit } };
    }
  };
}

function diskProbe(ctx: Ctx): Measure {
  return () => {
    const volumes = [['data', ctx.config.dataDir], ['storage', ctx.config.storageDir]].map(([name, dir]) => {
      const s = fs.statfsSync(dir);
      const free = s.bavail * s.bsize;
      const total = s.blocks * s.bsize;
      const status: ProbeStatus = free < DISK_FAIL_BYTES ? 'fail' : free < GiB || free < total * DISK_WARN_FRACTION ? 'warn' : 'ok';
      return { name, path: dir, freeBytes: free, totalBytes: total, freePercent: total ? Math.round((free / total) * 1000) / 10 : 0, status };
    });
    const worst = worstOf(volumes.map((v) => v.status));
    const text = volumes.map((v) => `${v.name} ${(v.freeBytes / GiB).toFixed(1)} GiB free (${v.freePercent} %)`).join(', ');
    return { status: worst, message: text, details: { volumes } };
  };
}

async function workerProbes(ctx: Ctx): Promise<Probe[]> {
  let w: Awaited<ReturnType<typeof workerStatus>> | undefined;
  const worker = await probe('worker', async () => {
    w = await workerStatus(ctx);
    const details = { workerId: w.workerId, health: w.healthStatus, heartbeatAt: w.heartbeatAt, heartbeatAgeMs: w.heartbeatAgeMs, staleThresholdMs: w.staleThresholdMs, running: w.runningCount };
    const status: ProbeStatus = w.healthStatus === 'ok' ? 'ok' : w.healthStatus === 'paused' ? 'warn' : 'fail';
    return { status, message: `worker ${w.healthStatus}, heartbeat ${w.heartbeatAt ?? 'never'}`, details };
  });
  const queue = await probe('queue', () => {
    if (!w) throw new Error('the worker status could not be read');
    const details = { depth: w.queueDepth, alerts: w.queueAlerts };
    return w.queueAlerts.some((a) => a.code === 'oldest_waiting' || a.code === 'jobs_not_claimable')
      ? { status: 'warn', message: w.queueAlerts.map((a) => a.message).join('; '), details }
      : { status: 'ok', message: `${w.queueDepth.queued} queued, ${w.queueDepth.running} running`, details };
  });
  return [worker, queue];
}

const RANK: Record<ProbeStatus, number> = { ok: 0, warn: 1, fail: 2 };
const worstOf = (statuses: ProbeStatus[]): ProbeStatus => statuses.reduce((a, b) => (RANK[b] > RANK[a] ? b : a), 'ok');

export type StorageHealth = o.Out<typeof StorageHealthView>;

/** Writes a small object under tmp/, reads it back and deletes it. */
export async function storageRoundTrip(store: ObjectStore): Promise<StorageHealth> {
  const started = performance.now();
  const ms = () => Math.round((performance.now() - started) * 1000) / 1000;
  const base = { driver: store.driver, location: store.location };
  const key = tempKey('health');
  const bytes = Buffer.from(`svc health ${newToken(12)}\n`);
  let step = 'write';
  try {
    await store.putBytes(key, bytes);
    step = 'read back';
    const back = await store.readBytes(key);
    step = 'delete';
    await store.delete(key);
    if (!back.equals(bytes)) return { ...base, status: 'fail', latencyMs: ms(), message: 'the object read back differs from the object written' };
    return { ...base, status: 'ok', latencyMs: ms(), message: `${store.driver} write, read back and delete` };
  } catch (err) {
    // The error's own text stays in no answer: a remote store's may quote its endpoint's reply.
    const reason = (err as { code?: unknown; name?: unknown }).code ?? (err as { name?: unknown }).name;
    await store.delete(key).catch(() => {}); // best effort; an ownerless tmp/ object is a cleanup candidate anyway
    return { ...base, status: 'fail', latencyMs: ms(), message: `the ${step} of a small object failed${typeof reason === 'string' && /^[A-Za-z_]{1,40}$/.test(reason) ? ` (${reason})` : ''}` };
  }
}

export async function systemHealth(ctx: Ctx): Promise<Health> {
  requireSystemAdmin(ctx);
  const probes = [
    await probe('database', databaseProbe(ctx)), await probe('integrity', integrityProbe(ctx)), await probe('wal', walProbe(ctx)), await probe('disk', diskProbe(ctx)),
    ...await workerProbes(ctx),
  ];
  const storage = await storageRoundTrip(ctx.storage);
  if (storage.status === 'fail') ctx.log.warn('health: the storage round trip failed', { driver: storage.driver, message: storage.message });
  const worst = worstOf([...probes.map((p) => p.status), storage.status === 'fail' ? 'warn' : 'ok']);
  return { status: worst === 'ok' ? 'ok' : worst === 'warn' ? 'degraded' : 'failing', checkedAt: ctx.now().toISOString(), probes, storage };
}
