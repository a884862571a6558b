// The PostgreSQL server the tests use: a throwaway cluster started by tools/pg/pg.sh (`npm run
// pg:start`), found by SVC_TEST_POSTGRES_URL or the state file the script writes
// (${SVC_PG_DIR:-${TMPDIR:-/tmp}/svc-pg}/pg.env). Each test gets a database of its own, dropped after it.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import pg from 'pg';
import { openPostgres, type PostgresDb } from '../../src/db/postgres.ts';
import { openDb, type Db } from '../../src/db/db.ts';
import { DatabasePool } from './postgres-pool.ts';

export const PG_STATE_FILE = path.join(process.env.SVC_PG_DIR || path.join(process.env.TMPDIR || os.tmpdir(), 'svc-pg'), 'pg.env');

export const NO_POSTGRES = `no test PostgreSQL server: start one with \`npm run pg:start\` (tools/pg/pg.sh; needs the Debian package postgresql: apt-get install -y --no-install-recommends postgresql), or set SVC_TEST_POSTGRES_URL (state file looked for: ${PG_STATE_FILE})`;

/** The running test server's URL (its maintenance database); throws NO_POSTGRES when there is none. */
export function testPostgresUrl(): string {
  if (process.env.SVC_TEST_POSTGRES_URL) return process.env.SVC_TEST_POSTGRES_URL;
  let text: string;
  try {
    text = fs.readFileSync(PG_STATE_FILE, 'utf8');
  } catch {
    throw new Error(NO_POSTGRES);
  }
  const url = /^SVC_TEST_POSTGRES_URL=(.+)$/m.exec(text)?.[1];
  if (!url) throw new Error(NO_POSTGRES);
  return url;
}

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: testPostgresUrl() });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** A new empty database for this test (dropped after it, once `closeFirst` has run), and its URL. */
export async function freshDatabaseUrl(t: TestContext, closeFirst: () => Promise<void> = async () => {}): Promise<string> {
  const name = `t_${process.pid}_${randomBytes(5).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name} TEMPLATE template0`));
  t.after(async () => {
    await closeFirst();
    await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  });
  const url = new URL(testPostgresUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

let pool: DatabasePool | undefined;

/**
 * A database with the current schema and no rows for this test, from the pool of reused ones
 * (test/helpers/postgres-pool.ts): given back after the test, once `closeFirst` has closed every
 * connection to it.
 */
export async function schemaDatabaseUrl(t: TestContext, closeFirst: () => Promise<void> = async () => {}): Promise<string> {
  pool ??= new DatabasePool(testPostgresUrl);
  const name = await pool.claim();
  t.after(async () => {
    await closeFirst();
    await pool!.release(name);
  });
  return pool.urlOf(name);
}

/** The engine the suite runs on (SVC_TEST_DATABASE=postgres runs it on PostgreSQL, `npm run test:postgres`). */
export const testDatabase = (): 'sqlite' | 'postgres' => (process.env.SVC_TEST_DATABASE === 'postgres' ? 'postgres' : 'sqlite');

/** Each test data folder's PostgreSQL database, and what must let go of it before it is dropped. */
const folderDatabases = new Map<string, { url: Promise<string>; users: Array<() => Promise<void>> }>();

/**
 * The database settings of a process on the test data folder `dataDir`: nothing on SQLite (the file
 * svc.db in the folder is the database), on PostgreSQL SVC_DATABASE, SVC_POSTGRES_URL and
 * SVC_POSTGRES_POOL of the folder's own database. It is created at its first use, found again by every
 * later process on the folder (a test server in this process, a `bin/svc` child, a reader) as the SQLite
 * file would be, and dropped after the test once each `user` (its closing) has run. `made`: what the
 * first use gets, an empty database (a `bin/svc` child makes the schema, as on a new SQLite file) or
 * one with the schema from the pool (a test server: a second faster), given back instead of dropped.
 */
export async function dataFolderDatabase(t: TestContext, dataDir: string, user?: () => Promise<void>, made: 'empty' | 'schema' = 'empty'): Promise<Record<string, string>> {
  if (testDatabase() !== 'postgres') return {};
  const key = path.resolve(dataDir);
  let entry = folderDatabases.get(key);
  if (!entry) {
    const users: Array<() => Promise<void>> = [];
    const url = (made === 'schema' ? schemaDatabaseUrl : freshDatabaseUrl)(t, async () => {
      folderDatabases.delete(key);
      for (const close of users) await close();
    });
    entry = { url, users };
    folderDatabases.set(key, entry);
  }
  if (user) entry.users.push(user);
  return { SVC_DATABASE: 'postgres', SVC_POSTGRES_URL: await entry.url, SVC_POSTGRES_POOL: '4' };
}

/**
 * The database of a test data folder opened in this process, read-only: the SQLite file (which must
 * exist), or the folder's PostgreSQL database. Closed after the test (before the database is dropped);
 * closing it earlier is fine.
 */
export async function openDataFolderDb(t: TestContext, dataDir: string): Promise<Db> {
  const opened: { close?: () => void | Promise<void>; closing?: Promise<void> } = {};
  const close = async () => { opened.closing ??= Promise.resolve(opened.close?.()); await opened.closing; };
  let db: Db;
  if (testDatabase() === 'postgres') {
    const env = await dataFolderDatabase(t, dataDir, close);
    db = await openPostgres({ url: env.SVC_POSTGRES_URL, max: 2, readOnly: true });
  } else {
    db = openDb(path.join(dataDir, 'svc.db'), { readOnly: true });
    t.after(close);
  }
  opened.close = db.close.bind(db);
  db.close = close;
  return db;
}

/** A PostgresDb over a new empty database, closed and dropped after the test. */
export async function freshPostgres(t: TestContext, max?: number): Promise<PostgresDb> {
  const opened: { db?: PostgresDb } = {};
  const url = await freshDatabaseUrl(t, async () => await opened.db?.close());
  opened.db = await openPostgres({ url, max });
  return opened.db;
}

/** A new empty database of each engine for a test (closed, and on PostgreSQL dropped, after it): tests loop over it. */
export const ENGINES: Record<string, (t: TestContext) => Promise<Db>> = {
  sqlite: async (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-engine-'));
    const db = openDb(path.join(dir, 'svc.db'));
    t.after(() => {
      db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    });
    return db;
  },
  postgres: async (t) => await freshPostgres(t),
};

/**
 * Another writer on a test server's database, outside the server: on SQLite a child process that takes
 * the file's write lock (BEGIN IMMEDIATE; a timer of its own commits, since the server's SQLite calls
 * block this process while they wait), on PostgreSQL a connection of its own. It runs `sql` (`?`
 * placeholders) in a transaction, resolves once that holds, and commits `holdMs` later: `committed`.
 */
export async function otherWriter(config: { database: string; postgresUrl: string; dbPath: string }, sql: string, params: Array<string | number>, holdMs: number): Promise<{ committed: Promise<void> }> {
  if (config.database === 'postgres') {
    const client = new pg.Client({ connectionString: config.postgresUrl });
    await client.connect();
    await client.query('BEGIN');
    let n = 0;
    await client.query(sql.replace(/\?/g, () => `$${++n}`), params);
    const committed = new Promise((resolve) => setTimeout(resolve, holdMs)).then(async () => {
      await client.query('COMMIT');
      await client.end();
    });
    return { committed };
  }
  const child = spawn(process.execPath, ['-e', `
    const { DatabaseSync } = require('node:sqlite');
    const db = new DatabaseSync(process.argv[1]);
    db.exec('PRAGMA busy_timeout = 5000');
    db.exec('BEGIN IMMEDIATE');
    db.prepare(process.argv[2]).run(...JSON.parse(process.argv[3]));
    process.stdout.write('locked\\n');
    setTimeout(() => { db.exec('COMMIT'); db.close(); }, Number(process.argv[4]));
  `, config.dbPath, sql, JSON.stringify(params), String(holdMs)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = once(child, 'exit');
  await once(child.stdout, 'data');
  return { committed: exited.then((end) => assert.deepEqual(end, [0, null], 'the other writer committed')) };
}
