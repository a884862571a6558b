// svc model-server: the project's own local model service (src/modelserver/), started with faults
// if asked. Prints `listening on http://HOST:PORT` when ready; SIGTERM/SIGINT close it.
import type { Argv } from 'yargs';
import type { Faults } from '../../tools/model-server/faults.ts';
import { startModelServer } from '../../tools/model-server/server.ts';
import { validationFailed } from '../kernel/errors.ts';
import { serveUntilSignal, sharedOptions, type SharedArgs } from './common.ts';

interface ModelServerArgs extends SharedArgs {
  host: string;
  port: number;
  latencyMs?: number;
  failNext?: number;
  failStatus?: number;
  imageCount?: number;
  collage?: boolean;
  split?: boolean;
  hang?: boolean;
}

/** The faults given on the command line (unset flags leave the defaults). */
function faultsFrom(args: ModelServerArgs): Partial<Faults> {
  const given = {
    latencyMs: args.latencyMs, failNext: args.failNext, failStatus: args.failStatus, imageCount: args.imageCount,
    collage: args.collage, split: args.split, hang: args.hang,
  };
  return Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined));
}

export const modelServerCommand = {
  command: 'model-server',
  describe: 'run the local model service (openai-compatible, http-json, ComfyUI bridge) rendering media with ffmpeg',
  // The shared options are accepted as on every command (the contract); the model server keeps no data.
  builder: (y: Argv) => sharedOptions(y)
    .option('host', { type: 'string', default: '127.0.0.1', describe: 'listen address' })
    .option('port', { type: 'number', default: 8188, describe: 'listen port, 0 = any free port' })
    .option('latency-ms', { type: 'number', describe: 'delay before answering each generation call' })
    .option('fail-next', { type: 'number', describe: 'the next N generation calls fail' })
    .option('fail-status', { type: 'number', describe: 'HTTP status of those failures (default 500)' })
    .option('image-count', { type: 'number', describe: 'answer image requests with this many images' })
    .option('collage', { type: 'boolean', describe: 'images are 2x2 collages' })
    .option('split', { type: 'boolean', describe: 'images are split screens' })
    .option('hang', { type: 'boolean', describe: 'never answer generation calls (until POST /control changes it)' }),
  handler: async (args: ModelServerArgs) => {
    if (!Number.isInteger(args.port) || args.port < 0 || args.port > 65535) throw validationFailed({ port: `must be 0..65535, got ${args.port}` });
    const running = await startModelServer({ host: args.host, port: args.port, faults: faultsFrom(args) });
    serveUntilSignal(running.url, () => running.close());
  },
};
