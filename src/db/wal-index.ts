// Noticing commits by other connections cheaply: the WAL-index header at the start of the -shm file
// (SQLite's documented wal-index format) changes with every commit. Db.syncCache() compares it.
import fs from 'node:fs';

/** Both 48-byte copies of the WAL-index header at the start of the -shm file. */
export const WAL_HEADER_BYTES = 96;

export interface Shm { fd: number; last: Buffer; next: Buffer }

export function openShm(dbPath: string): Shm | null {
  if (dbPath === ':memory:') return null;
  try {
    return { fd: fs.openSync(`${dbPath}-shm`, 'r'), last: Buffer.alloc(WAL_HEADER_BYTES), next: Buffer.alloc(WAL_HEADER_BYTES) };
  } catch {
    return null;
  }
}

export function readShmHeader(fd: number, into: Buffer): number {
  try {
    return fs.readSync(fd, into, 0, WAL_HEADER_BYTES, 0);
  } catch {
    return -1;
  }
}
