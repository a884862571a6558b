// svc routes: every HTTP route as METHOD PATH FILE, FILE being the module that registers it (relative
// to the repository), ordered by path and then method; --json gives [{ method, path, file }]. The
// routes are bound as the server binds them (no database is opened); each knows its file because
// its module registers it through router.module(import.meta.url).
import type { Argv } from 'yargs';
import { bindRoutes } from '../app.ts';
import { Router, type Method } from '../http/router.ts';
import { configFrom, output, sharedOptions, type SharedArgs } from './common.ts';

const METHOD_ORDER: Method[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

export interface RouteLine { method: Method; path: string; file: string }

/** The service's routes in a stable order: by path (code units), then GET, POST, PUT, PATCH, DELETE. */
export function routeTable(args: SharedArgs = {}): RouteLine[] {
  const router = new Router();
  bindRoutes(router, configFrom(args));
  return router.routes
    .map((r) => {
      if (!r.file) throw new Error(`route ${r.method} ${r.pattern} was not registered through router.module(import.meta.url)`);
      return { method: r.method, path: r.pattern, file: r.file };
    })
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : METHOD_ORDER.indexOf(a.method) - METHOD_ORDER.indexOf(b.method)));
}

export const routesCommand = {
  command: 'routes',
  describe: 'every HTTP route: METHOD PATH FILE (the module registering it), by path then method',
  builder: (y: Argv) => sharedOptions(y),
  handler: (args: SharedArgs) => {
    const table = routeTable(args);
    const width = Math.max(...table.map((r) => r.path.length));
    output(args, table, table.map((r) => `${r.method.padEnd(6)} ${r.path.padEnd(width)} ${r.file}`));
  },
};
