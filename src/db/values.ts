// The values statements bind and the rows they read, on every engine.
import type { SQLInputValue } from 'node:sqlite';

export type Param = SQLInputValue;
export type Row = Record<string, unknown>;
