// Tamper evidence: re-walks the audit log's hash chain in seq order, one row in memory at a time,
// and names the first broken link. The canonical text is recomputed here with JSON.stringify, from
// the values as stored, independently of the statement that wrote them (rows appended before schema
// version 15 were hashed over SQLite's json_array, the same text).
import { createHash } from 'node:crypto';
import type { Db } from '../../db/db.ts';
import { GENESIS_HASH, HASHED_FIELDS, highestSeqIssued, iterateChain, type ChainRow } from './store.ts';

/** The text a row's hash covers: its fields in HASHED_FIELDS order, then prev_hash, as a JSON array. */
export function canonicalText(row: ChainRow): string {
  return JSON.stringify([...HASHED_FIELDS.map((f) => row[f]), row.prev_hash]);
}

export const rowHash = (row: ChainRow): string => createHash('sha256').update(canonicalText(row), 'utf8').digest('hex');

export type ChainProblem =
  /** The row's content does not hash to its stored hash (the row or its hash was edited). */
  | 'hash'
  /** The row's prev_hash is not the hash of the row before it (a row was removed, inserted or re-hashed). */
  | 'link'
  /** Both of the above. */
  | 'hash_and_link'
  /** Rows after the last one were removed (the chain's head has a higher seq). */
  | 'truncated';

export interface ChainBreak {
  seq: number;
  /** Null when the break is a truncation after the last row. */
  id: string | null;
  problem: ChainProblem;
  message: string;
}

export interface ChainReport {
  ok: boolean;
  /** Rows checked (up to and including the broken one). */
  rows: number;
  /** Seq and hash of the last intact row (record it elsewhere to detect a rewrite of the whole chain). */
  headSeq: number | null;
  headHash: string;
  broken: ChainBreak | null;
}

export async function verifyChain(db: Db): Promise<ChainReport> {
  let prev = GENESIS_HASH;
  let headSeq: number | null = null;
  let rows = 0;
  for await (const row of iterateChain(db)) {
    rows++;
    const hashOk = row.hash === rowHash(row);
    const linkOk = row.prev_hash === prev;
    if (!hashOk || !linkOk) {
      const problem: ChainProblem = !hashOk && !linkOk ? 'hash_and_link' : hashOk ? 'link' : 'hash';
      const what = {
        hash: 'its content does not match its hash (the row or its hash was changed)',
        link: 'its prev_hash is not the hash of the row before it (a row before it was removed, inserted or re-hashed)',
        hash_and_link: 'its content does not match its hash and its prev_hash does not match the row before it',
        truncated: '',
      }[problem];
      return {
        ok: false, rows, headSeq, headHash: prev,
        broken: { seq: row.seq, id: row.id, problem, message: `audit chain broken at seq ${row.seq} (id ${row.id}): ${what}` },
      };
    }
    prev = row.hash!;
    headSeq = row.seq;
  }
  const issued = await highestSeqIssued(db);
  if (issued > (headSeq ?? 0)) {
    return {
      ok: false, rows, headSeq, headHash: prev,
      broken: {
        seq: issued, id: null, problem: 'truncated',
        message: `audit chain broken after seq ${headSeq ?? 0}: rows up to seq ${issued} were written and are missing (the end of the log was removed)`,
      },
    };
  }
  return { ok: true, rows, headSeq, headHash: prev, broken: null };
}
