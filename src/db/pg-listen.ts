// LISTEN for PostgresDb (postgres.ts): a connection of its own per channel, opened again when lost.
import type { Client } from 'pg';

/** A wait before a lost LISTEN connection is opened again. */
const LISTEN_RETRY_MS = 1000;

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

interface Listener { client: Client | null; stopped: boolean; timer: NodeJS.Timeout | null }

/**
 * LISTEN on a connection of its own (from `connect`): fn gets every payload notified on `channel` by
 * any process. A lost connection is opened again (after LISTEN_RETRY_MS, until stopped); what was
 * notified meanwhile is missed, which the callers' polls cover, and so is a failed first attempt:
 * `ready` rejects, and the connection is tried again all the same until `stop`.
 */
export function listenOn(connect: () => Client, channel: string, fn: (payload: string) => void): { ready: Promise<void>; stop: () => Promise<void> } {
  const l: Listener = { client: null, stopped: false, timer: null };
  const open = async (): Promise<void> => {
    const client = connect();
    client.on('error', () => {}); // followed by 'end'
    client.on('notification', (n) => { if (n.channel === channel) fn(n.payload ?? ''); });
    client.on('end', () => {
      if (l.client !== client || l.stopped) return;
      l.client = null;
      l.timer = setTimeout(() => { l.timer = null; open().catch(() => {}); }, LISTEN_RETRY_MS);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${quoteIdent(channel)}`);
    } catch (err) {
      await client.end().catch(() => {});
      if (!l.stopped) l.timer = setTimeout(() => { l.timer = null; open().catch(() => {}); }, LISTEN_RETRY_MS);
      throw err;
    }
    if (l.stopped) await client.end();
    else l.client = client;
  };
  const ready = open();
  const stop = async () => {
    l.stopped = true;
    if (l.timer) clearTimeout(l.timer);
    const client = l.client;
    l.client = null;
    await client?.end().catch(() => {});
  };
  return { ready, stop };
}
