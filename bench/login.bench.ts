// Figure: POST /api/auth/login latency at the production scrypt cost (N=2^17, r=8, p=1): successful
// logins, and the two failure paths (wrong password, unknown e-mail), which should take about the
// same time so that the answer's timing does not tell whether an address has an account.
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { num, percentile, printTable, setupSvc, startSvc } from './lib.ts';

const SUCCESSES = 20;
const FAILURES = 10; // of each kind

// The production cost: no inherited SVC_SCRYPT_LOG_N, for the CLI that hashes the password and for
// the server. The failed-login limits are raised so that the failures are all 401, not 429.
const env = {
  SVC_SCRYPT_LOG_N: undefined,
  SVC_LOGIN_MAX_FAILURES_PER_EMAIL: '100000',
  SVC_LOGIN_MAX_FAILURES_PER_ADDRESS: '100000',
};
const setup = setupSvc({ env });
{
  const db = new DatabaseSync(path.join(setup.dataDir, 'svc.db'), { readOnly: true });
  const row = db.prepare('SELECT password_hash FROM users WHERE id = ?').get(setup.userId) as { password_hash: string };
  db.close();
  if (!row.password_hash.startsWith('$scrypt$ln=17,r=8,p=1$')) throw new Error(`unexpected hash parameters: ${row.password_hash.split('$')[2]}`);
}

const svc = await startSvc(setup, env);

/** One login; returns ms from before fetch to the body read, and checks the expected status. */
async function attempt(email: string, password: string, expected: 200 | 401): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${svc.url}/api/auth/login`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }),
  });
  const text = await res.text();
  const ms = performance.now() - t0;
  if (res.status !== expected) throw new Error(`login ${email}: expected ${expected}, got ${res.status} ${text}`);
  return ms;
}

const ok: number[] = [];
const wrong: number[] = [];
const unknown: number[] = [];
let coldUnknown: number;
try {
  // The first unknown e-mail after start also hashes the server's dummy password; measured apart.
  coldUnknown = await attempt('nobody-cold@example.com', setup.password, 401);
  await attempt(setup.email, setup.password, 200); // warm-up: connection, JIT
  for (let i = 0; i < SUCCESSES; i++) ok.push(await attempt(setup.email, setup.password, 200));
  // Interleaved, so that drift in the machine's speed hits both kinds alike.
  for (let i = 0; i < FAILURES; i++) {
    wrong.push(await attempt(setup.email, `wrong-password-${i}`, 401));
    unknown.push(await attempt(`nobody-${i}@example.com`, setup.password, 401));
  }
} finally {
  const how = await svc.stop();
  if (how !== 0) process.stderr.write(`svc serve exited with ${how}\n`);
}

const row = (name: string, s: number[], withP95: boolean) => [
  name, s.length, num(percentile(s, 50), 1) + ' ms', withP95 ? num(percentile(s, 95), 1) + ' ms' : '-',
  num(Math.min(...s), 1) + ' ms', num(Math.max(...s), 1) + ' ms',
];
const gap = percentile(unknown, 50) / percentile(wrong, 50);

printTable('Login: POST /api/auth/login, sequential, scrypt N=2^17 r=8 p=1 (production default)', [
  ['case', 'n', 'p50', 'p95', 'min', 'max'],
  row('success (200)', ok, true),
  row('wrong password (401)', wrong, false),
  row('unknown e-mail (401)', unknown, false),
  ['unknown e-mail, first after start', 1, num(coldUnknown, 1) + ' ms', '-', '-', '-'],
], [
  `unknown / wrong password p50: ${num(gap, 2)}x (about 1 = no timing difference between the failure paths)`,
  'time: performance.now() around fetch + body read, one keep-alive connection, after one warm-up login; nearest-rank percentiles',
  'svc: failed-login limits raised to 100000 for this run (defaults 10 per e-mail, 30 per address); access log on, to a file',
]);
