// Network failures, HTTP statuses and egress refusals of a connector call as ConnectorError (with
// the credential scrubbed from every message).
import { ConnectorError } from './types.ts';
import { EgressRefused } from '../../../kernel/egress.ts';
import { redact } from './credential.ts';

export const abortedError = () => new ConnectorError('connector_aborted', 'the call was aborted', true);

export function timeoutError(method: string, path: string, ms: number): ConnectorError {
  return new ConnectorError('connector_timeout', `${method} ${path} timed out after ${ms} ms`, true);
}

const NET_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNREFUSED', 'ECONNABORTED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'ERR_STREAM_PREMATURE_CLOSE', 'UND_ERR_SOCKET']);

/** Maps any error met while talking to a model service to a ConnectorError. */
export function toConnectorError(err: unknown, secret: string | null, what: string): ConnectorError {
  if (err instanceof ConnectorError) return err;
  if (err instanceof EgressRefused) return egressRefused(err);
  const e = err as { code?: string; name?: string; message?: string };
  if (e?.name === 'AbortError') return abortedError();
  const message = redact(String(e?.message ?? err), secret).slice(0, 200);
  if (e?.code && NET_CODES.has(e.code)) return new ConnectorError('connector_unreachable', `${what}: ${e.code} ${message}`.slice(0, 300), true);
  if (e?.code === 'ERR_HTTP_INVALID_HEADER_VALUE' || e?.code === 'ERR_INVALID_CHAR') {
    return new ConnectorError('connector_bad_request', `${what}: invalid header value`, false);
  }
  return new ConnectorError('connector_unreachable', `${what}: ${message}`.slice(0, 300), true);
}

/** The short message of an error body: error.message, message, error, detail, or the text. */
export function messageOfBody(text: string): string {
  const t = text.trim();
  if (t.startsWith('{')) {
    try {
      const j = JSON.parse(t) as Record<string, unknown>;
      const err = j.error;
      const pick =
        (err && typeof err === 'object' && typeof (err as { message?: unknown }).message === 'string' ? (err as { message: string }).message : null) ??
        (typeof j.message === 'string' ? j.message : null) ??
        (typeof err === 'string' ? err : null) ??
        (typeof j.detail === 'string' ? j.detail : null);
      if (pick) return pick.slice(0, 200);
    } catch {
      // not JSON after all: the raw text below
    }
  }
  return t.replace(/\s+/g, ' ').slice(0, 200);
}

/**
 * A non-2xx status as a ConnectorError: 5xx, 408 and 429 are retryable (connector_http_error);
 * other 4xx are not (connector_rejected); 1xx/3xx (redirects are not followed) are not retryable.
 */
export function statusError(status: number, method: string, path: string, bodyText: string, secret: string | null): ConnectorError {
  const msg = redact(messageOfBody(bodyText), secret);
  const text = `HTTP ${status} from ${method} ${path}${msg ? `: ${msg}` : ''}`;
  if (status >= 500 || status === 408 || status === 429) return new ConnectorError('connector_http_error', text, true, status);
  return new ConnectorError('connector_rejected', text, false, status);
}

/** A destination the egress policy refused (nothing was sent): not retryable. */
export const egressRefused = (err: EgressRefused) => new ConnectorError('egress_refused', err.message, false);

export const badResponse = (what: string) => new ConnectorError('connector_bad_response', what, false);
