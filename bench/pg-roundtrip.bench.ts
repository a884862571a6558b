// Figure: what one statement costs on PostgreSQL, one connection, one caller (the bench's own durable
// cluster, freshPostgresUrl in lib.ts): the worker's claimable-job check (anyClaimable: a join of
// three tables with EXISTS) and a primary-key lookup, each run BENCH_STATEMENTS (3000) times after a
// warm-up, mean µs per statement. A statement text run often is prepared by name on its connection
// (src/db/postgres.ts), so the server parses and plans it once; before that every run was parsed
// and planned again.
import { openPostgres } from '../src/db/postgres.ts';
import { migrate } from '../src/db/migrate.ts';
import { anyClaimable } from '../src/generation/jobs/claim.ts';
import { freshPostgresUrl, NO_BENCH_POSTGRES, BENCH_POSTGRES, num, printTable, report } from './lib.ts';

const N = Number(process.env.BENCH_STATEMENTS ?? 3000);
const url = await freshPostgresUrl();
if (!url) {
  process.stdout.write(`${NO_BENCH_POSTGRES}\n`);
} else {
  const db = await openPostgres({ url, max: 1 });
  try {
    await migrate(db);
    const now = new Date().toISOString();
    const timed = async (fn: () => Promise<unknown>) => {
      for (let i = 0; i < 50; i++) await fn();
      const t0 = performance.now();
      for (let i = 0; i < N; i++) await fn();
      return ((performance.now() - t0) * 1000) / N;
    };
    const claim = await timed(() => anyClaimable(db, now));
    const pk = await timed(() => db.get('SELECT id, status FROM generation_jobs WHERE id = ?', 'none'));
    printTable('PostgreSQL: one statement, one connection (mean of the runs after a warm-up)', [
      ['statement', 'runs', 'µs each'],
      ['claimable-job check (anyClaimable)', num(N), num(claim)],
      ['primary-key lookup', num(N), num(pk)],
    ], [BENCH_POSTGRES]);
    report({ figure: 'claimable-job check µs', value: claim, unit: 'µs', better: 'lower' });
    report({ figure: 'primary-key lookup µs', value: pk, unit: 'µs', better: 'lower' });
  } finally {
    await db.close();
  }
}
