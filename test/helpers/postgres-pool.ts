// Databases with the current schema for test servers on PostgreSQL, reused across tests and test
// processes. Making one (CREATE DATABASE, then schema.pg.sql) costs the server about a second;
// emptying a used one costs about 30 ms, so the suite on PostgreSQL spends its time testing.
//
// - The pool's databases are named svcpool_<key>_<suffix>, where <key> hashes schema.pg.sql and the
//   PostgreSQL migrations: another schema is another pool. svcpool_<key>_t is the pristine template,
//   never handed out: every pool database starts as its copy, and it tells what "empty" is (the rows
//   the schema seeds and where its sequences stand).
// - A test claims a database with a session advisory lock held by this process's connection to the
//   maintenance database, so a process that dies frees its databases. A database still connected
//   (a server of a test that never closed) is passed over.
// - Claiming empties the database: every table but the schema version is deleted (triggers and
//   foreign keys off: session_replication_role = replica, which needs the superuser the test cluster
//   runs as), the seeded rows written back and the sequences set back. A database whose schema no
//   longer matches the template's fingerprint (a test added a trigger, say) is dropped, not reused.
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { openPostgres } from '../../src/db/postgres.ts';
import { migrate, PG_MIGRATIONS_DIR } from '../../src/db/migrate.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The pool's key: the PostgreSQL schema and its migrations. */
function poolKey(): string {
  const h = createHash('sha256').update(fs.readFileSync(path.join(ROOT, 'schema.pg.sql')));
  for (const f of fs.readdirSync(PG_MIGRATIONS_DIR).sort()) h.update(f).update(fs.readFileSync(path.join(PG_MIGRATIONS_DIR, f)));
  return h.digest('hex').slice(0, 10);
}

/** Everything the schema is made of, hashed: relations, columns, constraints, triggers, functions, schemas and its version. */
const FINGERPRINT = `
SELECT md5(string_agg(x, ',' ORDER BY x)) AS fingerprint FROM (
  SELECT 'n:' || nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema'
  UNION ALL SELECT 'c:' || n.nspname || '.' || c.relname || ':' || c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'
  UNION ALL SELECT 'a:' || c.relname || '.' || a.attname || ':' || format_type(a.atttypid, a.atttypmod) || ':' || a.attnotnull
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public' AND a.attnum > 0 AND NOT a.attisdropped
  UNION ALL SELECT 'k:' || conname || ':' || md5(pg_get_constraintdef(k.oid)) FROM pg_constraint k JOIN pg_namespace n ON n.oid = k.connamespace WHERE n.nspname = 'public'
  UNION ALL SELECT 't:' || tgname || ':' || tgenabled::text || ':' || md5(pg_get_triggerdef(t.oid)) FROM pg_trigger t WHERE NOT tgisinternal
  UNION ALL SELECT 'p:' || p.proname || ':' || md5(p.prosrc) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'
  UNION ALL SELECT 'v:' || version FROM svc_schema_version
) f(x)`;

interface Pristine { reset: string; fingerprint: string }

export class DatabasePool {
  private readonly key = poolKey();
  private readonly template = `svcpool_${this.key}_t`;
  private holder?: pg.Client;
  private pristine?: Pristine;
  private readonly held = new Set<string>();

  private readonly serverUrl: () => string;

  constructor(serverUrl: () => string) {
    this.serverUrl = serverUrl;
  }

  urlOf(name: string): string {
    const url = new URL(this.serverUrl());
    url.pathname = `/${name}`;
    return url.toString();
  }

  /** A query on the holding connection, which keeps this process alive only while it runs. */
  private async hold<T extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<T[]> {
    if (!this.holder) {
      const client = new pg.Client({ connectionString: this.serverUrl(), application_name: 'svc-test-pool' });
      client.on('error', () => { this.holder = undefined; });
      await client.connect();
      this.holder = client;
    }
    const stream = (this.holder as unknown as { connection: { stream: { ref(): void; unref(): void } } }).connection.stream;
    stream.ref();
    try {
      return (await this.holder.query<T>(sql, params)).rows;
    } finally {
      stream.unref();
    }
  }

