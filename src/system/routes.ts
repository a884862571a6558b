// Liveness and the API document.
import fs from 'node:fs';
import { json, type Router } from '../http/router.ts';
import { buildOpenApi } from '../http/openapi.ts';

export const VERSION: string = JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version;

export function bindSystemRoutes(r: Router): void {
  r.get('/api/health', { summary: 'Liveness: { status: "ok" }, no database detail.', tags: ['system'], auth: 'none' },
    () => json(200, { status: 'ok' }));

  let doc: string | null = null;
  r.get('/api/openapi.json', { summary: 'This OpenAPI 3.1 document.', tags: ['system'], auth: 'none' }, () => {
    doc ??= JSON.stringify(buildOpenApi(r, VERSION));
    return { status: 200, raw: doc, headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'public, max-age=60' } };
  });
}
