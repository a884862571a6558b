// Transactions bound to the async context, the part every engine shares (SQLite in db.ts, PostgreSQL
// in postgres.ts). `await db.tx(fn)` opens a transaction on a connection of its own (the engine's
// begin()); every statement fn issues, through any depth of calls and awaits, finds it with frame()
// and runs on that connection. A nested tx() is a savepoint: an inner failure undoes only the inner
// work; branches of one transaction that open savepoints concurrently take turns. A savepoint is sent
// with its first statement (the engine calls begun() before each one): one in which no statement runs
// costs nothing, and savepoints that begin where the one around them began, no statement between
// them, share its SAVEPOINT (rolling back to it undoes exactly their work). After-commit hooks run
// once, in order, after the outermost commit (never after a rollback), outside the transaction.
import { AsyncLocalStorage } from 'node:async_hooks';

/** An after-commit hook: it may be asynchronous (the transaction's caller waits for it). */
export type Hook = () => void | Promise<void>;

/** An open transaction (depth 1) or savepoint (depth > 1) of one database, as seen by the async context. */
export interface Frame<C> {
  readonly owner: object;
  /** The connection the transaction runs on. */
  readonly conn: C;
  readonly depth: number;
  open: boolean;
  /** The outermost transaction's hooks, in order of registration. */
  readonly hooks: Hook[];
  /** Serializes this frame's savepoints when branches of one transaction run concurrently. */
  child: Promise<void>;
  /** The frame around this one; null for the outermost transaction. */
  readonly parent: Frame<C> | null;
  /** True once a statement ran in it (or in a frame inside it): its savepoint was sent. The outermost: always. */
  begun: boolean;
  /** The savepoint a failure rolls back to once begun: its own, or the one it shares with the frames around it. */
  savepoint: string | null;
  /** True when this frame sent `savepoint` (it releases it); false when it shares one of a frame around it. */
  owns: boolean;
}

const frames = new AsyncLocalStorage<Frame<unknown>>();

/**
 * Runs fn outside the caller's transaction: the work fn starts (and everything it later awaits) does
 * not join that transaction, even while it is still open.
 */
export const outsideTransactions = <T>(fn: () => T): T => frames.exit(fn);

/** How many times an outermost transaction runs at most when the engine rolls it back for a deadlock or a serialization failure. */
export const TX_ATTEMPTS = 3;

export abstract class Transactional<C> {
  /** Called with errors thrown by after-commit hooks (they must never undo a commit). */
  onHookError: (err: unknown) => void = (err) => { console.error(err); };

  /** Takes a connection for a new outermost transaction and begins it there. */
  protected abstract begin(): Promise<C> | C;
  /** Commits; on failure the engine leaves no transaction open on `conn`. */
  protected abstract commit(conn: C): Promise<void> | void;
  protected abstract rollback(conn: C): Promise<void> | void;
  /** Gives the connection of an ended transaction back (committed or rolled back). */
  protected abstract end(conn: C): void;
  /** SAVEPOINT, ROLLBACK TO or RELEASE of `name` on `conn`. */
  protected abstract savepointStep(conn: C, step: 'SAVEPOINT' | 'ROLLBACK TO' | 'RELEASE', name: string): Promise<void> | void;

  /** The transaction of this database the calling async context runs in, if any. */
  protected frame(): Frame<C> | undefined {
    const f = frames.getStore();
    return f !== undefined && f.owner === this && f.open ? (f as Frame<C>) : undefined;
  }

  /** True when the calling async context runs inside a transaction of this database. */
  get inTransaction(): boolean {
    return this.frame() !== undefined;
  }

  /**
   * True for an error after which the whole transaction may simply run again (PostgreSQL: a deadlock
   * or a serialization failure, which the server resolved by rolling this transaction back).
   */
  protected retryable(_err: unknown): boolean {
    return false;
  }

