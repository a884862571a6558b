// Replies finished in one turn of the event loop are written together at the end of that turn
// (setImmediate: right after the poll phase that read their requests), in the order they finished.
//
// Why: a write to a socket whose reader sleeps wakes the reader, and on one host (a reverse proxy
// or a client on the same machine) that wake-up is paid inside the writer's system call. Written
// as they finish, the replies of a busy turn wake the reader once each; written back to back, the
// reader wakes once and finds several, and the requests it sends next arrive together and are read
// in one poll. On GET /api/context at 50 connections this made svc 1.7 times as fast, with half the
// p99 (docs/benchmarks.md). A reply waits at most for the rest of its turn, which it waited for
// before too when it was not the first.
import type { ServerResponse } from 'node:http';

/** Queues `write` (which answers `res`) for the end of this turn; see the module's comment. */
export type TurnWriter = (res: ServerResponse, write: () => void) => void;

/**
 * A turn writer. A write that throws does not stop the others: its response is destroyed (the client
 * sees the connection close) and the error goes to `report`. (The app answers a reply node refuses
 * before anything is sent itself, as a 500: what reaches this catch is a write cut short after that.)
 */
export function turnWriter(report: (err: unknown) => void): TurnWriter {
  let due: Array<[ServerResponse, () => void]> = [];
  const drain = (): void => {
    const now = due;
    due = [];
    for (const [res, write] of now) {
      try {
        write();
      } catch (err) {
        res.destroy();
        report(err);
      }
    }
  };
  return (res, write) => {
    if (due.push([res, write]) === 1) setImmediate(drain);
  };
}
