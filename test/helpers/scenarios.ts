// Access scenarios as tables (after PocketBase's tests.ApiScenario and Hono's shared case tables): each
// row is one request and the answer it must get (status, and the error's code and details when given).
// matrix() crosses routes with callers, route by route; runScenarios() sends the rows in order over
// real HTTP and names the caller and the route in every failure.
import assert from 'node:assert/strict';
import type { Answer, TestServer } from './server.ts';

/** One request and what it must answer. */
export interface Scenario {
  /** Who calls (for the failure message). */
  name?: string;
  method: string;
  path: string;
  body?: unknown;
  /** Bearer token; none sends no credential. */
  token?: string;
  headers?: Record<string, string>;
  status: number;
  /** The error body's code. */
  code?: string;
  /** Fields the error body's details must hold (each compared with deepEqual). */
  details?: Record<string, unknown>;
  /** Further checks of the answer. */
  then?: (r: Answer) => void;
}

/** A route of a table: method, path and the body it is sent with. */
export type Route = readonly [method: string, path: string, body?: unknown];

/** A caller of a table and what every route answers it. */
export interface Caller {
  as: string;
  token?: string;
  status: number;
  code?: string;
  details?: Record<string, unknown>;
}

/** Every route for every caller, route by route. */
export function matrix(routes: readonly Route[], callers: readonly Caller[]): Scenario[] {
  return routes.flatMap(([method, path, body]) => callers.map(({ as, ...expect }) => ({ name: as, method, path, body, ...expect })));
}

/** Sends the scenarios one after the other and checks each answer. */
export async function runScenarios(s: TestServer, scenarios: readonly Scenario[]): Promise<void> {
  for (const sc of scenarios) {
    const r = await s.call(sc.method, sc.path, { token: sc.token, body: sc.body, headers: sc.headers });
    const label = `${sc.name === undefined ? '' : `${sc.name}: `}${sc.method} ${sc.path}`;
    assert.equal(r.status, sc.status, `${label}: ${r.text}`);
    if (sc.code !== undefined) assert.equal(r.body?.error?.code, sc.code, label);
    for (const [key, value] of Object.entries(sc.details ?? {})) assert.deepEqual(r.body?.error?.details?.[key], value, `${label}: details.${key}`);
    sc.then?.(r);
  }
}
