// Figures, side by side in one run: an authenticated GET /api/context and a script save (PUT
// /api/production/script/episodes/:episodeId, a write transaction with its revision, audit record
// and search index) with 1 and 2 API processes (`svc serve --role api`: no worker, no deliveries) on
// one database and storage folder, on each engine: SQLite (the processes share DATA_DIR/svc.db) and
// PostgreSQL (a fresh database on the bench's own durable cluster, freshPostgresUrl in lib.ts; skipped
// with a note when none runs). Each engine's two processes run throughout; the 1-process figure
// loads the first only. autocannon runs in this process, one instance per loaded process with the
// connections split evenly, all in parallel; their responses are added up. Each connection saves the
// script of its own episode on the revision its last save made, so that every save is a 200 and none
// a 409 revision_conflict. The configurations are measured in alternating rounds, so that a change in
// the machine's speed during the run weighs on all alike. BENCH_DURATION (12 s per configuration and
// route), BENCH_ROUNDS (3) and BENCH_CONNECTIONS (50) change the run.
import os from 'node:os';
import autocannon, { type Client, type Options, type Request, type Result } from 'autocannon';
import { loadConfig } from '../src/kernel/config.ts';
import { openDatabase } from '../src/db/open.ts';
import { createEpisode } from '../src/production/catalog/catalog.ts';
import {
  BENCH_POSTGRES, NO_BENCH_POSTGRES, createStudio, freshPostgresUrl, login, num, percentile, printTable, report, setupSvc, startSvc, type Running, type SvcSetup,
} from './lib.ts';

const DURATION_S = Number(process.env.BENCH_DURATION ?? 12);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const WARMUP_S = 2;
const PROCESSES = [1, 2] as const;
const SCENES = 5;
const LINES = 10;

interface Engine {
  name: string;
  setup: SvcSetup;
  /** Two API processes on the same database. */
  procs: Running[];
  token: string;
  /** One episode per connection, and the revision of its script. */
  episodes: string[];
  revisions: Map<string, number>;
}

/**
 * A studio whose project has one episode per connection, on the engine of `env`, and two API
 * processes over it; the user logged in (the session's current project is the studio's).
 */
async function prepare(name: string, env: Record<string, string>): Promise<Engine> {
  const setup = setupSvc({ env });
  const config = loadConfig({ dataDir: setup.dataDir, storageDir: setup.storageDir }, env);
  const db = await openDatabase(config);
  let episodes: string[];
  try {
    const studio = await createStudio(db, config, setup.email);
    const pilot = (await db.get<{ season_id: string }>('SELECT season_id FROM episodes WHERE project_id = ?', studio.projectId))!;
    for (let i = 2; i <= CONNECTIONS; i++) await createEpisode(studio.ctx, pilot.season_id, { title: `Episode ${i}` });
    episodes = (await db.all<{ id: string }>('SELECT id FROM episodes WHERE project_id = ? ORDER BY position, id', studio.projectId)).map((r) => r.id);
  } finally {
    await db.close();
  }
  const procs: Running[] = [];
  for (let i = 0; i < 2; i++) procs.push(await startSvc(setup, env, ['--role', 'api']));
  const token = await login(procs[0].url, setup.email, setup.password);
  for (const p of procs) {
    const r = await fetch(`${p.url}/api/context`, { headers: { authorization: `Bearer ${token}` } });
    const body = (await r.json()) as { project?: { name?: string } | null };
    if (r.status !== 200 || body.project?.name !== 'Night Train') throw new Error(`${name}: GET /api/context before the run: ${r.status} ${JSON.stringify(body)}`);
  }
  return { name, setup, procs, token, episodes, revisions: new Map(episodes.map((id) => [id, 0])) };
}

/** A script of SCENES scenes of LINES lines (about 5 KB of JSON); one line names the take, so that every save differs. */
function scenes(take: number) {
  return Array.from({ length: SCENES }, (_, s) => ({
    id: `s${s + 1}`, heading: `INT. NIGHT TRAIN - CARRIAGE ${s + 1} - NIGHT`, location: 'Night train', timeOfDay: 'night',
    lines: Array.from({ length: LINES }, (_, l) => (l % 2 === 0
      ? { id: `s${s + 1}l${l + 1}`, kind: 'action' as const, text: s === 0 && l === 0 ? `Take ${take}: the conductor looks up from the ticket.` : `The lamps sway as the train leans into curve ${l + 1}.` }
      : { id: `s${s + 1}l${l + 1}`, kind: 'dialogue' as const, character: l % 4 === 1 ? 'MIRA' : 'THE CONDUCTOR', text: `Line ${l + 1} of scene ${s + 1}: we arrive before dawn, or not at all.` })),
  }));
}

/** The one request a connection repeats: a save of its episode's script on the revision it holds. */
function saveRequest(e: Engine, episodeId: string): Request {
  const headers = { authorization: `Bearer ${e.token}`, 'content-type': 'application/json' };
  return {
    method: 'PUT', path: `/api/production/script/episodes/${episodeId}`, headers,
    setupRequest: (req) => {
      const base = e.revisions.get(episodeId)!;
      return { ...req, body: JSON.stringify({ baseRevision: base, scenes: scenes(base + 1) }) };
    },
    onResponse: (status, body) => {
      // The connection is its episode's only editor: a save makes the next revision. A 409 (counted
      // as non-2xx) names the current one, so that one stale base costs one request, not the round.
      if (status === 200) e.revisions.set(episodeId, e.revisions.get(episodeId)! + 1);
      else if (status === 409) e.revisions.set(episodeId, (JSON.parse(body) as { error: { details: { currentRevision: number } } }).error.details.currentRevision);
    },
  };
}