  /** The template, made once (under a lock every process of every run takes), and what empty means. */
  private async ensurePristine(): Promise<Pristine> {
    if (this.pristine) return this.pristine;
    await this.hold('SELECT pg_advisory_lock(hashtext($1))', [`svcpool-make-${this.key}`]);
    try {
      const exists = await this.hold('SELECT 1 FROM pg_database WHERE datname = $1', [this.template]);
      if (exists.length === 0) {
        const making = `svcmake_${this.key}`;
        await this.hold(`DROP DATABASE IF EXISTS ${making} WITH (FORCE)`);
        await this.hold(`CREATE DATABASE ${making} TEMPLATE template0`);
        const db = await openPostgres({ url: this.urlOf(making), max: 1 });
        try {
          await migrate(db);
        } finally {
          await db.close();
        }
        await this.hold(`ALTER DATABASE ${making} RENAME TO ${this.template}`);
      }
      this.pristine = await this.readPristine();
      return this.pristine;
    } finally {
      await this.hold('SELECT pg_advisory_unlock(hashtext($1))', [`svcpool-make-${this.key}`]);
    }
  }

  private async readPristine(): Promise<Pristine> {
    const c = new pg.Client({ connectionString: this.urlOf(this.template) });
    await c.connect();
    try {
      const tables = (await c.query<{ t: string }>(`SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'svc_schema_version' ORDER BY 1`)).rows.map((r) => r.t);
      const parts = ['SET session_replication_role = replica'];
      for (const t of tables) parts.push(`DELETE FROM "${t}"`);
      for (const t of tables) {
        const rows = (await c.query(`SELECT * FROM "${t}"`)).rows;
        if (rows.length > 0) parts.push(`INSERT INTO "${t}" SELECT * FROM json_populate_recordset(NULL::"${t}", ${pg.escapeLiteral(JSON.stringify(rows))})`);
      }
      const sequences = (await c.query<{ s: string; v: string; called: boolean }>(
        `SELECT format('%I', sequencename) AS s, coalesce(last_value, start_value) AS v, last_value IS NOT NULL AS called
           FROM pg_sequences WHERE schemaname = 'public'`)).rows;
      for (const s of sequences) parts.push(`SELECT setval(${pg.escapeLiteral(s.s)}, ${s.v}, ${s.called})`);
      parts.push('SET session_replication_role = origin');
      const fingerprint = (await c.query<{ fingerprint: string }>(FINGERPRINT)).rows[0].fingerprint;
      return { reset: parts.join(';\n'), fingerprint };
    } finally {
      await c.end();
    }
  }

  /** Empties a used database; false when it is not fit to reuse (its schema changed, or anything failed). */
  private async reset(name: string, pristine: Pristine): Promise<boolean> {
    const c = new pg.Client({ connectionString: this.urlOf(name) });
    try {
      await c.connect();
      if ((await c.query<{ fingerprint: string }>(FINGERPRINT)).rows[0].fingerprint !== pristine.fingerprint) return false;
      await c.query(pristine.reset);
      return true;
    } catch {
      return false;
    } finally {
      await c.end().catch(() => {});
    }
  }

  /** A database with the current schema and no rows of any test, this test's until `release`. */
  async claim(): Promise<string> {
    const pristine = await this.ensurePristine();
    const names = await this.hold<{ datname: string; connected: boolean }>(
      `SELECT datname, EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.datname = d.datname) AS connected
         FROM pg_database d WHERE datname LIKE $1 AND datname <> $2 ORDER BY datname`, [`svcpool\\_${this.key}\\_%`, this.template]);
    for (const { datname, connected } of names) {
      if (connected || this.held.has(datname)) continue;
      const [{ locked }] = await this.hold<{ locked: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS locked', [datname]);
      if (!locked) continue;
      if (await this.reset(datname, pristine)) {
        this.held.add(datname);
        return datname;
      }
      await this.hold(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`).catch(() => {});
      await this.hold('SELECT pg_advisory_unlock(hashtext($1))', [datname]);
    }
    const name = `svcpool_${this.key}_${randomBytes(5).toString('hex')}`;
    await this.hold('SELECT pg_advisory_lock(hashtext($1))', [name]);
    // Copies of the template are made one at a time: CREATE DATABASE refuses a template someone is connected to.
    await this.hold('SELECT pg_advisory_lock(hashtext($1))', [`svcpool-make-${this.key}`]);
    try {
      await this.hold(`CREATE DATABASE ${name} TEMPLATE ${this.template}`);
    } finally {
      await this.hold('SELECT pg_advisory_unlock(hashtext($1))', [`svcpool-make-${this.key}`]);
    }
    this.held.add(name);
    return name;
  }

  /** Gives a claimed database back (emptied by its next claim). */
  async release(name: string): Promise<void> {
    if (!this.held.delete(name)) return;
    await this.hold('SELECT pg_advisory_unlock(hashtext($1))', [name]);
  }
}
