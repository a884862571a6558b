// Upward news as events. A wing that has news for wings above it (an artifact was registered) emits
// an event with `ctx.emit(name, payload)` instead of importing them; the wings above subscribe. The
// subscriptions are bound in one place when a thread starts (src/subscribers.ts), never by the emitter.
//
// emit() records one outbox row per subscriber in the caller's transaction (table event_outbox), and
// each row is dispatched once that transaction commits: its handler runs in a transaction of its own
// that also marks the row done, so a handler's effects happen exactly once. A handler that throws
// rolls back alone (the emitter's work stands), is logged, and its row stays pending with the error;
// pending rows are dispatched again when the server starts (dispatchPending), so news survives a
// crash between the commit and the dispatch. Payloads are plain JSON (ids, not rows): a handler
// reads the current state itself.
//
// Each emitting wing declares its events by augmenting EventMap:
//   declare module '../../directory/events.ts' { interface EventMap { 'media.registered': {...} } }
import { mapSeq } from '../kernel/seq.ts';
import type { Db, Hook } from '../db/db.ts';
import type { Logger } from '../kernel/log.ts';
import { newId } from '../kernel/ids.ts';

/** What the bus needs of a context (Ctx has it all; context.ts makes the bus for Ctx). */
export interface EventContext { readonly db: Db; readonly log: Logger; now(): Date; afterCommit(fn: Hook): Promise<void> }

/** Event name -> payload; wings add their events by declaration merging (see above). */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface EventMap {}
export type EventName = Extract<keyof EventMap, string>;

/** A row of event_outbox: one event for one subscriber. */
interface EventRow {
  id: string; event: string; subscriber: string; payload: string; created_at: string;
  attempts: number; last_error: string | null; done_at: string | null;
}

type Handler<C, N extends EventName> = (ctx: C, payload: EventMap[N]) => void | Promise<void>;

export interface EventBus<C extends EventContext> {
  /**
   * Subscribes `subscriber` (a stable name such as 'review.reopen', stored with each pending row) to
   * `event`. Binding the same subscriber again replaces it, so a thread may bind at every start.
   * `what` names the work in the failure log ("re-opening reviews" -> "re-opening reviews failed").
   */
  subscribe<N extends EventName>(event: N, subscriber: string, handler: Handler<C, N>, what?: string): void;
  /** Records the event for each subscriber in the current transaction; dispatches each after commit. */
  emit<N extends EventName>(ctx: C, event: N, payload: EventMap[N]): Promise<void>;
  /** Dispatches every pending row, oldest first (at server start: news a crash left undelivered). */
  dispatchPending(ctx: C): Promise<number>;
}

export function createEventBus<C extends EventContext>(): EventBus<C> {
  const subscriptions = new Map<string, Array<{ subscriber: string; what: string; handler: (ctx: C, payload: unknown) => void | Promise<void> }>>();

  /**
   * Runs a pending row's handler in a transaction that first claims the row and also marks it done; a
   * failure is logged and kept. The claim reads the row again as pending: SQLite's writers take turns,
   * and on PostgreSQL it locks the row until the transaction ends (FOR UPDATE SKIP LOCKED), so another
   * process dispatching the same row (dispatchPending at its start) skips it instead of running the
   * handler a second time, and one that comes after the commit finds it done.
   */
  const dispatch = async (ctx: C, id: string): Promise<void> => {
    const row = await ctx.db.get<EventRow>('SELECT * FROM event_outbox WHERE id = ? AND done_at IS NULL', id);
    const sub = row && subscriptions.get(row.event)?.find((s) => s.subscriber === row.subscriber);
    if (!row || !sub) return;
    try {
      await ctx.db.tx(async () => {
        if (!await ctx.db.get(`SELECT 1 FROM event_outbox WHERE id = ? AND done_at IS NULL${ctx.db.dialect.skipLocked}`, id)) return;
        await sub.handler(ctx, JSON.parse(row.payload) as unknown);
        await ctx.db.run('UPDATE event_outbox SET done_at = ?, attempts = attempts + 1, last_error = NULL WHERE id = ?', ctx.now().toISOString(), id);
      });
    } catch (err) {
      await failed(ctx.db, ctx.log, row, sub.what, err);
    }
  };

  return {
    subscribe(event, subscriber, handler, what = `handling ${event} (${subscriber})`) {
      const list = (subscriptions.get(event) ?? []).filter((s) => s.subscriber !== subscriber);
      list.push({ subscriber, what, handler: handler as (ctx: C, payload: unknown) => void | Promise<void> });
      subscriptions.set(event, list);
    },
    async emit(ctx, event, payload) {
      const subs = subscriptions.get(event) ?? [];
      if (subs.length === 0) return;
      const at = ctx.now().toISOString();
      const json = JSON.stringify(payload);
      const ids = await mapSeq(subs, async (s) => {
        const id = newId('evt');
        await ctx.db.run('INSERT INTO event_outbox (id, event, subscriber, payload, created_at, attempts) VALUES (?, ?, ?, ?, ?, 0)',
          id, event, s.subscriber, json, at);
        return id;
      });
      await ctx.afterCommit(async () => { for (const id of ids) await dispatch(ctx, id); });
    },
    async dispatchPending(ctx) {
      const ids = (await ctx.db.all<{ id: string }>('SELECT id FROM event_outbox WHERE done_at IS NULL ORDER BY created_at, id')).map((r) => r.id);
      for (const id of ids) await dispatch(ctx, id);
      return ids.length;
    },
  };
}

/** Logs a handler's failure with the event's payload (ids and plain values) and keeps it on the row. */
async function failed(db: Db, log: Logger, row: EventRow, what: string, err: unknown): Promise<void> {
  const message = err instanceof Error ? err.message : String(err);
  log.error(`${what} failed; the event stays pending`, {
    event: row.event, subscriber: row.subscriber, eventId: row.id, payload: JSON.parse(row.payload) as unknown, err,
  });
  try {
    await db.run('UPDATE event_outbox SET attempts = attempts + 1, last_error = ? WHERE id = ?', message.slice(0, 500), row.id);
  } catch (e) {
    log.error('recording an event failure failed', { eventId: row.id, err: e });
  }
}
