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
  /**
   * A FROM-clause source of the elements of the JSON array `json` (an SQL expression of JSON text: a
   * parameter, a column, or jsonGet of one), one row per element, the element as `${alias}.value`
   * (read its fields with jsonText); no row when `json` is NULL. It may refer to the tables before it
   * in FROM (`FROM jobs j, ${d.jsonEach(d.jsonGet('j.output', 'files'), 'f')}`). Only arrays: SQLite
   * would walk an object's members, PostgreSQL refuses anything but an array.
   */
  jsonEach(json: string, alias: string): string;
  /** The member `key` of a JSON object (or the element at index `key` of an array) as JSON, for jsonEach; NULL when absent. */
  jsonGet(json: string, key: string | number): string;
  /**
   * The member `key` of a JSON object (or the element at index `key` of an array) as an SQL value;
   * NULL when absent or JSON null. A JSON string is its text on both engines; a number is a number on
   * SQLite but text on PostgreSQL: CAST it where the type matters (a comparison, a UNION, a sum).
   */
  jsonText(json: string, key: string | number): string;
  /**
   * An aggregate: the JSON array (as text) of `expr` over the group's rows in the order of `orderBy`,
   * `[]` when there are none. The texts differ in spaces (PostgreSQL writes `["a", "b"]`): parse it.
   */
  jsonArrayAgg(expr: string, orderBy: string): string;
  /**
   * A JSON object (as text) of the given members: each a key (letters, digits and _) and the SQL
   * expression of its value. Texts are JSON strings (a column holding JSON text too), NULL is null.
   */
  jsonObject(members: ReadonlyArray<readonly [key: string, expr: string]>): string;
  /**
   * The LIKE operator that ignores the case of ASCII letters (other letters match exactly), as
   * SQLite's LIKE does: LIKE there, ILIKE on PostgreSQL (whose LIKE is case-sensitive; ILIKE folds
   * ASCII only in the C collation the schema's databases use).
   */
  readonly likeAnyCase: string;
  /**
   * `x` rounded to a whole number, halves away from zero, as SQLite's round(x) computes it on a
   * double (x + 0.5, then truncated); PostgreSQL's round() of a double rounds halves to even. `x`
   * is written twice on PostgreSQL: it must hold no parameter.
   */
  roundHalfAway(x: string): string;
  /**
   * A key of the rows of a table whose id is a newId, to find a page's rows first (a deferred join)
   * and to break ties in its order: SQLite's rowid, which ends every index (the page is found in the
   * index alone), and the id on PostgreSQL. Both follow insertion order within a process (newId is
   * monotonic), so both engines order the same rows alike.
   */
  readonly rowKey: string;
  /**
   * True when a statement may write in its WITH clause (PostgreSQL's data-modifying CTEs): several
   * writes in one round trip. SQLite runs such parts as statements of their own.
   */
  readonly writingCtes: boolean;
}

/** A JSON object key (a quoted SQL string; letters, digits and _ only) or an array index. */
function jsonKey(key: string | number): string {
  if (typeof key === 'number') {
    if (!Number.isSafeInteger(key) || key < 0) throw new RangeError(`not a JSON array index: ${key}`);
    return String(key);
  }
  if (!/^\w+$/.test(key)) throw new RangeError(`not a plain JSON key: ${key}`);
  return `'${key}'`;
}

export const SQLITE: Dialect = {
  engine: 'sqlite',
  jsonValues: (param) => `json_each(${param})`,
  skipLocked: '',
  forShare: '',
  indexedBy: (index) => `INDEXED BY ${index}`,
  forUpdate: '',
  jsonEach: (json, alias) => `json_each(${json}) AS ${alias}`,
  jsonGet: (json, key) => `(${json} -> ${jsonKey(key)})`,
  jsonText: (json, key) => `(${json} ->> ${jsonKey(key)})`,
  jsonArrayAgg: (expr, orderBy) => `json_group_array(${expr} ORDER BY ${orderBy})`,
  jsonObject: (members) => `json_object(${members.map(([k, e]) => `${jsonKey(k)}, ${e}`).join(', ')})`,
  likeAnyCase: 'LIKE',
  roundHalfAway: (x) => `round(${x})`,
  rowKey: 'rowid',
  writingCtes: false,
};

export const POSTGRES: Dialect = {
  engine: 'postgres',
  jsonValues: (param) => `jsonb_array_elements_text(CAST(${param} AS jsonb)) AS value`,
  skipLocked: ' FOR UPDATE SKIP LOCKED',
  forShare: ' FOR SHARE',
  indexedBy: () => '',
  forUpdate: ' FOR UPDATE',
  jsonEach: (json, alias) => `jsonb_array_elements(CAST(${json} AS jsonb)) AS ${alias}(value)`,
  jsonGet: (json, key) => `(CAST(${json} AS jsonb) -> ${jsonKey(key)})`,
  jsonText: (json, key) => `(CAST(${json} AS jsonb) ->> ${jsonKey(key)})`,
  jsonArrayAgg: (expr, orderBy) => `coalesce(json_agg(${expr} ORDER BY ${orderBy}), '[]')`,
  jsonObject: (members) => `json_build_object(${members.map(([k, e]) => `${jsonKey(k)}, ${e}`).join(', ')})`,
  likeAnyCase: 'ILIKE',
  roundHalfAway: (x) => `(sign(${x}) * trunc(abs(${x}) + 0.5))`,
  rowKey: 'id',
  writingCtes: true,
};

/**
 * How a getter reads its row. `forUpdate`: the read a change is computed from (the values written
 * back, a counter, a status a transition starts from, JSON merged in TypeScript). On PostgreSQL, at
 * READ COMMITTED, two such changes of one row would otherwise both start from the row as it was, and
 * the later write would undo the earlier one; with the lock the second waits for the first to end and
 * reads the row as it committed. SQLite's writers take turns (BEGIN IMMEDIATE): the statement there is
 * the plain one. Only inside a transaction, after the keys it takes (src/directory/locks.ts).
 */
export interface RowRead { readonly forUpdate?: boolean }

/**
 * The end of a getter's SELECT for `read`: Dialect.forUpdate (`OF table`, the table's alias or name,
 * when the SELECT joins others whose rows stay unlocked), or nothing. A locking read outside a
 * transaction is a mistake (the lock would end with the statement): it throws, on both engines.
 */
export function lockClause(db: { readonly dialect: Dialect; readonly inTransaction: boolean }, read: RowRead | undefined, of?: string): string {
  if (!read?.forUpdate) return '';
  if (!db.inTransaction) throw new Error('a read FOR UPDATE outside a transaction');
  const fragment = db.dialect.forUpdate;
  return fragment && of ? `${fragment} OF ${of}` : fragment;
}

/** What `make` builds of a dialect (statements of its fragments), made once per dialect. */
export function perDialect<T>(make: (d: Dialect) => T): (d: Dialect) => T {
  const made = new Map<Dialect, T>();
  return (d) => {
    if (!made.has(d)) made.set(d, make(d));
    return made.get(d)!;
  };
}