/** The episodes' current revisions from the server: a save cut off at the end of the last round may have committed since. */
async function refreshRevisions(e: Engine): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 300));
  for (const id of e.episodes) {
    const r = await fetch(`${e.procs[0].url}/api/production/script/episodes/${id}`, { headers: { authorization: `Bearer ${e.token}` } });
    if (r.status !== 200) throw new Error(`${e.name}: GET script of ${id}: ${r.status} ${await r.text()}`);
    e.revisions.set(id, ((await r.json()) as { revision: number }).revision);
  }
}

type Route = 'GET /api/context' | 'PUT script (save)';
const ROUTES: Route[] = ['GET /api/context', 'PUT script (save)'];

interface Measured { responses: number; seconds: number; latencies: number[]; non2xx: number; errors: number }

/** `seconds` of load on the first `processes` processes of `e`, the connections split evenly over them. */
async function load(e: Engine, processes: number, route: Route, seconds: number): Promise<Measured> {
  if (route !== 'GET /api/context') await refreshRevisions(e);
  const free = [...e.episodes];
  const latencies: number[] = [];
  const results: Result[] = await Promise.all(e.procs.slice(0, processes).map((p, i) => {
    const connections = Math.floor(CONNECTIONS / processes) + (i < CONNECTIONS % processes ? 1 : 0);
    const opts: Options = route === 'GET /api/context'
      ? { url: p.url + '/api/context', headers: { authorization: `Bearer ${e.token}` }, connections, duration: seconds }
      : { url: p.url, connections, duration: seconds, setupClient: (client: Client) => client.setRequests([saveRequest(e, free.shift()!)]) };
    const run = autocannon(opts);
    run.on('response', (_client, _status, _bytes, ms) => { latencies.push(ms); });
    return run;
  }));
  return {
    responses: latencies.length, seconds: Math.max(...results.map((r) => r.duration)), latencies,
    non2xx: results.reduce((a, r) => a + r.non2xx, 0), errors: results.reduce((a, r) => a + r.errors + r.timeouts, 0),
  };
}

/** Rounds added up: req/s over the whole time, percentiles over every response. */
function combine(rounds: Measured[]): Measured {
  return {
    responses: rounds.reduce((a, m) => a + m.responses, 0), seconds: rounds.reduce((a, m) => a + m.seconds, 0),
    latencies: rounds.flatMap((m) => m.latencies), non2xx: rounds.reduce((a, m) => a + m.non2xx, 0), errors: rounds.reduce((a, m) => a + m.errors, 0),
  };
}

const engines: Engine[] = [];
const notes: string[] = [];
try {
  engines.push(await prepare('SQLite', {}));
  const url = await freshPostgresUrl();
  if (url) engines.push(await prepare('PostgreSQL', { SVC_DATABASE: 'postgres', SVC_POSTGRES_URL: url }));
  else notes.push(NO_BENCH_POSTGRES);

  const configs = engines.flatMap((e) => PROCESSES.flatMap((n) => ROUTES.map((route) => ({ e, n, route, rounds: [] as Measured[] }))));
  for (const c of configs) await load(c.e, c.n, c.route, WARMUP_S);
  for (let i = 0; i < ROUNDS; i++) {
    for (const c of configs) c.rounds.push(await load(c.e, c.n, c.route, DURATION_S / ROUNDS));
  }

  const perSecond = (m: Measured) => m.responses / m.seconds;
  const rows: string[][] = [['engine', 'API processes', 'route', 'req/s', 'p50', 'p99', 'non-2xx', 'err+timeout', '2 / 1 processes']];
  let bad = 0;
  for (const c of configs) {
    const m = combine(c.rounds);
    bad += m.non2xx + m.errors;
    const one = configs.find((x) => x.e === c.e && x.n === 1 && x.route === c.route)!;
    const ratio = c.n === 1 ? '' : num(perSecond(m) / perSecond(combine(one.rounds)), 2) + '×';
    rows.push([c.e.name, String(c.n), c.route, num(perSecond(m)), num(percentile(m.latencies, 50), 1) + ' ms', num(percentile(m.latencies, 99), 1) + ' ms', num(m.non2xx), num(m.errors), ratio]);
    report({ figure: `${c.e.name} ${c.n} API process${c.n === 1 ? '' : 'es'} ${c.route} req/s`, value: perSecond(m), unit: 'req/s', better: 'higher' });
  }
  printTable(`API processes: ${CONNECTIONS} connections split over 1 or 2 \`svc serve --role api\` on one database (${ROUNDS} alternating rounds of ${num(DURATION_S / ROUNDS, 1)} s each after ${WARMUP_S} s warm-up)`, rows, [
    `save: PUT /api/production/script/episodes/:id, ${SCENES} scenes of ${LINES} lines (about 5 KB); each connection saves its own episode on its last revision (must be 0 non-2xx)`,
    'SQLite: the processes share DATA_DIR/svc.db (WAL, synchronous=FULL, writers serialized by the file lock); ' + BENCH_POSTGRES,
    `both processes of an engine run throughout; default log level (info), access log to a file; autocannon in the bench process`,
    `on this ${os.cpus().length}-core machine autocannon, the API processes and PostgreSQL share the cores: a second process can only use CPU time the others leave idle`,
    ...notes,
  ]);
  if (bad > 0) {
    process.stderr.write('api-processes: non-2xx responses, errors or timeouts; the figures are not valid\n');
    process.exitCode = 1;
  }
} finally {
  for (const e of engines) for (const p of e.procs) await p.stop();
}
