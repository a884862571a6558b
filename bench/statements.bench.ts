// Figure: SQL statements per request of hot routes, on each engine side by side (SQLite, and
// PostgreSQL on the bench's own cluster when its binaries are installed, freshPostgresUrl in lib.ts). A statement
// costs ~4-5 µs on SQLite here and ~140-170 µs on PostgreSQL (a round trip), so a route that loops a
// query per item (N+1) shows here first. The server runs in this process (its Db counts the
// statements it runs, Db.statementCount); each route is called once to warm it, then ROUNDS times,
// one at a time, and the mean count is printed with the mean latency.
import { loadConfig, type Config } from '../src/kernel/config.ts';
import { startServer, type RunningServer } from '../src/server.ts';
import { createLogger } from '../src/kernel/log.ts';
import { BENCH_POSTGRES, NO_BENCH_POSTGRES, createStudio, freshPostgresUrl, login, num, printTable, report, setupSvc } from './lib.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);


interface Route { name: string; method: string; path: string; body?: unknown }

async function measure(env: Record<string, string>): Promise<Map<string, { statements: number; ms: number; status: number }>> {
  const setup = setupSvc({ env });
  const config: Config = loadConfig({ dataDir: setup.dataDir, storageDir: setup.storageDir, host: '127.0.0.1', port: 0 }, { SVC_LOG_LEVEL: 'error', SVC_ROLE: 'api', ...env });
  const log = createLogger('error');
  const running: RunningServer = await startServer(config, log);
  try {
    const project = await createStudio(running.db, config, setup.email);
    const episode = (await running.db.get<{ id: string }>('SELECT id FROM episodes WHERE project_id = ? ORDER BY created_at, id LIMIT 1', project.projectId))!.id;
    const token = await login(running.url, setup.email, setup.password);
    const scene = (i: number) => ({ id: `s${i}`, heading: `INT. TRAIN - NIGHT ${i}`, lines: [{ id: `l${i}`, kind: 'action', text: `The conductor looks up (${i}).` }] });
    let revision = 0;
    const routes: Route[] = [
      { name: 'GET /api/context', method: 'GET', path: '/api/context' },
      { name: 'GET /api/organizations', method: 'GET', path: '/api/organizations' },
      { name: 'GET /api/jobs', method: 'GET', path: '/api/jobs' },
      { name: 'GET /api/notifications', method: 'GET', path: '/api/notifications' },
      { name: 'GET /api/assets', method: 'GET', path: '/api/assets' },
      { name: 'GET /api/production/media-artifacts', method: 'GET', path: '/api/production/media-artifacts' },
      { name: 'GET /api/search?q=conductor', method: 'GET', path: '/api/search?q=conductor' },
      { name: 'GET /api/audit', method: 'GET', path: '/api/audit' },
      { name: 'GET script of an episode', method: 'GET', path: `/api/production/script/episodes/${episode}` },
      { name: 'PUT script of an episode (save)', method: 'PUT', path: `/api/production/script/episodes/${episode}` },
    ];
    const out = new Map<string, { statements: number; ms: number; status: number }>();
    for (const r of routes) {
      const call = async () => {
        const body = r.method === 'PUT' ? JSON.stringify({ baseRevision: revision, scenes: [scene(revision)] }) : undefined;
        const res = await fetch(running.url + r.path, {
          method: r.method, body, headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        });
        const text = await res.text();
        if (r.method === 'PUT' && res.status === 200) revision = (JSON.parse(text) as { revision: number }).revision;
        return res.status;
      };
      await call(); // warm: prepared statements, caches
      const before = running.db.statementCount;
      const t0 = performance.now();
      let status = 0;
      for (let i = 0; i < ROUNDS; i++) status = await call();
      out.set(r.name, { statements: (running.db.statementCount - before) / ROUNDS, ms: (performance.now() - t0) / ROUNDS, status });
    }
    return out;
  } finally {
    await running.close();
  }
}

const sqlite = await measure({});
const url = await freshPostgresUrl();
let failure = '';
const postgres = url
  ? await measure({ SVC_DATABASE: 'postgres', SVC_POSTGRES_URL: url }).catch((err: unknown) => { failure = (err as Error).message.split('\n')[0]; return null; })
  : null;
const rows: string[][] = [['route', 'SQLite statements', 'SQLite ms', 'PostgreSQL statements', 'PostgreSQL ms']];
for (const [name, s] of sqlite) {
  const p = postgres?.get(name);
  const cell = (m: { statements: number; ms: number; status: number } | undefined, v: 'statements' | 'ms') =>
    (m === undefined ? 'n/a' : m.status >= 400 ? `HTTP ${m.status}` : num(m[v], 1));
  rows.push([name, cell(s, 'statements'), cell(s, 'ms'), cell(p, 'statements'), cell(p, 'ms')]);
  for (const [engine, m] of [['SQLite', s], ['PostgreSQL', p]] as const) {
    if (m && m.status < 400) report({ figure: `${name} ${engine} ms`, value: m.ms, unit: 'ms', better: 'lower' });
  }
}
printTable('Statements per request (mean of the rounds after one warm-up call; one caller at a time)', rows, [
  `${ROUNDS} calls a route; the server in this process, role api; ${url ? BENCH_POSTGRES : NO_BENCH_POSTGRES}`,
  'statements that ran are counted (cached reads that hit run none); on PostgreSQL the check of the read cache (one per request that reads it) is one',
  ...(failure ? [`PostgreSQL run failed: ${failure.slice(0, 300)}`] : []),
]);
if (failure) process.exitCode = 1;
