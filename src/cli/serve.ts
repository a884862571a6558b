// svc serve
import type { Argv } from 'yargs';
import { startServer } from '../server.ts';
import { configFrom, serveUntilSignal, sharedOptions, type SharedArgs } from './common.ts';

export const serveCommand = {
  command: 'serve',
  describe: 'run the HTTP service',
  builder: (y: Argv) => sharedOptions(y)
    .option('host', { type: 'string', describe: 'listen address (SVC_HOST, default 127.0.0.1)' })
    .option('port', { type: 'string', describe: 'listen port, 0 = any free port (SVC_PORT, default 8080)' })
    .option('role', { type: 'string', describe: 'all (default), api (the HTTP API only) or worker (jobs and deliveries, HTTP only for GET /api/health) (SVC_ROLE)' }),
  handler: async (args: SharedArgs & { host?: string; port?: string; role?: string }) => {
    const running = await startServer(configFrom(args));
    serveUntilSignal(running.url, () => running.close());
  },
};
