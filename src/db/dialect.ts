// What differs in the SQL text between the engines, in one place: each store writes its statement
// once and asks db.dialect for the few fragments SQLite and PostgreSQL spell differently. Everything
// else is written in the portable subset (test/db/portable-sql.test.ts keeps SQLite-only forms out).

export interface Dialect {
  readonly engine: 'sqlite' | 'postgres';
  /**
   * A FROM-clause source of the text values of the JSON array bound to `param` (e.g. `?`), its one
   * column named `value`: `... IN (SELECT value FROM ${d.jsonValues('?')})`.
   */
  jsonValues(param: string): string;
  /**
   * Appended to a SELECT that picks rows to claim: on PostgreSQL the rows are locked for the
   * transaction and rows another transaction holds are skipped; SQLite serializes writers, so nothing.
   */
  readonly skipLocked: string;
  /**
   * Appended to a SELECT of a row the transaction's decision rests on while another transaction may
   * change it (a job's dependency): on PostgreSQL the row is read as last committed and may not change
   * until this transaction ends (a writer waits); SQLite serializes writers, so nothing.
   */
  readonly forShare: string;
  /**
   * `INDEXED BY name` after a table in FROM: the index SQLite's planner must use (a hint it would
   * otherwise miss); nothing on PostgreSQL, whose planner picks it (a partial index included).
   */
  indexedBy(index: string): string;
  /**
   * Appended to a SELECT that reads a row its statement or transaction then writes (a counter, the
   * head of a chain): on PostgreSQL the row is locked until the transaction ends, and a row another
   * transaction changed is waited for and read as it committed; SQLite serializes writers, so nothing.
   */
  readonly forUpdate: string;
}

export const SQLITE: Dialect = {
  engine: 'sqlite',
  jsonValues: (param) => `json_each(${param})`,
  skipLocked: '',
  forShare: '',
  indexedBy: (index) => `INDEXED BY ${index}`,
  forUpdate: '',
};

export const POSTGRES: Dialect = {
  engine: 'postgres',
  jsonValues: (param) => `jsonb_array_elements_text(CAST(${param} AS jsonb)) AS value`,
  skipLocked: ' FOR UPDATE SKIP LOCKED',
  forShare: ' FOR SHARE',
  indexedBy: () => '',
  forUpdate: ' FOR UPDATE',
};
