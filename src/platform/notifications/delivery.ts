// The delivery loop: a timer in the main process (started by startServer, stopped on close) that
// claims due outbox rows, sends them (webhook: one signed POST; log: one appended JSON line) and
// records the outcome. It wakes at the next due time (at most every POLL_MS, so rows written by other
// connections are noticed) and at once when poke() is called after a commit that queued rows (on
// PostgreSQL a notification on DELIVERY_CHANNEL pokes the loop of every process).
//
// Retries: after failed attempt n the next one is due retryBase * 2^(n-1) later (SVC_WEBHOOK_RETRY_BASE_MS,
// default 1 s: 1 s, 2 s, 4 s, ... capped at 1 hour); after MAX_ATTEMPTS failed attempts the delivery is
// `failed`. A 2xx answer delivers; anything else (3xx included: redirects are not followed), a timeout,
// a connection error, an unresolvable name or a refused destination is a failed attempt. Rows live in
// the database, so a restart loses nothing; a lease keeps a row from being sent twice at once (a crash
// mid-attempt lets the lease expire and the row is sent again: delivery is at least once, and the
// webhook-id stays the same so receivers can de-duplicate).
import fs from 'node:fs/promises';
import path from 'node:path';
import { VERSION, type Config } from '../../kernel/config.ts';
import type { Db } from '../../db/db.ts';
import type { Logger } from '../../kernel/log.ts';
import { createContext, type Actor, type Ctx } from '../../directory/context.ts';
import { record } from '../audit/service.ts';
import { postOnce, systemResolver, type PostResult, type Resolver } from '../../kernel/egress.ts';
import { decryptSecret, signatureHeader } from './secrets.ts';
import { allowListOf, channelById, claimDue, finishAttempt, nextDueAt, type ChannelRow, type OutboxRow } from './store.ts';

export const MAX_ATTEMPTS = 12;
export const RETRY_CAP_MS = 3_600_000;
export const TIMEOUT_MS = 10_000;
const POLL_MS = 1_000;
const BATCH = 8;

export interface DeliveryOptions {
  /** Host name -> addresses (the first is used). Replaceable for tests. */
  resolve: Resolver;
  timeoutMs: number;
  retryBaseMs: number;
  maxAttempts: number;
}

export interface DeliveryLoop {
  readonly options: DeliveryOptions;
  /** Look for due rows now (after a commit that queued some). */
  poke(): void;
  /** Stops the timer, interrupts attempts in flight (recorded as failed attempts) and waits for them. */
  stop(): Promise<void>;
}

export const retryDelayMs = (failedAttempts: number, baseMs: number) =>
  Math.min(baseMs * 2 ** Math.max(0, failedAttempts - 1), RETRY_CAP_MS);

const SYSTEM_ACTOR: Actor = Object.freeze({
  type: 'system', userId: null, name: 'notification delivery', email: null, isSystemAdmin: true, sessionId: null, sessionKind: null,
});

const loops = new WeakMap<Db, DeliveryLoop>();

/** The loop running over this database connection, if any (tests replace its resolver through it). */
export const deliveryLoopOf = (db: Db) => loops.get(db);

/** The channel on which the delivery loops of every process hear about queued rows (PostgreSQL). */
const DELIVERY_CHANNEL = 'svc_delivery';

/**
 * Wakes the delivery loop, after a commit that queued rows: this connection's, or on PostgreSQL
 * every process's (a notification); on SQLite another process's loop finds the rows at its poll.
 */
export async function pokeDelivery(db: Db): Promise<void> {
  if (db.engine === 'postgres') await db.notify(DELIVERY_CHANNEL, 'poke');
  else loops.get(db)?.poke();
}

export const logFileOf = (config: Config, organizationId: string) => path.join(config.dataDir, 'notifications', `${organizationId}.jsonl`);

