// svc's own local model service (`svc model-server`): openai-compatible routes, the http-json
// contract and a ComfyUI bridge over one node:http server, rendering real media with ffmpeg. It is
// a connector target like any other model service; faults can be injected to drive every client
// path. Loopback by default; an API key (option or SVC_MODEL_SERVER_API_KEY) guards generation.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MediaToolError } from '../../src/media-tools/ffmpeg.ts';
import { comfyRoutes } from './comfyui.ts';
import { controlRoutes, FaultControl, type Faults } from './faults.ts';
import { fileRoutes } from './files.ts';
import { errorBody, HttpError, RouteTable, send, type Reply, type Route } from './http.ts';
import { httpJsonRoutes } from './httpjson.ts';
import { openaiRoutes } from './openai.ts';
import { createRenderer } from './render.ts';

export interface ModelServerOptions {
  host?: string;
  /** 0 (the default) picks any free port. */
  port?: number;
  faults?: Partial<Faults>;
  /** Where rendered files and reference pictures (references/) are cached, never pruned; default a temporary directory removed on close. */
  cacheDir?: string;
  /** Required as `Authorization: Bearer <key>` on generation routes; default SVC_MODEL_SERVER_API_KEY. */
  apiKey?: string;
}

export interface RunningModelServer {
  url: string;
  port: number;
  faults: FaultControl;
  /** The font captions are drawn with (null: none found, the prompt is only in the PNG's iTXt chunk). */
  font: string | null;
  close(): Promise<void>;
}

const HEALTH: Route = { method: 'GET', pattern: '/health', handler: () => ({ status: 200, json: { status: 'ok' } }) };
const HOST_HEADER = /^[\w.-]+(:\d{1,5})?$|^\[[0-9a-fA-F:.]+\](:\d{1,5})?$/;

function errorReply(err: unknown): Reply {
  if (err instanceof HttpError) return { status: err.status, json: errorBody(err.message, err.type) };
  const message = err instanceof MediaToolError ? `rendering failed: ${err.message}` : `internal error: ${err instanceof Error ? err.message : String(err)}`;
  return { status: 500, json: errorBody(message, 'server_error') };
}

export async function startModelServer(opts: ModelServerOptions = {}): Promise<RunningModelServer> {
  const host = opts.host ?? '127.0.0.1';
  const faults = new FaultControl(opts.faults);
  const renderer = await createRenderer({ cacheDir: opts.cacheDir });
  const apiKey = opts.apiKey ?? process.env.SVC_MODEL_SERVER_API_KEY ?? '';
  const expectedAuth = apiKey ? `Bearer ${apiKey}` : null;
  const table = new RouteTable();
  const routes = [HEALTH, ...fileRoutes(renderer), ...controlRoutes(faults), ...openaiRoutes(renderer, faults),
    ...httpJsonRoutes(renderer, faults), ...comfyRoutes(renderer, faults)];
  for (const route of routes) table.add(route);

  let listenUrl = '';
  /** The origin the client used (Host), so that file URLs work through any address of this server. */
  const baseOf = (req: IncomingMessage) => {
    const hostHeader = req.headers.host;
    return hostHeader && HOST_HEADER.test(hostHeader) ? `http://${hostHeader}` : listenUrl;
  };

  /** Auth, then faults, for generation calls; false when the call must not be answered at all. */
  async function gate(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    if (expectedAuth && req.headers.authorization !== expectedAuth) {
      throw new HttpError(401, 'missing or wrong API key (Authorization: Bearer <key>)', 'authentication_error');
    }
    if (faults.quiet) return true;
    if (!(await faults.admit(res))) return false;
    const status = faults.takeFailure();
    if (status !== null) throw new HttpError(status, `injected failure: the model server was told to fail (status ${status})`);
    return true;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    try {
      const match = table.match(req.method ?? 'GET', path);
      if (!match) throw new HttpError(404, `no route for ${req.method} ${path}`);
      if (!('route' in match)) {
        res.setHeader('allow', match.allow.join(', '));
        throw new HttpError(405, `${req.method} is not allowed on ${path}`);
      }
      const { route, params } = match;
      if (route.pattern !== '/control') faults.count(`${route.method} ${route.pattern}`, route.generation === true);
      if (route.generation && !(await gate(req, res))) return;
      await send(res, await route.handler({ req, params, query: q < 0 ? '' : url.slice(q + 1), base: baseOf(req) }));
    } catch (err) {
      if (err instanceof HttpError && !res.headersSent) for (const [name, value] of Object.entries(err.headers)) res.setHeader(name, value);
      await send(res, errorReply(err));
    }
  }

  const server = http.createServer((req, res) => void handle(req, res));
  // Longer than the usual client keep-alive, so a pooled connection is not closed under a request.
  server.keepAliveTimeout = 65_000;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port ?? 0, host, () => resolve());
    });
  } catch (err) {
    await renderer.close();
    throw err;
  }
  const port = (server.address() as AddressInfo).port;
  listenUrl = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  return {
    url: listenUrl,
    port,
    faults,
    font: renderer.font,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Hung and keep-alive connections would hold close() forever.
      server.closeAllConnections();
      await closed;
      await renderer.close();
    },
  };
}
