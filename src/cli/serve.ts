// svc serve
import type { Argv } from 'yargs';
import { startServer } from '../server.ts';
import { configFrom, sharedOptions, type SharedArgs } from './common.ts';

export const serveCommand = {
  command: 'serve',
  describe: 'run the HTTP service',
  builder: (y: Argv) => sharedOptions(y)
    .option('host', { type: 'string', describe: 'listen address (SVC_HOST, default 127.0.0.1)' })
    .option('port', { type: 'string', describe: 'listen port, 0 = any free port (SVC_PORT, default 8080)' }),
  handler: async (args: SharedArgs & { host?: string; port?: string }) => {
    const running = await startServer(configFrom(args));
    process.stdout.write(`listening on ${running.url}\n`);
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) {
        process.stderr.write(`${signal} again: exiting at once\n`);
        process.exit(1);
      }
      stopping = true;
      const hard = setTimeout(() => process.exit(1), 10_000);
      hard.unref();
      running.close().then(() => process.exit(0), (err) => {
        process.stderr.write(`shutdown failed: ${String(err)}\n`);
        process.exit(1);
      });
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
  },
};