export function startDeliveryLoop(deps: { db: Db; config: Config; log: Logger }, overrides: Partial<DeliveryOptions> = {}): DeliveryLoop {
  const { db, config, log } = deps;
  const options: DeliveryOptions = {
    resolve: systemResolver, timeoutMs: TIMEOUT_MS, retryBaseMs: config.webhookRetryBaseMs, maxAttempts: MAX_ATTEMPTS, ...overrides,
  };
  const ctx: Ctx = createContext({ db, config, log, actor: SYSTEM_ACTOR, requestId: 'notification-delivery' });
  const stopping = new AbortController();
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  let again = false;

  const schedule = (ms: number) => {
    if (stopping.signal.aborted) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => { timer = null; void tick(); }, Math.max(0, ms));
    timer.unref();
  };

  async function tick(): Promise<void> {
    if (stopping.signal.aborted) return;
    if (running) { again = true; return; }
    running = (async () => {
      do {
        again = false;
        try {
          await drain();
        } catch (err) {
          log.error('notification delivery loop failed', { err });
        }
      } while (again && !stopping.signal.aborted);
    })();
    await running;
    running = null;
    if (stopping.signal.aborted) return;
    const due = await nextDueAt(db);
    schedule(due === null ? POLL_MS : Math.min(POLL_MS, Math.max(5, Date.parse(due) - Date.now())));
  }

  async function drain(): Promise<void> {
    while (!stopping.signal.aborted) {
      const now = Date.now();
      const due = await nextDueAt(db);
      if (due === null || Date.parse(due) > now) return; // a read first: the claiming UPDATE would take the write lock
      const rows = await claimDue(db, new Date(now).toISOString(), new Date(now + options.timeoutMs + 30_000).toISOString(), BATCH);
      if (rows.length === 0) return;
      await Promise.all(rows.map(attempt));
    }
  }

  async function attempt(row: OutboxRow): Promise<void> {
    const channel = await channelById(db, row.channel_id);
    if (!channel) return;
    const started = Date.now();
    let result: PostResult & { permanent?: boolean };
    try {
      if (!channel.enabled) result = { ok: false, statusCode: null, error: 'channel disabled', refused: false, address: null, permanent: true };
      else if (channel.kind === 'log') result = await appendLog(channel, row);
      else result = await sendWebhook(channel, row);
    } catch (err) {
      result = { ok: false, statusCode: null, error: (err as Error).message, refused: false, address: null };
    }
    await finish(row, channel, result, Date.now() - started);
  }

  async function appendLog(channel: ChannelRow, row: OutboxRow): Promise<PostResult> {
    const file = logFileOf(config, channel.organization_id);
    await fs.mkdir(path.dirname(file), { recursive: true });
    const line = JSON.stringify({ id: row.id, channelId: channel.id, loggedAt: new Date().toISOString(), ...JSON.parse(row.payload) });
    await fs.appendFile(file, line + '\n', { mode: 0o640 });
    return { ok: true, statusCode: null, error: null, refused: false, address: null };
  }

  async function sendWebhook(channel: ChannelRow, row: OutboxRow): Promise<PostResult> {
    const secret = decryptSecret(config, channel.secret_encrypted!);
    const timestamp = Math.floor(Date.now() / 1000);
    return postOnce({
      url: channel.url!, body: row.payload, resolve: options.resolve, timeoutMs: options.timeoutMs, signal: stopping.signal,
      allowList: (await allowListOf(db, channel.organization_id)).map((e) => e.cidr),
      headers: {
        'content-type': 'application/json', 'user-agent': `svc-webhooks/${VERSION}`,
        'webhook-id': row.id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signatureHeader(secret, row.id, timestamp, row.payload),
      },
    });
  }

  async function finish(row: OutboxRow, channel: ChannelRow, r: PostResult & { permanent?: boolean }, ms: number): Promise<void> {
    const now = new Date();
    const attempts = row.attempts + 1;
    const status = r.ok ? 'delivered' : r.permanent || attempts >= options.maxAttempts ? 'failed' : 'pending';
    const nextAttemptAt = status === 'pending' ? new Date(now.getTime() + retryDelayMs(attempts, options.retryBaseMs)).toISOString() : row.next_attempt_at;
    await db.tx(async () => {
      // Recorded even when the row is gone (channel deleted meanwhile): the attempt happened.
      await finishAttempt(db, row.id, {
        status, attempts, nextAttemptAt, at: now.toISOString(), statusCode: r.statusCode, error: r.error,
        deliveredAt: r.ok ? now.toISOString() : null,
      });
      await record(ctx, {
        action: 'notification.delivery_attempt', targetType: 'notification_delivery', targetId: row.id,
        result: r.ok ? 'success' : r.refused ? 'denied' : 'failure', organizationId: row.organization_id, workspaceId: null, projectId: null,
        metadata: {
          channelId: channel.id, kind: channel.kind, eventId: row.event_id, eventType: row.type, attempt: attempts, outcome: status,
          statusCode: r.statusCode, error: r.error, address: r.address, durationMs: ms,
          ...(status === 'pending' ? { nextAttemptAt } : {}),
        },
      });
    });
    if (!r.ok) log.warn('notification delivery attempt failed', { deliveryId: row.id, channelId: channel.id, attempt: attempts, outcome: status, error: r.error });
  }

  const loop: DeliveryLoop = {
    options,
    poke: () => schedule(0),
    async stop() {
      stopping.abort();
      await (await listening)();
      if (timer) clearTimeout(timer);
      timer = null;
      if (running) await running;
      loops.delete(db);
    },
  };
  loops.set(db, loop);
  // What another process queued (PostgreSQL); a failed LISTEN leaves the poll to find it.
  const listening = db.listen(DELIVERY_CHANNEL, () => loop.poke()).catch((err: unknown) => {
    log.warn('notification delivery: not listening for queued rows; the poll finds them', { err });
    return () => Promise.resolve();
  });
  schedule(0);
  return loop;
}
