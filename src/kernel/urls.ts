// The first checks of a URL the service will call out to (a webhook, an identity provider): an
// absolute http(s) URL without credentials. Callers add their own rules to the parsed URL.

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
