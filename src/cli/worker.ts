// svc worker status: the same status document as GET /api/system/worker, read from the database
// (the worker thread of a running `svc serve` keeps it current).
import type { Argv } from 'yargs';
import { workerStatus } from '../generation/dispatch/status.ts';
import { output, sharedOptions, withOperator, type SharedArgs } from './common.ts';

const status = {
  command: 'status',
  describe: 'the worker\'s health, heartbeat, queue depth and alerts, running count and last times',
  builder: (y: Argv) => sharedOptions(y),
  handler: async (args: SharedArgs) => {
    const s = await withOperator(args, (ctx) => workerStatus(ctx));
    const age = s.heartbeatAgeMs === null ? 'never' : `${(s.heartbeatAgeMs / 1000).toFixed(1)} s ago`;
    const depth = Object.entries(s.queueDepth).map(([k, v]) => `${k} ${v}`).join(', ');
    output(args, s, [
      `worker ${s.workerId}: ${s.healthStatus} (heartbeat ${age}, stale after ${s.staleThresholdMs / 1000} s)`,
      `concurrency ${s.concurrency}, poll ${s.pollIntervalMs} ms, lease ${s.leaseMs} ms, running ${s.runningCount}`,
      `queue: ${depth}`,
      `last claimed ${s.lastClaimedAt ?? '-'}, completed ${s.lastCompletedAt ?? '-'}, failed ${s.lastFailedAt ?? '-'}, reclaimed ${s.lastReclaimedAt ?? '-'}, retried ${s.lastRetriedAt ?? '-'}`,
      ...(s.lastError ? [`last error: ${s.lastError}`] : []),
      ...s.queueAlerts.map((a) => `alert ${a.code}: ${a.message}`),
      ...(s.workers ?? []).map((w) => `live worker ${w.workerId}: ${w.healthStatus}, running ${w.runningCount} of ${w.concurrency}, heartbeat ${(w.heartbeatAgeMs / 1000).toFixed(1)} s ago`),
    ]);
  },
};

export const workerCommand = {
  command: 'worker <command>',
  describe: 'inspect the job worker',
  builder: (y: Argv) => y.command(status).demandCommand(1),
  handler: () => {},
};
