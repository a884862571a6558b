// URLs of connector calls: a route joined to an endpoint, endpoints parsed once, origins.
import { ConnectorError } from './types.ts';

/**
 * Joins a route to an endpoint.
 * - A route that is an absolute URL (http:// or https://) is used as it is.
 * - Otherwise the route is resolved against the endpoint's origin plus the endpoint's path prefix:
 *   endpoint 'http://h:1/api' + '/v1/chat/completions' -> 'http://h:1/api/v1/chat/completions';
 *   'http://h:1' + '/prompt' -> 'http://h:1/prompt'. A route without a leading '/' is treated as if
 *   it had one. The endpoint's query string and fragment are dropped.
 * - One convenience: OpenAI base URLs are conventionally written with '/v1' ('https://x/v1'); when
 *   the prefix ends with '/v1' and the route starts with '/v1/', the repeated '/v1' is dropped
 *   ('https://x/v1' + '/v1/models' -> 'https://x/v1/models').
 * - `prefix: false` resolves against the origin only (http-json, whose endpoint is the POST target
 *   itself rather than a base URL: 'http://h:1/generate' + '/health' -> 'http://h:1/health').
 */
export function joinUrl(endpoint: string, route: string, prefix = true): string {
  const key = `${prefix ? 'p' : 'o'} ${endpoint} ${route}`;
  const hit = joinCache.get(key);
  if (hit !== undefined) return hit;
  let out: string;
  if (/^https?:\/\//i.test(route)) out = route;
  else {
    const u = parseEndpoint(endpoint);
    const base = prefix ? u.pathname.replace(/\/+$/, '') : '';
    let r = route.startsWith('/') ? route : `/${route}`;
    if (base.endsWith('/v1') && r.startsWith('/v1/')) r = r.slice(3);
    if (r === '/' && base) r = '';
    out = `${u.origin}${base}${r}`;
  }
  // Routes of the same connector repeat on every call; ids in routes would fill the map.
  if (joinCache.size > 1000) joinCache.clear();
  joinCache.set(key, out);
  return out;
}
const joinCache = new Map<string, string>();

const endpointCache = new Map<string, URL>();
export function parseEndpoint(endpoint: string): URL {
  let u = endpointCache.get(endpoint);
  if (!u) {
    try {
      u = new URL(endpoint);
    } catch {
      throw new ConnectorError('connector_bad_request', 'the connector endpoint is not a valid URL', false);
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') {
      throw new ConnectorError('connector_bad_request', 'the connector endpoint must be an http or https URL', false);
    }
    if (endpointCache.size > 1000) endpointCache.clear();
    endpointCache.set(endpoint, u);
  }
  return u;
}

export function originOf(url: string): string | null {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}
