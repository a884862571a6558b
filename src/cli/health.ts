// svc health and svc config: the same documents as GET /api/system/health and GET /api/system/config,
// as the local operator. `svc health` exits 1 when the health is failing (for cron and monitors).
import type { Argv } from 'yargs';
import { systemHealth } from '../system/health.ts';
import { configReport } from '../system/config-report.ts';
import { output, sharedOptions, withOperator, type SharedArgs } from './common.ts';

export const healthCommand = {
  command: 'health',
  describe: 'database round trip, integrity-check age, WAL size, free disk, worker heartbeat, queue depth and the storage round trip (exit 1 when failing)',
  builder: (y: Argv) => sharedOptions(y),
  handler: async (args: SharedArgs) => {
    const h = await withOperator(args, (ctx) => systemHealth(ctx));
    const st = h.storage;
    output(args, h, [
      `health: ${h.status}`, ...h.probes.map((p) => `${p.status.padEnd(4)} ${p.name.padEnd(9)} ${p.latencyMs.toFixed(1).padStart(7)} ms  ${p.message}`),
      `${st.status.padEnd(4)} ${'storage'.padEnd(9)} ${st.latencyMs.toFixed(1).padStart(7)} ms  ${st.message} (${st.driver}: ${st.location})`,
    ]);
    if (h.status === 'failing') process.exitCode = 1;
  },
};

export const configCommand = {
  command: 'config',
  describe: 'the effective configuration: every setting with its value and source (secrets only set/unset)',
  builder: (y: Argv) => sharedOptions(y),
  handler: async (args: SharedArgs) => {
    const c = await withOperator(args, (ctx) => configReport(ctx));
    output(args, c, c.settings.map((s) => `${s.env.padEnd(36)} ${(s.secret ? (s.set ? '(set)' : '(unset)') : JSON.stringify(s.value)).padEnd(40)} ${s.source}`));
  },
};
