// The model server's HTTP plumbing: a route table, body reading with limits, and replies. Errors
// follow OpenAI's shape, `{ "error": { "message", "type", "code"? } }`, on every protocol, since
// that is what clients of model services parse. Kept apart from svc's own router on purpose: the
// model server is a stranger to the service (no sessions, no contexts, its own error body).
import fs from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';

export type Method = 'GET' | 'POST';

export interface Call {
  req: IncomingMessage;
  params: Record<string, string>;
  /** The raw query string (without '?'); parsed only by the routes that read it. */
  query: string;
  /** http://host:port as the client addressed this server, for absolute file URLs. */
  base: string;
}

export type Reply =
  | { status: number; json: unknown }
  | { status: number; bytes: Buffer; type: string }
  | { status: number; file: string; size: number; type: string };

export interface Route {
  method: Method;
  pattern: string;
  /** Generation routes are the ones faults and the API key apply to. */
  generation?: boolean;
  handler(call: Call): Reply | Promise<Reply>;
}

export class HttpError extends Error {
  readonly status: number;
  readonly type: string;
  /** Headers of the error answer (Retry-After of a 429). */
  readonly headers: Readonly<Record<string, string>>;
  constructor(status: number, message: string, type = status >= 500 ? 'server_error' : 'invalid_request_error', headers: Record<string, string> = {}) {
    super(message);
    this.status = status;
    this.type = type;
    this.headers = headers;
  }
}

/** 422 for a body that parses but says something impossible. */
export const invalid = (message: string): HttpError => new HttpError(422, message);

export function errorBody(message: string, type: string): { error: { message: string; type: string } } {
  return { error: { message, type } };
}

export const JSON_LIMIT = 1024 * 1024;

/**
 * The whole body, refused with 413 past `limit` bytes. Plain 'data' events rather than async
 * iteration: on the chat hot path the iterator's promise machinery costs more than the parse.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const tooLarge = () => new HttpError(413, `request body is larger than ${limit} bytes`);
  if (Number(req.headers['content-length']) > limit) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      // Keep reading (and dropping) so that the 413 can still be written on this connection.
      req.off('data', onData);
      req.resume();
      reject(tooLarge());
    };
    req.on('data', onData);
    req.once('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)));
    req.once('error', reject);
  });
}

/** The body as a JSON object: 400 when it is not JSON or not an object. */
export async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const raw = await readBody(req, JSON_LIMIT);
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new HttpError(400, 'the request body is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new HttpError(400, 'the request body must be a JSON object');
  return value as Record<string, unknown>;
}

export async function send(res: ServerResponse, reply: Reply): Promise<void> {
  // The client may have gone (hang, latency): nothing left to answer.
  if (res.destroyed || res.headersSent) return;
  if ('json' in reply) {
    const text = JSON.stringify(reply.json);
    res.writeHead(reply.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  } else if ('bytes' in reply) {
    res.writeHead(reply.status, { 'content-type': reply.type, 'content-length': reply.bytes.length });
    res.end(reply.bytes);
  } else {
    res.writeHead(reply.status, { 'content-type': reply.type, 'content-length': reply.size });
    await pipeline(fs.createReadStream(reply.file), res).catch(() => res.destroy());
  }
}

interface PatternRoute { segments: string[]; byMethod: Map<Method, Route> }

export type Match = { route: Route; params: Record<string, string> } | { allow: Method[] } | null;

/**
 * Literal paths are one Map lookup (the chat route is hot); patterns with ':name' segments are
 * few and tried in order.
 */
export class RouteTable {
  private readonly literal = new Map<string, Map<Method, Route>>();
  private readonly patterns: PatternRoute[] = [];

  add(route: Route): void {
    const byMethod = route.pattern.includes(':') ? this.patternRoutes(route.pattern) : this.literalRoutes(route.pattern);
    byMethod.set(route.method, route);
  }

  match(method: string, path: string): Match {
    const literal = this.literal.get(path);
    if (literal) return pick(literal, method, {});
    const segments = path.split('/');
    for (const p of this.patterns) {
      const params = matchSegments(p.segments, segments);
      if (params) return pick(p.byMethod, method, params);
    }
    return null;
  }

  private literalRoutes(pattern: string): Map<Method, Route> {
    let byMethod = this.literal.get(pattern);
    if (!byMethod) this.literal.set(pattern, byMethod = new Map<Method, Route>());
    return byMethod;
  }

  private patternRoutes(pattern: string): Map<Method, Route> {
    let found = this.patterns.find((p) => p.segments.join('/') === pattern);
    if (!found) this.patterns.push(found = { segments: pattern.split('/'), byMethod: new Map() });
    return found.byMethod;
  }
}

function pick(byMethod: Map<Method, Route>, method: string, params: Record<string, string>): Match {
  const route = byMethod.get(method as Method);
  return route ? { route, params } : { allow: [...byMethod.keys()] };
}

function matchSegments(pattern: string[], actual: string[]): Record<string, string> | null {
  if (pattern.length !== actual.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i].startsWith(':')) {
      if (!actual[i]) return null;
      try {
        params[pattern[i].slice(1)] = decodeURIComponent(actual[i]);
      } catch {
        return null;
      }
    } else if (pattern[i] !== actual[i]) {
      return null;
    }
  }
  return params;
}
