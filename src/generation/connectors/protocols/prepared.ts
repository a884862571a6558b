// What the protocols share above the transport: the first request of a call (Prepared), the
// model of a call, deadlines, room for base64 answers, and posting a prepared request.
import type { ConnectorSpec } from './types.ts';
import { connectorEgress, jsonHeaders, requestJson } from './transport.ts';

export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The first request of a call, built once by a protocol and used by both dryRun and the call. */
export interface Prepared {
  url: string;
  route: string;
  model: string | null;
  contentType: 'application/json' | 'multipart/form-data';
  /** The JSON body; for multipart, the form fields, the file field (asr `file`, video `input_reference`) describing the upload. */
  body: Record<string, unknown>;
}

/** The model of a call: the job's model, else the connector's model for the kind, else none. */
export function modelFor(connector: ConnectorSpec, kind: string, executionModel: string | null): string | null {
  return executionModel ?? connector.protocol?.models?.[kind] ?? null;
}

/** Epoch milliseconds of an ISO deadline (Infinity when absent or invalid). */
export function deadlineOf(iso: string | null | undefined): number {
  const t = iso ? Date.parse(iso) : NaN;
  return Number.isFinite(t) ? t : Infinity;
}

/** Room for a JSON answer that carries a file as base64 (4/3 of its bytes) plus some JSON. */
export const fileJsonLimit = (maxOutputBytes: number) => Math.ceil(maxOutputBytes * 1.4) + 1024 * 1024;

/** POSTs a prepared request's JSON body to its URL within the call's time-out and signal; the parsed answer. */
export function postPrepared(req: { timeoutMs: number; signal: AbortSignal; connector: Pick<ConnectorSpec, 'costMode'> }, prep: Prepared, secret: string | null, limit?: number): Promise<unknown> {
  return requestJson({
    method: 'POST', url: prep.url, headers: jsonHeaders(secret), body: prep.body, timeoutMs: req.timeoutMs, signal: req.signal, secret, egress: connectorEgress(req.connector),
    ...(limit === undefined ? {} : { limit }),
  });
}
