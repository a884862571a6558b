// The protocol layer: calls model services for generation jobs. Pure I/O (never the database):
// everything arrives in a CallRequest. One request builder per protocol is shared by callConnector
// and dryRun, so what a dry run shows is what the connector receives.
//
// Errors are ConnectorError (types.ts): network failures (connector_unreachable), time-outs
// (connector_timeout), 5xx/408/429 (connector_http_error) and failed or lost generations
// (connector_job_failed, connector_job_lost) and aborts (connector_aborted) are retryable; other 4xx
// (connector_rejected), malformed answers (connector_bad_response), a missing credential
// (connector_credential_missing), a credential variable not designated for connectors
// (connector_credential_forbidden), a destination the egress policy refuses (egress_refused),
// bad requests (connector_bad_request, connector_unsupported_kind),
// image_count_mismatch, image_composite_detected and output_too_large are not. No message ever
// holds the credential.
import { ConnectorError } from './types.ts';
import type {
  CallRequest,
  CallResult,
  ConnectorKind,
  ConnectorSpec,
  DryRunRequest,
  Execution,
  ProbeResult,
  ProductionContract,
} from './types.ts';
import * as httpJson from './httpjson.ts';
import * as openai from './openai.ts';
import * as comfyui from './comfyui.ts';
import type { CredentialPolicy } from '../../../kernel/credentials.ts';
import { joinUrl } from './urls.ts';
import { allowedCredentialName, credentialOf, redact } from './credential.ts';
import { connectorEgress, getHeaders, readBody, send } from './transport.ts';
import type { Prepared } from './prepared.ts';

interface Protocol {
  healthRoute: string;
  /** Health routes of http-json resolve against the origin (its endpoint is the POST target). */
  healthPrefix: boolean;
  build(connector: ConnectorSpec, contract: ProductionContract, execution: Execution): Prepared;
  call(req: CallRequest, prep: Prepared, secret: string | null): Promise<CallResult>;
  routeFor(connector: ConnectorSpec, kind: string): string | null;
}

const PROTOCOLS: Record<ConnectorKind, Protocol> = {
  'http-json': { healthRoute: httpJson.HEALTH_ROUTE, healthPrefix: false, build: httpJson.build, call: httpJson.call, routeFor: httpJson.routeFor },
  'openai-compatible': { healthRoute: openai.HEALTH_ROUTE, healthPrefix: true, build: openai.build, call: openai.call, routeFor: openai.routeFor },
  comfyui: { healthRoute: comfyui.HEALTH_ROUTE, healthPrefix: true, build: comfyui.build, call: comfyui.call, routeFor: comfyui.routeFor },
};

function protocolOf(connector: ConnectorSpec): Protocol {
  const p = PROTOCOLS[connector.kind];
  if (!p) throw new ConnectorError('connector_bad_request', `unknown connector kind ${String(connector.kind).slice(0, 40)}`, false);
  return p;
}

/** Calls the connector for one attempt of a job; throws ConnectorError on failure. */
export async function callConnector(req: CallRequest): Promise<CallResult> {
  const p = protocolOf(req.connector);
  const secret = credentialOf(req.connector, req.env, req.credentials);
  if (req.signal?.aborted) throw new ConnectorError('connector_aborted', 'the call was aborted', true);
  const prep = p.build(req.connector, req.contract, req.execution);
  try {
    return await p.call(req, prep, secret);
  } catch (err) {
    if (err instanceof ConnectorError) {
      if (secret && err.message.includes(secret)) throw new ConnectorError(err.code, redact(err.message, secret), err.retryable, err.httpStatus);
      throw err;
    }
    const e = err as Error;
    if (e?.name === 'AbortError') throw new ConnectorError('connector_aborted', 'the call was aborted', true);
    throw new ConnectorError('connector_error', redact(String(e?.message ?? err), secret).slice(0, 200), true);
  }
}

/**
 * The exact first request the connector would receive, without calling anything or reading the
 * credential: header names only ('authorization' listed whenever authEnv is configured).
 * Throws ConnectorError for configuration errors (unknown kind, no route, no workflow, an authEnv
 * the operator did not designate: the call itself would fail the same way).
 */
export function dryRun(connector: ConnectorSpec, contract: ProductionContract, execution: Execution, credentials: CredentialPolicy): DryRunRequest {
  allowedCredentialName(connector, credentials);
  const prep = protocolOf(connector).build(connector, contract, execution);
  return {
    method: 'POST',
    url: prep.url,
    route: prep.route,
    model: prep.model,
    headers: connector.authEnv ? ['content-type', 'authorization'] : ['content-type'],
    contentType: prep.contentType,
    body: prep.body,
  };
}

/** The URL a probe GETs: protocol.healthRoute or the kind's default. */
export function healthUrlOf(connector: ConnectorSpec): string {
  const p = protocolOf(connector);
  return joinUrl(connector.endpoint, connector.protocol?.healthRoute || p.healthRoute, p.healthPrefix);
}

/**
 * GET the health route (defaults: http-json '/health', openai-compatible '/v1/models', comfyui
 * '/system_stats'); ok = 2xx. A route starting with '/' resolves against the endpoint's origin for
 * http-json (whose endpoint is the POST target itself) and against origin + path prefix for the
 * others (whose endpoint is a base URL). Never throws; errors are text without the credential.
 */
export async function probeConnector(
  connector: ConnectorSpec,
  opts: { env: Readonly<Record<string, string | undefined>>; credentials: CredentialPolicy; timeoutMs: number; signal?: AbortSignal },
): Promise<ProbeResult> {
  const started = performance.now();
  const latency = () => Math.round((performance.now() - started) * 10) / 10;
  let secret: string | null = null;
  try {
    secret = credentialOf(connector, opts.env, opts.credentials);
    const url = healthUrlOf(connector);
    const resp = await send({ method: 'GET', url, headers: getHeaders(secret), timeoutMs: opts.timeoutMs, signal: opts.signal, secret, egress: connectorEgress(connector) });
    let text = '';
    try {
      text = (await readBody(resp.body, 1024 * 1024)).toString('utf8');
    } catch {
      resp.body.destroy();
    }
    const ok = resp.status >= 200 && resp.status < 300;
    return {
      ok,
      latencyMs: latency(),
      httpStatus: resp.status,
      error: ok ? null : redact(`HTTP ${resp.status} from GET ${resp.path}${text.trim() ? `: ${text.trim().replace(/\s+/g, ' ').slice(0, 200)}` : ''}`, secret),
    };
  } catch (err) {
    const e = err as { message?: string; httpStatus?: number | null };
    return {
      ok: false,
      latencyMs: latency(),
      httpStatus: e?.httpStatus ?? null,
      error: redact(String(e?.message ?? err), secret).slice(0, 300),
    };
  }
}

/** The route a kind of work is sent to, or null when the connector cannot take it. */
export function routeFor(connector: ConnectorSpec, kind: string): string | null {
  const p = PROTOCOLS[connector.kind];
  if (!p) return null;
  if (connector.kind === 'openai-compatible' && !openai.KINDS.has(kind)) return null;
  return p.routeFor(connector, kind);
}

/**
 * Whether a job of this kind may be created for the connector: the capability lists the kind and,
 * for openai-compatible, the kind has a default or configured route (and a known request shape).
 */
export function supportsKind(connector: ConnectorSpec, kind: string): boolean {
  if (!Array.isArray(connector.capability) || !connector.capability.includes(kind)) return false;
  return routeFor(connector, kind) !== null;
}

export { closeIdleConnections } from './transport.ts';
