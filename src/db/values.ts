// The values statements bind and the rows they read, on every engine.
import type { SQLInputValue } from 'node:sqlite';

export type Param = SQLInputValue;
export type Row = Record<string, unknown>;

/**
 * A statement with its parameters (`?` placeholders, in order), for a caller that runs it alone or
 * as a part of a statement of its own (a data-modifying CTE on PostgreSQL), from the one text.
 */
export interface Statement { sql: string; params: Param[] }
