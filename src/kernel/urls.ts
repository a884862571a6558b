// The first checks of a URL the service will call out to (a webhook, an identity provider): an
// absolute http(s) URL without credentials. Callers add their own rules to the parsed URL. And the
// origin lists of operator settings.
import { classifyAddress, normalizeAddress } from './addresses.ts';

/** The parsed URL, or the reason it is not an absolute http(s) URL without credentials. */
export function outboundUrl(raw: string): URL | string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http or https URL';
  if (url.username || url.password) return 'must not carry credentials';
  return url;
}

/**
 * A list of origins (comma or space separated, e.g. SVC_CONNECTOR_OUTPUT_ORIGINS) as normalized
 * `scheme://host[:port]` strings; throws with the first entry that is not an http(s) origin.
 */
export function parseOriginList(raw: string): string[] {
  const out: string[] = [];
  for (const entry of raw.split(/[\s,]+/).filter(Boolean)) {
    const u = outboundUrl(entry);
    if (typeof u === 'string' || (u.pathname !== '/' && u.pathname !== '') || u.search || u.hash) {
      throw new Error(`"${entry.slice(0, 100)}" is not an http or https origin (scheme://host[:port], nothing after it)`);
    }
    const literal = normalizeAddress(u.hostname);
    if (literal && classifyAddress(literal.address) === 'refused') throw new Error(`"${entry.slice(0, 100)}" points to a link-local, metadata or reserved address`);
    if (!out.includes(u.origin)) out.push(u.origin);
  }
  return out;
}
