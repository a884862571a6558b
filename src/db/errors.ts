// What an engine's error means, for the few callers that answer one kind of failure their own way.
import { AppError } from '../kernel/errors.ts';

/** SQLite's extended result codes of a UNIQUE and a PRIMARY KEY constraint that failed (node:sqlite's `errcode`). */
const SQLITE_CONSTRAINT_UNIQUE = 2067;
const SQLITE_CONSTRAINT_PRIMARYKEY = 1555;
/** PostgreSQL's SQLSTATE unique_violation (pg's `code`). */
const PG_UNIQUE_VIOLATION = '23505';

/**
 * True when `err` is a write refused by a unique key or index (a primary key included), on either
 * engine. A check before an insert cannot see a row another transaction commits meanwhile (on
 * PostgreSQL at READ COMMITTED); such a race ends in this error, which the caller turns into the
 * answer its check gives (a 409), never a 500. On PostgreSQL the error aborts the transaction: the
 * caller lets it end (or ran the insert in a savepoint, a nested tx()).
 */
export function isUniqueViolation(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { code?: unknown; errcode?: unknown };
  if (e.code === 'ERR_SQLITE_ERROR') return e.errcode === SQLITE_CONSTRAINT_UNIQUE || e.errcode === SQLITE_CONSTRAINT_PRIMARYKEY;
  return e.code === PG_UNIQUE_VIOLATION;
}

/**
 * A statement's text parameter holding U+0000, which PostgreSQL's text type cannot hold (SQLite keeps
 * it): PostgresDb refuses the statement before sending it, so the transaction goes on. The inputs refuse
 * U+0000 first (validated strings and free-form JSON 422 naming the field, a path segment 404 as no
 * route; docs/http-api.md); this is the defence behind them, for an input read outside the validator.
 * It is the contract's 422 validation_failed (the field is not known here), never a 500.
 */
export class TextWithNul extends AppError {
  constructor() {
    super(422, 'validation_failed', 'invalid input: the request holds the NUL character (U+0000), which no stored text may hold',
      { fields: { request: 'must not contain the NUL character (U+0000)' } });
    this.name = 'TextWithNul';
  }
}
