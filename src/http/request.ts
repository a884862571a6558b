// Reading a request: the body once, with a size limit (413), parsed as JSON (400 invalid_json);
// the client address; the request id.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Config } from '../kernel/config.ts';
import { newId } from '../kernel/ids.ts';
import { AppError, invalidJson, payloadTooLarge, validationFailed, type ErrorCode } from '../kernel/errors.ts';
import { JSON_MAX_DEPTH, jsonExcess } from '../kernel/validate.ts';

/**
 * How deep a JSON request body may nest: twice the free-form limit, so every body a schema accepts
 * fits and the free-form field's own 422 is the usual answer; anything deeper is refused here, before
 * a route without a schema (SCIM) or a serializer recurses into it.
 */
export const BODY_MAX_DEPTH = 2 * JSON_MAX_DEPTH;

/** How long a client has to send a whole request (node:http's requestTimeout): an upload longer than this is cut off. */
export const REQUEST_TIMEOUT_MS = 300_000;

export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) throw payloadTooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw payloadTooLarge(limit);
    chunks.push(chunk);
  }
  return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size);
}

/** The JSON body, or undefined when there is none. */
export async function readJson(req: IncomingMessage, limit: number): Promise<unknown> {
  const buf = await readBody(req, limit);
  if (buf.length === 0) return undefined;
  const type = String(req.headers['content-type'] ?? 'application/json').split(';')[0].trim().toLowerCase();
  if (type !== 'application/json' && !type.endsWith('+json')) {
    throw new AppError(415, 'unsupported_media_type', 'request body must be application/json');
  }
  let value: unknown;
  try {
    value = JSON.parse(buf.toString('utf8')); // V8's parser is iterative: any depth parses without recursion
  } catch {
    throw invalidJson();
  }
  const excess = jsonExcess(value, BODY_MAX_DEPTH, Infinity);
  if (excess && 'depth' in excess) {
    const field = excess.path[0]?.slice(0, 200) || 'body';
    throw validationFailed({ [field]: `must not nest objects and arrays more than ${BODY_MAX_DEPTH} levels deep (free-form values: ${JSON_MAX_DEPTH})` });
  }
  return value;
}

export function clientAddress(req: IncomingMessage, config: Config): string | null {
  if (config.trustProxy) {
    const fwd = req.headers['x-forwarded-for'];
    const first = (Array.isArray(fwd) ? fwd[0] : fwd)?.split(',')[0]?.trim();
    if (first) return first;
  }
  return req.socket.remoteAddress ?? null;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
// Request ids need to be unique, not secret: a random prefix per process and a counter.
const PROCESS_PREFIX = `req_${newId('x').slice(-10)}`;
let requestCounter = 0;

/** The caller's x-request-id when it is a sane token, else a new one ("req_<process>-<counter>"). */
export function requestId(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  if (typeof given === 'string' && REQUEST_ID.test(given)) return given;
  return `${PROCESS_PREFIX}-${(++requestCounter).toString(36)}`;
}

/** The service's origin as this client addressed it (scheme from X-Forwarded-Proto only behind a trusted proxy). */
export function requestOrigin(req: IncomingMessage, config: Config): string | null {
  const forwarded = config.trustProxy ? String(req.headers['x-forwarded-proto'] ?? '').split(',')[0].trim() : '';
  const proto = forwarded || ('encrypted' in req.socket && req.socket.encrypted ? 'https' : 'http');
  return req.headers.host ? `${proto}://${req.headers.host}` : null;
}

/** Where people open links: the front end, else the public URL, else the origin the client used. */
export function frontendBase(req: IncomingMessage, config: Config): string {
  return config.frontendOrigin || config.publicUrl || requestOrigin(req, config) || 'http://localhost';
}

/** An application/x-www-form-urlencoded body (415 for another type; 413 over the limit). */
export async function readForm(req: IncomingMessage, limit: number): Promise<URLSearchParams> {
  const type = String(req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw new AppError(415, 'unsupported_media_type', 'request body must be application/x-www-form-urlencoded');
  }
  return new URLSearchParams((await readBody(req, limit)).toString('utf8'));
}

/** What Node's parser refuses before any route runs, as the contract's status and code. */
const CLIENT_ERRORS: Record<string, [number, ErrorCode, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'headers_too_large', 'the request line and headers exceed the server\u2019s limit (16 KiB)'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'request_timeout', 'the request was not received in time'],
  ERR_HTTP_HEADERS_TIMEOUT: [408, 'request_timeout', 'the request headers were not received in time'],
};

/**
 * The server's 'clientError' handler: a request Node's HTTP parser refuses (a URL or headers over the
 * limit, a malformed request line, a timeout) is answered with the contract's error body instead of
 * Node's bare status line, then the connection is closed. A reset connection, or one whose answer has
 * already started, is just closed.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  const current = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (err.code !== 'ECONNRESET' && socket.writable && !current?.headersSent) {
    const [status, code, message] = CLIENT_ERRORS[err.code ?? ''] ?? [400, 'bad_request', 'the request is not valid HTTP/1.1'];
    const body = JSON.stringify(new AppError(status, code, message).body());
    socket.end(`HTTP/1.1 ${status} ${code.replace(/_/g, ' ')}\r\ncontent-type: application/json; charset=utf-8\r\n`
      + `content-length: ${Buffer.byteLength(body)}\r\ncache-control: no-store\r\nx-content-type-options: nosniff\r\nconnection: close\r\n\r\n${body}`,
    () => socket.destroy());
    return;
  }
  socket.destroy();
}