  /**
   * Runs fn in a transaction, or in a savepoint when the caller already runs in one. The returned
   * promise settles after the commit and the after-commit hooks. An outermost transaction the engine
   * rolled back for a deadlock or a serialization failure runs again (up to TX_ATTEMPTS times in all):
   * transaction bodies do SQL only, and their after-commit hooks are kept from the attempt that commits.
   */
  async tx<T>(fn: (db: this) => Promise<T> | T): Promise<T> {
    const parent = this.frame();
    if (parent) return await this.savepoint(parent, fn);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.outermost(fn);
      } catch (err) {
        if (attempt >= TX_ATTEMPTS || !this.retryable(err)) throw err;
      }
    }
  }

  private async outermost<T>(fn: (db: this) => Promise<T> | T): Promise<T> {
    const begun = this.begin();
    const conn = begun instanceof Promise ? await begun : begun; // no extra turn when the engine begins at once
    const frame: Frame<C> = {
      owner: this, conn, depth: 1, open: true, hooks: [], child: Promise.resolve(), parent: null, begun: true, savepoint: null, owns: false,
    };
    let result: T;
    try {
      try {
        result = await frames.run(frame, () => fn(this));
      } catch (err) {
        const rolledBack = this.rollback(conn);
        if (rolledBack) await rolledBack;
        throw err;
      }
      const committed = this.commit(conn);
      if (committed) await committed;
    } finally {
      frame.open = false;
      this.end(conn);
    }
    if (frame.hooks.length > 0) await frames.exit(() => this.runHooks(frame.hooks));
    return result;
  }

  private async savepoint<T>(parent: Frame<C>, fn: (db: this) => Promise<T> | T): Promise<T> {
    const before = parent.child;
    let done!: () => void;
    parent.child = new Promise<void>((resolve) => { done = resolve; });
    await before;
    const frame: Frame<C> = {
      owner: this, conn: parent.conn, depth: parent.depth + 1, open: true, hooks: parent.hooks, child: Promise.resolve(), parent,
      begun: false, savepoint: null, owns: false,
    };
    const hooksBefore = frame.hooks.length;
    // An engine whose steps are synchronous (SQLite) takes no extra turn for them: awaited only when a promise.
    const step = (kind: 'ROLLBACK TO' | 'RELEASE') => this.savepointStep(frame.conn, kind, frame.savepoint!);
    try {
      let result: T;
      try {
        result = await frames.run(frame, () => fn(this));
      } catch (err) {
        // Nothing ran in a frame not begun: nothing to undo. A shared savepoint stays for its owner.
        if (frame.begun) {
          let r = step('ROLLBACK TO');
          if (r) await r;
          r = frame.owns ? step('RELEASE') : undefined;
          if (r) await r;
        }
        frame.hooks.length = hooksBefore;
        throw err;
      }
      const r = frame.owns ? step('RELEASE') : undefined;
      if (r) await r;
      return result;
    } finally {
      frame.open = false;
      done();
    }
  }

  /**
   * Called by the engine before each statement it runs in `frame`: sends the SAVEPOINT of the frames
   * not yet begun from `frame` outwards, once, by the outermost of them; those inside it share it (they
   * began at the same point, no statement between them). Undefined when nothing is to be sent (the
   * common case), else the step (a promise on an engine whose steps are).
   */
  protected begun(frame: Frame<C>): Promise<void> | void {
    if (frame.begun) return;
    let head = frame;
    while (!head.parent!.begun) head = head.parent!;
    const name = `sp${head.parent!.depth}`;
    for (let f: Frame<C> | null = frame; f !== null && !f.begun; f = f.parent) {
      f.begun = true;
      f.savepoint = name;
      f.owns = f === head;
    }
    return this.savepointStep(frame.conn, 'SAVEPOINT', name);
  }

  /**
   * Runs fn once the outermost transaction commits (the transaction's caller waits for it), or at once
   * outside a transaction. A hook's error is reported to onHookError, never to the committer.
   */
  async afterCommit(fn: Hook): Promise<void> {
    const f = this.frame();
    if (f) f.hooks.push(fn);
    else await this.runHooks([fn]);
  }

  private async runHooks(hooks: Hook[]): Promise<void> {
    for (const h of hooks) {
      try {
        await h();
      } catch (err) {
        this.onHookError(err);
      }
    }
  }
}
