// The transaction control PostgresDb (postgres.ts) has not sent yet on a connection in a transaction:
// its BEGIN, sent with the transaction's first statement (a transaction that runs none sends
// nothing), and the RELEASEs of ended savepoints, sent with the next SAVEPOINT or ROLLBACK TO in one
// message, alone before the next statement, and never before COMMIT or ROLLBACK, which end them.
// So a savepoint costs one round trip and BEGIN none of its own beside a savepoint.

/** A connection that runs a text (several statements in one message). */
interface Conn { query(text: string): Promise<unknown> }

export class UnsentControl<C extends Conn> {
  private readonly unsent = new Map<C, { begin: boolean; release: string[] }>();

  /** A transaction begins on `conn`: its BEGIN waits. */
  begin(conn: C): void {
    this.unsent.set(conn, { begin: true, release: [] });
  }

  /** True while nothing was sent in the transaction on `conn` (no COMMIT or ROLLBACK is needed). */
  idle(conn: C): boolean {
    return this.unsent.get(conn)?.begin === true;
  }

  /** An ended savepoint's RELEASE waits. */
  release(conn: C, name: string): void {
    this.unsent.get(conn)!.release.push(name);
  }

  /** The waiting steps, taken: to send before (or with) the next one on `conn`. */
  take(conn: C): string[] {
    const u = this.unsent.get(conn);
    if (u === undefined || (!u.begin && u.release.length === 0)) return [];
    const steps = [...(u.begin ? ['BEGIN'] : []), ...u.release.map((name) => `RELEASE ${name}`)];
    u.begin = false;
    u.release = [];
    return steps;
  }

  /**
   * What a statement in a transaction on `conn` waits for before it is sent: the savepoints begun for
   * it (`savepoint`, which carried the waiting steps), else the waiting steps in one message.
   */
  opening(conn: C, savepoint: Promise<void> | void): Promise<void> | undefined {
    if (savepoint) return savepoint;
    const steps = this.take(conn);
    return steps.length ? conn.query(steps.join('; ')).then(() => {}) : undefined;
  }

  /** A savepoint step: SAVEPOINT and ROLLBACK TO are sent with the waiting steps in one message; a RELEASE waits. */
  step(conn: C, step: 'SAVEPOINT' | 'ROLLBACK TO' | 'RELEASE', name: string): Promise<void> | void {
    if (step === 'RELEASE') return this.release(conn, name);
    return conn.query([...this.take(conn), `${step} ${name}`].join('; ')).then(() => {});
  }

  /** The transaction on `conn` ended. */
  end(conn: C): void {
    this.unsent.delete(conn);
  }
}
